"""Columnar in-memory forms of labels and runs, shared by every reader and the metric engine."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa


@dataclass(frozen=True)
class Qrels:
    """Relevance judgements: one row per (query, item) with an integer grade (0 = judged non-relevant).

    ``qid`` and ``doc`` are pyarrow string arrays, ``rel`` an int64 numpy array; no duplicate
    (qid, doc) pairs (readers enforce it).
    """

    qid: pa.Array
    doc: pa.Array
    rel: np.ndarray
    source: str = "<qrels>"

    def __len__(self) -> int:
        return len(self.rel)


@dataclass(frozen=True)
class Run:
    """A ranked run: one row per (query, item) with a float64 score (higher = better).

    Rows need not be sorted; the engine orders them (score desc, then item id desc, as trec_eval)
    unless asked to keep the given order, in which case row order within a query is the ranking.
    No duplicate (qid, doc) pairs (readers enforce it).
    """

    qid: pa.Array
    doc: pa.Array
    score: np.ndarray
    name: str = "<run>"

    def __len__(self) -> int:
        return len(self.score)
