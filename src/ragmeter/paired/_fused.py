"""The ``"fused"`` bootstrap: one compiled pass per resample, with the optional numba extra.

Drawing the 10^9 indices of a 10,000-resample bootstrap of 100,000 questions takes numpy
3.5-4.8 s by itself, before a single difference is gathered, so no method that materialises
indices can be much faster than scipy. A compiled loop that draws an index and adds its
difference in the same step never writes the indices anywhere and costs about 1.3 ns a draw.

The random stream (fixed here, so a seed gives the same interval on every machine with numba):

- ``key`` is one 64-bit word drawn from ``numpy.random.default_rng(seed)``;
- draw number k = 0, 1, 2, ... (resample r, question j: ``k = r * n + j``) is the SplitMix64
  output ``mix(key + (k + 1) * GAMMA)`` (Steele, Lea and Flood 2014; passes BigCrush), a word z;
- its index is ``floor(z * n / 2**64)``: every index has probability 1/n to within a relative
  n / 2**64 (5e-15 for 100,000 questions, below the rounding of a double).

So each resample mean is the mean of n independent uniform picks, the very distribution of the
``"index"`` method; only the random stream differs, as with ``"counts"``.

numba is optional (``pip install 'ragmeter[fast]'``). Without it, or with ``NUMBA_DISABLE_JIT``
set (the loop would run in the interpreter), :func:`available` is False and ``"auto"`` uses the
numpy ``"index"`` method instead, which gives the same distribution; the interval records the
method actually used.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

import numpy as np

from .. import _compiled
from .._errors import UsageError
from ._splitmix import GAMMA
from ._splitmix import MIX1 as MIX1  # the stream's definition, read by its tests
from ._splitmix import MIX2 as MIX2

#: draws per compiled call: a few tenths of a second, so Ctrl-C is honoured between blocks
BLOCK_DRAWS = 1 << 27
_MASK = (1 << 64) - 1

#: seconds the first call in this process spent loading (or compiling) the kernel; None before
load_seconds: float | None = None


def available() -> bool:
    """Whether the compiled kernel can run here (numba importable and its JIT not disabled)."""
    return _compiled.available()


def usable(n: int) -> bool:
    """Whether the kernel can resample ``n`` questions here (its index arithmetic needs
    n < 2**32)."""
    return n < (1 << 32) and available()


@functools.cache
def _kernel() -> Callable[[np.ndarray, np.uint64, np.ndarray], np.uint64]:
    """Import the numba module and make sure the kernel is compiled (from numba's on-disk cache
    after the first time on a machine), recording how long that took in :data:`load_seconds`."""
    global load_seconds
    t = time.perf_counter()
    from ._fused_kernel import means_kernel

    # compile (or load from the cache) now, on a tiny input, so the timing is reported apart
    means_kernel(np.zeros(1), np.uint64(0), np.empty(1))
    load_seconds = time.perf_counter() - t
    return means_kernel


def fused_means(d: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """``n_resamples`` bootstrap means of ``d`` on the SplitMix64 stream keyed by one draw of
    ``rng`` (see the module docstring). Requires :func:`available`."""
    if not usable(len(d)):
        raise UsageError(
            "the fused bootstrap needs numba with its compiler enabled: "
            "pip install 'ragmeter[fast]' (or use the index method)"
        )
    d = np.ascontiguousarray(d, dtype=np.float64)
    n = len(d)
    key = int(rng.integers(0, 1 << 64, dtype=np.uint64))
    kernel = _kernel()
    out = np.empty(n_resamples, dtype=np.float64)
    rows = max(1, BLOCK_DRAWS // max(n, 1))
    state = np.uint64(key)
    for start in range(0, n_resamples, rows):
        stop = min(start + rows, n_resamples)
        state = np.uint64(kernel(d, state, out[start:stop]))
    return out


def stream_state(key: int, first_draw: int) -> int:
    """The stream's state before draw ``first_draw`` (where a block starting there begins)."""
    return (key + first_draw * GAMMA) & _MASK
