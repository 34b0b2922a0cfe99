"""Chunk-level labels for one chunking, derived from span labels.

A chunk's grade for a question is the highest grade of the question's spans that the chunk
covers by at least ``cover`` of the span OR whose characters make up at least ``cover`` of the
chunk (so a long chunk holding a short span, and a short chunk inside a long span, both count).
Chunks with no such span get no row (unjudged, i.e. non-relevant to the metric engine).

These qrels feed the core engine for ``P@k`` and ``nDCG@k`` *within one chunking*: grades of
different chunkings describe different items and are not comparable. To compare chunkings,
use span-level recall at an equal token budget (``evaluate_spans`` with ``R@budget=N``).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from .._errors import RagmeterWarning
from ..io import Qrels
from ._mapping import SpanTable, check_spans_within_chunking, map_spans, questions_of
from ._span_metrics import DEFAULT_COVER, check_cover


def chunk_qrels(golden: Any, chunking: Any, cover: float = DEFAULT_COVER) -> Qrels:
    """Chunk qrels ``(question id, chunk id, grade)`` of ``chunking`` under the rule above.

    Rows are sorted by question id, then chunk id. Questions with evidence but no chunk that
    meets the rule are reported with a RagmeterWarning: the metric engine cannot see them.
    """
    cover = check_cover(cover)
    questions = questions_of(golden)
    spans = SpanTable.from_questions(questions)
    check_spans_within_chunking(golden, chunking, spans)
    pairs = map_spans(spans, chunking)
    chars = pairs.chars
    span_len = spans.length[pairs.span]
    chunk_len = (chunking.end - chunking.start)[pairs.chunk]
    ok = (chars >= cover * span_len - 1e-9) | (chars >= cover * chunk_len - 1e-9)
    q = spans.question[pairs.span[ok]]
    c = pairs.chunk[ok]
    g = spans.grade[pairs.span[ok]]
    # highest grade per (question, chunk): sort by key then grade, keep each key's last row
    nc = max(len(chunking), 1)
    key = q * nc + c
    order = np.lexsort((g, key))
    key, g = key[order], g[order]
    last = np.r_[key[1:] != key[:-1], True] if len(key) else np.zeros(0, dtype=bool)
    key, g = key[last], g[last]
    qi, ci = key // nc, key % nc
    qids = [spans.question_ids[i] for i in qi.tolist()]
    cids = [chunking.ids[i] for i in ci.tolist()]
    rows = sorted(zip(qids, cids, g.tolist(), strict=True))
    labelled = {q for q, _, _ in rows}
    lost = [qq.id for qq in questions if qq.evidence and qq.id not in labelled]
    if lost:
        warnings.warn(
            f"{len(lost)} question(s) with evidence have no chunk meeting cover={cover} in "
            f"chunking '{chunking.name}' (e.g. {lost[0]!r}); chunk-level metrics will not see "
            "them: use span-level metrics (evaluate_spans) to count them",
            RagmeterWarning,
            stacklevel=2,
        )
    return Qrels(
        qid=pa.array([r[0] for r in rows], type=pa.string()),
        doc=pa.array([r[1] for r in rows], type=pa.string()),
        rel=np.array([r[2] for r in rows], dtype=np.int64),
        source=f"chunk labels of {chunking.name} (cover={cover})",
    )


def write_chunk_qrels(qrels: Qrels, path: str | os.PathLike[str]) -> Path:
    """Write chunk qrels as TREC ``qid 0 chunk_id grade`` lines (``ragmeter.io.trec``)."""
    from ..io.trec import write_qrels

    path = Path(path)
    write_qrels(qrels, path)
    return path
