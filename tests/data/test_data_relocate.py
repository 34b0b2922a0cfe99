"""relocate: exact moves, whitespace-normalised moves, and spans it must keep and report."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.data import Corpus, Document, Evidence, GoldenSet, Question, relocate, validate_golden

OLD = (
    "Refund rules.\nFlex fares are refundable up to 24 hours before departure.\nTaxes are refunded."
)


def _golden(*spans: Evidence, qid: str = "q") -> GoldenSet:
    return GoldenSet([Question(id=qid, question="?", evidence=list(spans))])


def _span(text: str, doc_text: str = OLD, doc: str = "d", **kw: object) -> Evidence:
    start = doc_text.index(text)
    return Evidence(doc=doc, start=start, end=start + len(text), grade=2, text=text, **kw)


def _corpus(text: str, doc: str = "d") -> Corpus:
    return Corpus([Document(id=doc, text=text)])


def test_unchanged_spans_are_counted_and_kept() -> None:
    golden = _golden(_span("Taxes are refunded."))
    report = relocate(golden, _corpus(OLD))
    assert report.ok and report.unchanged == 1 and not report.moved
    assert report.golden.questions == golden.questions


def test_exact_move_after_an_insertion() -> None:
    span = _span("up to 24 hours before departure")
    new = "Refund rules (2025 edition).\n" + OLD[len("Refund rules.\n") :]
    corpus = _corpus(new)
    assert validate_golden(_golden(span), corpus)  # stale before relocation
    report = relocate(_golden(span, qid="q"), corpus)
    assert report.ok, report.unresolved
    [moved] = report.moved
    ev = report.golden["q"].evidence[0]
    assert moved.method == "exact" and moved.old == (span.start, span.end)
    assert moved.new == (ev.start, ev.end) and new[ev.start : ev.end] == span.text
    assert ev.text == span.text and ev.grade == 2
    assert validate_golden(report.golden, corpus) == []


def test_exact_move_takes_the_occurrence_nearest_the_old_offset() -> None:
    old = "fee. " * 3 + "The change fee is 75 EUR. " + "fee. " * 3
    start = old.index("change fee") + len("change ")  # the 'fee' inside the middle sentence
    span = Evidence(doc="d", start=start, end=start + 3, text="fee")
    new = "X" + old  # every occurrence shifts by one
    report = relocate(_golden(span), _corpus(new))
    [moved] = report.moved
    assert moved.new == (span.start + 1, span.end + 1) and moved.candidates == 7


def test_whitespace_normalised_move_maps_offsets_back() -> None:
    span = _span("Flex fares are refundable up to 24 hours before departure.")
    new = "Refund rules.\n\nFlex fares are refundable\n   up to 24  hours\tbefore departure.\n"
    report = relocate(_golden(span), _corpus(new))
    assert report.ok, (report.unresolved, report.problems)
    [moved] = report.moved
    ev = report.golden["q"].evidence[0]
    assert moved.method == "whitespace"
    assert (
        new[ev.start : ev.end] == "Flex fares are refundable\n   up to 24  hours\tbefore departure."
    )
    assert ev.text == new[ev.start : ev.end]
    assert validate_golden(report.golden, _corpus(new)) == []


def test_span_text_with_outer_whitespace_still_re_anchors() -> None:
    span = _span("\nTaxes are refunded.")
    new = "Intro.\n\nTaxes  are refunded."
    report = relocate(_golden(span), _corpus(new))
    ev = report.golden["q"].evidence[0]
    assert new[ev.start : ev.end] == "Taxes  are refunded."


def test_unresolvable_spans_are_kept_and_listed() -> None:
    gone = _span("Taxes are refunded.")
    ok = _span("Refund rules.")
    no_doc = Evidence(doc="other", start=0, end=4, grade=1, text="Some")
    no_text = Evidence(doc="d", start=20, end=200, grade=1)
    golden = GoldenSet(
        [
            Question(id="a", question="?", evidence=[ok, gone]),
            Question(id="b", question="?", evidence=[no_doc]),
            Question(id="c", question="?", evidence=[no_text]),
        ]
    )
    new = "Refund rules.\nFlex fares are refundable up to 24 hours before departure."
    report = relocate(golden, _corpus(new))
    assert not report.ok
    reasons = {(u.question, u.index): u.reason for u in report.unresolved}
    assert reasons.keys() == {("a", 1), ("b", 0), ("c", 0)}
    assert "not found" in reasons["a", 1] and "not in the corpus" in reasons["b", 0]
    assert "no text recorded" in reasons["c", 0]
    assert report.golden.questions == golden.questions  # nothing dropped or changed
    assert report.unchanged == 1
    assert "3 not re-anchored" in report.summary()


def test_spans_without_text_in_bounds_are_unchecked() -> None:
    report = relocate(_golden(Evidence(doc="d", start=0, end=6)), _corpus(OLD))
    assert report.ok and report.unchecked == 1


def test_relocation_that_creates_an_overlap_is_reported() -> None:
    old = "A: 24 hours. B: hours before departure."
    a, b = _span("24 hours", doc_text=old), _span("hours before", doc_text=old)
    new = "24 hours before departure."
    report = relocate(_golden(a, b), _corpus(new))
    assert not report.unresolved and len(report.moved) == 2
    assert [p.field for p in report.problems] == ["evidence[1]"]
    assert not report.ok


@settings(max_examples=60, deadline=None)
@given(prefix=st.text(max_size=30), suffix=st.text(max_size=30), cut=st.integers(0, 60))
def test_any_insertion_outside_the_span_is_repaired_exactly(
    prefix: str, suffix: str, cut: int
) -> None:
    text = "Infants under 2 years pay 10% of the adult fare."
    span = _span("10% of the adult fare", doc_text=text)
    cut = min(cut, span.start)
    new = text[:cut] + prefix + text[cut:] + suffix
    report = relocate(_golden(span), _corpus(new))
    ev = report.golden["q"].evidence[0]
    assert new[ev.start : ev.end] == span.text
    assert report.unresolved == []
