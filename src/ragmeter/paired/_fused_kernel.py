"""The compiled loop of the ``"fused"`` bootstrap (imports numba: load it through ``_fused``).

One pass per resample draws each question index from a SplitMix64 counter stream and adds that
question's difference at once, so no index array is ever written to memory: the cost is the
random number and one gather from an array that sits in the CPU cache (800 kB for 100,000
questions). The stream (``_fused`` documents it) is a pure function of ``(key, draw number)``,
which is why a block of resamples can start anywhere: ``state = key + first_draw * GAMMA``.
"""

from __future__ import annotations

import numpy as np

from .._compiled import compile_kernel
from ._splitmix import GAMMA, MIX1, MIX2

_LO32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


def _index(z: np.uint64, nn: np.uint64) -> np.uint64:  # pragma: no cover
    """``floor(z * n / 2**64)`` exactly for n < 2**32, from 32-bit halves of z (no 128-bit
    type): z * n = zh * n * 2**32 + zl * n, and neither partial product nor their sum below
    overflows 64 bits."""
    return ((z >> _S32) * nn + (((z & _LO32) * nn) >> _S32)) >> _S32


def _means(d: np.ndarray, state: np.uint64, out: np.ndarray) -> np.uint64:  # pragma: no cover
    """Fill ``out`` with resample means of ``d``; return the stream state after the last draw.

    Each draw advances ``state`` by GAMMA, mixes it (SplitMix64) into a 64-bit word z and takes
    the question ``index(z, n)``. Two accumulators let consecutive additions overlap in the CPU
    (a single sum would wait on the previous addition at every draw).
    """
    n = d.shape[0]
    nn = np.uint64(n)
    g = np.uint64(GAMMA)
    c1 = np.uint64(MIX1)
    c2 = np.uint64(MIX2)
    s30 = np.uint64(30)
    s27 = np.uint64(27)
    s31 = np.uint64(31)
    s = state
    for r in range(out.shape[0]):
        a0 = 0.0
        a1 = 0.0
        for _ in range(n >> 1):
            s += g
            z = (s ^ (s >> s30)) * c1
            z = (z ^ (z >> s27)) * c2
            a0 += d[index_kernel(z ^ (z >> s31), nn)]
            s += g
            z = (s ^ (s >> s30)) * c1
            z = (z ^ (z >> s27)) * c2
            a1 += d[index_kernel(z ^ (z >> s31), nn)]
        if n & 1:
            s += g
            z = (s ^ (s >> s30)) * c1
            z = (z ^ (z >> s27)) * c2
            a0 += d[index_kernel(z ^ (z >> s31), nn)]
        out[r] = (a0 + a1) / n
    return s


index_kernel = compile_kernel(_index)
means_kernel = compile_kernel(_means)
