"""Span -> chunk mapping: which chunks contain which characters of each evidence span.

For every (span, chunk) pair of the same document that share at least one character, the
mapping gives the shared character range ``[lo, hi)``; ``hi - lo`` is the number of the span's
characters the chunk contains. It is a sort-and-sweep over integer arrays, without a chunks x
spans product: a chunk ``[a, b)`` and a span ``[s, e)`` overlap exactly when

- the span starts inside the chunk (``a <= s < b``), or
- the chunk starts strictly inside the span (``s < a < e``),

and these two cases are disjoint. With spans sorted by start, the spans starting inside one
chunk are one contiguous block (two binary searches); with chunks sorted by start, likewise the
chunks starting inside one span. Cost: O((C + S) log(C + S) + pairs). Chunks may overlap each
other; empty chunks and spans never overlap anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import UsageError
from ..data._schema import Question


@dataclass(frozen=True)
class Overlaps:
    """Overlapping (span, chunk) pairs, ordered by span then chunk.

    ``span[i]`` and ``chunk[i]`` index the inputs; the chunk holds characters ``[lo[i], hi[i])``
    of the span's document, all inside the span (``hi - lo > 0``).
    """

    span: np.ndarray
    chunk: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    def __len__(self) -> int:
        return len(self.span)

    @property
    def chars(self) -> np.ndarray:
        """Characters of the span that the chunk contains."""
        return self.hi - self.lo


def _expand(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(owner, index) for every index in each owner's range ``lo[i]:hi[i]``."""
    counts = np.maximum(hi - lo, 0)
    total = int(counts.sum())
    owner = np.repeat(np.arange(len(lo), dtype=np.int64), counts)
    offset = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    return owner, np.repeat(lo, counts) + offset


def overlap_pairs(
    span_doc: np.ndarray,
    span_start: np.ndarray,
    span_end: np.ndarray,
    chunk_doc: np.ndarray,
    chunk_start: np.ndarray,
    chunk_end: np.ndarray,
) -> Overlaps:
    """All overlapping (span, chunk) pairs; documents are integer codes shared by both sides."""
    sd, ss, se = (np.asarray(x, dtype=np.int64) for x in (span_doc, span_start, span_end))
    cd, cs, ce = (np.asarray(x, dtype=np.int64) for x in (chunk_doc, chunk_start, chunk_end))
    if len(ss) == 0 or len(cs) == 0:
        e = np.zeros(0, dtype=np.int64)
        return Overlaps(e, e, e, e)
    # One line for all documents: position p of document d sits at d * width + p.
    width = int(max(se.max(), ce.max(), 0)) + 1
    n_docs = int(max(sd.max(), cd.max())) + 1
    if n_docs * width >= 2**62:
        raise UsageError("documents too long to map in one pass")  # pragma: no cover
    g_ss, g_se = sd * width + ss, sd * width + se
    g_cs, g_ce = cd * width + cs, cd * width + ce

    s_order = np.argsort(g_ss, kind="stable")
    s_sorted = g_ss[s_order]
    c_order = np.argsort(g_cs, kind="stable")
    c_sorted = g_cs[c_order]

    # spans starting inside each chunk: a <= s < b
    c1, k1 = _expand(
        np.searchsorted(s_sorted, g_cs, "left"), np.searchsorted(s_sorted, g_ce, "left")
    )
    s1 = s_order[k1]
    # chunks starting strictly inside each span: s < a < e
    s2, k2 = _expand(
        np.searchsorted(c_sorted, g_ss, "right"), np.searchsorted(c_sorted, g_se, "left")
    )
    c2 = c_order[k2]

    span = np.concatenate([s1, s2])
    chunk = np.concatenate([c1, c2])
    lo = np.maximum(ss[span], cs[chunk])
    hi = np.minimum(se[span], ce[chunk])
    keep = hi > lo
    span, chunk, lo, hi = span[keep], chunk[keep], lo[keep], hi[keep]
    order = np.lexsort((chunk, span))
    return Overlaps(span[order], chunk[order], lo[order], hi[order])


def encode_docs(*columns: Sequence[str]) -> list[np.ndarray]:
    """Integer codes for document ids, shared across the given columns."""
    codes: dict[str, int] = {}
    out = []
    for col in columns:
        out.append(
            np.fromiter(
                (codes.setdefault(d, len(codes)) for d in col), dtype=np.int64, count=len(col)
            )
        )
    return out


