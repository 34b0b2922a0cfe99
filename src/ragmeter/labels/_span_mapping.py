"""The run-independent half of span scoring, computed once per golden set and chunking.

Scoring a run on span labels needs, before it looks at the run: the golden set's spans as
arrays (``SpanTable``), their documents as integer codes shared with the chunks', the check that
every span lies inside what the chunking covers, and the (span, chunk) overlaps. None of it
depends on the run, so a caller scoring several runs (``ragmeter eval --golden G --chunks C
RUN RUN ...``, an experiment's variants) builds a :class:`SpanMapping` once and passes it to
each :func:`~ragmeter.labels.evaluate_spans` call, as it would build chunk qrels once for the
metric engine. A run then costs one hash lookup of its items among the chunk ids, the ranking,
and a few numpy passes (docs/benchmarks.md, "Span labels at scale").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import UsageError
from ..data._schema import Question
from ._mapping import (
    Overlaps,
    SpanTable,
    check_spans_within_chunking,
    doc_extent,
    encode_docs,
    map_spans,
    questions_of,
)


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

    def of_spans(self, kept: np.ndarray) -> Overlaps:
        """The overlaps of the spans ``kept`` (rows of :attr:`spans`), renumbered 0..len-1."""
        new = np.full(len(self.spans), -1, dtype=np.int64)
        new[kept] = np.arange(len(kept))
        span = new[self.pairs.span]
        keep = span >= 0
        p = self.pairs
        return Overlaps(span[keep], p.chunk[keep], p.lo[keep], p.hi[keep])


def span_mapping(golden: Any, chunking: Any) -> SpanMapping:
    """Map ``golden``'s spans onto ``chunking`` once (checking them as evaluate_spans does)."""
    questions = questions_of(golden)
    spans = SpanTable.from_questions(questions)
    span_docs, chunk_docs = encode_docs(spans.doc, chunking.doc)
    extent = doc_extent(spans, chunking, (span_docs, chunk_docs))
    check_spans_within_chunking(golden, chunking, spans, extent)
    pairs = map_spans(spans, chunking, (span_docs, chunk_docs))
    slices: dict[str, tuple[str, ...]] = {q.id: tuple(q.slices) for q in questions}
    splits: dict[str, str] = {q.id: q.split for q in questions}
    return SpanMapping(golden, chunking, questions, spans, span_docs, extent, pairs, slices, splits)
