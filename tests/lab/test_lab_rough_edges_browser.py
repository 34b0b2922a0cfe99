"""The lab's rough edges in a real browser (issue 27, item 7): a k or a budget typed into the
lab's controls updates the page once typing pauses (no Enter), and in budget mode the
per-question table's headers stay inside their columns at 1440 and 1024 pixels wide
(screenshots ``lab-budget.png`` and ``lab-budget-1024.png``)."""

from __future__ import annotations

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
from playwright.sync_api import expect  # noqa: E402

from ragmeter.store import Store  # noqa: E402

browser, shots = _browser.browser, _browser.shots

FARE = REPO / "examples" / "fare-rules"

#: every header cell of the per-question table whose text is wider than its column
OVERFLOWING = """() => [...document.querySelectorAll('.qtable .qhead > span')]
  .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent.trim())"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from ragmeter.workflows.experiment import run_and_record

    root = tmp_path_factory.mktemp("rough-edges-browser")
    for name in ("golden.jsonl", "corpus.jsonl", "experiment.toml"):
        shutil.copy(FARE / name, root / name)
    with Store.open(f"sqlite:///{root / 'lab.db'}") as store:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run_and_record(store, root / "experiment.toml", cache_dir=FARE / ".ragmeter-cache")
        with serving_store(store) as url:
            yield url


def test_typing_a_k_or_a_budget_updates_the_lab_without_enter(browser: Any, lab: str) -> None:
    w = Watch(browser, width=1280)
    page = w.page
    page.goto(lab + "/lab?cut=k&k=4")
    page.wait_for_selector("h2.lab-title")
    assert "cut at k = 4" in page.inner_text("h2.lab-title")
    k = page.locator("#lab-k")
    k.click()
    k.press("Control+A")
    k.press_sequentially("7", delay=30)  # no Enter, no click elsewhere
    expect(page.locator("h2.lab-title")).to_contain_text("cut at k = 7", timeout=20_000)
    assert "k=7" in page.url  # the state is in the address, as after a submit
    budget = page.locator("#lab-budget")
    budget.click()
    budget.press("Control+A")
    budget.press_sequentially("900", delay=30)  # the budget picks its own radio
    expect(page.locator("h2.lab-title")).to_contain_text("900 tokens", timeout=20_000)
    assert "cut=budget" in page.url and "budget=900" in page.url
    assert page.locator("input[type=radio][name=cut][value=budget]").is_checked()
    budget.click()
    budget.press("Control+A")
    budget.press("Backspace")  # an empty field waits: the page stays as it is
    page.wait_for_timeout(900)
    assert "budget=900" in page.url
    assert w.errors() == [] and w.dialogs == []


@pytest.mark.parametrize("width", [1440, 1024])
def test_budget_mode_headers_stay_inside_their_columns(
    browser: Any, lab: str, shots: Path, width: int
) -> None:
    w = Watch(browser, width=width)
    page = w.page
    page.goto(lab + "/lab?cut=budget&budget=1200")
    page.wait_for_selector(".qtable .qhead")
    heads = page.eval_on_selector_all(".qtable .qhead > span", "es => es.map(e => e.textContent)")
    assert any("baseline" in h for h in heads)  # the baseline's value has its column
    assert page.evaluate(OVERFLOWING) == []
    page.evaluate("document.querySelector('.qtable').scrollIntoView()")
    path = shots / ("lab-budget.png" if width == 1440 else f"lab-budget-{width}.png")
    page.screenshot(path=str(path))
    shrink(path)
    assert w.errors() == []
