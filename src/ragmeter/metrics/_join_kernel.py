"""The compiled grade join (imports numba: load it through ``_join``).

The numpy join sorts every judged pair's 64-bit key and binary-searches every run row's key in
the whole sorted array, then gathers and checks each hit: about ten passes over 80 MB arrays at
ten million rows, and a search that misses the CPU caches. Here the judgements of one query are a
stretch of the qrels (found in one pass, or through a stable sort of the query codes when the
qrels interleave queries), and each run row looks its item id up in that stretch only: a
linear scan of the query's hashes when it has few judgements, else a binary search in the
query's hashes sorted once. A hash hit counts only when the ids' bytes are equal too (skipped
when the hashes are one-to-one: ids of at most 8 bytes without NUL).

Two entry points: :data:`grades_kernel` joins given run rows (in ranked order, from
``rank_run``); :data:`ranked_grades_kernel` ranks and joins in one pass when every query's rows
are one stretch of the run already in ranked order (strictly descending 32-bit scores, or the
given order), writing each query's grades straight into its row of the (queries x depth)
matrix: no ranking permutation, no gathers.
"""

from __future__ import annotations

import numpy as np

from .._compiled import compile_kernel

#: a query with more judgements than this is searched in sorted hashes, not scanned
LINEAR = 24


def _same_bytes(
    ro: np.ndarray, rd: np.ndarray, a: int, qo: np.ndarray, qd: np.ndarray, b: int
) -> bool:  # pragma: no cover - compiled
    """Run id ``a`` (offsets ``ro`` into ``rd``) equals qrels id ``b`` (``qo`` into ``qd``)."""
    s = ro[a]
    n = ro[a + 1] - s
    t = qo[b]
    if qo[b + 1] - t != n:
        return False
    for k in range(n):
        if rd[s + k] != qd[t + k]:
            return False
    return True


