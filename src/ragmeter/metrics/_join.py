"""Columnar building blocks of the metric engine: query codes and the grade join.

Both are exact and avoid hashing every string in Arrow's engine, which dominated the engine's
time at a million queries:

- :func:`group_codes` encodes a column of query ids through its runs of equal values (TREC files
  list each query's rows together), so only one string per query is hashed, not one per row;
- :func:`join_grades` finds the judged grade of every run row by sorting 64-bit keys built from
  the query code and a hash of the item id (numpy, no Python per row), then checks every match
  exactly (query code and item id) so a hash collision can never pass a wrong grade;
- from :data:`COMPILED_MIN_ROWS` run rows, when numba is installed (the ``fast`` extra), the
  join runs as compiled loops (``_join_kernel``): :func:`ranked_grades` ranks and joins at once
  a run whose queries are each one stretch (ranking only the stretches with ties or out of
  order), ``join_grades`` joins ranked rows; same grades to the bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _compiled
from ..io import dictionary_codes
from ..io import flat as _flat
from ..io._duplicates import string_hashes
from ..io._trec_arrays import string_offsets as _offsets

#: the compiled loops (numba, the ``fast`` extra: the join, the rank-and-join and the qrels'
#: grade counts) run from this many rows: below it numpy is quick and loading numba (about
#: 0.4 s, plus a one-time compile on a new machine) would cost more than it saves
COMPILED_MIN_ROWS = 2_000_000


@dataclass(frozen=True)
class Groups:
    """A column of ids encoded against its dictionary of distinct values: per run of equal
    values (``starts``/``lengths`` set, ``codes`` one per run) or per row (both None)."""

    codes: np.ndarray  # int64 dictionary positions, per run or per row
    dictionary: pa.Array
    starts: np.ndarray | None = None
    lengths: np.ndarray | None = None

    def rows(self, per_value: np.ndarray) -> np.ndarray:
        """``per_value[code of row i]`` for every row (one gather per run, then a repeat)."""
        v = per_value[self.codes]
        return v if self.lengths is None else np.repeat(v, self.lengths)

    def any_per_value(self, flags: np.ndarray) -> np.ndarray:
        """[v]: some row of value ``v`` has ``flags`` set (bool per row)."""
        out = np.zeros(len(self.dictionary), dtype=bool)
        if self.starts is None:
            out[self.codes[flags]] = True
        elif flags.size:
            out[self.codes] = np.logical_or.reduceat(flags, self.starts)
        return out


def group_runs(arr: pa.Array | pa.ChunkedArray, starts: np.ndarray | None = None) -> Groups:
    """Encode ``arr`` hashing one string per run of equal values when each value's rows are
    contiguous (else every row, as ``dictionary_codes``).

    ``starts``: the run starts when the caller already knows them and knows every run holds a
    different value (the TREC reader proves both while it reads); else they are found here."""
    a = _flat(arr)
    n = len(a)
    known = starts is not None
    if starts is None:
        if n < 2:
            return Groups(*dictionary_codes(a))
        change = pc.not_equal(a[1:], a[:-1])
        starts = np.concatenate((np.zeros(1, np.int64), _true_rows(change) + 1))
        if starts.size * 2 > n:  # short runs: encoding the runs saves little
            return Groups(*dictionary_codes(a))
    if n == 0:
        return Groups(*dictionary_codes(a))
    lengths = np.diff(np.append(starts, n))
    if known:  # every run a different value: the runs' values are the dictionary
        return Groups(
            np.arange(starts.size, dtype=np.int64), a.take(pa.array(starts)), starts, lengths
        )
    enc = pc.dictionary_encode(a.take(pa.array(starts)))
    if len(enc.dictionary) != starts.size:  # a value's rows are split over several runs
        return Groups(*dictionary_codes(a))
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return Groups(codes, enc.dictionary, starts, lengths)


def group_codes(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """(index of each row's value in the dictionary, the dictionary of distinct values), like
    ``dictionary_codes`` (see :func:`group_runs`). Codes are int64."""
    g = group_runs(arr)
    return g.rows(np.arange(len(g.dictionary), dtype=np.int64)), g.dictionary


def _true_rows(mask: pa.BooleanArray | pa.ChunkedArray) -> np.ndarray:
    """Indices of the true values of a null-free boolean array (its bitmap, unpacked)."""
    m = _flat(mask)
    bits = np.frombuffer(m.buffers()[1], dtype=np.uint8)
    flags = np.unpackbits(bits, count=m.offset + len(m), bitorder="little")
    return np.flatnonzero(flags[m.offset :])


def join_grades(
    rows: np.ndarray,
    run_code: np.ndarray,
    run_doc: pa.Array | pa.ChunkedArray,
    qrels_code: np.ndarray,
    qrels_doc: pa.Array | pa.ChunkedArray,
    rel: np.ndarray,
    dtype: np.dtype,
    run_hashes: np.ndarray | None = None,
    qrels_hashes: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    """(grade of run row ``rows[i]`` for every i, how many of them are judged).

    ``run_hashes``/``qrels_hashes``: ``string_hashes`` of every run/qrels item id when the reader
    kept them (computed here otherwise).

    A run row matches the qrels row with the same query code (``>= 0``; -1 is never matched) and
    the same item id; unmatched rows get 0. Qrels pairs are unique (the readers enforce it).

    Keys are ``query code`` in the high bits and the item id's hash in the low ones, so sorted
    keys keep each query's judgements together; ``rows`` ordered by query (ranked order) then
    search them with good locality. Every key match is checked exactly before it counts.
    """
    n_out = rows.size
    if n_out >= COMPILED_MIN_ROWS and _compiled.available():
        done = _join_compiled(
            rows, run_code, run_doc, qrels_code, qrels_doc, rel, dtype, run_hashes, qrels_hashes
        )
        if done is not None:
            return done
    out = np.zeros(n_out, dtype=dtype)
    q_rows = np.flatnonzero(qrels_code >= 0)
    if not rows.size or not q_rows.size:
        return out, 0
    rc = run_code[rows]
    live = rc >= 0
    if not live.all():
        rows, rc, where = rows[live], rc[live], np.flatnonzero(live)
    else:
        where = None
    qdoc, rdoc = _flat(qrels_doc), _flat(run_doc)
    exact_hash = _hash_is_exact(qdoc) and _hash_is_exact(rdoc)
    if q_rows.size < len(qdoc):
        qdoc = qdoc.take(pa.array(q_rows))
        if qrels_hashes is not None:
            qrels_hashes = qrels_hashes[q_rows]
    qh = string_hashes(qdoc) if qrels_hashes is None else qrels_hashes
    rh = string_hashes(rdoc) if run_hashes is None else run_hashes
    if qh is None or rh is None:  # pragma: no cover - string_hashes pads every string array
        return _join_arrow(rows, run_code, run_doc, qrels_code, qrels_doc, rel, dtype, where, n_out)
    rh = rh[rows]
    qc = qrels_code[q_rows]
    bits = max(1, int(max(int(qc.max()), int(rc.max()) if rc.size else 0)).bit_length())
    qkey = _keys(qc, qh, bits)
    order = np.argsort(qkey)
    qkey = qkey[order]
    if qkey.size > 1 and bool((qkey[1:] == qkey[:-1]).any()):
        # two judged pairs of one query share a key (a hash collision): a search would be
        # ambiguous, so this (rare) join goes to Arrow's engine
        return _join_arrow(rows, run_code, run_doc, qrels_code, qrels_doc, rel, dtype, where, n_out)
    rkey = _keys(rc, rh, bits)
    pos = np.searchsorted(qkey, rkey)
    np.minimum(pos, qkey.size - 1, out=pos)
    hit = qkey[pos] == rkey
    del rkey, qkey
    i = np.flatnonzero(hit)  # positions in rows
    j = order[pos[i]]  # positions in q_rows
    del pos, hit, order
    same = (rc[i] == qc[j]) & (rh[i] == qh[j])
    if not exact_hash:  # equal hashes, maybe different ids: compare the ids themselves
        ok = np.flatnonzero(same)
        eq = pc.equal(rdoc.take(pa.array(rows[i[ok]])), qdoc.take(pa.array(j[ok])))
        same[ok] = eq.to_numpy(zero_copy_only=False)
    i, j = i[same], j[same]
    out[i if where is None else where[i]] = rel[q_rows[j]]
    return out, int(i.size)


@dataclass(frozen=True)
class _Prepared:
    """Both sides of the compiled join, as the kernels take them (``_join_kernel``)."""

    run_hash: np.ndarray
    lo: np.ndarray  # per query code: its first qrels stretch position, -1 when none
    hi: np.ndarray
    perm: np.ndarray  # stretch position -> qrels row (used only when use_perm)
    use_perm: bool
    q_hash: np.ndarray
    rel: np.ndarray
    exact: bool
    ro: np.ndarray  # run id offsets and bytes
    rd: np.ndarray
    qo: np.ndarray  # qrels id offsets and bytes (placeholders when exact)
    qd: np.ndarray

    def args(self) -> tuple[object, ...]:
        """From ``lo`` on, the kernels' arguments in their order."""
        return (self.lo, self.hi, self.perm, self.use_perm, self.q_hash, self.rel, self.exact,
                self.ro, self.rd, self.qo, self.qd)  # fmt: skip


def _prepare(
    n_codes: int,
    run_doc: pa.Array | pa.ChunkedArray,
    qrels_code: np.ndarray,
    qrels_doc: pa.Array | pa.ChunkedArray,
    rel: np.ndarray,
    run_hashes: np.ndarray | None,
    qrels_hashes: np.ndarray | None,
) -> _Prepared | None:
    """Hashes, each query's qrels stretch and the id bytes for the compiled join; None when the
    ids could not be hashed (the numpy join then takes over)."""
    from ._join_kernel import ranges_kernel

    qdoc, rdoc = _flat(qrels_doc), _flat(run_doc)
    qh = string_hashes(qdoc) if qrels_hashes is None else qrels_hashes
    rh = string_hashes(rdoc) if run_hashes is None else run_hashes
    if qh is None or rh is None:  # pragma: no cover - string_hashes pads every string array
        return None
    lo = np.full(n_codes, -1, dtype=np.int64)
    hi = np.zeros(n_codes, dtype=np.int64)
    perm = np.zeros(1, dtype=np.int64)
    use_perm = not ranges_kernel(qrels_code, lo, hi)
    if use_perm:  # the qrels interleave queries: visit them through a stable sort by query
        perm = np.argsort(qrels_code, kind="stable")
        ordered = qrels_code[perm]
        codes = np.arange(n_codes)
        lo = np.searchsorted(ordered, codes, side="left").astype(np.int64)
        hi = np.searchsorted(ordered, codes, side="right").astype(np.int64)
        lo[lo == hi] = -1
        del ordered
    exact = _hash_is_exact(qdoc) and _hash_is_exact(rdoc)
    # the run's ids (views, no copy): compared on hash hits unless exact, and the order of
    # tied items in the one-pass ranking
    ro, rd = _offsets(rdoc), _data(rdoc)
    if exact:  # no byte comparison: placeholders of one fixed type
        qo = np.zeros(1, dtype=np.int64)
        qd = np.zeros(0, dtype=np.uint8)
    else:
        qo, qd = _offsets(qdoc), _data(qdoc)
    rel = np.asarray(rel, dtype=np.int64)
    return _Prepared(rh, lo, hi, perm, use_perm, qh, rel, exact, ro, rd, qo, qd)


def _join_compiled(
    rows: np.ndarray,
    run_code: np.ndarray,
    run_doc: pa.Array | pa.ChunkedArray,
    qrels_code: np.ndarray,
    qrels_doc: pa.Array | pa.ChunkedArray,
    rel: np.ndarray,
    dtype: np.dtype,
    run_hashes: np.ndarray | None,
    qrels_hashes: np.ndarray | None,
) -> tuple[np.ndarray, int] | None:
    """:func:`join_grades` in one compiled pass over ``rows``; None when the ids could not be
    hashed."""
    from ._join_kernel import grades_kernel

    out = np.zeros(rows.size, dtype=dtype)
    n_codes = max(int(qrels_code.max(initial=-1)), int(run_code.max(initial=-1))) + 1
    if n_codes == 0:
        return out, 0
    prep = _prepare(n_codes, run_doc, qrels_code, qrels_doc, rel, run_hashes, qrels_hashes)
    if prep is None:  # pragma: no cover - string_hashes pads every string array
        return None
    matched = grades_kernel(rows, run_code, prep.run_hash, *prep.args(), out)
    return out, int(matched)


def ranked_grades(
    blocks: Groups,
    block_code: np.ndarray,
    score: np.ndarray,
    ties: str,
    n_queries: int,
    depth: int,
    run_doc: pa.Array | pa.ChunkedArray,
    qrels_code: np.ndarray,
    qrels_doc: pa.Array | pa.ChunkedArray,
    rel: np.ndarray,
    dtype: np.dtype,
    run_hashes: np.ndarray | None,
    qrels_hashes: np.ndarray | None,
) -> tuple[np.ndarray, int] | None:
    """Rank and join in one compiled pass (``ranked_grades_kernel``): the (``n_queries`` x
    ``depth``) grades in ranked order and how many of them are judged, when the run's queries
    are its runs of equal qids (``blocks``, each with its scored-query code in ``block_code``,
    -1 for none). A query whose rows are in strictly descending 32-bit scores (or any query
    under ``ties="given"``) is read as it stands; one with ties or rows out of order is ranked
    on its own first (``rank_flagged_kernel``: trec_eval's rule, ``rank_run``'s order; only its
    first ``depth`` positions kept), so a few such queries do not move the others off this
    path. None when a query's rows are split over several stretches,
    numba cannot run or the run is small (then ``rank_run`` and :func:`join_grades` do it)."""
    if (
        blocks.starts is None
        or blocks.lengths is None
        or len(score) < COMPILED_MIN_ROWS
        or not _compiled.available()
    ):
        return None
    from ._join_kernel import rank_flagged_kernel, ranked_grades_kernel, unranked_kernel

    score = np.asarray(score, dtype=np.float64)
    out = np.zeros((n_queries, depth), dtype=dtype)
    if not n_queries or not depth:
        return out, 0
    n_codes = max(int(qrels_code.max(initial=-1)), n_queries - 1) + 1
    prep = _prepare(n_codes, run_doc, qrels_code, qrels_doc, rel, run_hashes, qrels_hashes)
    if prep is None:  # pragma: no cover - string_hashes pads every string array
        return None
    starts, lengths = blocks.starts, blocks.lengths
    flags = np.zeros(starts.size, dtype=np.uint8)  # the stretches ranked before the join
    longest = 0
    if ties != "given":
        longest = unranked_kernel(starts, lengths, block_code, score, flags)
    base = np.zeros(starts.size + 1, dtype=np.int64)  # each flagged stretch's first ranks
    local = np.zeros(0, dtype=np.int32)
    if longest:
        np.cumsum(np.where(flags, np.minimum(lengths, depth), 0), out=base[1:])
        local = np.empty(int(base[-1]), dtype=np.int32 if longest < 2**31 else np.int64)
        rank_flagged_kernel(starts, lengths, flags, score, prep.ro, prep.rd, longest, base, local)
    matched = ranked_grades_kernel(
        starts, lengths, block_code, flags, base, local, prep.run_hash, *prep.args(), out
    )
    return out, int(matched)


def _keys(code: np.ndarray, hashes: np.ndarray, bits: int) -> np.ndarray:
    """uint64 keys: ``code`` in the top ``bits`` bits, the top bits of ``hashes`` below."""
    key = code.astype(np.uint64) << np.uint64(64 - bits)
    key |= hashes >> np.uint64(bits)
    return key


def _data(arr: pa.Array) -> np.ndarray:
    """The bytes buffer of a string array, as uint8 (offsets index it), without a copy."""
    buf = arr.buffers()[2]
    return np.zeros(0, dtype=np.uint8) if buf is None else np.frombuffer(buf, dtype=np.uint8)


def _hash_is_exact(arr: pa.Array) -> bool:
    """True when ``string_hashes`` is one-to-one on ``arr``: every string at most 8 bytes and no
    NUL byte (its one word, times an odd constant, is then unique to the string)."""
    if len(arr) == 0:
        return True
    if int(pc.max(pc.binary_length(arr)).as_py()) > 8:
        return False
    offsets = _offsets(arr)
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[int(offsets[0]) : int(offsets[-1])]
    return bool(data.all())


def _join_arrow(
    rows: np.ndarray,
    run_code: np.ndarray,
    run_doc: pa.Array | pa.ChunkedArray,
    qrels_code: np.ndarray,
    qrels_doc: pa.Array | pa.ChunkedArray,
    rel: np.ndarray,
    dtype: np.dtype,
    where: np.ndarray | None,
    n_out: int,
) -> tuple[np.ndarray, int]:
    """The same join in Arrow's hash-join engine (used only when two judged pairs' keys
    collide); ``rows`` are the live rows, at positions ``where`` of the result (all if None)."""
    out = np.zeros(n_out, dtype=dtype)
    left = pa.table(
        {
            "q": pa.array(run_code[rows]),
            "doc": _flat(run_doc).take(pa.array(rows)),
            "at": pa.array(np.arange(rows.size) if where is None else where),
        }
    )
    right = pa.table({"q": pa.array(qrels_code), "doc": _flat(qrels_doc), "rel": pa.array(rel)})
    right = right.filter(pc.greater_equal(right["q"], 0))
    joined = left.join(right, keys=["q", "doc"], join_type="inner", use_threads=True)
    at = joined.column("at").to_numpy()
    out[at] = joined.column("rel").to_numpy()
    return out, int(at.size)
