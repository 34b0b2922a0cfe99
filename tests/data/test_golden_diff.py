"""``golden_diff``: what changed between two golden sets, and the parent a lock records.

Properties over generated sets: a set against itself is empty; swapping the sets swaps added
and removed (questions and spans); random edits (seeded, many seeds) are reported exactly, no
more and no less; a question is listed as changed exactly when its record differs.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter._errors import UsageError
from ragmeter.data import (
    Corpus,
    DiffSide,
    Document,
    Evidence,
    GoldenDiff,
    GoldenSet,
    Question,
    freeze,
    golden_diff,
    load_golden,
    read_lock,
)
from ragmeter.data._golden_diff import match_spans

LABELLERS = Path(__file__).parents[1] / "fixtures" / "labellers"
DOCS = 4
SLOTS = 10  # each document is cut into slots of WIDTH characters; a span lives inside one
WIDTH = 100


# --- the fixture's diff, by hand ------------------------------------------------------------
def test_the_labeller_fixtures_diff_as_read_by_hand() -> None:
    corpus = LABELLERS / "corpus.jsonl"
    a = load_golden(LABELLERS / "a.jsonl", corpus)
    b = load_golden(LABELLERS / "b.jsonl", corpus)
    d = golden_diff(a, b)
    assert [q.id for q in d.added] == ["q7"] and [q.id for q in d.removed] == ["q6"]
    assert [c.id for c in d.changed] == ["q1", "q2", "q4", "q5", "q8", "q9", "q10"]
    assert d.unchanged == 1 and not d.empty
    by_id = {c.id: c for c in d.changed}
    q1 = by_id["q1"]
    assert [(f.field, f.old, f.new) for f in q1.fields] == [
        ("question", "Can a Basic fare be changed?", "Can I change a Basic fare?")
    ]
    (m,) = q1.spans_moved
    assert (m.doc, m.old, m.new) == ("d1", (0, 30), (12, 30))
    assert (m.old_text, m.new_text) == ("Basic fares cannot be changed.", "cannot be changed.")
    q2 = by_id["q2"]
    assert [(s.doc, s.start, s.end) for s in q2.spans_removed] == [("d2", 0, 8)]
    assert [(g.doc, g.start, g.end, g.old, g.new) for g in q2.grades_changed] == [
        ("d1", 52, 67, 2, 1)
    ]
    assert by_id["q4"].field_change("answerable") is not None
    assert [(s.doc, s.start, s.end, s.grade) for s in by_id["q5"].spans_added] == [
        ("d2", 41, 67, 2)
    ]
    assert [(g.old, g.new) for g in by_id["q9"].grades_changed] == [(1, 3)]
    s = d.summary()
    assert s["questions_added"] == 1 and s["questions_removed"] == 1
    assert s["questions_changed"] == 7 and s["spans_moved"] == 4 and s["grades_changed"] == 3
    out = d.to_dict()
    assert json.loads(json.dumps(out)) == out  # JSON as it is
    assert out["a"]["version"] == a.version and out["b"]["version"] == b.version
    assert out["summary"] == s


def test_a_span_overlapping_two_is_paired_with_the_one_sharing_most() -> None:
    a = [_ev("d", 0, 10), _ev("d", 20, 40)]
    b = [_ev("d", 5, 30)]  # shares 5 characters with the first, 10 with the second
    exact, moved, only_a, only_b = match_spans(a, b)
    assert exact == [] and moved == [(1, 0)] and only_a == [0] and only_b == []
    assert match_spans(b, a)[1] == [(0, 1)]  # the same pair either way round


def test_recorded_text_required_and_order_changes_are_reported() -> None:
    qa = Question(
        id="q",
        question="?",
        evidence=[_ev("d", 0, 5, text="hello"), _ev("d", 10, 15, required=None)],
    )
    qb = Question(
        id="q",
        question="?",
        evidence=[_ev("d", 10, 15, required=True), _ev("d", 0, 5, text="HELLO")],
    )
    (c,) = golden_diff(GoldenSet([qa]), GoldenSet([qb])).changed
    assert [(t.old, t.new) for t in c.texts_changed] == [("hello", "HELLO")]
    assert [(r.start, r.old, r.new) for r in c.required_changed] == [(10, None, True)]
    assert c.spans_reordered and not c.spans_added and not c.spans_removed


def test_documents_whose_text_changed_are_named_with_both_corpora() -> None:
    q = Question(id="q", question="?", evidence=[_ev("d1", 0, 3)])
    old = Corpus([Document(id="d1", text="abc def"), Document(id="d2", text="x")])
    new = Corpus([Document(id="d1", text="abc deg"), Document(id="d2", text="y")])
    d = golden_diff(GoldenSet([q], corpus=old), GoldenSet([q], corpus=new))
    assert d.documents_changed == ("d1",) and not d.empty and not d.changed  # d2: no span
    assert golden_diff(GoldenSet([q], corpus=old), GoldenSet([q])).documents_changed == ()


def test_lineage_reads_the_parent_recorded_on_either_side() -> None:
    g = GoldenSet([Question(id="q", question="?", answerable=False)])
    v1, v2 = "g-111111111111", "g-222222222222"
    d = golden_diff(g, g, side_a=DiffSide("a", v1), side_b=DiffSide("b", v2, parent=v1))
    assert d.lineage == "b-from-a" and d.to_dict()["b"]["parent"] == v1
    swapped = golden_diff(g, g, side_a=DiffSide("b", v2, v1), side_b=DiffSide("a", v1))
    assert swapped.lineage == "a-from-b"
    assert golden_diff(g, g).lineage is None


# --- generated sets and edits ---------------------------------------------------------------------
def _ev(
    doc: str,
    start: int,
    end: int,
    grade: int = 1,
    required: bool | None = None,
    text: str | None = None,
) -> Evidence:
    return Evidence(doc=doc, start=start, end=end, grade=grade, required=required, text=text)


def _corpus(rng: random.Random) -> Corpus:
    letters = "abcdefghij é中😀\n"
    return Corpus(
        Document(id=f"d{i}", text="".join(rng.choice(letters) for _ in range(SLOTS * WIDTH)))
        for i in range(DOCS)
    )


def _slot_span(rng: random.Random, doc: int, slot: int) -> Evidence:
    """A span inside slot ``slot`` of document ``doc``, with room to move either way."""
    base = slot * WIDTH
    start = base + rng.randint(20, 40)
    end = start + rng.randint(10, 30)
    return _ev(f"d{doc}", start, end, rng.choice([1, 2]), rng.choice([None, True, False]))


def _slot_of(ev: Evidence) -> tuple[str, int]:
    return ev.doc, ev.start // WIDTH


def _question(rng: random.Random, qid: str) -> Question:
    answerable = rng.random() < 0.85
    slots = rng.sample([(d, s) for d in range(DOCS) for s in range(SLOTS)], rng.randint(1, 4))
    return Question(
        id=qid,
        question=f"question {qid} {rng.random():.6f}?",
        evidence=[_slot_span(rng, d, s) for d, s in slots] if answerable else [],
        answer=rng.choice([None, f"answer {rng.random():.4f}"]),
        answerable=answerable,
        slices=sorted(rng.sample(["fees", "bags", "pets", "seats"], rng.randint(0, 2))),
        split=rng.choice(["tune", "heldout"]),
    )


def _golden(rng: random.Random, n: int, corpus: Corpus | None = None) -> GoldenSet:
    return GoldenSet([_question(rng, f"q{i}") for i in range(n)], corpus=corpus)


def _key(ev: Evidence) -> tuple[Any, ...]:
    return ev.doc, ev.start, ev.end, ev.grade, ev.required


def _edit(rng: random.Random, q: Question) -> tuple[Question, dict[str, Any]]:
    """``q`` with 1-4 random edits, and exactly what a diff must report for them."""
    expect: dict[str, Any] = {
        "added": set(),
        "removed": set(),
        "moved": set(),
        "grades": set(),
        "required": set(),
    }
    fields: dict[str, Any] = {}
    spans = list(q.evidence)
    kept = list(range(len(spans)))  # positions of A's spans still in B, in B's order
    answerable = q.answerable
    kinds = ["question", "answer", "slices", "split", "answerable"]
    if answerable and spans:
        kinds += ["add", "remove", "move", "grade", "required", "reorder"] * 2
    chosen = rng.sample(kinds, rng.randint(1, min(4, len(kinds))))
    if "answerable" in chosen:  # labelled or unlabelled as a whole: no other span edit
        chosen = [k for k in chosen if k in ("question", "answer", "slices", "split", kinds[4])]
    for kind in chosen:
        if kind == "question":
            fields["question"] = q.question + " (reworded)"
        elif kind == "answer":
            fields["answer"] = "a new answer" if q.answer != "a new answer" else None
        elif kind == "slices":
            fields["slices"] = [*q.slices, "new-slice"]
        elif kind == "split":
            fields["split"] = "heldout" if q.split == "tune" else "tune"
        elif kind == "answerable" and not answerable:  # now labelled: its spans are added
            answerable = True
            spans, kept = [_slot_span(rng, 0, 0), _slot_span(rng, 1, 3)], [-1, -1]
        elif kind == "answerable":  # found to have no evidence: every span removed
            answerable = False
            spans, kept = [], []
        elif kind == "add":
            used = {_slot_of(e) for e in spans} | {_slot_of(e) for e in q.evidence}
            free = [(d, s) for d in range(DOCS) for s in range(SLOTS) if (f"d{d}", s) not in used]
            at = rng.randint(0, len(spans))
            spans.insert(at, _slot_span(rng, *rng.choice(free)))
            kept.insert(at, -1)  # not one of A's
        else:
            mine = [i for i, k in enumerate(kept) if k >= 0]
            if not mine or (kind == "reorder" and len(mine) < 2):
                continue
            if kind == "reorder":
                i, j = rng.sample(mine, 2)
                spans[i], spans[j] = spans[j], spans[i]
                kept[i], kept[j] = kept[j], kept[i]
                continue
            i = rng.choice(mine)
            ev = spans[i]
            if kind == "remove":
                del spans[i]
                del kept[i]
            elif kind == "move":
                delta = rng.choice([-8, -3, 3, 8])  # spans are 10+ long: they still overlap
                spans[i] = ev.model_copy(update={"start": ev.start + delta, "end": ev.end + delta})
            elif kind == "grade":
                spans[i] = ev.model_copy(update={"grade": 3 if ev.grade != 3 else 1})
            else:
                spans[i] = ev.model_copy(update={"required": not ev.required})
    new = q.model_copy(update={**fields, "evidence": spans, "answerable": answerable})
    new = Question.model_validate(new.model_dump())  # valid as a file line would be
    # what the edits add up to: A's spans by position, B's by position
    order = []
    for j, k in enumerate(kept):
        y = spans[j]
        if k < 0:
            expect["added"].add(_key(y))
            continue
        x = q.evidence[k]
        order.append(k)
        if (x.start, x.end) != (y.start, y.end):
            expect["moved"].add((x.doc, (x.start, x.end), (y.start, y.end)))
        if x.grade != y.grade:
            expect["grades"].add((y.doc, y.start, y.end, x.grade, y.grade))
        if x.required != y.required:
            expect["required"].add((y.doc, y.start, y.end, x.required, y.required))
    for k, x in enumerate(q.evidence):
        if k not in kept:
            expect["removed"].add(_key(x))
    expect["reordered"] = order != sorted(order)
    names = ("question", "answer", "answerable", "slices", "split")
    expect["fields"] = {f for f in names if getattr(q, f) != getattr(new, f)}
    return new, expect


def _reported(d: GoldenDiff, qid: str) -> dict[str, Any]:
    c = next(c for c in d.changed if c.id == qid)
    return {
        "fields": {f.field for f in c.fields},
        "added": {(s.doc, s.start, s.end, s.grade, s.required) for s in c.spans_added},
        "removed": {(s.doc, s.start, s.end, s.grade, s.required) for s in c.spans_removed},
        "moved": {(m.doc, m.old, m.new) for m in c.spans_moved},
        "grades": {(g.doc, g.start, g.end, g.old, g.new) for g in c.grades_changed},
        "required": {(r.doc, r.start, r.end, r.old, r.new) for r in c.required_changed},
        "reordered": c.spans_reordered,
    }


@pytest.mark.parametrize("seed", range(150))
def test_random_edits_are_reported_exactly(seed: int) -> None:
    rng = random.Random(seed)
    corpus = _corpus(rng) if seed % 5 == 0 else None  # the corpus only adds the spans' text
    a = _golden(rng, rng.randint(3, 12), corpus)
    questions = list(a)
    removed = set(rng.sample([q.id for q in questions], rng.randint(0, 2)))
    expected: dict[str, dict[str, Any]] = {}
    out: list[Question] = []
    for q in questions:
        if q.id in removed:
            continue
        if rng.random() < 0.6:
            new, expect = _edit(rng, q)
            if new != q:
                expected[q.id] = expect
            out.append(new)
        else:
            out.append(q)
    added = [_question(rng, f"new{i}") for i in range(rng.randint(0, 2))]
    for q in added:
        out.insert(rng.randint(0, len(out)), q)
    b = GoldenSet(out, corpus=corpus)
    d = golden_diff(a, b)
    assert {q.id for q in d.added} == {q.id for q in added}
    assert {q.id for q in d.removed} == removed
    assert {c.id for c in d.changed} == set(expected)
    assert d.unchanged == len(questions) - len(removed) - len(expected)
    for qid, expect in expected.items():
        assert _reported(d, qid) == expect, qid
    if corpus is not None:  # the text shown is the document's
        for c in d.changed:
            for s in c.spans_added:
                assert s.text == corpus[s.doc].text[s.start : s.end]


@settings(max_examples=60)
@given(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
def test_a_set_against_itself_is_empty_and_swapping_swaps(seed_a: int, seed_b: int) -> None:
    """Two unrelated generated sets over the same ids: every property of a diff's symmetry."""
    a = _golden(random.Random(seed_a), 6)
    b = _golden(random.Random(seed_b), 5)
    assert golden_diff(a, a).empty and golden_diff(a, a).summary()["questions_unchanged"] == 6
    ab, ba = golden_diff(a, b), golden_diff(b, a)
    assert ab.added == ba.removed and ab.removed == ba.added
    assert [c.id for c in ab.changed] == [q.id for q in b if q.id in a and a[q.id] != q]
    by_id = {c.id: c for c in ba.changed}
    for c in ab.changed:
        r = by_id[c.id]
        assert set(c.spans_added) == set(r.spans_removed)
        assert set(c.spans_removed) == set(r.spans_added)
        assert {(m.doc, m.old, m.new) for m in c.spans_moved} == {
            (m.doc, m.new, m.old) for m in r.spans_moved
        }
        assert len(c.grades_changed) == len(r.grades_changed)
        assert [(f.field, f.old, f.new) for f in c.fields] == [
            (f.field, f.new, f.old) for f in r.fields
        ]
        # a question listed as changed always says what changed
        assert (
            c.fields
            or c.spans_added
            or c.spans_removed
            or c.spans_moved
            or c.grades_changed
            or c.required_changed
            or c.texts_changed
            or c.spans_reordered
        )


