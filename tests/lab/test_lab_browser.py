"""The lab and the report in a real browser: Debian's Chromium driven by Playwright (never a
browser download; .ci/run installs the package when it is missing).

One lab server (uvicorn in a thread on 127.0.0.1, a free port) over a temporary store holding
the fare-rules runs and the hostile fixture's runs. Screenshots go to a temporary folder, or to
``$RAGMETER_SCREENSHOTS`` (``RAGMETER_SCREENSHOTS=docs/lab`` refreshes the documentation's).
"""

from __future__ import annotations

import json
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _browser import skip_without_browser

skip_without_browser()

import _browser  # noqa: E402
from _browser import REPO, Watch, serving_store, shrink  # noqa: E402
from _lab_store import cli as cli_lines  # noqa: E402
from _lab_store import record_fare_rules  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from ragmeter.cli import app as cli  # noqa: E402
from ragmeter.store import Store  # noqa: E402

# Chromium and where screenshots go: the fixtures of tests/_browser.py
browser, shots = _browser.browser, _browser.shots

FARE = REPO / "examples" / "fare-rules"
XSS = Path(__file__).parents[1] / "fixtures" / "xss"
XSS_NAME = "xss <script>alert(1)</script> [bold]x[/bold]"
HOSTILE = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "</script><script>alert(1)</script>",
    "[bold]x[/bold]",
    "{{ 7*7 }}",
    "javascript:alert(1)",
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """The fare-rules example recorded as a user records it (its four runs, the baseline's and
    the reranker's answers checked, a judge validation), then the hostile fixture's runs."""
    folder = tmp_path_factory.mktemp("lab-browser")
    fare = record_fare_rules(folder)
    assert sorted(fare.ids.values()) == [1, 2, 3, 4]
    human, judge = folder / "human.jsonl", folder / "judge.jsonl"
    s, u = "supported", "unsupported"
    labels = [("change-fee-standard", s, s), ("change-fee-basic", u, s),
              ("which-fee-schedule", u, u), ("infant-minimum-age", s, s), ("pet-fee", s, s),
              ("voucher-validity", s, u), ("first-bag-fee", s, s), ("code-j", u, u),
              ("flex-refund-destination", u, s), ("rule-16-topic", s, s)]  # fmt: skip
    who = {"name": "support judge", "model": "example-model", "params": {"temperature": 0}}
    human.write_text("".join(json.dumps({"id": i, "label": h}) + "\n" for i, h, _ in labels))
    judge.write_text(
        "".join(json.dumps({"id": i, "label": j, "judge": who}) + "\n" for i, _, j in labels)
    )
    cli_lines("judge", "validate", "--human", human, "--judge", judge, "--db", fare.url)
    shutil.copytree(XSS, folder / "xss")
    result = CliRunner().invoke(
        cli, ["run", str(folder / "xss" / "experiment.toml"), "--db", fare.url]
    )
    assert result.exit_code == 0, result.output
    return Store.open(fare.url)


@pytest.fixture(scope="module")
def folder(store: Store) -> Path:
    """The folder the experiments were recorded in, beside the store: the lab's --root."""
    return Path(str(store.engine.url.database)).parent


@pytest.fixture(scope="module")
def server(store: Store) -> Iterator[str]:
    with serving_store(store) as url:
        yield url


def cli_means(k: int) -> dict[str, float]:
    """``ragmeter eval --golden ... --chunks runs/chunks-300.jsonl runs/baseline/run.trec --k K``
    (the baseline's 300-token chunking), as the library computes it for the CLI."""
    from ragmeter.labels import evaluate_spans_files

    (ev,) = evaluate_spans_files(
        [FARE / "runs" / "baseline" / "run.trec"],
        golden=FARE / "golden.jsonl",
        chunks=FARE / "runs" / "chunks-300.jsonl",
        metrics="R,RR,AllR",
        k=k,
    )
    return {str(m).split("@")[0]: float(v) for m, v in ev.aggregate.items()}


def card(page: Any, key: str) -> str:
    return str(page.locator(f'.lab-cards [data-metric="{key}"] .card-value').inner_text()).strip()


#: a documentation screenshot's height at most (1280 wide): what a reader sees first
MAX_SHOT_HEIGHT = 1800


