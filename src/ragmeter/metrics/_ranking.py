"""Order a columnar run into ranked lists per query (trec_eval's tie rule or the given order)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._errors import UsageError
from ..io._tables import Run

Ties = Literal["trec", "given"]


@dataclass(frozen=True)
class Ranked:
    """A run as ranked lists in CSR form.

    Query ``qids[i]`` owns rows ``starts[i]:starts[i+1]`` of ``doc``/``score``, best first.
    ``qids`` are sorted (byte order); ``doc_codes`` index ``doc_dictionary``.
    """

    qids: np.ndarray  # object array of str, sorted
    starts: np.ndarray  # int64, len(qids) + 1
    doc_codes: np.ndarray  # int32/int64, ranked order
    doc_dictionary: pa.Array  # unique doc ids
    score: np.ndarray  # float64, ranked order

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.starts)

    def docs_of(self, i: int) -> list[str]:
        codes = self.doc_codes[self.starts[i]: self.starts[i + 1]]
        return self.doc_dictionary.take(pa.array(codes)).to_pylist()


def _encode(arr: pa.Array) -> tuple[np.ndarray, pa.Array]:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    enc = pc.dictionary_encode(arr) if not pa.types.is_dictionary(arr.type) else arr
    return enc.indices.to_numpy(zero_copy_only=False), enc.dictionary


def _sorted_rank(dictionary: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(order, rank): dictionary sorted by byte order, and each entry's position in that order."""
    order = pc.array_sort_indices(dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return order, rank


def _desc_float32_key(score: np.ndarray) -> np.ndarray:
    """uint32 keys whose ascending order is descending float32 score (trec_eval compares as float)."""
    s32 = score.astype(np.float32)
    s32[s32 == 0] = 0.0  # -0.0 and 0.0 are one tie
    bits = s32.view(np.uint32)
    neg = (bits >> np.uint32(31)).astype(bool)
    asc = np.where(neg, ~bits, bits | np.uint32(0x80000000))
    return ~asc


def rank_run(run: Run, *, ties: Ties = "trec") -> Ranked:
    """Sort a run into ranked lists: score descending, then item id descending (trec_eval's rule,
    scores compared as 32-bit floats), or ``ties="given"`` to keep each query's rows in file order.
    """
    if ties not in ("trec", "given"):
        raise UsageError(f"ties must be 'trec' or 'given', got '{ties}'")
    q_idx, q_dict = _encode(run.qid)
    q_order, q_rank = _sorted_rank(q_dict)
    qcode = q_rank[q_idx]  # position of each row's query in the sorted query list
    d_idx, d_dict = _encode(run.doc)
    n = len(qcode)
    if ties == "given":
        order = np.argsort(qcode, kind="stable")
    else:
        _, d_rank = _sorted_rank(d_dict)
        # stable sorts from least to most significant key: doc id desc, score desc, query asc
        order = np.argsort(-d_rank[d_idx], kind="stable")
        key = (qcode[order].astype(np.uint64) << np.uint64(32)) | _desc_float32_key(
            run.score[order]
        ).astype(np.uint64)
        order = order[np.argsort(key, kind="stable")]
    counts = np.bincount(qcode, minlength=len(q_dict)) if n else np.zeros(len(q_dict), np.int64)
    starts = np.zeros(len(q_dict) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    qids = np.asarray(q_dict.take(pa.array(q_order)).to_pylist(), dtype=object)
    return Ranked(qids, starts, d_idx[order], d_dict, np.asarray(run.score)[order])
