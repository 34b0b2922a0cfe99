"""The run-independent half of span scoring, computed once per golden set and chunking.

Scoring a run on span labels needs, before it looks at the run: the golden set's spans as
arrays (``SpanTable``), their documents as integer codes shared with the chunks', the check that
every span lies inside what the chunking covers, and the (span, chunk) overlaps. None of it
depends on the run, so a caller scoring several runs (``ragmeter eval --golden G --chunks C
RUN RUN ...``, an experiment's variants) builds a :class:`SpanMapping` once and passes it to
each :func:`~ragmeter.labels.evaluate_spans` call, as it would build chunk qrels once for the
metric engine. The mapping also keeps, once worked out, the questions a run is scored on (in id
order, with their spans and overlaps): every question with evidence, the same for every run
scored with ``missing="zero"`` (the default) or answering them all.
A run then costs one lookup of its items among the chunk ids (in the chunking's own hash table),
the ranking, and a few numpy passes (docs/benchmarks.md, "Span-level scoring at scale").
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._errors import UsageError
from ..data import Question
from ._mapping import (
    Overlaps,
    SpanTable,
    check_spans_within_chunking,
    doc_extent,
    encode_docs,
    map_spans,
    questions_of,
)

_SLICES, _SPLIT = attrgetter("slices"), attrgetter("split")


@dataclass(frozen=True, eq=False)
class SpanMapping:
    """Spans of ``golden`` mapped onto ``chunking`` (see the module doc); build it with
    :func:`span_mapping`. ``extent[i]``: the end of the last chunk of span i's document (-1:
    none); ``pairs``: the overlaps of every span (all questions) with the chunks; ``slices``
    and ``splits``: per question, as every Evaluation of these questions records them."""

    golden: Any
    chunking: Any
    questions: list[Question]
    spans: SpanTable
    span_docs: np.ndarray
    extent: np.ndarray
    pairs: Overlaps
    slices: dict[str, tuple[str, ...]]
    splits: dict[str, str]

    def check_for(self, golden: Any, chunking: Any) -> None:
        """UsageError unless this mapping was built from these very objects."""
        if golden is not self.golden or chunking is not self.chunking:
            raise UsageError(
                "mapping= was built for another golden set or chunking; build it with "
                "span_mapping(golden, chunking) from the objects you score with"
            )

    # --- the questions a run is scored on (cached: the same for every run answering them) -----
    @functools.cached_property
    def question_array(self) -> pa.Array:
        """The golden question ids (``spans.question_ids``) as Arrow strings."""
        return pa.array(self.spans.question_ids, type=pa.string())

    @functools.cached_property
    def has_evidence(self) -> np.ndarray:
        """Per golden question: whether it has an evidence span (the others are unanswerable,
        excluded from span scoring)."""
        return np.bincount(self.spans.question, minlength=len(self.spans.question_ids)) > 0

    @functools.cached_property
    def _id_order(self) -> np.ndarray:
        """Golden question rows in code point (UTF-8 byte) order of their ids, stable."""
        return pc.sort_indices(self.question_array).to_numpy()

    def sorted_rows(self, mask: np.ndarray) -> np.ndarray:
        """The golden question rows where ``mask`` holds, in code point order of their ids."""
        order = self._id_order
        return order[mask[order]]

    def scored(self, mask: np.ndarray) -> ScoredQuestions:
        """The questions ``mask`` picks (rows of the golden set) in id order, with their spans
        and overlaps; kept for the usual pick, every question with evidence."""
        if np.array_equal(mask, self.has_evidence):
            return self._scored_with_evidence
        return ScoredQuestions.of(self, mask)

    @functools.cached_property
    def _scored_with_evidence(self) -> ScoredQuestions:
        return ScoredQuestions.of(self, self.has_evidence)

    def of_spans(self, kept: np.ndarray) -> Overlaps:
        """The overlaps of the spans ``kept`` (rows of :attr:`spans`), renumbered 0..len-1."""
        new = np.full(len(self.spans), -1, dtype=np.int64)
        new[kept] = np.arange(len(kept))
        span = new[self.pairs.span]
        keep = span >= 0
        p = self.pairs
        return Overlaps(span[keep], p.chunk[keep], p.lo[keep], p.hi[keep])


@dataclass(frozen=True, eq=False)
class ScoredQuestions:
    """The questions one evaluation scores, in id order: ``ids`` (also as Arrow strings,
    ``id_array``), their ``spans`` renumbered (``spans.question`` indexes ``ids``), ``kept``
    (the row of :attr:`SpanMapping.spans` each span comes from), the ``pairs`` of those spans
    and ``pair_question`` (the question of each pair)."""

    ids: tuple[str, ...]
    id_array: pa.Array
    spans: SpanTable
    kept: np.ndarray
    pairs: Overlaps
    pair_question: np.ndarray

    @classmethod
    def of(cls, mapping: SpanMapping, mask: np.ndarray) -> ScoredQuestions:
        rows = mapping.sorted_rows(mask)
        id_array = mapping.question_array.take(pa.array(rows, type=pa.int64()))
        spans, kept = mapping.spans.of_questions(rows.tolist())
        pairs = mapping.of_spans(kept)
        # the ids as the spans table has them (equal to id_array's, without converting back)
        return cls(spans.question_ids, id_array, spans, kept, pairs, spans.question[pairs.span])


def _doc_codes(spans: SpanTable, chunking: Any) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of the spans' and the chunks' documents, one per document on both sides:
    the chunking's own numbering when it keeps one (``Chunking._doc_codes``, built once: only
    the span documents are hashed per call; the chunks then stay in (document, start) order,
    which spares the overlap sweep a sort), else :func:`encode_docs`. The mapping does not
    depend on the numbering."""
    kept = getattr(chunking, "_doc_codes", None)
    if kept is None:
        span_docs, chunk_docs = encode_docs(spans.doc, chunking.doc)
        return span_docs, chunk_docs
    return kept.of(spans.doc), kept.codes


def span_mapping(golden: Any, chunking: Any) -> SpanMapping:
    """Map ``golden``'s spans onto ``chunking`` once (checking them as evaluate_spans does)."""
    questions = questions_of(golden)
    spans = SpanTable.from_questions(questions)
    span_docs, chunk_docs = _doc_codes(spans, chunking)
    extent = doc_extent(spans, chunking, (span_docs, chunk_docs))
    check_spans_within_chunking(golden, chunking, spans, extent)
    pairs = map_spans(spans, chunking, (span_docs, chunk_docs))
    ids = spans.question_ids  # one per question, in order
    slices: dict[str, tuple[str, ...]] = dict(
        zip(ids, map(tuple, map(_SLICES, questions)), strict=True)
    )
    splits: dict[str, str] = dict(zip(ids, map(_SPLIT, questions), strict=True))
    return SpanMapping(golden, chunking, questions, spans, span_docs, extent, pairs, slices, splits)