def snap(page: Any, path: Path, at: Any = None, *, height: int = MAX_SHOT_HEIGHT) -> None:
    """Screenshot ``page`` into ``path``, 1280 wide and at most ``height`` tall: from the top of
    the page, or from the top of the element ``at`` (a locator; the page is scrolled back to
    its top first, so the sticky header is not laid over the element)."""
    top = 0
    if at is not None:
        at.scroll_into_view_if_needed()
        top = max(0, int(at.evaluate("e => e.getBoundingClientRect().top + window.scrollY")) - 8)
        page.evaluate("window.scrollTo(0, 0)")  # the sticky header back at the page's top
    full = int(page.evaluate("document.documentElement.scrollHeight"))
    clip = {"x": 0, "y": top, "width": 1280, "height": max(1, min(height, full - top))}
    page.screenshot(path=str(path), full_page=True, clip=clip)
    shrink(path)


def test_change_k_shows_the_cli_numbers(browser: Any, server: str, shots: Path) -> None:
    w = Watch(browser)
    page = w.page
    page.goto(f"{server}/lab?run=1")
    page.wait_for_selector(".lab-cards")
    assert "k = 4" in page.locator(".lab-title").inner_text()
    page.locator('input[name="k"]').fill("3")
    page.locator('input[name="cut"][value="k"]').check()
    page.locator("form.lab-controls button[type=submit]").click()
    # (no wait_for_function: the lab's CSP forbids the eval its polling uses; locators poll)
    page.locator(".lab-title", has_text="k = 3").wait_for()
    want = cli_means(3)
    for key in ("R", "RR", "AllR"):
        assert card(page, key) == f"{want[key]:.3f}", key
    assert "k=3" in page.url  # the state is in the URL, to paste to a colleague
    snap(page, shots / "lab.png", height=1100)
    assert w.errors() == [] and w.dialogs == []
    w.close()


def test_broken_question_shows_its_ranked_list(
    browser: Any, server: str, store: Store, shots: Path
) -> None:
    from ragmeter import compare

    w = Watch(browser)
    page = w.page
    page.goto(f"{server}/lab?run=2&baseline=1&cut=budget&budget=1200&metric=AllR&show=broken")
    page.wait_for_selector(".qtable")
    rows = page.locator("details.q")
    assert rows.count() > 0
    first = rows.first
    qid = first.locator(".qid code").inner_text().strip()
    first.locator("summary").click()
    first.locator("mark").first.wait_for(state="visible")
    assert first.locator(".cutoff-row").count() >= 1
    # broken as `ragmeter compare 1 2 -m AllR@budget=1200` counts it on the stored runs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the small-slice note
        c = compare(store.evaluation(1), store.evaluation(2), "AllR@budget=1200")
    assert qid in (c.broken_ids or ())
    assert rows.count() == c.broken
    snap(page, shots / "lab-question.png", first, height=1400)
    assert w.errors() == [] and w.dialogs == []
    w.close()


def test_report_from_file_makes_no_request(
    browser: Any, store: Store, folder: Path, tmp_path: Path, shots: Path
) -> None:
    from ragmeter.lab import write_report

    out = write_report(store, ["1", "2", "3", "4"], tmp_path / "report.html", root=folder)
    w = Watch(browser)
    page = w.page
    page.goto(out.as_uri())
    page.wait_for_selector("#sweep-chart svg")
    page.wait_for_selector("#bootstrap-2 svg")
    assert w.requests == [out.as_uri()]
    assert w.errors() == [] and w.csp_violations() == [] and w.dialogs == []
    snap(page, shots / "report.png")
    page.goto(out.as_uri() + "#cmp-2")  # the report's own nav link: same page, no request
    snap(page, shots / "report-comparison.png", page.locator("#cmp-2"), height=1300)
    page.goto(out.as_uri() + "#sweep")
    snap(page, shots / "report-sweep.png", page.locator("#sweep"), height=1100)
    page.goto(out.as_uri() + "#diagnosis-1")
    snap(page, shots / "report-diagnosis.png", page.locator("#diagnosis-1"), height=1500)
    # a cell links to its questions; a question, to its ranked list, folded in its run's list:
    # following the link opens both (no request: everything is in the file)
    page.locator('#diagnosis-1 a[href="#a1-cell-generation_failure"]').click()
    cell = page.locator("#a1-cell-generation_failure")
    assert cell.get_attribute("open") is not None
    link = cell.locator("a").first
    target = str(link.get_attribute("href"))
    assert target.startswith("#r1-q")
    link.click()
    q = page.locator(target)
    assert q.get_attribute("open") is not None
    q.locator("mark").first.wait_for(state="visible")
    page.goto(out.as_uri() + "#run-2")
    page.locator("#run-2 details.questions > summary").click()
    q = page.locator("#run-2 details.question").first
    q.locator("summary").click()
    q.locator("mark").first.wait_for(state="visible")
    snap(page, shots / "report-question.png", q, height=1300)
    assert w.requests == [out.as_uri()]
    assert w.errors() == [] and w.csp_violations() == [] and w.dialogs == []
    w.close()


