"""A run made with ``repeat = 3`` in a real browser (Debian's Chromium through Playwright; issue
27): the comparison page says the repeats beside the comparison and links to ``/repeats``,
where the flaky questions show each repeat's verdict beside the baseline's and the noise note
says how much of the headline it can explain; every question's row opens under "Every
question"; at 1440 and at 1024 pixels no row runs out of its table, and no page logs an error
or breaks the Content-Security-Policy. Screenshots go to a temporary folder, or to
``$RAGMETER_SCREENSHOTS`` (``RAGMETER_SCREENSHOTS=docs/lab`` refreshes the documentation's
``repeats*.png``)."""

from __future__ import annotations

from typing import Any

from _browser import skip_without_browser

skip_without_browser()

import _browser  # noqa: E402
from _browser import Watch, serving_store, snap  # noqa: E402
from _repeats_store import judged_experiment, record_repeats, written_repeats  # noqa: E402
from playwright.sync_api import expect  # noqa: E402

from ragmeter.store import Store  # noqa: E402

# Chromium and where screenshots go: the fixtures of tests/_browser.py
browser, shots = _browser.browser, _browser.shots


def test_the_repeats_sit_beside_the_comparison(tmp_path: Any, browser: Any, shots: Any) -> None:
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    with judged_experiment(tmp_path) as judged, Store.open(url) as store:
        ids = record_repeats(store, judged)
        written = written_repeats(judged, "cand")
        with serving_store(store) as server:
            for width, name in ((1440, "repeats.png"), (1024, "repeats-1024.png")):
                w = Watch(browser, width=width)
                page = w.page
                page.goto(f"{server}/compare?base={ids['base']}&cand={ids['cand']}")
                note = page.locator(".repeats-note")
                expect(note).to_contain_text("2 flaky questions")
                expect(note).to_contain_text(written["vs_baseline"]["note"])
                note.get_by_role("link").click()
                expect(page).to_have_url(f"{server}/repeats?run={ids['cand']}")
                flaky = page.locator("table.repeats-flaky tbody tr")
                expect(flaky).to_have_count(2)
                assert [r.get_attribute("data-qid") for r in flaky.all()] == written["flaky"]
                first = page.locator(f'tr[data-qid="{judged.a}"]')
                expect(first.locator(".repeat-strip").first).to_have_text("✗✗✓")
                expect(first.locator(".badge")).to_have_text("headline mover")
                expect(page.locator(".repeats-noise")).to_contain_text(
                    written["vs_baseline"]["note"]
                )
                expect(page.locator("table.repeats-table tbody tr")).to_have_count(3)
                # no table wider than the page's content
                for table in page.locator("main table").all():
                    box = table.bounding_box()
                    assert box is not None and box["x"] + box["width"] <= width, name
                snap(page, shots / name, width, height=1300)
                page.locator("details.repeats-all summary").click()
                expect(page.locator("details.repeats-all tbody tr")).to_have_count(
                    len(written["questions"])
                )
                # a flaky question leads to its trace beside the baseline's
                first.get_by_role("link").first.click()
                expect(page.locator("section.trace-side")).to_have_count(2)
                assert w.errors() == [] and w.csp_violations() == [] and w.dialogs == []
                w.close()
