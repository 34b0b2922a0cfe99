"""Re-anchor evidence spans after the corpus was edited.

A span whose recorded ``text`` no longer equals ``doc.text[start:end]`` is searched for in the
edited document:

1. exact: every occurrence of ``text``; the one whose start is nearest the old start wins
   (the earlier one on a tie);
2. whitespace-normalised: runs of whitespace in both the document and the span text are read
   as one space and the span text's leading/trailing whitespace is ignored; a match is mapped
   back to offsets of the original document (from its first to its last non-space character),
   and the span's ``text`` is updated to what the document now reads there.

Spans that cannot be re-anchored (unknown document, text not found, or no ``text`` recorded
and now out of bounds) are kept exactly as they were and listed; nothing is dropped.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from .._errors import Problem
from ._schema import Evidence, Question
from ._validate import check_questions
from .corpus import Corpus

if TYPE_CHECKING:  # pragma: no cover
    from ._golden_set import GoldenSet

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Moved:
    """A span re-anchored from ``old`` to ``new`` offsets by ``method``."""

    question: str
    index: int
    doc: str
    old: tuple[int, int]
    new: tuple[int, int]
    method: Literal["exact", "whitespace"]
    candidates: int  # occurrences found; the nearest to the old start was taken

    def __str__(self) -> str:
        more = f", nearest of {self.candidates}" if self.candidates > 1 else ""
        return (
            f"{self.question} evidence[{self.index}] on {self.doc!r}: "
            f"{self.old[0]}-{self.old[1]} -> {self.new[0]}-{self.new[1]} ({self.method}{more})"
        )


@dataclass(frozen=True)
class Unresolved:
    """A span that could not be re-anchored and was kept as it was."""

    question: str
    index: int
    doc: str
    span: tuple[int, int]
    reason: str

    def __str__(self) -> str:
        return (
            f"{self.question} evidence[{self.index}] on {self.doc!r} "
            f"({self.span[0]}-{self.span[1]}): {self.reason}"
        )


@dataclass
class RelocateReport:
    """The re-anchored golden set and what happened to each span."""

    golden: GoldenSet
    moved: list[Moved] = field(default_factory=list)
    unchanged: int = 0
    unchecked: int = 0  # spans without recorded text that are still in bounds
    unresolved: list[Unresolved] = field(default_factory=list)
    #: problems the relocated set still has against the corpus (e.g. two spans now overlapping)
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every span is anchored and the result validates."""
        return not self.unresolved and not self.problems

    def summary(self) -> str:
        return (
            f"{len(self.moved)} moved, {self.unchanged} unchanged, {self.unchecked} unchecked "
            f"(no text recorded), {len(self.unresolved)} not re-anchored"
        )


class _Normalised:
    """A document with whitespace runs collapsed, and the map back to original offsets."""

    def __init__(self, text: str) -> None:
        parts: list[str] = []
        origin: list[int] = []  # origin[i] = offset in ``text`` of normalised character i
        pos = 0
        for m in _SPACE.finditer(text):
            parts.append(text[pos : m.start()])
            origin.extend(range(pos, m.start()))
            parts.append(" ")
            origin.append(m.start())
            pos = m.end()
        parts.append(text[pos:])
        origin.extend(range(pos, len(text)))
        self.text = "".join(parts)
        self.origin = origin

    def to_normalised(self, offset: int) -> int:
        return bisect.bisect_left(self.origin, offset)


def _occurrences(haystack: str, needle: str) -> list[int]:
    out, pos = [], haystack.find(needle)
    while pos != -1:
        out.append(pos)
        pos = haystack.find(needle, pos + 1)
    return out


def _nearest(positions: list[int], target: int) -> int:
    return min(positions, key=lambda p: (abs(p - target), p))


def find_exact(text: str, needle: str, near: int) -> tuple[int, int] | None:
    """``(start, n_occurrences)`` of the occurrence of ``needle`` nearest ``near``, or None."""
    hits = _occurrences(text, needle)
    return (_nearest(hits, near), len(hits)) if hits else None


def find_normalised(
    text: str, needle: str, near: int, norm: _Normalised | None = None
) -> tuple[int, int, int] | None:
    """``(start, end, n_occurrences)`` in ``text`` of ``needle`` up to whitespace, or None."""
    key = _SPACE.sub(" ", needle).strip()
    if not key:
        return None
    norm = norm if norm is not None else _Normalised(text)
    hits = _occurrences(norm.text, key)
    if not hits:
        return None
    start = _nearest(hits, norm.to_normalised(near))
    # key starts and ends with a non-space character, which maps to exactly one original offset
    return norm.origin[start], norm.origin[start + len(key) - 1] + 1, len(hits)


def relocate(golden: GoldenSet, corpus: Corpus) -> RelocateReport:
    """Re-anchor every span whose ``text`` no longer matches the corpus; see the module doc."""
    report = RelocateReport(golden=golden)
    norms: dict[str, _Normalised] = {}
    questions: list[Question] = []
    for q in golden.questions:
        evidence: list[Evidence] = []
        for i, ev in enumerate(q.evidence):
            evidence.append(_relocate_span(q.id, i, ev, corpus, norms, report))
        changed = any(a is not b for a, b in zip(evidence, q.evidence, strict=True))
        questions.append(q.model_copy(update={"evidence": evidence}) if changed else q)
    report.golden = golden.with_corpus(corpus).with_questions(questions)
    report.problems = check_questions(report.golden.questions, golden.lines, corpus, golden.source)
    return report


def _relocate_span(
    qid: str,
    i: int,
    ev: Evidence,
    corpus: Corpus,
    norms: dict[str, _Normalised],
    report: RelocateReport,
) -> Evidence:
    doc = corpus.get(ev.doc)
    span = (ev.start, ev.end)
    if doc is None:
        report.unresolved.append(Unresolved(qid, i, ev.doc, span, "document not in the corpus"))
        return ev
    if ev.text is None:
        if ev.end > len(doc.text):
            report.unresolved.append(
                Unresolved(
                    qid,
                    i,
                    ev.doc,
                    span,
                    f"no text recorded and the span is past the end of the "
                    f"document ({len(doc.text)} characters)",
                )
            )
        else:
            report.unchecked += 1
        return ev
    if doc.text[ev.start : ev.end] == ev.text:
        report.unchanged += 1
        return ev
    exact = find_exact(doc.text, ev.text, ev.start) if ev.text else None
    if exact is not None:
        start, n = exact
        end = start + len(ev.text)
        report.moved.append(Moved(qid, i, ev.doc, span, (start, end), "exact", n))
        return ev.model_copy(update={"start": start, "end": end})
    if ev.doc not in norms:
        norms[ev.doc] = _Normalised(doc.text)
    loose = find_normalised(doc.text, ev.text, ev.start, norms[ev.doc])
    if loose is not None:
        start, end, n = loose
        report.moved.append(Moved(qid, i, ev.doc, span, (start, end), "whitespace", n))
        return ev.model_copy(update={"start": start, "end": end, "text": doc.text[start:end]})
    report.unresolved.append(
        Unresolved(qid, i, ev.doc, span, "text not found in the edited document")
    )
    return ev