def _ranges(qcode: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> bool:  # pragma: no cover
    """``lo[c]:hi[c]``: the qrels rows of query code ``c`` (``lo`` filled with -1 by the
    caller; codes < 0 skipped). False when some query's rows are not one stretch."""
    prev = -2
    for j in range(qcode.shape[0]):
        c = qcode[j]
        if c != prev:
            if prev >= 0:
                hi[prev] = j
            if c >= 0:
                if lo[c] != -1:
                    return False
                lo[c] = j
            prev = c
    if prev >= 0:
        hi[prev] = qcode.shape[0]
    return True


def _sort_query(
    a: int,
    b: int,
    perm: np.ndarray,
    use_perm: bool,
    q_hash: np.ndarray,
    s_hash: np.ndarray,
    s_row: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Fill ``s_hash[:b-a]`` with the hashes of qrels stretch ``a:b`` sorted, ``s_row`` with
    their qrels rows."""
    n = b - a
    for p in range(a, b):
        s_hash[p - a] = q_hash[perm[p] if use_perm else p]
    order = np.argsort(s_hash[:n])
    s_hash[:n] = s_hash[:n][order]
    for k in range(n):
        p = a + order[k]
        s_row[k] = perm[p] if use_perm else p


def _find(
    r: int,
    h: np.uint64,
    a: int,
    b: int,
    perm: np.ndarray,
    use_perm: bool,
    q_hash: np.ndarray,
    exact: bool,
    ro: np.ndarray,
    rd: np.ndarray,
    qo: np.ndarray,
    qd: np.ndarray,
    s_hash: np.ndarray,
    s_row: np.ndarray,
) -> int:  # pragma: no cover - compiled
    """The qrels row of stretch ``a:b`` judging run row ``r`` (item hash ``h``), or -1. A
    stretch longer than LINEAR must have been sorted into ``s_hash``/``s_row`` first."""
    if b - a <= LINEAR:
        for p in range(a, b):
            j = perm[p] if use_perm else p
            if q_hash[j] == h and (exact or same_bytes_kernel(ro, rd, r, qo, qd, j)):
                return j
        return -1
    n = b - a
    k = np.searchsorted(s_hash[:n], h)
    while k < n and s_hash[k] == h:  # every judged id with this hash
        j = s_row[k]
        if exact or same_bytes_kernel(ro, rd, r, qo, qd, j):
            return j
        k += 1
    return -1


def _widest(lo: np.ndarray, hi: np.ndarray) -> int:  # pragma: no cover - compiled
    width = 0
    for c in range(lo.shape[0]):
        if lo[c] >= 0 and hi[c] - lo[c] > width:
            width = hi[c] - lo[c]
    return width


def _grades(
    rows: np.ndarray,
    run_code: np.ndarray,
    run_hash: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    perm: np.ndarray,
    use_perm: bool,
    q_hash: np.ndarray,
    rel: np.ndarray,
    exact: bool,
    ro: np.ndarray,
    rd: np.ndarray,
    qo: np.ndarray,
    qd: np.ndarray,
    out: np.ndarray,
) -> int:  # pragma: no cover - compiled
    """``out[i]`` = grade of run row ``rows[i]`` (left as is when unjudged); returns how many
    were judged. The qrels row at stretch position ``p`` is ``perm[p]`` (``p`` itself when not
    ``use_perm``)."""
    width = widest_kernel(lo, hi)
    s_hash = np.empty(width, np.uint64)  # the current query's hashes, sorted (large queries)
    s_row = np.empty(width, np.int64)  # their qrels rows
    current = -1
    matched = 0
    for i in range(rows.shape[0]):
        r = rows[i]
        c = run_code[r]
        if c < 0 or lo[c] < 0:
            continue
        a = lo[c]
        b = hi[c]
        if b - a > LINEAR and c != current:  # sorted once per query (its rows are together)
            current = c
            sort_query_kernel(a, b, perm, use_perm, q_hash, s_hash, s_row)
        j = find_kernel(r, run_hash[r], a, b, perm, use_perm, q_hash, exact, ro, rd, qo, qd,
                        s_hash, s_row)  # fmt: skip
        if j >= 0:
            out[i] = rel[j]
            matched += 1
    return matched


def _ranked(
    block_start: np.ndarray, block_len: np.ndarray, block_code: np.ndarray, score: np.ndarray
) -> bool:  # pragma: no cover - compiled
    """Every scored stretch is in ranked order: strictly descending 32-bit scores (so no tie
    for the item ids to break, and no NaN)."""
    for b in range(block_start.shape[0]):
        if block_code[b] < 0:
            continue
        s = block_start[b]
        for t in range(s + 1, s + block_len[b]):
            if not np.float32(score[t]) < np.float32(score[t - 1]):
                return False
    return True


def _ranked_grades(
    block_start: np.ndarray,
    block_len: np.ndarray,
    block_code: np.ndarray,
    run_hash: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    perm: np.ndarray,
    use_perm: bool,
    q_hash: np.ndarray,
    rel: np.ndarray,
    exact: bool,
    ro: np.ndarray,
    rd: np.ndarray,
    qo: np.ndarray,
    qd: np.ndarray,
    out: np.ndarray,
) -> int:  # pragma: no cover - compiled
    """``out[c, p]`` = grade of the item at rank ``p`` of the query with code ``c``, for runs
    whose queries are the stretches ``block_start[b]:+block_len[b]`` (code ``block_code[b]``,
    -1: not scored), each already in ranked order (the caller checked: :data:`ranked_kernel`
    or the given order). Returns how many of the written items are judged."""
    depth = out.shape[1]
    width = widest_kernel(lo, hi)
    s_hash = np.empty(width, np.uint64)
    s_row = np.empty(width, np.int64)
    matched = 0
    for b in range(block_start.shape[0]):
        c = block_code[b]
        if c < 0 or lo[c] < 0:
            continue
        a = lo[c]
        e = hi[c]
        if e - a > LINEAR:
            sort_query_kernel(a, e, perm, use_perm, q_hash, s_hash, s_row)
        s = block_start[b]
        for p in range(min(block_len[b], depth)):
            r = s + p
            j = find_kernel(r, run_hash[r], a, e, perm, use_perm, q_hash, exact, ro, rd, qo, qd,
                            s_hash, s_row)  # fmt: skip
            if j >= 0:
                out[c, p] = rel[j]
                matched += 1
    return matched


same_bytes_kernel = compile_kernel(_same_bytes, inline=True)
ranges_kernel = compile_kernel(_ranges)
sort_query_kernel = compile_kernel(_sort_query)
find_kernel = compile_kernel(_find, inline=True)
widest_kernel = compile_kernel(_widest)
grades_kernel = compile_kernel(_grades)
ranked_kernel = compile_kernel(_ranked)
ranked_grades_kernel = compile_kernel(_ranked_grades)