# --- the parent a lock records --------------------------------------------------------------
@pytest.fixture()
def two(tmp_path: Path) -> tuple[Path, Path, Path]:
    for name in ("a.jsonl", "b.jsonl", "corpus.jsonl"):
        shutil.copy(LABELLERS / name, tmp_path / name)
    return tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "corpus.jsonl"


def test_freeze_records_the_parent_and_keeps_it_when_frozen_again(
    two: tuple[Path, Path, Path],
) -> None:
    a, b, corpus = two
    v1 = freeze(a, corpus).lock["version"]
    assert read_lock(a.with_suffix(".lock.json"))["parent"] is None
    done = freeze(b, corpus, parent=v1)
    assert done.written and done.lock["parent"] == v1
    assert read_lock(b.with_suffix(".lock.json"))["parent"] == v1
    again = freeze(b, corpus)  # no parent named: the recorded one stays
    assert not again.written and again.lock["parent"] == v1
    assert not freeze(b, corpus, parent=v1).written
    with pytest.raises(UsageError, match=r"with parent g-.*not g-000000000000"):
        freeze(b, corpus, parent="g-000000000000")  # another lineage: never silently
    assert freeze(b, corpus, parent="g-000000000000", force=True).lock["parent"] == (
        "g-000000000000"
    )


