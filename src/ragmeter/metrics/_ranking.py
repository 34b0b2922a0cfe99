"""Order a columnar run into ranked lists per query (trec_eval's tie rule or the given order)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._errors import UsageError
from ..io import Run
from ..io import flat as _flat

Ties = Literal["trec", "given"]


@dataclass(frozen=True)
class Ranked:
    """A run as ranked lists in CSR form.

    Query ``qids[i]`` owns positions ``starts[i]:starts[i+1]`` of ``rows``, best first; ``rows``
    index the rows of ``run``. Queries asked for but absent from the run have no positions.
    """

    qids: list[str]
    starts: np.ndarray  # int64, len(qids) + 1
    rows: np.ndarray  # int64 row indices into run, ranked order
    run: Run

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.starts)

    def docs_of(self, i: int) -> list[str]:
        """The ranked item ids of query ``qids[i]``."""
        rows = self.rows[self.starts[i] : self.starts[i + 1]]
        return _flat(self.run.doc).take(pa.array(rows)).to_pylist()


def desc_float32_key(score: np.ndarray) -> np.ndarray:
    """uint32 keys whose ascending order is descending float32 score (trec_eval compares floats)."""
    s32 = np.asarray(score, dtype=np.float32).copy()
    s32[s32 == 0] = 0.0  # -0.0 and 0.0 are one tie
    bits = s32.view(np.uint32)
    neg = (bits >> np.uint32(31)).astype(bool)
    asc = np.where(neg, ~bits, bits | np.uint32(0x80000000))
    return ~asc


def query_codes(qid: pa.Array | pa.ChunkedArray, qids: Sequence[str]) -> np.ndarray:
    """Position of each row's query in ``qids`` (-1 when the query is not in ``qids``)."""
    codes = pc.index_in(_flat(qid), value_set=pa.array(list(qids), pa.string()))
    return codes.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32, copy=False)


def rank_run(
    run: Run,
    *,
    ties: Ties = "trec",
    qids: Sequence[str] | None = None,
    codes: np.ndarray | None = None,
) -> Ranked:
    """Sort a run into ranked lists: score descending, then item id descending (trec_eval's rule,
    scores compared as 32-bit floats), or ``ties="given"`` to keep each query's rows in file order.

    ``qids`` restricts (and orders) the queries; by default every query of the run, sorted.
    ``codes`` may pass ``query_codes(run.qid, qids)`` when the caller already has it.
    """
    if ties not in ("trec", "given"):
        raise UsageError(f"ties must be 'trec' or 'given', got '{ties}'")
    if qids is None:
        qids = sorted(pc.unique(_flat(run.qid)).to_pylist())
    qids = list(qids)
    if codes is None:
        codes = query_codes(run.qid, qids)
    all_kept = bool(np.all(codes >= 0))
    if all_kept:
        rows = np.arange(codes.size, dtype=np.int32 if codes.size < 2**31 else np.int64)
        qcode = codes
    else:
        rows = np.flatnonzero(codes >= 0)
        if rows.size < 2**31:
            rows = rows.astype(np.int32)
        qcode = codes[rows]
    order: np.ndarray | None
    if ties == "given":
        order = np.argsort(qcode, kind="stable")
    else:
        s32 = np.asarray(run.score, dtype=np.float32)
        s32 = s32 if rows.size == s32.size else s32[rows]
        order = _grouped_order(qcode, s32)
        if order is None:
            key = (qcode.astype(np.uint64) << np.uint64(32)) | desc_float32_key(s32).astype(
                np.uint64
            )
            order = np.argsort(key, kind="stable")
            del key
        if order is IDENTITY:  # already ranked: no gathers, no copies
            _break_ties(rows, qcode, s32, _flat(run.doc))
        else:
            rows = order if all_kept else rows[order]  # rows is the identity when all are kept
            _break_ties(rows, qcode[order], s32[order], _flat(run.doc))
        order = None
    if order is not None:
        rows = rows[order]
    counts = np.bincount(qcode, minlength=len(qids))
    starts = np.zeros(len(qids) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    return Ranked(qids, starts, rows, run)


#: returned by _grouped_order when the rows are already in (query, rank) order
IDENTITY = np.zeros(0, dtype=np.int64)


def _grouped_order(qcode: np.ndarray, s32: np.ndarray) -> np.ndarray | None:
    """The (query, rank) order without a sort, when each query's rows are contiguous and already
    in descending float32 score order (how TREC runs are usually written); None otherwise."""
    n = qcode.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.flatnonzero(qcode[1:] != qcode[:-1]) + 1
    descending = s32[1:] <= s32[:-1]
    descending[change - 1] = True  # a new query may start at any score
    if not descending.all():
        return None
    block_start = np.concatenate(([0], change))
    block_query = qcode[block_start]
    if np.all(block_query[1:] > block_query[:-1]):
        return IDENTITY  # blocks already in query order
    by_query = np.argsort(block_query, kind="stable")
    if np.any(block_query[by_query][1:] == block_query[by_query][:-1]):
        return None  # a query's rows are split over several blocks
    lengths = np.diff(np.append(block_start, n))[by_query]
    starts = block_start[by_query]
    itype = np.int32 if n < 2**31 else np.int64
    order = np.repeat((starts - (np.cumsum(lengths) - lengths)).astype(itype), lengths)
    order += np.arange(n, dtype=itype)
    return order


def _break_ties(
    rows: np.ndarray, q_sorted: np.ndarray, key_sorted: np.ndarray, doc: pa.Array
) -> None:
    """Within runs of equal (query, float32 score), order by item id descending (byte order).

    ``rows`` (ranked run rows, reordered in place), ``q_sorted`` and ``key_sorted`` (float32
    scores; float equality, so -0.0 ties 0.0) are aligned; only tied positions are touched.
    """
    if key_sorted.size < 2:
        return
    eq = key_sorted[1:] == key_sorted[:-1]
    eq &= q_sorted[1:] == q_sorted[:-1]
    if not eq.any():
        return
    in_tie = np.zeros(key_sorted.size, dtype=bool)
    in_tie[1:] |= eq
    in_tie[:-1] |= eq
    pos = np.flatnonzero(in_tie)
    group = np.cumsum(np.concatenate(([True], ~eq[pos[:-1]] | (np.diff(pos) > 1))))
    docs = doc.take(pa.array(rows[pos]))
    within = pc.sort_indices(
        pa.table({"g": group, "d": docs}),
        sort_keys=[("g", "ascending"), ("d", "descending")],
    ).to_numpy()
    rows[pos] = rows[pos[within]]
