"""The answer review page in a real browser (Debian's Chromium driven by Playwright): the keys
shown on the page mark correct / supported, Enter saves, n saves and moves on; reloading keeps
the review; the agreement panel shows the kappa of ``answer_agreement``; no console error, no
CSP violation. Screenshots at 1440 and 1024 pixels wide go to a temporary folder, or to
``$RAGMETER_SCREENSHOTS`` (``RAGMETER_SCREENSHOTS=docs/lab`` refreshes the documentation's).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _browser import skip_without_browser

skip_without_browser()

import _browser  # noqa: E402
from _browser import Watch, serving_store, snap  # noqa: E402
from test_review_view import make_queue, review  # noqa: E402

from ragmeter.store import Store  # noqa: E402
from ragmeter.workflows import labelling  # noqa: E402

# Chromium and where screenshots go: the fixtures of tests/_browser.py
browser, shots = _browser.browser, _browser.shots


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """30 fare-rules answers, all for two labellers; bo reviewed the first ten."""
    folder = tmp_path_factory.mktemp("review-browser")
    s = Store.open(f"sqlite:///{folder / 'store.db'}")
    make_queue(s, folder)
    labelling.ensure_labeller(s, "bo")
    for n, it in enumerate(s.items("fares")[:10]):
        verdict = review("incorrect" if n % 3 == 0 else "correct", "supported")
        labelling.save(s, "fares", it.id, "bo", verdict, 0)
    return s


@pytest.fixture(scope="module")
def server(store: Store) -> Iterator[str]:
    with serving_store(store, labeller="ann") as url:
        yield url


def test_review_with_the_keys_reload_and_the_kappa(
    browser: Any, server: str, store: Store, shots: Path
) -> None:
    items = store.items("fares")
    w = Watch(browser, width=1440)
    page = w.page
    page.goto(f"{server}/review/fares")  # ann's next answer: the first
    page.locator("h1.question", has_text=items[0].question).wait_for()
    page.locator(".review-page[data-wired]").wait_for(state="attached")
    page.locator(".cited-text mark.cited").first.wait_for()
    # the first ten: alternately correct/supported and incorrect/unsupported, with the keys
    for n in range(10):
        page.locator("h1.question", has_text=items[n].question).wait_for()
        page.locator(".review-page[data-wired]").wait_for(state="attached")
        page.keyboard.press("c" if n % 3 and n != 4 else "i")  # bo: correct on 4
        page.keyboard.press("u" if n == 7 else "s")
        if n == 0:
            page.keyboard.press("Enter")
            page.locator(".label-status", has_text="saved (revision 1)").wait_for()
            assert page.locator("input[name=correct][value=incorrect]").is_checked()
        page.keyboard.press("n")  # saves (when changed) and opens the next answer
        page.locator("h1.question", has_text=items[n + 1].question).wait_for()
    mine = {
        lb.item_id: lb for lb in store.labels(queue_id=items[0].queue_id) if lb.labeller == "ann"
    }
    assert len(mine) == 10
    assert mine[items[1].id].payload["correct"] == "correct"
    assert mine[items[0].id].payload["correct"] == "incorrect"
    assert mine[items[0].id].payload["supported"] == "supported"
    # reloading the first keeps its review
    page.goto(f"{server}/review/fares/item/{items[0].id}")
    page.locator(".label-status", has_text="saved (revision 1)").wait_for()
    assert page.locator("input[name=correct][value=incorrect]").is_checked()
    assert page.locator("input[name=supported][value=supported]").is_checked()
    # the panel: the kappa answer_agreement computes (ann and bo differ on one of ten)
    kappa = labelling.answer_agreement(store, "fares")["correctness"].kappa
    card = page.locator('[data-metric="correctness"] .review-kappa')
    assert card.inner_text() == f"{kappa:.3f}"
    snap(page, shots / "review.png", 1440)
    page.locator(".review-agreement").screenshot(path=str(shots / "review-agreement.png"))
    page.set_viewport_size({"width": 1024, "height": 900})
    snap(page, shots / "review-1024.png", 1024)
    assert w.errors() == [] and w.csp_violations() == [] and w.dialogs == []
    w.close()
