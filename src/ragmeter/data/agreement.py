"""Do two labellers agree on the evidence? Character overlap of spans and agreement on grades.

A golden set is only as good as its labels; the RAG evaluation lesson asks that two labellers
label part of it and that their agreement is recorded and their disagreements read. Two
labellers' files are golden sets over the same questions (same ids). Definitions:

- **characters**: a labeller's evidence for a question is the set of (document id, offset)
  pairs covered by its spans. ``A`` is the first file and is taken as the reference:
  ``precision = |A ∩ B| / |B|`` (share of B's characters that A labelled too),
  ``recall = |A ∩ B| / |A|`` (share of A's characters that B found),
  ``F1 = 2 |A ∩ B| / (|A| + |B|)`` (symmetric: swapping the files swaps precision and recall and
  keeps F1). A question neither labeller found evidence for (both marked it unanswerable)
  agrees fully: precision = recall = F1 = 1. When only one labeller found evidence, F1 = 0 and
  the precision (or recall) that divides by an empty set is undefined (``None``).
- **micro** figures sum the character counts over all questions both files have; **macro F1**
  is the mean of the per-question F1.
- **grades**: one rated item per *overlapping span pair*: a span of A and a span of B on the
  same document of the same question that share at least one character give the pair
  (A's grade, B's grade). A span overlapping two spans of the other labeller counts twice;
  spans with no counterpart are not graded (the character overlap already counts them).
  Cohen's kappa is ``1 - sum(w * O) / sum(w * E)`` over the grade categories seen, with ``O``
  the observed and ``E`` the chance (product of marginals) joint shares, and the disagreement
  weight ``w`` = 1 off the diagonal (unweighted), ``|g_a - g_b|`` (linear) or
  ``(g_a - g_b) ** 2`` (quadratic), using the grade values themselves (with grades 1..K this
  equals the usual index weights). When chance disagreement is 0 (both labellers gave every
  pair the same single grade) kappa is 1.0, as in ``ragmeter judge validate``; with no pair it
  is ``None``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .._errors import UsageError
from ._schema import Evidence, Question

if TYPE_CHECKING:  # pragma: no cover
    from .corpus import Corpus
    from .golden import GoldenSet

Weights = Literal["none", "linear", "quadratic"]
#: who found evidence for a question: both, neither, only the first file, only the second.
Found = Literal["both", "neither", "only_a", "only_b"]


def weighted_kappa(pairs: Iterable[tuple[int, int]], weights: Weights = "none") -> float | None:
    """Cohen's kappa of ``(grade_a, grade_b)`` pairs; ``None`` without pairs (module docstring)."""
    counts = Counter(pairs)
    n = sum(counts.values())
    if n == 0:
        return None
    rows = Counter[int]()
    cols = Counter[int]()
    for (a, b), c in counts.items():
        rows[a] += c
        cols[b] += c
    observed = sum(_weight(a, b, weights) * c for (a, b), c in counts.items()) / n
    chance = sum(
        _weight(a, b, weights) * ra * cb for a, ra in rows.items() for b, cb in cols.items()
    ) / (n * n)
    if chance == 0:
        return 1.0  # one grade used by both labellers for every pair: no disagreement possible
    return 1.0 - observed / chance


def _weight(a: int, b: int, weights: Weights) -> float:
    if weights == "none":
        return 0.0 if a == b else 1.0
    if weights == "linear":
        return float(abs(a - b))
    if weights == "quadratic":
        return float((a - b) ** 2)
    raise UsageError(f"weights must be 'none', 'linear' or 'quadratic', got {weights!r}")


def _merged(spans: Iterable[Evidence]) -> dict[str, list[tuple[int, int]]]:
    """Document id → its spans' intervals, sorted and merged (so no character counts twice)."""
    by_doc: dict[str, list[tuple[int, int]]] = {}
    for ev in spans:
        if ev.end > ev.start:
            by_doc.setdefault(ev.doc, []).append((ev.start, ev.end))
    for doc, intervals in by_doc.items():
        intervals.sort()
        out: list[tuple[int, int]] = []
        for s, e in intervals:
            if out and s <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], e))
            else:
                out.append((s, e))
        by_doc[doc] = out
    return by_doc


def _size(by_doc: dict[str, list[tuple[int, int]]]) -> int:
    return sum(e - s for intervals in by_doc.values() for s, e in intervals)


