"""Trends and traces in a real browser (Debian's Chromium through Playwright; issue 27 items 12
and 13): an experiment run twice, the second time on a grown golden set, draws its headline's
trend on the experiments page (one point per run, two golden-set versions, the baseline's
runs as squares); a question's trace shows two runs side by side, at 1440 and at 1024 pixels,
its citation link leads to the cited passage, the user message holds the prompt as sent; no
page logs an error or breaks the Content-Security-Policy. Screenshots go to a temporary
folder, or to ``$RAGMETER_SCREENSHOTS`` (``RAGMETER_SCREENSHOTS=docs/lab`` refreshes the
documentation's ``experiments-trend*.png`` and ``trace*.png``)."""

from __future__ import annotations

import json
import re
import warnings
from typing import Any

from _browser import skip_without_browser

skip_without_browser()

import _browser  # noqa: E402
from _browser import Watch, serving_store, snap  # noqa: E402
from _experiment_files import FARE_RULES  # noqa: E402
from _trace_store import record_generated  # noqa: E402
from playwright.sync_api import expect  # noqa: E402

from ragmeter.store import Store  # noqa: E402
from ragmeter.workflows.experiment import run_and_record  # noqa: E402

# Chromium and where screenshots go: the fixtures of tests/_browser.py
browser, shots = _browser.browser, _browser.shots


def test_the_trend_draws_and_two_traces_sit_side_by_side(tmp_path: Any, browser: Any, shots: Any):
    t = record_generated(tmp_path)
    # the golden set grows by two questions: the second run is on another version
    lines = (FARE_RULES / "golden.jsonl").read_text(encoding="utf-8").splitlines()
    with (tmp_path / "golden.jsonl").open("a", encoding="utf-8") as f:
        f.write("\n".join(lines[10:12]) + "\n")
    with Store.open(t.url) as store:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run_and_record(store, tmp_path / "experiment.toml")
        sets = {a.run_id: store.answer_set(a.id) for a in store.answer_sets()}
        rank, sandwich = sets[t.ids["rank"]], sets[t.ids["sandwich"]]
        # a question the sandwich order reorders and whose answer cites a passage
        qid = next(
            q
            for q in t.qids
            for a, b in [[next(x for x in s.answers if x["id"] == q) for s in (rank, sandwich)]]
            if a["context"] != b["context"] and a["citations"]
        )
        with serving_store(store) as server:
            # -- the trend ------------------------------------------------------------------
            for width, name in (
                (1440, "experiments-trend.png"),
                (1024, "experiments-trend-1024.png"),
            ):
                w = Watch(browser, width=width)
                page = w.page
                page.goto(f"{server}/")
                page.locator("#trend-1-chart svg").wait_for()
                spec = json.loads(str(page.locator("#trend-1-chart-spec").text_content()))
                points = spec["data"]["values"]
                assert len(points) == 4  # two invocations of two variants
                assert len({p["golden"] for p in points}) == 2
                assert [p["role"] for p in points].count("baseline") == 2
                marks = page.locator("#trend-1-chart g.mark-symbol.role-mark path")
                assert marks.count() == 4  # every run drawn
                snap(page, shots / name, width, height=1500)
                assert w.errors() == [] and w.csp_violations() == [] and w.dialogs == []
                w.close()
            # -- the traces, side by side -----------------------------------------------------
            for width, name in ((1440, "trace.png"), (1024, "trace-1024.png")):
                w = Watch(browser, width=width)
                page = w.page
                page.goto(f"{server}/trace?run={t.ids['rank']}&q={qid}&vs={t.ids['sandwich']}")
                left, right = page.locator("section.trace-side").all()
                a, b = left.bounding_box(), right.bounding_box()
                assert a is not None and b is not None
                assert b["x"] >= a["x"] + a["width"] and abs(b["y"] - a["y"]) < 1  # side by side
                # the user message: the prompt as sent, open, with the passages in it
                user = left.locator("details.trace-message[open] pre")
                assert "PASSAGES:" in str(user.text_content())
                # the citation leads to its passage in the prompt's order
                link = left.locator("td a[href^='#p-']").first
                target = str(link.get_attribute("href"))
                link.click()
                expect(page).to_have_url(re.compile(re.escape(target) + "$"), timeout=20_000)
                assert "cited" in str(page.locator(target).get_attribute("class"))
                # the judge's verdicts and their reasons on both sides
                for side in (left, right):
                    assert side.locator("table.trace-verdicts tbody tr").count() == 2
                    assert "FAKE JUDGE" in str(side.locator("table.trace-verdicts").text_content())
                snap(page, shots / name, width, height=1400)
                assert w.errors() == [] and w.csp_violations() == [] and w.dialogs == []
                w.close()
