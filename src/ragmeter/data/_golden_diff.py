"""What changed between two golden sets: questions added, removed and changed, spans added,
removed and moved, grades and required flags changed (``ragmeter golden diff``).

Pure: two :class:`GoldenSet` in, one :class:`GoldenDiff` out; nothing is read or written.

How spans of a question in both sets are paired (docs/golden.md says the same):

1. a span of A and a span of B with the same document and offsets are the same span (its grade,
   required flag and recorded text are compared);
2. among the spans left, a span of A and one of B on the same document whose characters overlap
   are the same span *moved* (old → new offsets); when several overlap, the pairs with the most
   shared characters are taken first (a rule that does not depend on which set is A, so the
   spans B adds are exactly the spans A removes when the two are swapped);
3. whatever is left in A was removed, whatever is left in B was added.

Every difference of two questions' records lands in one of the lists, so a question is
*changed* exactly when its record differs (the version digest sees the same records); the order
of the spans inside a question counts (the version digest sees it too), reported as
``spans_reordered``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ._golden_set import GoldenSet, golden_version_of
from ._schema import Evidence, Question
from .corpus import Corpus

__all__ = [
    "FIELDS",
    "DiffSide",
    "FieldChange",
    "GoldenDiff",
    "QuestionChange",
    "QuestionRef",
    "SpanChange",
    "SpanMove",
    "SpanRef",
    "golden_diff",
]

#: the question fields compared one by one (evidence is compared span by span); a field the
#: schema gains later is compared too, after these
FIELDS = ("question", "answer", "answerable", "slices", "split")


def _fields() -> tuple[str, ...]:
    later = (f for f in Question.model_fields if f not in (*FIELDS, "id", "evidence"))
    return (*FIELDS, *later)


@dataclass(frozen=True)
class DiffSide:
    """One side of a diff: where it came from, its version and the parent its lock records."""

    name: str
    version: str | None = None
    parent: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "parent": self.parent}


@dataclass(frozen=True)
class SpanRef:
    """A span as the diff shows it; ``text`` is the document's text when the set has its
    corpus, else the text recorded in the label (None when neither)."""

    doc: str
    start: int
    end: int
    grade: int
    required: bool | None
    text: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "doc": self.doc,
            "start": self.start,
            "end": self.end,
            "grade": self.grade,
            "required": self.required,
            "text": self.text,
        }


@dataclass(frozen=True)
class SpanMove:
    """A span whose offsets changed on the same document (its old and new characters overlap)."""

    doc: str
    old: tuple[int, int]
    new: tuple[int, int]
    old_text: str | None
    new_text: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "doc": self.doc,
            "old": list(self.old),
            "new": list(self.new),
            "old_text": self.old_text,
            "new_text": self.new_text,
        }


@dataclass(frozen=True)
class SpanChange:
    """One attribute of a span in both sets that changed (offsets are B's)."""

    doc: str
    start: int
    end: int
    old: Any
    new: Any

    def to_dict(self) -> dict[str, Any]:
        return {
            "doc": self.doc,
            "start": self.start,
            "end": self.end,
            "old": self.old,
            "new": self.new,
        }


@dataclass(frozen=True)
class FieldChange:
    """A question field (:data:`FIELDS`, or one the schema gained) with its value in A and B."""

    field: str
    old: Any
    new: Any

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "old": self.old, "new": self.new}


@dataclass(frozen=True)
class QuestionChange:
    """A question in both sets whose record differs; ``question`` is its text in B."""

    id: str
    question: str
    fields: tuple[FieldChange, ...] = ()
    spans_added: tuple[SpanRef, ...] = ()
    spans_removed: tuple[SpanRef, ...] = ()
    spans_moved: tuple[SpanMove, ...] = ()
    grades_changed: tuple[SpanChange, ...] = ()
    required_changed: tuple[SpanChange, ...] = ()
    texts_changed: tuple[SpanChange, ...] = ()
    spans_reordered: bool = False

    def field_change(self, name: str) -> FieldChange | None:
        return next((f for f in self.fields if f.field == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "question": self.question,
            "fields": {f.field: {"old": f.old, "new": f.new} for f in self.fields},
            "spans_added": [s.to_dict() for s in self.spans_added],
            "spans_removed": [s.to_dict() for s in self.spans_removed],
            "spans_moved": [m.to_dict() for m in self.spans_moved],
            "grades_changed": [c.to_dict() for c in self.grades_changed],
            "required_changed": [c.to_dict() for c in self.required_changed],
            "texts_changed": [c.to_dict() for c in self.texts_changed],
            "spans_reordered": self.spans_reordered,
        }


@dataclass(frozen=True)
class QuestionRef:
    """A question only one set holds: its id, text and a count of its labels."""

    id: str
    question: str
    spans: int
    answerable: bool
    split: str
    slices: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "question": self.question,
            "spans": self.spans,
            "answerable": self.answerable,
            "split": self.split,
            "slices": list(self.slices),
        }