def _common(a: dict[str, list[tuple[int, int]]], b: dict[str, list[tuple[int, int]]]) -> int:
    """Characters in both merged interval sets (a two-pointer sweep per shared document)."""
    total = 0
    for doc in a.keys() & b.keys():
        xs, ys = a[doc], b[doc]
        i = j = 0
        while i < len(xs) and j < len(ys):
            lo, hi = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
            total += max(0, hi - lo)
            if xs[i][1] < ys[j][1]:
                i += 1
            else:
                j += 1
    return total


def _grade_pairs(a: Sequence[Evidence], b: Sequence[Evidence]) -> list[tuple[int, int]]:
    """(A's grade, B's grade) for every span pair on one document sharing a character."""
    return [
        (x.grade, y.grade)
        for x in a
        for y in b
        if x.doc == y.doc and max(x.start, y.start) < min(x.end, y.end)
    ]


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


@dataclass(frozen=True)
class QuestionAgreement:
    """Character overlap of the two labellers' spans on one question (``A`` is the reference)."""

    question: str
    chars_a: int
    chars_b: int
    chars_both: int
    spans_a: tuple[Evidence, ...]
    spans_b: tuple[Evidence, ...]
    grade_pairs: tuple[tuple[int, int], ...]

    @property
    def found(self) -> Found:
        if self.chars_a and self.chars_b:
            return "both"
        if self.chars_a:
            return "only_a"
        return "only_b" if self.chars_b else "neither"

    @property
    def precision(self) -> float | None:
        return 1.0 if self.found == "neither" else _ratio(self.chars_both, self.chars_b)

    @property
    def recall(self) -> float | None:
        return 1.0 if self.found == "neither" else _ratio(self.chars_both, self.chars_a)

    @property
    def f1(self) -> float:
        if self.found == "neither":
            return 1.0
        return 2 * self.chars_both / (self.chars_a + self.chars_b)

    @property
    def grade_mismatches(self) -> int:
        """Overlapping span pairs whose two grades differ."""
        return sum(a != b for a, b in self.grade_pairs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "found": self.found,
            "chars_a": self.chars_a,
            "chars_b": self.chars_b,
            "chars_both": self.chars_both,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "grade_pairs": [list(p) for p in self.grade_pairs],
        }


