"""The lab's per-question table as a dashboard in a real browser (Debian's Chromium through
Playwright) over the fare-rules runs: a click on a bar of the change chart highlights its row
(or opens the table's page holding it), the slice filter and the search (typed, not submitted)
narrow the rows and keep the URL, and "CSV of the rows shown" downloads exactly the server's CSV
of the same filter, with nothing logging an error or breaking the Content-Security-Policy.
Screenshots at 1440 and 1024 pixels wide go to a temporary folder, or to
``$RAGMETER_SCREENSHOTS`` (``RAGMETER_SCREENSHOTS=docs/lab`` refreshes ``lab-chart.png`` and
``lab-chart-1024.png``)."""

from __future__ import annotations

import json
import re
import shutil
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from _browser import skip_without_browser

skip_without_browser()

import _browser  # noqa: E402
from _browser import Watch, serving_store, shrink  # noqa: E402
from playwright.sync_api import expect  # noqa: E402

from ragmeter.store import Store  # noqa: E402

# Chromium and where screenshots go: the fixtures of tests/_browser.py
browser, shots = _browser.browser, _browser.shots

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"


def record(root: Path) -> tuple[str, dict[str, int]]:
    from ragmeter.workflows.experiment import run_and_record

    for name in ("golden.jsonl", "corpus.jsonl", "experiment.toml"):
        shutil.copy(EXAMPLE / name, root / name)
    url = f"sqlite:///{root / 'lab.db'}"
    with Store.open(url) as store, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, ids = run_and_record(
            store, root / "experiment.toml", cache_dir=EXAMPLE / ".ragmeter-cache", write=True
        )
    return url, ids


def bars(page: Any) -> Any:
    page.locator("#change-chart svg").wait_for()
    return page.locator("#change-chart g.mark-rect path")


def shot(page: Any, path: Path, width: int) -> None:
    """From the metric cards down, at most 1,500 pixels."""
    top = page.evaluate(
        "document.querySelector('.lab-title').getBoundingClientRect().top + window.scrollY"
    )
    full = int(page.evaluate("document.documentElement.scrollHeight"))
    page.evaluate("window.scrollTo(0, 0)")
    clip = {"x": 0, "y": max(0, top - 12), "width": width, "height": min(1500, full - top)}
    page.screenshot(path=str(path), full_page=True, clip=clip)
    shrink(path)


def test_the_chart_links_to_the_rows_and_the_filtered_rows_download_as_csv(
    tmp_path: Any, browser: Any, shots: Any
) -> None:
    url, ids = record(tmp_path)
    query = (
        f"run={ids['smaller chunks']}&baseline={ids['baseline']}&cut=budget&budget=1200&metric=AllR"
    )
    with Store.open(url) as store, serving_store(store) as server:
        for width in (1440, 1024):
            w = Watch(browser, width=width)
            page = w.page
            page.goto(f"{server}/lab?{query}")
            spec = json.loads(str(page.locator("#change-chart-spec").text_content()))
            points = spec["data"]["values"]
            assert bars(page).count() == len(points) == 11  # 6 fixed, 5 broken
            # a click on a bar highlights its row on this page
            bars(page).nth(0).click()
            focused = page.locator("#questions-table details.q.focused")
            focused.wait_for()
            assert focused.get_attribute("data-qid") == points[0]["qid"]
            assert focused.count() == 1 and "#q=" in page.url
            shot(page, shots / ("lab-chart.png" if width == 1440 else "lab-chart-1024.png"), width)
            assert w.errors() == [] and w.csp_violations() == [] and w.dialogs == []
            w.close()

        w = Watch(browser, width=1280)
        page = w.page
        # sorted by id, a moved question can sit on the table's second page: its bar opens it
        page.goto(f"{server}/lab?{query}&sort=id")
        points = json.loads(str(page.locator("#change-chart-spec").text_content()))["data"][
            "values"
        ]
        far = next(i for i, p in enumerate(points) if "page=2" in p["url"])
        with page.expect_navigation():
            bars(page).nth(far).click()
        focused = page.locator("#questions-table details.q.focused")
        focused.wait_for()
        assert focused.get_attribute("data-qid") == points[far]["qid"]
        assert parse_qs(urlparse(page.url).query)["page"] == ["2"]

        # the slice filter and the search: typed, the table follows and the URL keeps them
        page.goto(f"{server}/lab?{query}")
        with page.expect_response(lambda r: "slice=fees" in r.url):
            page.select_option(".table-filter select[name=slice]", "fees")
        expect(page).to_have_url(re.compile(r"[?&]slice=fees(&|$)"), timeout=20_000)
        with page.expect_response(lambda r: "q=change" in r.url):
            page.locator(".table-filter input[name=q]").type("change")
        expect(page).to_have_url(re.compile(r"[?&]q=change(&|$)"), timeout=20_000)
        pushed = parse_qs(urlparse(page.url).query)
        assert pushed["q"] == ["change"] and pushed["slice"] == ["fees"], page.url
        rows = page.locator("#questions-table details.q")
        n = rows.count()
        assert 0 < n < 50
        for i in range(n):
            row = rows.nth(i)
            assert "fees" in row.locator(".qslices .slice").all_inner_texts()
            text = (str(row.get_attribute("data-qid")) + row.locator(".qtext").inner_text()).lower()
            assert "change" in text
        assert page.locator(".table-filter input[name=q]").evaluate(
            "el => el === document.activeElement"
        )
        # the client's CSV of the rows shown is the server's CSV of the same filter
        with page.expect_download() as got:
            page.locator("button[data-behaviour=csv-download]").click()
        client_csv = Path(got.value.path()).read_text(encoding="utf-8")
        link = str(page.locator("a[href^='/lab/questions.csv']").get_attribute("href"))
        server_csv = page.request.get(server + link).text()
        assert client_csv == server_csv
        assert client_csv.count("\n") == n + 1
        assert w.errors() == [] and w.csp_violations() == [] and w.dialogs == []
        w.close()