@dataclass(frozen=True)
class GoldenDiff:
    """What changed from golden set A to golden set B (:func:`golden_diff`).

    ``added``/``removed``: questions only in B / only in A (B's and A's file order);
    ``changed``: questions in both whose records differ (B's order); ``unchanged``: how many
    questions are the same; ``documents_changed``: documents the spans point at whose text
    differs between A's and B's corpora (both needed; else empty)."""

    a: DiffSide
    b: DiffSide
    added: tuple[QuestionRef, ...]
    removed: tuple[QuestionRef, ...]
    changed: tuple[QuestionChange, ...]
    unchanged: int
    documents_changed: tuple[str, ...] = field(default=())

    @property
    def empty(self) -> bool:
        """True when the two sets hold the same questions and labels."""
        return not (self.added or self.removed or self.changed or self.documents_changed)

    @property
    def lineage(self) -> str | None:
        """``"b-from-a"`` when B's lock names A as its parent, ``"a-from-b"`` the other way."""
        if self.b.parent is not None and self.b.parent == self.a.version:
            return "b-from-a"
        if self.a.parent is not None and self.a.parent == self.b.version:
            return "a-from-b"
        return None

    def summary(self) -> dict[str, int]:
        """Counts of every kind of change (span counts are over the questions in both)."""
        ch = self.changed

        def fields(name: str) -> int:
            return sum(1 for q in ch if q.field_change(name) is not None)

        return {
            "questions_added": len(self.added),
            "questions_removed": len(self.removed),
            "questions_changed": len(ch),
            "questions_unchanged": self.unchanged,
            "question_text_changed": fields("question"),
            "answer_changed": fields("answer"),
            "answerable_changed": fields("answerable"),
            "slices_changed": fields("slices"),
            "split_changed": fields("split"),
            "spans_added": sum(len(q.spans_added) for q in ch),
            "spans_removed": sum(len(q.spans_removed) for q in ch),
            "spans_moved": sum(len(q.spans_moved) for q in ch),
            "grades_changed": sum(len(q.grades_changed) for q in ch),
            "required_changed": sum(len(q.required_changed) for q in ch),
            "span_texts_changed": sum(len(q.texts_changed) for q in ch),
            "spans_reordered": sum(1 for q in ch if q.spans_reordered),
            "documents_changed": len(self.documents_changed),
        }

    def to_dict(self) -> dict[str, Any]:
        """``ragmeter golden diff --format json``."""
        return {
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "lineage": self.lineage,
            "empty": self.empty,
            "summary": self.summary(),
            "added": [q.to_dict() for q in self.added],
            "removed": [q.to_dict() for q in self.removed],
            "changed": [q.to_dict() for q in self.changed],
            "documents_changed": list(self.documents_changed),
        }


# --- the diff ------------------------------------------------------------------------------------
def golden_diff(
    a: GoldenSet,
    b: GoldenSet,
    *,
    side_a: DiffSide | None = None,
    side_b: DiffSide | None = None,
) -> GoldenDiff:
    """What changed from ``a`` to ``b``. The sets' corpora (when attached) give the spans'
    text and the documents whose text changed; ``side_a``/``side_b`` name the sides (default:
    the sets' sources and versions, no parent)."""
    side_a = side_a or _side(a, "A")
    side_b = side_b or _side(b, "B")
    added = tuple(_ref(q) for q in b if q.id not in a)
    removed = tuple(_ref(q) for q in a if q.id not in b)
    changed: list[QuestionChange] = []
    unchanged = 0
    for qb in b:
        if qb.id not in a:
            continue
        qa = a[qb.id]
        if qa == qb:
            unchanged += 1
        else:
            changed.append(_question_change(qa, qb, a.corpus, b.corpus))
    return GoldenDiff(
        a=side_a,
        b=side_b,
        added=added,
        removed=removed,
        changed=tuple(changed),
        unchanged=unchanged,
        documents_changed=_documents_changed(a, b),
    )


def _side(golden: GoldenSet, default: str) -> DiffSide:
    return DiffSide(golden.source or default, golden_version_of(golden))


def _ref(q: Question) -> QuestionRef:
    return QuestionRef(q.id, q.question, len(q.evidence), q.answerable, q.split, tuple(q.slices))


def _text(ev: Evidence, corpus: Corpus | None) -> str | None:
    if corpus is not None and ev.doc in corpus:
        text = corpus[ev.doc].text
        if ev.end <= len(text):
            return text[ev.start : ev.end]
    return ev.text


