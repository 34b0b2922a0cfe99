"""The label view in a real browser: Debian's Chromium driven by Playwright (never a browser
download; .ci/run installs the package when it is missing).

A labeller searches, opens a document from a result, selects the evidence with a real mouse
drag, grades it 2 + required with the keys, saves; freezing the queue (the workflow) writes a
golden.jsonl whose ``doc.text[start:end]`` is the selected text, for ASCII, accented, CJK and
emoji text and a selection across a newline. Reloading keeps every label; a second tab's save
is an edit conflict shown with the stored label; no console error, no CSP violation, hostile
text stays inert. Screenshots at 1440 and 1024 pixels wide go to a temporary folder, or to
``$RAGMETER_SCREENSHOTS`` (``RAGMETER_SCREENSHOTS=docs/lab`` refreshes the documentation's).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _browser import skip_without_browser
from hypothesis import given, settings
from hypothesis import strategies as st

skip_without_browser()

import _browser  # noqa: E402
from _browser import (  # noqa: E402
    Watch,
    drag_select,
    item_ids,
    open_from_search,
    serving_store,
    snap,
    u16,
)
from test_label_view import (  # noqa: E402
    CASES,
    DOCS,
    XSS_QUESTION,
    make_queue,
    two_labellers,
)

from ragmeter.store import Store  # noqa: E402

# Chromium and where screenshots go: the fixtures of tests/_browser.py
browser, shots = _browser.browser, _browser.shots


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """Three queues: ``browser`` (the five cases, labelled here through the page), ``review``
    (the cases and the hostile question, labelled by ann and bob) and ``scratch``."""
    folder = tmp_path_factory.mktemp("label-browser")
    s = Store.open(f"sqlite:///{folder / 'store.db'}")
    make_queue(s, "browser", hostile=False)
    ids = make_queue(s, "review")
    two_labellers(s, ids, "review")
    make_queue(s, "scratch", hostile=False)
    return s


@pytest.fixture(scope="module")
def server(store: Store) -> Iterator[str]:
    with serving_store(store, labeller="ann") as url:
        yield url


def test_select_grade_save_freeze_round_trips(
    browser: Any, server: str, store: Store, shots: Path, tmp_path: Path
) -> None:
    from ragmeter.data import load_golden
    from ragmeter.workflows import labelling

    ids = item_ids(store, "browser")
    texts = {d.id: d.text for d in DOCS}
    w = Watch(browser, width=1440)
    page = w.page
    page.goto(f"{server}/label/browser")  # the next question: the first
    page.locator("h1.question", has_text=CASES[0][1]).wait_for()
    for n, (qid, _, doc, quote) in enumerate(CASES):
        if n:
            page.keyboard.press("n")  # next: the first question not yet labelled
            page.wait_for_url(f"**/label/browser/item/{ids[qid]}")
        open_from_search(page, doc)
        drag_select(page, texts[doc], quote)
        pending = page.locator(".span-item.pending .span-text")
        pending.wait_for()
        assert page.locator(".doc-text mark.pending").count() >= 1
        page.keyboard.press("2")
        page.keyboard.press("r")
        page.keyboard.press("s")
        page.locator(".label-status.ok", has_text="saved (revision").wait_for()
        item = page.locator(".span-item").first
        assert item.locator(".grade-btn.on").inner_text() == "2"
        assert item.locator("input[type=checkbox]").is_checked()
        if qid == "q-lines":
            # the document is drawn as text: a leading newline and a CR LF survive
            shown = page.locator(".label-doc .doc-text").evaluate("e => e.textContent")
            assert shown == texts[doc]
            snap(page, shots / "label.png", 1440)
    # reloading keeps every label, drawn over its document
    for qid, _, _, quote in CASES:
        page.goto(f"{server}/label/browser/item/{ids[qid]}")
        page.locator(".label-doc .doc-text mark.span").first.wait_for()
        assert page.locator(".label-revision").inner_text() == "1"
        assert page.locator(".span-item").count() == 1
        marked = "".join(page.locator(".label-doc .doc-text mark.span").all_text_contents())
        assert marked == quote, qid
    # frozen by the workflow: the golden set holds exactly the selected text
    labelling.freeze_queue(store, "browser", tmp_path / "v1")
    golden = load_golden(tmp_path / "v1" / "golden.jsonl", tmp_path / "v1" / "corpus.jsonl")
    for qid, _, doc, quote in CASES:
        (ev,) = golden[qid].evidence
        assert ev.doc == doc and texts[doc][ev.start : ev.end] == quote, qid
        assert ev.grade == 2 and ev.required is True
    assert w.errors() == [] and w.csp_violations() == [] and w.dialogs == []
    w.close()


def test_a_second_tab_sees_the_conflict_and_nothing_typed_is_lost(
    browser: Any, server: str, store: Store, shots: Path
) -> None:
    ids = item_ids(store, "review")
    url = f"{server}/label/review/item/{ids['q-lines']}"
    text = next(d.text for d in DOCS if d.id == "lines")
    one, two = Watch(browser, width=1024), Watch(browser, width=1024)
    for w in (one, two):
        w.page.goto(url)
        open_from_search(w.page, "lines")
    drag_select(one.page, text, "twelve dollars")
    one.page.keyboard.press("1")
    one.page.keyboard.press("s")
    one.page.locator(".label-status.ok").wait_for()
    drag_select(two.page, text, "exit row")
    two.page.keyboard.press("2")
    two.page.keyboard.press("Enter")
    conflict = two.page.locator(".conflict")
    conflict.wait_for(state="visible")
    assert "twelve dollars" in conflict.inner_text() and "exit row" in conflict.inner_text()
    two.page.locator(".take-stored").click()
    two.page.locator(".label-status.ok", has_text="stored label").wait_for()
    assert two.page.locator(".span-item .span-text").all_inner_texts() == ["twelve dollars"]
    # typed, not saved, reloaded: the answer is still there
    answer = two.page.locator("textarea[name=answer]")
    answer.fill("Twelve dollars, on the exit row.")
    two.page.reload()
    two.page.locator(".label-doc .doc-text mark.span").first.wait_for()
    assert two.page.locator("textarea[name=answer]").input_value() == (
        "Twelve dollars, on the exit row."
    )
    snap(two.page, shots / "label-1024.png", 1024)
    # the one failed request is the refused save: its 409 is the conflict the page showed
    save_url = f"{server}/label/review/item/{ids['q-lines']}"
    assert two.failed == [save_url]
    assert [e for e in two.errors() if "409 (Conflict)" not in e and e != save_url] == []
    assert one.errors() == []
    for w in (one, two):
        assert w.csp_violations() == [] and w.dialogs == []
        w.close()


def test_agreement_and_disagreement_pages(
    browser: Any, server: str, store: Store, shots: Path, tmp_path: Path
) -> None:
    ids = item_ids(store, "review")
    w = Watch(browser, width=1440)
    page = w.page
    page.goto(f"{server}/label/review/agreement")
    page.locator(".agreement-cards").wait_for()
    snap(page, shots / "label-agreement.png", 1440)
    page.locator(f'a[href="/label/review/disagreement/{ids["q-ascii"]}"]').click()
    page.locator("mark.who.ab").first.wait_for()
    assert page.locator("mark.who.b").count() >= 1
    snap(page, shots / "label-disagreement.png", 1440)
    page.locator("input[name=take][value=bob]").check()
    page.locator(".resolve-form button[type=submit]").click()
    page.locator(".resolved", has_text="Resolved by").wait_for()
    # at 1024 pixels too (looked at; the documentation keeps the 1440 ones)
    page.set_viewport_size({"width": 1024, "height": 900})
    for name, url, ready in (
        ("queues", "/label", "table.label-queues"),
        ("agreement", "/label/review/agreement", ".agreement-cards"),
        ("disagreement", f"/label/review/disagreement/{ids['q-cjk']}", "mark.who"),
    ):
        page.goto(server + url)
        page.locator(ready).first.wait_for()
        snap(page, tmp_path / f"label-{name}-1024.png", 1024)
    assert w.errors() == [] and w.csp_violations() == [] and w.dialogs == []
    w.close()


def test_hostile_question_and_document_stay_inert(browser: Any, server: str, store: Store) -> None:
    ids = item_ids(store, "review")
    w = Watch(browser)
    page = w.page
    page.goto(f"{server}/label/review/item/{ids['q-xss']}")
    assert page.locator("h1.question").inner_text() == XSS_QUESTION
    page.locator("input[name=q]").fill("change fee seventy five")
    open_from_search(page, "doc-script")
    assert "<script>alert(1)</script>" in page.locator(".label-doc .doc-text").inner_text()
    assert "<script>" in page.locator(".search-results").inner_text()
    assert (
        page.locator(".label-doc script, .search-results script, .search-results img").count() == 0
    )
    page.goto(f"{server}/label/review/disagreement/{ids['q-xss']}")
    page.goto(f"{server}/label/review/agreement")
    assert w.errors() == [] and w.csp_violations() == [] and w.dialogs == []
    w.close()


@pytest.fixture(scope="module")
def label_page(browser: Any, server: str, store: Store) -> Iterator[Any]:
    w = Watch(browser)
    w.page.goto(f"{server}/label/review/item/{item_ids(store, 'review')['q-ascii']}")
    yield w.page
    w.close()


@settings(max_examples=40)
@given(
    st.lists(
        st.tuples(
            st.text(st.characters(exclude_categories=["Cs"]), max_size=30),
            st.integers(min_value=0, max_value=35),
        ),
        min_size=1,
        max_size=10,
    )
)
def test_code_points_and_utf16_offsets_convert_both_ways(
    label_page: Any, cases: list[tuple[str, int]]
) -> None:
    """label.js's conversions, over generated text (astral characters included): the UTF-16
    index of code point ``cp`` is Python's, and converts back to ``cp``."""
    got = label_page.evaluate(
        "cases => cases.map(([t, cp]) => { const L = window.ragmeterLabel;"
        " const u = L.u16At(t, cp); return [u, L.cpAt(t, u)]; })",
        [[t, cp] for t, cp in cases],
    )
    for (text, cp), (u, back) in zip(cases, got, strict=True):
        cp = min(cp, len(text))
        assert u == u16(text[:cp])
        assert back == cp


