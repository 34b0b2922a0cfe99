"""Order a columnar run into ranked lists per query (trec_eval's tie rule or the given order)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._errors import UsageError
from ..io._tables import Run

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
        rows = self.rows[self.starts[i]: self.starts[i + 1]]
        return _flat(self.run.doc).take(pa.array(rows)).to_pylist()


def _flat(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


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
    return codes.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def rank_run(run: Run, *, ties: Ties = "trec", qids: Sequence[str] | None = None) -> Ranked:
    """Sort a run into ranked lists: score descending, then item id descending (trec_eval's rule,
    scores compared as 32-bit floats), or ``ties="given"`` to keep each query's rows in file order.

    ``qids`` restricts (and orders) the queries; by default every query of the run, sorted.
    """
    if ties not in ("trec", "given"):
        raise UsageError(f"ties must be 'trec' or 'given', got '{ties}'")
    if qids is None:
        qids = sorted(pc.unique(_flat(run.qid)).to_pylist())
    qids = list(qids)
    qcode = query_codes(run.qid, qids)
    rows = np.flatnonzero(qcode >= 0)
    qcode = qcode[rows]
    if ties == "given":
        order = np.argsort(qcode, kind="stable")
    else:
        key = (qcode.astype(np.uint64) << np.uint64(32)) | desc_float32_key(
            np.asarray(run.score)[rows]
        ).astype(np.uint64)
        # stable: already-sorted runs (the usual case) sort in linear time
        order = np.argsort(key, kind="stable")
        order = _break_ties(order, key[order], _flat(run.doc), rows)
    counts = np.bincount(qcode, minlength=len(qids))
    starts = np.zeros(len(qids) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    return Ranked(qids, starts, rows[order], run)


def _break_ties(order: np.ndarray, sorted_key: np.ndarray, doc: pa.Array, rows: np.ndarray) -> np.ndarray:
    """Within runs of equal (query, float32 score), order by item id descending (byte order)."""
    if sorted_key.size < 2:
        return order
    eq = sorted_key[1:] == sorted_key[:-1]
    if not eq.any():
        return order
    in_tie = np.zeros(sorted_key.size, dtype=bool)
    in_tie[1:] |= eq
    in_tie[:-1] |= eq
    pos = np.flatnonzero(in_tie)
    group = np.cumsum(np.concatenate(([True], ~eq)))[pos]  # tie-group id of each tied position
    docs = doc.take(pa.array(rows[order[pos]]))
    within = pc.sort_indices(
        pa.table({"g": group, "d": docs}),
        sort_keys=[("g", "ascending"), ("d", "descending")],
    ).to_numpy()
    out = order.copy()
    out[pos] = order[pos[within]]
    return out
