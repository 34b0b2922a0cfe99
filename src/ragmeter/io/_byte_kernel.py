"""The byte checks of the fast TREC reader in one compiled pass (imports numba: load it through
``_trec_fast``).

The same rules as ``_trec_fast._CheckedStream`` and ``_trec_bytes.ByteGuard`` (the numpy passes
they replace for large plain files): no NUL byte, no carriage return but before a line feed, no
byte order mark after the start, no blank byte (<= 0x20) next to another one or at the start of
the file; and the count of blank bytes, which the caller compares with the rows pyarrow parsed.
A file is read in pieces; the two bytes before a piece are carried in, so a pair or a byte order
mark split over two pieces is seen.
"""

from __future__ import annotations

import numpy as np

from .._compiled import compile_kernel


def _scan(data: np.ndarray, n: int, prev: int, prev2: int) -> int:  # pragma: no cover
    """The number of blank bytes of ``data[:n]``, or -1 when a rule is broken. ``prev`` and
    ``prev2``: the byte before the piece and the one before that (0x0A and 0 at the start of
    the file, as if a line ended there)."""
    blanks = 0
    for i in range(n):
        b = data[i]
        if b == 0:
            return -1
        if prev == 0x0D and b != 0x0A:
            return -1
        if b == 0xBF and prev == 0xBB and prev2 == 0xEF:
            return -1
        if b <= 0x20:
            if prev <= 0x20:
                return -1
            blanks += 1
        prev2 = prev
        prev = b
    return blanks


scan_kernel = compile_kernel(_scan)
