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

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import numpy as np

from .._errors import UsageError
from ..data import Question

_ID, _EVIDENCE = attrgetter("id"), attrgetter("evidence")
_DOC, _START, _END = attrgetter("doc"), attrgetter("start"), attrgetter("end")
_GRADE, _REQUIRED = attrgetter("grade"), attrgetter("required")


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


def _by_start(
    start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """(order, start[order], end[order]) with ``order`` the stable sort of ``start``; None
    (and the arrays themselves) when ``start`` is already sorted, as a chunking's usually is."""
    if len(start) < 2 or bool(np.all(start[1:] >= start[:-1])):
        return None, start, end
    order = np.argsort(start, kind="stable")
    return order, start[order], end[order]


def _at(order: np.ndarray | None, i: np.ndarray) -> np.ndarray:
    """``order[i]`` (``i`` itself when ``order`` is None: the identity)."""
    return i if order is None else order[i]


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

    # Both sides in start order (a chunking usually is already: no sort then), and every
    # binary search made with needles in that order too: successive searches touch nearby
    # entries, so a large side is read almost in sequence rather than at random places.
    s_order, s_sorted, s_ends = _by_start(g_ss, g_se)
    c_order, c_sorted, c_ends = _by_start(g_cs, g_ce)

    # spans starting inside each chunk: a <= s < b
    c1, k1 = _expand(
        np.searchsorted(s_sorted, c_sorted, "left"), np.searchsorted(s_sorted, c_ends, "left")
    )
    c1, s1 = _at(c_order, c1), _at(s_order, k1)
    # chunks starting strictly inside each span: s < a < e
    s2, k2 = _expand(
        np.searchsorted(c_sorted, s_sorted, "right"), np.searchsorted(c_sorted, s_ends, "left")
    )
    s2, c2 = _at(s_order, s2), _at(c_order, k2)

    span = np.concatenate([s1, s2])
    chunk = np.concatenate([c1, c2])
    lo = np.maximum(ss[span], cs[chunk])
    hi = np.minimum(se[span], ce[chunk])
    keep = hi > lo
    span, chunk, lo, hi = span[keep], chunk[keep], lo[keep], hi[keep]
    order = np.lexsort((chunk, span))
    return Overlaps(span[order], chunk[order], lo[order], hi[order])


def encode_docs(*columns: Sequence[str]) -> list[np.ndarray]:
    """Integer codes for document ids, shared across the given columns (in order of first
    appearance), hashed in Arrow without a Python object per id."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arrays = [c if isinstance(c, pa.Array) else pa.array(c, type=pa.string()) for c in columns]
    if not arrays:
        return []
    codes = pc.dictionary_encode(pa.concat_arrays(arrays)).indices.to_numpy(zero_copy_only=False)
    codes = codes.astype(np.int64, copy=False)
    bounds = np.cumsum([0] + [len(a) for a in arrays])
    return [codes[a:b] for a, b in itertools.pairwise(bounds)]


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
        """The fields of every evidence item read with ``map`` (no Python-level step per item:
        the cost stays linear when the golden set is large); the rest in numpy. The required
        spans are ``Question.required_spans()``: the spans marked ``required: true`` when any
        span of the question is marked, else every span of its top grade."""
        qs = questions if isinstance(questions, list) else list(questions)
        lists = list(map(_EVIDENCE, qs))
        counts = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        evs = list(itertools.chain.from_iterable(lists))
        question = np.repeat(np.arange(len(qs), dtype=np.int64), counts)
        start, end, grade = (
            np.asarray(list(map(get, evs)), dtype=np.int64).reshape(-1)
            for get in (_START, _END, _GRADE)
        )
        marks = list(map(_REQUIRED, evs))
        if marks.count(None) == len(marks):  # the usual case: no span marked
            flag = np.full(len(marks), -1, dtype=np.int64)
        else:  # -1 unmarked, 0 false, 1 true
            flag = np.asarray([-1 if r is None else int(bool(r)) for r in marks], dtype=np.int64)
        flag = flag.reshape(-1)
        first = np.r_[True, question[1:] != question[:-1]] if len(question) else question > 0
        starts = np.flatnonzero(first)
        evidence = np.arange(len(question)) - np.repeat(
            starts, np.diff(np.r_[starts, len(question)])
        )
        nq = len(qs)
        marked = np.bincount(question, weights=flag >= 0, minlength=nq) > 0
        top = np.full(nq, np.iinfo(np.int64).min)
        if len(question):
            top[question[starts]] = np.maximum.reduceat(grade, starts)
        required = np.where(marked[question], flag == 1, grade == top[question])
        return cls(
            question_ids=tuple(map(_ID, qs)),
            question=question,
            evidence=evidence.astype(np.int64),
            doc=list(map(_DOC, evs)),
            start=start,
            end=end,
            grade=grade,
            required=required.astype(bool),
        )

    def of_questions(self, rows: Sequence[int]) -> tuple[SpanTable, np.ndarray]:
        """The table ``from_questions`` gives for the questions ``rows`` (in that order), and
        the row of this table each of its rows comes from."""
        new_of_old = np.full(len(self.question_ids), -1, dtype=np.int64)
        new_of_old[np.asarray(rows, dtype=np.int64)] = np.arange(len(rows))
        new_q = new_of_old[self.question]
        keep = np.flatnonzero(new_q >= 0)
        keep = keep[np.argsort(new_q[keep], kind="stable")]  # question-major, evidence order
        return SpanTable(
            question_ids=tuple(map(self.question_ids.__getitem__, rows)),
            question=new_q[keep],
            evidence=self.evidence[keep],
            doc=list(map(self.doc.__getitem__, keep.tolist())),
            start=self.start[keep],
            end=self.end[keep],
            grade=self.grade[keep],
            required=self.required[keep],
        ), keep


def questions_of(golden: Any) -> list[Question]:
    """The questions of a GoldenSet, or of any iterable of Questions."""
    qs = getattr(golden, "questions", golden)
    out = list(qs)
    if not all(map(isinstance, out, itertools.repeat(Question))):
        raise UsageError("golden must be a GoldenSet or a list of Question records")
    return out


def map_spans(
    spans: SpanTable, chunking: Any, codes: tuple[np.ndarray, np.ndarray] | None = None
) -> Overlaps:
    """Overlaps between the spans of a golden set and the chunks of a chunking.

    ``codes``: the (span, chunk) document codes from ``encode_docs`` when already computed."""
    span_codes, chunk_codes = encode_docs(spans.doc, chunking.doc) if codes is None else codes
    return overlap_pairs(
        span_codes, spans.start, spans.end, chunk_codes, chunking.start, chunking.end
    )


def check_spans_within_chunking(
    golden: Any, chunking: Any, spans: SpanTable | None = None, extent: np.ndarray | None = None
) -> None:
    """Refuse spans the chunking shows cannot be in their documents, when the golden set was not
    checked against a corpus (``golden.corpus`` is None, or a plain list of Questions).

    The chunking is then the only record of which documents exist and how long each one is
    (at least as long as its last chunk's end): a span in a document with no chunk, or past
    that end, cannot be in the corpus the chunks were cut from, and scoring it would quietly
    count it as never found. ValidationError naming each such question and ``evidence[j]``
    (file and line when the golden set was read from one). Every function that maps spans onto
    a chunking (:func:`ragmeter.labels.evaluate_spans`, :func:`ragmeter.labels.chunk_qrels`)
    calls this first; with a corpus, the golden loader has already checked every span.
    ``spans``: the golden set's SpanTable when the caller has built it (over every question),
    ``extent`` its ``doc_extent``."""
    from .._errors import Problem, ValidationError

    if getattr(golden, "corpus", None) is not None:
        return
    if spans is None:
        spans = SpanTable.from_questions(questions_of(golden))
    where = getattr(golden, "source", None)
    line_of = getattr(golden, "line_of", None) if where is not None else None
    extent = doc_extent(spans, chunking) if extent is None else extent
    bad = np.flatnonzero((extent < 0) | (spans.end > extent))
    problems: list[Problem] = []
    for row in bad.tolist():
        i, j, doc = int(spans.question[row]), int(spans.evidence[row]), spans.doc[row]
        qid = spans.question_ids[i]
        if extent[row] < 0:
            msg = (
                f"question {qid!r}: document {doc!r} has no chunk in chunking "
                f"'{chunking.name}'; is the golden set for another corpus? (check it "
                "with --corpus)"
            )
            field = f"evidence[{j}].doc"
        else:
            msg = (
                f"question {qid!r}: span {spans.start[row]}-{spans.end[row]} of document "
                f"{doc!r} runs past the end of what the chunking covers ({extent[row]} "
                "characters); check the golden set against the corpus (--corpus)"
            )
            field = f"evidence[{j}].end"
        line = line_of(i) if line_of is not None else None
        problems.append(Problem(msg, where, line, field))
    if problems:
        shown = problems[:20]
        if len(problems) > len(shown):
            shown.append(Problem(f"... and {len(problems) - len(shown)} more", where, None, None))
        label = f"golden set {where}" if where else "the golden set"
        raise ValidationError(shown, what=f"{label} (spans on chunking '{chunking.name}')")


def doc_extent(
    spans: SpanTable, chunking: Any, codes: tuple[np.ndarray, np.ndarray] | None = None
) -> np.ndarray:
    """Per span: the end of the last chunk of its document (-1 when the document has no chunk).
    ``codes``: the (span, chunk) document codes from ``encode_docs`` when already computed."""
    span_codes, chunk_codes = encode_docs(spans.doc, chunking.doc) if codes is None else codes
    n_docs = int(max(chunk_codes.max(initial=-1), span_codes.max(initial=-1))) + 1
    extent = np.full(n_docs, -1, dtype=np.int64)
    np.maximum.at(extent, chunk_codes, np.asarray(chunking.end, dtype=np.int64))
    return extent[span_codes]