def test_skip_saves_a_skip_and_moves_on(browser: Any, server: str, store: Store) -> None:
    ids = item_ids(store, "review")
    w = Watch(browser)
    page = w.page
    page.goto(f"{server}/label/review/item/{ids['q-emoji']}")
    page.locator(".label-status", has_text="not saved yet").wait_for()
    page.keyboard.press("k")
    page.wait_for_url(lambda url: f"/item/{ids['q-emoji']}" not in url)
    (mine,) = [lb for lb in store.labels(item_id=ids["q-emoji"]) if lb.labeller == "ann"]
    assert mine.payload["skipped"] is True and mine.payload["spans"] == []
    # the list shows it, to come back to
    assert "skipped" in page.locator("table.label-mine").inner_text()
    assert w.errors() == [] and w.csp_violations() == [] and w.dialogs == []
    w.close()


def test_an_overlapping_selection_is_refused_and_dropped(
    browser: Any, server: str, store: Store
) -> None:
    ids = item_ids(store, "scratch")
    text = next(d.text for d in DOCS if d.id == "ascii")
    w = Watch(browser)
    page = w.page
    page.goto(f"{server}/label/scratch/item/{ids['q-ascii']}")
    open_from_search(page, "ascii")
    drag_select(page, text, "seventy five")
    page.keyboard.press("2")
    page.locator(".span-item:not(.pending)").first.wait_for()
    drag_select(page, text, "five dollars")  # overlaps the span just marked
    page.keyboard.press("1")
    page.locator(".label-status.error", has_text="overlaps").wait_for()
    assert page.locator(".span-item.pending").count() == 1
    page.keyboard.press("Escape")
    page.locator(".label-status", has_text="selection dropped").wait_for()
    assert page.locator(".span-item.pending").count() == 0
    assert page.locator(".span-item").count() == 1
    page.keyboard.press("s")
    page.locator(".label-status.ok", has_text="saved (revision").wait_for()
    (saved,) = store.labels(item_id=ids["q-ascii"])
    assert [x["text"] for x in saved.payload["spans"]] == ["seventy five"]
    assert w.errors() == [] and w.csp_violations() == [] and w.dialogs == []
    w.close()