def _span(ev: Evidence, corpus: Corpus | None) -> SpanRef:
    return SpanRef(ev.doc, ev.start, ev.end, ev.grade, ev.required, _text(ev, corpus))


def _question_change(
    qa: Question, qb: Question, corpus_a: Corpus | None, corpus_b: Corpus | None
) -> QuestionChange:
    fields = tuple(
        FieldChange(name, _plain(getattr(qa, name)), _plain(getattr(qb, name)))
        for name in _fields()
        if getattr(qa, name) != getattr(qb, name)
    )
    ea, eb = qa.evidence, qb.evidence
    exact, moved, only_a, only_b = match_spans(ea, eb)
    grades: list[SpanChange] = []
    required: list[SpanChange] = []
    texts: list[SpanChange] = []
    for i, j in sorted(exact + moved, key=lambda p: p[1]):
        x, y = ea[i], eb[j]
        if x.grade != y.grade:
            grades.append(SpanChange(y.doc, y.start, y.end, x.grade, y.grade))
        if x.required != y.required:
            required.append(SpanChange(y.doc, y.start, y.end, x.required, y.required))
        if (i, j) in exact and x.text != y.text:
            texts.append(SpanChange(y.doc, y.start, y.end, x.text, y.text))
    moves = tuple(
        SpanMove(
            eb[j].doc,
            (ea[i].start, ea[i].end),
            (eb[j].start, eb[j].end),
            _text(ea[i], corpus_a),
            _text(eb[j], corpus_b),
        )
        for i, j in sorted(moved, key=lambda p: p[1])
    )
    order = [j for _, j in sorted(exact + moved)]
    return QuestionChange(
        id=qb.id,
        question=qb.question,
        fields=fields,
        spans_added=tuple(_span(eb[j], corpus_b) for j in only_b),
        spans_removed=tuple(_span(ea[i], corpus_a) for i in only_a),
        spans_moved=moves,
        grades_changed=tuple(grades),
        required_changed=tuple(required),
        texts_changed=tuple(texts),
        spans_reordered=order != sorted(order),
    )


def _documents_changed(a: GoldenSet, b: GoldenSet) -> tuple[str, ...]:
    """The documents either set's spans point at whose text differs in the two corpora."""
    ca, cb = a.corpus, b.corpus
    if ca is None or cb is None or ca is cb:
        return ()
    docs = sorted(set(a.doc_ids) | set(b.doc_ids))
    return tuple(
        d for d in docs if d in ca and d in cb and ca.content_hash(d) != cb.content_hash(d)
    )


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, (list, tuple)) else value


Pair = tuple[int, int]


def match_spans(
    a: Sequence[Evidence], b: Sequence[Evidence]
) -> tuple[list[Pair], list[Pair], list[int], list[int]]:
    """Pair the spans of one question in A and in B (the module docstring's rule): the
    ``(i, j)`` pairs with the same offsets, the moved pairs, then the indices left in A
    (removed) and in B (added), each in their set's order."""
    free_b: dict[tuple[str, int, int], list[int]] = defaultdict(list)
    for j, ev in enumerate(b):
        free_b[(ev.doc, ev.start, ev.end)].append(j)
    exact: list[Pair] = []
    left_a: list[int] = []
    for i, ev in enumerate(a):
        same = free_b.get((ev.doc, ev.start, ev.end))
        if same:
            exact.append((i, same.pop(0)))
        else:
            left_a.append(i)
    taken_b = {j for _, j in exact}
    left_b = [j for j in range(len(b)) if j not in taken_b]
    # overlapping leftovers on one document, most shared characters first; the key is the same
    # whichever set is A, so swapping the sets swaps the pairs
    candidates: list[tuple[Any, int, int]] = []
    for i in left_a:
        x = a[i]
        for j in left_b:
            y = b[j]
            shared = min(x.end, y.end) - max(x.start, y.start)
            if y.doc == x.doc and shared > 0:
                spans = sorted([(x.start, x.end), (y.start, y.end)])
                candidates.append(((-shared, x.doc, spans), i, j))
    candidates.sort(key=lambda c: (c[0], min(c[1], c[2]), max(c[1], c[2])))
    moved: list[Pair] = []
    used_a: set[int] = set()
    used_b: set[int] = set()
    for _, i, j in candidates:
        if i not in used_a and j not in used_b:
            moved.append((i, j))
            used_a.add(i)
            used_b.add(j)
    return (
        exact,
        moved,
        [i for i in left_a if i not in used_a],
        [j for j in left_b if j not in used_b],
    )
