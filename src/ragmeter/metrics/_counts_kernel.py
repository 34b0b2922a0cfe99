"""Per-query grade counts in one compiled pass (imports numba: load it through ``_score``).

What ``_kernels.grade_counts`` gives from the listed judged items (query row and grade of each,
two arrays as long as the qrels, then a bincount of a combined key), counted straight from the
qrels' stretches of one query each: no per-row array at all.
"""

from __future__ import annotations

import numpy as np

from .._compiled import compile_kernel


def _counts(
    block_start: np.ndarray,
    block_len: np.ndarray,
    block_row: np.ndarray,
    rel: np.ndarray,
    lo: int,
    out: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """``out[q, g - lo]`` += 1 for every qrels row of grade ``g`` in a stretch whose query row
    ``block_row[b]`` is ``q`` (stretches of row -1 are not counted)."""
    for b in range(block_start.shape[0]):
        q = block_row[b]
        if q < 0:
            continue
        s = block_start[b]
        for t in range(s, s + block_len[b]):
            out[q, rel[t] - lo] += 1


counts_kernel = compile_kernel(_counts)
