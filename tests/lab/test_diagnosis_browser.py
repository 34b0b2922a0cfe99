"""The diagnosis page with context ablations in a real browser (Debian's Chromium through
Playwright, 1440 px wide): the fare-rules ablation example recorded by ``ragmeter run --db``,
``/diagnosis`` of its retrieved baseline draws the causal table beside the retrieval-by-answer
grid, a cause's link opens the list of its questions in the page, and nothing logs an error or
breaks the Content-Security-Policy. The screenshot goes to a temporary folder, or to
``$RAGMETER_SCREENSHOTS`` (``RAGMETER_SCREENSHOTS=docs/lab`` refreshes the documentation's
``diagnosis-causal.png``)."""

from __future__ import annotations

from typing import Any

from _browser import skip_without_browser

skip_without_browser()

import _browser  # noqa: E402
from _browser import Watch, serving_store, snap  # noqa: E402
from _experiment_files import ablation_experiment  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from ragmeter.cli import app as cli  # noqa: E402
from ragmeter.store import Store  # noqa: E402

# Chromium and where screenshots go: the fixtures of tests/_browser.py
browser, shots = _browser.browser, _browser.shots


def test_the_causal_table_draws_and_its_causes_open(tmp_path: Any, browser: Any, shots: Any):
    path = ablation_experiment(tmp_path)
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    r = CliRunner().invoke(cli, ["run", str(path), "--db", url])
    assert r.exit_code == 0, r.output
    with Store.open(url) as store:
        base = next(a.id for a in store.answer_sets() if a.name == "retrieved")
        with serving_store(store) as server:
            w = Watch(browser, width=1440)
            page = w.page
            page.goto(f"{server}/diagnosis?answers={base}")
            page.locator("table.causal").wait_for()
            assert page.locator(".diag-grid").count() == 1
            rows = page.locator("table.causal tbody tr")
            assert rows.count() == 7  # five proven causes, two groups apart
            largest = page.locator("table.causal tr.largest a")
            target = str(largest.get_attribute("href"))
            assert target.startswith("#cause-")
            assert page.locator(f"{target}[open]").count() == 1  # the largest opens by itself
            # another cause's list opens on its link (the page's script, on hashchange)
            other = page.locator("table.causal a:not(tr.largest a)").first
            key = str(other.get_attribute("href"))
            other.click()
            page.locator(f"{key}[open]").wait_for()
            page.locator("table.causal").scroll_into_view_if_needed()
            snap(page, shots / "diagnosis-causal.png", 1440, height=1900)
            assert w.errors() == [] and w.csp_violations() == [] and w.dialogs == []
            w.close()