@pytest.mark.parametrize("bad", ["v1", "g-123", "g-XYZXYZXYZXYZ", "", "g-1234567890abc"])
def test_a_parent_that_is_not_a_version_is_refused(two: tuple[Path, Path, Path], bad: str) -> None:
    a, _, corpus = two
    with pytest.raises(UsageError, match="is not a golden-set version"):
        freeze(a, corpus, parent=bad)
    assert not a.with_suffix(".lock.json").exists()


def test_a_set_cannot_be_its_own_parent(two: tuple[Path, Path, Path]) -> None:
    a, _, corpus = two
    own = load_golden(a, corpus).version
    with pytest.raises(UsageError, match="its own parent"):
        freeze(a, corpus, parent=own)


def test_a_lock_written_before_lineage_still_loads(two: tuple[Path, Path, Path]) -> None:
    a, _, corpus = two
    lock = a.with_suffix(".lock.json")
    freeze(a, corpus)
    old = json.loads(lock.read_text())
    del old["parent"]
    lock.write_text(json.dumps(old))
    assert "parent" not in read_lock(lock)
    assert load_golden(a).version == old["version"]  # the lock still gives the version
    assert not freeze(a, corpus).written  # and is left as it was
    assert freeze(a, corpus, parent="g-000000000000", force=True).lock["parent"]
