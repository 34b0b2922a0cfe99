"""The label page draws its document again only when the marks on it change (Debian's Chromium,
Playwright): typing in the answer, note or slice fields leaves the drawn text nodes as they are,
so a long document is not laid out again on every key (benchmarks/bench_label_search.py
measures it: 822 ms a key on a million characters before, 10 ms after); a selection, a grade or
a removed span draws it again, and the text shown stays the document's text.
"""

from __future__ import annotations

from typing import Any

from _browser import skip_without_browser

skip_without_browser()

import _browser  # noqa: E402
import test_label_browser as shared  # noqa: E402
from _browser import (  # noqa: E402
    Watch,
    drag_select,
    item_ids,
    open_from_search,
)
from test_label_view import DOCS  # noqa: E402

from ragmeter.store import Store  # noqa: E402

# Chromium: the fixture of tests/_browser.py
browser = _browser.browser

# the label browser tests' fixtures: the store with its queues, the lab serving it
store, server = shared.store, shared.server

#: tags the nodes drawn now; a node drawn later has no tag
TAG = "el => { el.childNodes.forEach(n => { n.__drawn = true; }); return el.childNodes.length; }"
#: how many of the box's nodes carry the tag
TAGGED = "el => Array.from(el.childNodes).filter(n => n.__drawn === true).length"


def test_typing_in_a_field_does_not_draw_the_document_again(
    browser: Any, server: str, store: Store
) -> None:
    ids = item_ids(store, "scratch")
    text = next(d.text for d in DOCS if d.id == "cjk")
    w = Watch(browser)
    page = w.page
    page.goto(f"{server}/label/scratch/item/{ids['q-cjk']}")
    open_from_search(page, "cjk")
    box = page.locator(".label-doc .doc-text")
    drawn = box.evaluate(TAG)
    for field in ("textarea[name=note]", "textarea[name=answer]", "input[name=slices]"):
        page.locator(field).press_sequentially("kept 2")  # keys the page binds, typed in a field
    page.locator(".label-status.dirty").wait_for()
    assert box.evaluate(TAGGED) == drawn  # the same nodes: not drawn again
    # a selection changes the marks: drawn again, with the document's text
    drag_select(page, text, "第二件行李收费四十美元")
    page.locator(".span-item.pending").wait_for()
    assert box.evaluate(TAGGED) == 0
    assert box.evaluate("el => el.textContent") == text
    assert box.locator("mark.pending").inner_text() == "第二件行李收费四十美元"
    # graded: drawn again as a span; typing leaves it as it is
    page.keyboard.press("2")
    box.locator("mark.span.g2").wait_for()
    drawn = box.evaluate(TAG)
    page.locator("textarea[name=note]").press_sequentially(" and more")
    assert box.evaluate(TAGGED) == drawn
    # removed: drawn again without the mark
    page.locator(".span-item .danger", has_text="remove").click()
    page.locator(".span-empty").wait_for()
    assert box.locator("mark.span").count() == 0
    assert box.evaluate("el => el.textContent") == text
    assert w.errors() == [] and w.csp_violations() == [] and w.dialogs == []
    w.close()
