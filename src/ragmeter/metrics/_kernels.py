"""Pure, vectorised rank-metric kernels over padded (queries x depth) arrays.

Inputs shared by every kernel:

- ``grades``: int array (n_queries x depth), the judged grade of the item at each rank
  (0 for unjudged, judged non-relevant, and padding past the end of a query's list);
- ``num_rel``: int array (n_queries,), how many judged items have grade >= the threshold;
- ``ideal``: float array (n_queries x R_max), each query's judged gains sorted descending and
  zero-padded (the ideal order of ALL judged items, not only retrieved ones).

A cutoff ``k`` larger than ``depth`` behaves as if the lists were padded with non-relevant items.
No kernel loops over queries in Python.
"""

from __future__ import annotations

import numpy as np


def _cut(a: np.ndarray, k: int | None) -> np.ndarray:
    return a if k is None else a[:, :k]


def hits(rel: np.ndarray, k: int | None) -> np.ndarray:
    """Number of relevant items in the top k: |rel ∩ top_k|."""
    return _cut(rel, k).sum(axis=1)


def precision(rel: np.ndarray, k: int) -> np.ndarray:
    """P@k = |rel ∩ top_k| / k (k, not the number retrieved, is the denominator, as trec_eval)."""
    return hits(rel, k) / k


def recall(rel: np.ndarray, num_rel: np.ndarray, k: int | None) -> np.ndarray:
    """R@k = |rel ∩ top_k| / |rel| (0 when the query has no relevant item at this threshold)."""
    return _safe_div(hits(rel, k), num_rel)


def hit(rel: np.ndarray, k: int | None) -> np.ndarray:
    """Hit@k (trec_eval ``success``) = 1 if any relevant item is in the top k."""
    return (hits(rel, k) > 0).astype(np.float64)


def reciprocal_rank(rel: np.ndarray, k: int | None) -> np.ndarray:
    """RR@k = 1 / rank of the first relevant item within k, 0 if none."""
    r = _cut(rel, k)
    if r.shape[1] == 0:
        return np.zeros(r.shape[0])
    first = r.argmax(axis=1)
    found = r[np.arange(r.shape[0]), first]
    return np.where(found, 1.0 / (first + 1.0), 0.0)


def average_precision(rel: np.ndarray, num_rel: np.ndarray, k: int | None) -> np.ndarray:
    """AP@k = Σ_{i ≤ k, item i relevant} P@i / |rel| (trec_eval ``map_cut_k``; no k: ``map``).

    Computed over the relevant positions only: the n-th relevant item at rank i adds n / i.
    """
    r = _cut(rel, k)
    rows, cols = np.nonzero(r)  # row-major: each query's hits in rank order
    nth = np.arange(1, rows.size + 1) - np.searchsorted(rows, rows)
    prec_at_hits = nth / (cols + 1.0)
    return _safe_div(np.bincount(rows, weights=prec_at_hits, minlength=r.shape[0]), num_rel)


def r_precision(rel: np.ndarray, num_rel: np.ndarray) -> np.ndarray:
    """Rprec = |rel ∩ top_R| / R with R = |rel|."""
    rows, cols = np.nonzero(rel)
    within = cols < num_rel[rows]
    return _safe_div(np.bincount(rows[within], minlength=rel.shape[0]), num_rel)


def discounts(n: int) -> np.ndarray:
    """1 / log2(i + 1) for ranks i = 1..n."""
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))


def ndcg(gains: np.ndarray, ideal: np.ndarray, k: int | None) -> np.ndarray:
    """nDCG@k = Σ_{i ≤ k} gain_i / log2(i+1) ÷ IDCG@k, IDCG from the ideal order of ALL judged items.

    ``gains`` holds each ranked item's gain (already mapped from its grade); 0 when IDCG is 0.
    """
    g = _cut(gains, k)
    dcg = g @ discounts(g.shape[1]) if g.shape[1] else np.zeros(g.shape[0])
    ig = _cut(ideal, k)
    idcg = ig @ discounts(ig.shape[1]) if ig.shape[1] else np.zeros(ig.shape[0])
    return _safe_div(dcg, idcg)


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den > 0)
    return out
