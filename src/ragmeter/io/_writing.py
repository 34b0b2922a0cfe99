"""Shared writer helpers: the engine's row order and fast line-by-slice text output.

Lines are built column-wise with ``pyarrow.compute.binary_join_element_wise`` for a slice of
rows at a time; the joined string array's data buffer *is* the text, so it is written in one
call per slice (gzip when the path ends in ``.gz``). Memory stays bounded by the slice size.
The file is written under a temporary name and moved into place (``_atomic.atomic_write``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._errors import InputError
from ._atomic import atomic_write
from ._tables import Run

SLICE_ROWS = 1 << 20
Part = str | Callable[[pa.Array], Any]


def byte_ranks(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(rank of each distinct value in byte order, each row's distinct-value index)."""
    enc = pc.dictionary_encode(arr)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    order = pc.array_sort_indices(enc.dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank, enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)


def ranked_rows(run: Run, path: str | os.PathLike[str]) -> tuple[np.ndarray, np.ndarray]:
    """(row order, rank of each ordered row): queries in byte order, then score descending,
    then doc id descending (trec_eval's tie rule, on float64 scores); ranks start at 1."""
    score = np.asarray(run.score, dtype=np.float64)
    if not np.isfinite(score).all():
        raise InputError("cannot write a run with NaN or infinite scores", path=os.fspath(path))
    q_rank, q_idx = byte_ranks(run.qid)
    d_rank, d_idx = byte_ranks(run.doc)
    qpos = q_rank[q_idx]
    order = np.lexsort((-d_rank[d_idx], -score, qpos))
    qs = qpos[order]
    starts = np.flatnonzero(np.concatenate(([True], qs[1:] != qs[:-1]))) if len(qs) else qs
    lengths = np.diff(np.append(starts, len(order)))
    ranks = np.arange(len(order)) - np.repeat(starts, lengths) + 1
    return order, ranks


def sorted_pairs(qid: pa.Array, doc: pa.Array) -> np.ndarray:
    """Row order by qid, then doc (byte order)."""
    q_rank, q_idx = byte_ranks(qid)
    d_rank, d_idx = byte_ranks(doc)
    return np.lexsort((d_rank[d_idx], q_rank[q_idx]))


def write_lines(path: str | os.PathLike[str], order: np.ndarray, parts: list[Part]) -> None:
    """Write one line per row of ``order``: the concatenation of ``parts`` (literal strings, or
    functions of the slice's row indices returning string arrays), atomically (``atomic_write``:
    a failed write leaves the old file, never half a file)."""
    target = os.fspath(path)
    compression = "gzip" if target.lower().endswith(".gz") else None

    def write(fh: IO[bytes]) -> None:
        with pa.output_stream(fh, compression=compression) as out:
            for lo in range(0, len(order), SLICE_ROWS):
                rows = pa.array(order[lo : lo + SLICE_ROWS], type=pa.int64())
                cols = [p if isinstance(p, str) else p(rows) for p in parts]
                text = pc.binary_join_element_wise(*cols, "")
                offsets = np.frombuffer(text.buffers()[1], dtype=np.int32)
                start, end = int(offsets[text.offset]), int(offsets[text.offset + len(text)])
                out.write(text.buffers()[2].slice(start, end - start))

    atomic_write(target, write)
