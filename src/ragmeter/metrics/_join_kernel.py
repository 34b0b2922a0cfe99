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
are one stretch of the run, writing each query's grades straight into its row of the (queries x
depth) matrix: no ranking permutation, no gathers. A stretch in strictly descending 32-bit
scores (or any, in the given order) is read as it stands; a stretch with ties or out of order
is ranked on its own first (:data:`rank_stretch_kernel`: trec_eval's rule, ``rank_run``'s
order to the row), so a few tied queries leave the others on the straight pass.
"""

from __future__ import annotations

import numpy as np

from .._compiled import compile_kernel

#: a query with more judgements than this is searched in sorted hashes, not scanned
LINEAR = 24
#: a tie group larger than this is merge-sorted, a smaller one insertion-sorted
SMALL_GROUP = 16


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


def _id_greater(to: np.ndarray, td: np.ndarray, a: int, b: int) -> bool:  # pragma: no cover
    """Run item id ``a`` sorts after id ``b`` in byte order (offsets ``to`` into ``td``)."""
    sa = to[a]
    na = to[a + 1] - sa
    sb = to[b]
    nb = to[b + 1] - sb
    for k in range(min(na, nb)):
        x = td[sa + k]
        y = td[sb + k]
        if x != y:
            return x > y
    return na > nb


def _first(
    j: int,
    i: int,
    key: np.ndarray,
    tied: np.ndarray,
    head: np.ndarray,
    s: int,
    to: np.ndarray,
    td: np.ndarray,
) -> bool:  # pragma: no cover - compiled
    """Stretch position ``j`` ranks strictly before ``i``: a higher float32 score, or an equal
    one (not NaN: a NaN ties nothing) and a greater item id (trec_eval's rule), told by the
    ids' first 8 bytes (``head``) unless those are equal."""
    if key[j] != key[i]:
        return key[j] < key[i]
    if not tied[i]:
        return False
    if head[j] != head[i]:
        return head[j] > head[i]
    return id_greater_kernel(to, td, s + j, s + i)


def _rank_stretch(
    s: int,
    n: int,
    score: np.ndarray,
    to: np.ndarray,
    td: np.ndarray,
    f32: np.ndarray,
    tied: np.ndarray,
    head: np.ndarray,
    order: np.ndarray,
    tmp: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """``order[:n]``: the positions of stretch ``s:s+n`` of the run in ranked order (score
    descending as float32, then item id descending; stable, so what neither key orders, NaN
    scores, keeps the given order: ``rank_run``'s order exactly). Scores already
    non-increasing (a run with ties, written in rank order) only have their tie groups sorted;
    else the whole stretch is merge-sorted. ``f32`` (float32) holds the keys, as uint32
    through a view; ``head`` each id's first 8 bytes as a big-endian word, zero-padded (equal
    words: the bytes decide)."""
    for t in range(n):
        f = np.float32(score[s + t])
        tied[t] = f == f  # not NaN: a NaN ties nothing
        f32[t] = np.float32(0.0) if f == 0 else f  # -0.0 and 0.0: one key
        order[t] = t
        start = to[s + t]
        size = to[s + t + 1] - start
        word = np.uint64(0)
        for k in range(8):
            byte = np.uint64(td[start + k]) if k < size else np.uint64(0)
            word = (word << np.uint64(8)) | byte
        head[t] = word
    key = f32[:n].view(np.uint32)
    monotone = True  # scores already non-increasing: only the tie groups need ordering
    for t in range(n):  # desc_float32_key: ascending keys, descending scores
        bits = key[t]
        key[t] = bits if bits >> np.uint32(31) else ~(bits | np.uint32(0x80000000))
        if t and key[t] < key[t - 1]:
            monotone = False
    if not monotone:
        merge_sort_kernel(0, n, key, tied, head, s, to, td, order, tmp)
        return
    t = 0
    while t < n:  # each run of equal keys (a tie group, or NaNs kept in the given order)
        u = t + 1
        while u < n and key[u] == key[t]:
            u += 1
        if u - t > SMALL_GROUP:
            merge_sort_kernel(t, u, key, tied, head, s, to, td, order, tmp)
        elif u - t > 1:  # insertion sort: stable, few comparisons on a small group
            for i in range(t + 1, u):
                v = order[i]
                j = i - 1
                while j >= t and first_kernel(v, order[j], key, tied, head, s, to, td):
                    order[j + 1] = order[j]
                    j -= 1
                order[j + 1] = v
        t = u


def _merge_sort(
    lo: int,
    hi: int,
    key: np.ndarray,
    tied: np.ndarray,
    head: np.ndarray,
    s: int,
    to: np.ndarray,
    td: np.ndarray,
    order: np.ndarray,
    tmp: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Sort ``order[lo:hi]`` stably by :func:`_first` (bottom-up; merges of two halves already
    in order are skipped)."""
    n = hi - lo
    width = 1
    while width < n:
        for a in range(lo, hi - width, 2 * width):
            m = a + width
            e = min(a + 2 * width, hi)
            if not first_kernel(order[m], order[m - 1], key, tied, head, s, to, td):
                continue  # the two halves are in order already
            i = a
            j = m
            k = a
            while i < m and j < e:
                if first_kernel(order[j], order[i], key, tied, head, s, to, td):
                    tmp[k] = order[j]
                    j += 1
                else:
                    tmp[k] = order[i]
                    i += 1
                k += 1
            while i < m:
                tmp[k] = order[i]
                i += 1
                k += 1
            while j < e:
                tmp[k] = order[j]
                j += 1
                k += 1
            order[a:e] = tmp[a:e]
        width *= 2


def _unranked(
    block_start: np.ndarray,
    block_len: np.ndarray,
    block_code: np.ndarray,
    score: np.ndarray,
    flags: np.ndarray,
) -> int:  # pragma: no cover - compiled
    """``flags[b]`` = 1 when scored stretch ``b`` is not in ranked order as it stands (strictly
    descending float32 scores: no tie for the item ids to break, no NaN); returns the longest
    such stretch (0: every stretch is ranked). A pass of its own: the same loop inside the
    rank-and-join costs ten times more."""
    longest = 0
    for b in range(block_start.shape[0]):
        if block_code[b] < 0:
            continue
        s = block_start[b]
        for t in range(s + 1, s + block_len[b]):
            if not np.float32(score[t]) < np.float32(score[t - 1]):
                flags[b] = 1
                longest = max(longest, block_len[b])
                break
    return longest


def _rank_flagged(
    block_start: np.ndarray,
    block_len: np.ndarray,
    flags: np.ndarray,
    score: np.ndarray,
    to: np.ndarray,
    td: np.ndarray,
    longest: int,
    base: np.ndarray,
    local: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """For each stretch ``b`` flagged in ``flags``: ``local[base[b]:base[b+1]]`` = the positions
    within the stretch of its first ranks in ranked order (:func:`_rank_stretch`, compiled into
    this loop). A pass of its own: ranking inside the rank-and-join's loop slowed that loop
    tenfold for every query, tied or not."""
    f32 = np.empty(longest, np.float32)
    tied = np.empty(longest, np.bool_)
    head = np.empty(longest, np.uint64)
    order = np.empty(longest, np.int64)
    tmp = np.empty(longest, np.int64)
    for b in range(block_start.shape[0]):
        if flags[b]:
            rank_stretch_kernel(block_start[b], block_len[b], score, to, td, f32, tied, head,
                                order, tmp)  # fmt: skip
            for p in range(base[b + 1] - base[b]):
                local[base[b] + p] = order[p]


def _ranked_grades(
    block_start: np.ndarray,
    block_len: np.ndarray,
    block_code: np.ndarray,
    flags: np.ndarray,
    base: np.ndarray,
    local: np.ndarray,
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
    -1: not scored). A stretch flagged in ``flags`` takes its ranks from ``local`` (from
    ``base[b]``: :data:`rank_flagged_kernel`); every other is read in its given order, so one
    tied query leaves the others on the straight pass. Returns how many of the written items
    are judged."""
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
        straight = flags[b] == 0
        at = base[b]
        for p in range(min(block_len[b], depth)):
            r = s + p if straight else s + local[at + p]
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
id_greater_kernel = compile_kernel(_id_greater, inline=True)
first_kernel = compile_kernel(_first, inline=True)
merge_sort_kernel = compile_kernel(_merge_sort, inline=True)
rank_stretch_kernel = compile_kernel(_rank_stretch, inline=True)
rank_flagged_kernel = compile_kernel(_rank_flagged)
unranked_kernel = compile_kernel(_unranked)
ranked_grades_kernel = compile_kernel(_ranked_grades)