@dataclass(frozen=True)
class SpanTable:
    """The evidence spans of a golden set, flattened: one row per (question, evidence item).

    ``question[i]`` indexes ``question_ids``; ``evidence[i]`` is the item's position in the
    question's evidence list; ``required[i]`` marks spans in ``Question.required_spans()``.
    """

    question_ids: tuple[str, ...]
    question: np.ndarray
    evidence: np.ndarray
    doc: list[str]
    start: np.ndarray
    end: np.ndarray
    grade: np.ndarray
    required: np.ndarray

    def __len__(self) -> int:
        return len(self.doc)

    @property
    def length(self) -> np.ndarray:
        return self.end - self.start

    @classmethod
    def from_questions(cls, questions: Iterable[Question]) -> SpanTable:
        qids: list[str] = []
        rows: list[tuple[int, int, str, int, int, int, bool]] = []
        for qi, q in enumerate(questions):
            qids.append(q.id)
            req = set(q.required_spans())
            for j, ev in enumerate(q.evidence):
                rows.append((qi, j, ev.doc, ev.start, ev.end, ev.grade, j in req))
        cols: list[tuple[object, ...]] = list(zip(*rows, strict=True)) if rows else [()] * 7
        return cls(
            question_ids=tuple(qids),
            question=np.asarray(cols[0], dtype=np.int64),
            evidence=np.asarray(cols[1], dtype=np.int64),
            doc=[str(d) for d in cols[2]],
            start=np.asarray(cols[3], dtype=np.int64),
            end=np.asarray(cols[4], dtype=np.int64),
            grade=np.asarray(cols[5], dtype=np.int64),
            required=np.asarray(cols[6], dtype=bool),
        )


def questions_of(golden: Any) -> list[Question]:
    """The questions of a GoldenSet, or of any iterable of Questions."""
    qs = getattr(golden, "questions", golden)
    out = list(qs)
    if not all(isinstance(q, Question) for q in out):
        raise UsageError("golden must be a GoldenSet or a list of Question records")
    return out


def map_spans(spans: SpanTable, chunking: Any) -> Overlaps:
    """Overlaps between the spans of a golden set and the chunks of a chunking."""
    span_codes, chunk_codes = encode_docs(spans.doc, chunking.doc)
    return overlap_pairs(
        span_codes, spans.start, spans.end, chunk_codes, chunking.start, chunking.end
    )


def check_spans_within_chunking(golden: Any, chunking: Any) -> None:
    """Refuse spans the chunking shows cannot be in their documents, when the golden set was not
    checked against a corpus (``golden.corpus`` is None, or a plain list of Questions).

    The chunking is then the only record of which documents exist and how long each one is
    (at least as long as its last chunk's end): a span in a document with no chunk, or past
    that end, cannot be in the corpus the chunks were cut from, and scoring it would quietly
    count it as never found. ValidationError naming each such question and ``evidence[j]``
    (file and line when the golden set was read from one). Every function that maps spans onto
    a chunking (:func:`ragmeter.labels.evaluate_spans`, :func:`ragmeter.labels.chunk_qrels`)
    calls this first; with a corpus, the golden loader has already checked every span."""
    from .._errors import Problem, ValidationError

    if getattr(golden, "corpus", None) is not None:
        return
    where = getattr(golden, "source", None)
    line_of = getattr(golden, "line_of", None) if where is not None else None
    extent: dict[str, int] = {}
    for doc, end in zip(chunking.doc, np.asarray(chunking.end).tolist(), strict=True):
        if end > extent.get(doc, -1):
            extent[doc] = end
    problems: list[Problem] = []
    for i, q in enumerate(questions_of(golden)):
        for j, ev in enumerate(q.evidence):
            if ev.doc not in extent:
                msg = (
                    f"question {q.id!r}: document {ev.doc!r} has no chunk in chunking "
                    f"'{chunking.name}'; is the golden set for another corpus? (check it "
                    "with --corpus)"
                )
                field = f"evidence[{j}].doc"
            elif ev.end > extent[ev.doc]:
                msg = (
                    f"question {q.id!r}: span {ev.start}-{ev.end} of document {ev.doc!r} runs "
                    f"past the end of what the chunking covers ({extent[ev.doc]} characters); "
                    "check the golden set against the corpus (--corpus)"
                )
                field = f"evidence[{j}].end"
            else:
                continue
            line = line_of(i) if line_of is not None else None
            problems.append(Problem(msg, where, line, field))
    if problems:
        shown = problems[:20]
        if len(problems) > len(shown):
            shown.append(Problem(f"... and {len(problems) - len(shown)} more", where, None, None))
        label = f"golden set {where}" if where else "the golden set"
        raise ValidationError(shown, what=f"{label} (spans on chunking '{chunking.name}')")