def test_every_view_opens_cleanly(browser: Any, server: str, store: Store, shots: Path) -> None:
    """Each view of the lab on the fare-rules store: drawn (its charts rendered), no console
    error, no failed request, no CSP violation; its screenshot for docs/lab.md."""
    from urllib.parse import quote

    version = store.run(1).golden_version
    views = [
        ("experiments", f"/?experiment={quote(store.run(1).experiment)}", "table"),
        ("comparison", "/compare?base=1&cand=3&metric=AllR@budget=1200", ".vl-chart svg"),
        ("sweeps", "/sweeps?runs=1,2,3,4", "#sweep svg"),
        ("diagnosis", "/diagnosis?answers=1", ".diag-grid"),
        ("question", f"/question?golden={version}&qid=change-fee-standard", "mark"),
        ("judges", "/judges/1", "table.confusion"),
        ("slider", "/slider", ".slider-chart svg"),
    ]
    w = Watch(browser)
    page = w.page
    for name, url, ready in views:
        page.goto(server + url)
        page.locator(ready).first.wait_for()
        assert page.locator("h1").first.inner_text().strip(), name
        snap(page, shots / f"{name}.png")
    # the diagnosis grid's cell opens the list of its questions, in the page
    page.goto(f"{server}/diagnosis?answers=1")
    page.locator('a.cell[href="#cell-generation_failure"]').click()
    # the page's script opens it on hashchange, after the click returns: wait for it, no eval
    page.locator("#cell-generation_failure[open]").wait_for()
    assert page.locator("#cell-generation_failure").get_attribute("open") is not None
    # the slider moves the passage: rank 3 shows in the page
    page.goto(f"{server}/slider")
    page.locator(".slider-chart svg").wait_for()
    page.locator(".slider-input").fill("3")
    page.locator(".slider-rank", has_text="3").wait_for()
    assert page.locator(".slider-rank").inner_text().strip() == "3"
    # a combination not yet run, started from the jobs page: it runs and is stored
    experiment = store.run(1).experiment
    page.goto(f"{server}/jobs?experiment={quote(experiment)}")
    page.locator('input[name="chunker"]').fill("tokens:200:0")
    page.locator("form.job-form button[type=submit]").click()
    page.locator(".job .badge.finished").wait_for(timeout=60_000)
    snap(page, shots / "jobs.png")
    assert w.errors() == [] and w.csp_violations() == [] and w.dialogs == []
    w.close()


def test_hostile_text_opens_no_dialog(
    browser: Any, server: str, store: Store, folder: Path, tmp_path: Path, shots: Path
) -> None:
    from ragmeter.lab import write_report

    xss = [r for r in store.runs() if r.experiment == XSS_NAME]
    assert len(xss) == 2
    base = min(r.id for r in xss)
    cand = max(r.id for r in xss)
    report = write_report(store, [XSS_NAME], tmp_path / "xss.html", root=folder)
    pages = [
        f"{server}/",
        f"{server}/lab?run={cand}&baseline={base}",
        f"{server}/compare?base={base}&cand={cand}",
        report.as_uri(),
    ]
    w = Watch(browser)
    page = w.page
    for url in pages:
        page.goto(url)
        page.wait_for_load_state("load")
        for d in page.locator("details").all()[:12]:
            d.locator("summary").first.click()
        page.wait_for_timeout(300)  # let htmx swaps land: any script in them would run now
        text = page.locator("body").inner_text()
        assert "<script>alert(1)</script>" in text, url
        assert "[bold]x[/bold]" in text, url
        assert page.locator("img").count() == 0, url
        assert page.locator('a[href^="javascript:" i]').count() == 0, url
    page.goto(report.as_uri())
    for d in page.locator("details").all():
        d.evaluate("el => el.open = true")
    text = page.locator("body").inner_text()
    for literal in HOSTILE:
        assert literal in text, literal
    snap(page, shots / "xss-report.png")
    assert w.dialogs == []
    assert w.csp_violations() == []
    assert w.errors() == []
    w.close()
