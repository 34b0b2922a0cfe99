"""Hybrid retrieval: fuse the rankings of two retrievers.

Reciprocal rank fusion (Cormack, Clarke and Buettcher, 2009)::

    rrf(d) = sum_r 1 / (k + rank_r(d))          k = 60 by default

``rank_r(d)`` is d's 1-based rank in run r (score desc, then item id desc, as trec_eval orders);
a run that did not return d adds nothing. Only ranks matter, so the two retrievers' score
scales never need to agree.

Weighted score fusion::

    fused(d) = w * norm_1(d) + (1 - w) * norm_2(d)
    norm_r(d) = (s_r(d) - min_q s_r) / (max_q s_r - min_q s_r)

The min-max normalisation is per query over the items run r returned for it (so each run's
best item gets 1 and its worst 0; when all returned scores are equal they all get 1); an item
run r did not return gets 0 from it. Each retriever contributes its top ``pool`` items.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from .._errors import UsageError
from .._numbers import number_in
from ..io import Run
from ._protocol import Retriever, check_depth, check_fit_input, query_ids

FUSIONS = ("rrf", "weighted")


def _codes(values: pa.Array, vocab: np.ndarray) -> np.ndarray:
    return np.searchsorted(vocab, np.asarray(values.to_pylist(), dtype=object))


def _ranked(run: Run, qvocab: np.ndarray, dvocab: np.ndarray) -> tuple[np.ndarray, ...]:
    """(query code, item code, 1-based rank, score) of every row, rows in rank order."""
    q = _codes(run.qid, qvocab)
    d = _codes(run.doc, dvocab)
    s = np.asarray(run.score, dtype=np.float64)
    order = np.lexsort((-d, -s, q))  # by query, then score desc, then item id desc
    q, d, s = q[order], d[order], s[order]
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]]) if len(q) else np.zeros(0, np.int64)
    first = np.repeat(starts, np.diff(np.r_[starts, len(q)]))
    return q, d, np.arange(len(q)) - first + 1, s


def _group_minmax(q: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Per-query min-max normalised scores (rows grouped by query)."""
    if not len(q):
        return s
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    counts = np.diff(np.r_[starts, len(q)])
    lo = np.repeat(np.minimum.reduceat(s, starts), counts)
    hi = np.repeat(np.maximum.reduceat(s, starts), counts)
    span = hi - lo
    return np.where(span > 0, (s - lo) / np.where(span > 0, span, 1.0), 1.0)


def fuse(
    runs: Sequence[Run],
    *,
    fusion: str = "rrf",
    k: float = 60.0,
    weights: Sequence[float] | None = None,
    depth: int | None = None,
    name: str = "hybrid",
) -> Run:
    """Fuse ranked runs by reciprocal rank or by weighted min-max scores (see module doc).

    ``weights`` (weighted fusion) default to equal weights summing to 1; ``depth`` keeps the
    best ``depth`` fused items per query (all when None).
    """
    if fusion not in FUSIONS:
        raise UsageError(f"fusion must be one of {', '.join(FUSIONS)}, got '{fusion}'")
    if fusion == "rrf":
        number_in("rrf k", k, 0.0)
    if weights is None:
        weights = [1.0 / len(runs)] * len(runs)
    if len(weights) != len(runs):
        raise UsageError("give one non-negative weight per run")
    weights = [number_in("a fusion weight", w, 0.0) for w in weights]
    qvocab = np.unique(
        np.asarray([q for r in runs for q in r.qid.to_pylist()] or [""], dtype=object)
    )
    dvocab = np.unique(
        np.asarray([d for r in runs for d in r.doc.to_pylist()] or [""], dtype=object)
    )
    qs, ds, contrib = [], [], []
    for run, w in zip(runs, weights, strict=True):
        q, d, rank, s = _ranked(run, qvocab, dvocab)
        qs.append(q)
        ds.append(d)
        contrib.append(1.0 / (k + rank) if fusion == "rrf" else w * _group_minmax(q, s))
    q = np.concatenate(qs)
    d = np.concatenate(ds)
    key = q.astype(np.int64) * len(dvocab) + d
    uniq, inverse = np.unique(key, return_inverse=True)
    fused = np.bincount(inverse, weights=np.concatenate(contrib), minlength=len(uniq))
    uq, ud = uniq // len(dvocab), uniq % len(dvocab)
    order = np.lexsort((-ud, -fused, uq))
    uq, ud, fused = uq[order], ud[order], fused[order]
    if depth is not None and len(uq):
        starts = np.flatnonzero(np.r_[True, uq[1:] != uq[:-1]])
        rank = np.arange(len(uq)) - np.repeat(starts, np.diff(np.r_[starts, len(uq)]))
        keep = rank < depth
        uq, ud, fused = uq[keep], ud[keep], fused[keep]
    return Run(
        qid=pa.array(qvocab[uq].tolist(), type=pa.string()),
        doc=pa.array(dvocab[ud].tolist(), type=pa.string()),
        score=fused,
        name=name,
    )


class HybridRetriever:
    """Two retrievers searched at depth ``pool`` each, their runs fused (RRF or weighted)."""

    def __init__(
        self,
        first: Retriever,
        second: Retriever,
        *,
        fusion: str = "rrf",
        k: float = 60.0,
        weight: float = 0.5,
        pool: int = 100,
        name: str | None = None,
    ) -> None:
        if fusion not in FUSIONS:
            raise UsageError(f"fusion must be one of {', '.join(FUSIONS)}, got '{fusion}'")
        number_in("hybrid weight", weight, 0.0, 1.0)
        number_in("rrf k", k, 0.0)
        check_depth(pool)
        self.first, self.second = first, second
        self.fusion = fusion
        self.k = float(k)
        self.weight = float(weight)
        self.pool = pool
        self.name = name or f"hybrid-{fusion}({first.name}+{second.name})"

    @property
    def config(self) -> dict[str, Any]:
        cfg: dict[str, Any] = {
            "kind": "hybrid",
            "fusion": self.fusion,
            "pool": self.pool,
            "of": [self.first.config, self.second.config],
        }
        if self.fusion == "rrf":
            cfg["k"] = self.k
        else:
            cfg["weight"] = self.weight
        return cfg

    def fit(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        check_fit_input(ids, texts)
        self.first.fit(ids, texts)
        self.second.fit(ids, texts)

    def search(
        self, queries: Sequence[str], depth: int, *, qids: Sequence[str] | None = None
    ) -> Run:
        check_depth(depth)
        qs = query_ids(queries, qids)
        pool = max(self.pool, depth)
        runs = [
            self.first.search(queries, pool, qids=qs),
            self.second.search(queries, pool, qids=qs),
        ]
        return fuse(
            runs,
            fusion=self.fusion,
            k=self.k,
            weights=[self.weight, 1 - self.weight],
            depth=depth,
            name=self.name,
        )