@dataclass(frozen=True)
class LabelAgreement:
    """Agreement of two labellers' golden files; see the module docstring for definitions."""

    source_a: str | None
    source_b: str | None
    questions: tuple[QuestionAgreement, ...]
    only_in_a: tuple[str, ...] = ()
    only_in_b: tuple[str, ...] = ()
    #: ids whose question text differs between the files (different golden versions?).
    text_differs: tuple[str, ...] = ()
    by_id: dict[str, QuestionAgreement] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_id", {q.question: q for q in self.questions})

    # --- characters ---------------------------------------------------------------------------
    @property
    def chars_a(self) -> int:
        return sum(q.chars_a for q in self.questions)

    @property
    def chars_b(self) -> int:
        return sum(q.chars_b for q in self.questions)

    @property
    def chars_both(self) -> int:
        return sum(q.chars_both for q in self.questions)

    @property
    def precision(self) -> float | None:
        """Micro precision (A as reference): ``sum |A ∩ B| / sum |B|``."""
        return _ratio(self.chars_both, self.chars_b)

    @property
    def recall(self) -> float | None:
        """Micro recall (A as reference): ``sum |A ∩ B| / sum |A|``."""
        return _ratio(self.chars_both, self.chars_a)

    @property
    def f1(self) -> float | None:
        """Micro F1: ``2 sum |A ∩ B| / (sum |A| + sum |B|)``; ``None`` when nobody labelled."""
        return _ratio(2 * self.chars_both, self.chars_a + self.chars_b)

    @property
    def macro_f1(self) -> float | None:
        """Mean per-question F1 (a question neither labeller found evidence for counts 1)."""
        if not self.questions:
            return None
        return math.fsum(q.f1 for q in self.questions) / len(self.questions)

    def count(self, found: Found) -> int:
        return sum(q.found == found for q in self.questions)

    @property
    def evidence_mismatch(self) -> list[QuestionAgreement]:
        """Questions where one labeller found evidence and the other none, in file order."""
        return [q for q in self.questions if q.found in ("only_a", "only_b")]

    # --- grades -------------------------------------------------------------------------------
    @property
    def grade_pairs(self) -> list[tuple[int, int]]:
        return [p for q in self.questions for p in q.grade_pairs]

    @property
    def grade_confusion(self) -> dict[tuple[int, int], int]:
        """(A's grade, B's grade) → number of overlapping span pairs, sorted."""
        return dict(sorted(Counter(self.grade_pairs).items()))

    @property
    def grade_agreement(self) -> float | None:
        """Share of overlapping span pairs with the same grade."""
        pairs = self.grade_pairs
        return _ratio(sum(a == b for a, b in pairs), len(pairs))

    def kappa(self, weights: Weights = "none") -> float | None:
        return weighted_kappa(self.grade_pairs, weights)

    # --- reading the disagreements ------------------------------------------------------------
    def worst(self, n: int | None = 10) -> list[QuestionAgreement]:
        """The ``n`` worst disagreements to adjudicate: questions whose characters differ
        (F1 < 1) or whose overlapping spans got different grades; F1 ascending, then more
        grade mismatches first, then question id."""
        bad = sorted(
            (q for q in self.questions if q.f1 < 1.0 or q.grade_mismatches),
            key=lambda q: (q.f1, -q.grade_mismatches, q.question),
        )
        return bad if n is None else bad[:n]

    def to_dict(self, corpus: Corpus | None = None, worst: int | None = 10) -> dict[str, Any]:
        return {
            "a": self.source_a,
            "b": self.source_b,
            "reference": "a",
            "questions": len(self.questions),
            "found": {k: self.count(k) for k in ("both", "neither", "only_a", "only_b")},
            "only_in_a": list(self.only_in_a),
            "only_in_b": list(self.only_in_b),
            "text_differs": list(self.text_differs),
            "chars": {"a": self.chars_a, "b": self.chars_b, "both": self.chars_both},
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "macro_f1": self.macro_f1,
            "grades": {
                "pairs": len(self.grade_pairs),
                "agreement": self.grade_agreement,
                "kappa": self.kappa("none"),
                "kappa_linear": self.kappa("linear"),
                "kappa_quadratic": self.kappa("quadratic"),
                "confusion": [
                    {"a": a, "b": b, "pairs": c} for (a, b), c in self.grade_confusion.items()
                ],
            },
            "evidence_mismatch": [
                {"question": q.question, "found": q.found} for q in self.evidence_mismatch
            ],
            "worst": [
                {
                    **q.to_dict(),
                    "spans_a": [span_view(ev, corpus) for ev in q.spans_a],
                    "spans_b": [span_view(ev, corpus) for ev in q.spans_b],
                }
                for q in self.worst(worst)
            ],
            "per_question": [q.to_dict() for q in self.questions],
        }


def span_view(ev: Evidence, corpus: Corpus | None = None) -> dict[str, Any]:
    """A span with its text: from the corpus when given, else the text recorded in the label."""
    text = ev.text
    if corpus is not None:
        doc = corpus.get(ev.doc)
        if doc is not None and ev.end <= len(doc.text):
            text = doc.text[ev.start : ev.end]
    return {"doc": ev.doc, "start": ev.start, "end": ev.end, "grade": ev.grade, "text": text}


def question_agreement(a: Question, b: Question) -> QuestionAgreement:
    """Character overlap and overlapping-span grade pairs of one question labelled twice."""
    ma, mb = _merged(a.evidence), _merged(b.evidence)
    return QuestionAgreement(
        a.id,
        _size(ma),
        _size(mb),
        _common(ma, mb),
        tuple(a.evidence),
        tuple(b.evidence),
        tuple(_grade_pairs(a.evidence, b.evidence)),
    )


def label_agreement(a: GoldenSet, b: GoldenSet) -> LabelAgreement:
    """Compare two labellers' golden sets question by question (ids matched; A's order kept).

    Questions only one file has are listed (``only_in_a`` / ``only_in_b``) and left out of
    every figure; ids whose question text differs are listed in ``text_differs``.
    """
    both = [q for q in a.questions if q.id in b]
    return LabelAgreement(
        source_a=a.source,
        source_b=b.source,
        questions=tuple(question_agreement(q, b[q.id]) for q in both),
        only_in_a=tuple(q.id for q in a.questions if q.id not in b),
        only_in_b=tuple(q.id for q in b.questions if q.id not in a),
        text_differs=tuple(q.id for q in both if q.question != b[q.id].question),
    )
