"""Paired percentile bootstrap of a mean difference, vectorised and processed in bounded blocks.

Given per-question differences ``d_i = candidate_i - baseline_i`` (i = 1..n), one resample draws
n question indices with replacement and takes the mean of their differences; the pairing is kept
because a drawn question brings both of its outcomes. Repeating this B times gives a distribution
of plausible headlines, and the (1 - c)/2 and (1 + c)/2 percentiles of it (numpy's default linear
interpolation) bound the c-level interval.

Three ways to draw the same distribution:

``"index"``
    Draw the indices themselves: ``rng.integers(0, n, size=(rows, n))`` block after block. With
    ``rng = numpy.random.default_rng(seed)`` this consumes the generator exactly as the RAG
    evaluation lesson's hands-on lab does with ``diffs[rng.integers(0, n, n)]`` in a Python loop,
    so the lab's numbers come out digit for digit (a test checks the streams are identical, odd n
    included).
``"counts"``
    The mean of a resample only depends on how many times each *distinct* difference value was
    drawn. With u distinct values v_j of multiplicity w_j, the counts follow
    Multinomial(n, w / n) and the resampled mean is ``sum_j c_j v_j / n``: the same distribution
    as ``"index"``, drawn in O(B * u) instead of O(B * n). Binary outcomes have u <= 3, so a
    10,000-resample interval on 100,000 questions takes milliseconds. The random stream differs
    from ``"index"``, so the digits of the interval agree only to Monte Carlo precision.
``"fused"``
    Draw each index and add its difference in one compiled pass, never storing the indices
    (``_fused``; needs numba, the optional ``fast`` extra). Same distribution as ``"index"`` on
    another random stream (SplitMix64 keyed by one draw of the seeded generator), and several
    times faster: numpy's drawing of the indices alone is what bounds ``"index"`` on graded
    metrics (figures in docs/benchmarks.md).
    Asked for where numba is missing, ``"index"`` is used instead and reported.
``"auto"`` (default)
    ``"index"`` while ``B * n <= 50,000,000`` (under about a second, the lesson's stream, and no
    compiler start-up), else ``"counts"`` when ``u <= n / 8``, else ``"fused"`` where numba is
    installed, else ``"index"``. The method used is reported with the result.

Memory stays bounded: ``"index"`` holds at most :data:`BLOCK_ELEMENTS` drawn indices at a time.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from .._errors import UsageError
from .._numbers import MAX_RESAMPLES, number_in, whole
from .._numbers import seed as check_seed
from . import _fused

Method = Literal["auto", "index", "counts", "fused"]

#: Drawn indices held at once by the "index" method (int32 indices + float64 gathered values,
#: about 50 MB), whatever n and the number of resamples.
BLOCK_ELEMENTS = 1 << 22
#: "auto" keeps the seed's index stream while n_resamples * n stays under this.
INDEX_STREAM_LIMIT = 50_000_000


@dataclass(frozen=True)
class BootstrapInterval:
    """A percentile interval for the mean of paired differences.

    ``means``: the resampled means it is the percentiles of, when asked to keep them
    (``keep_means=True``); not part of the record (:meth:`to_dict`) nor of its equality.
    """

    lo: float
    hi: float
    confidence: float
    n_resamples: int
    seed: int | None
    method: str
    means: np.ndarray | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, object]:
        return {
            "lo": self.lo,
            "hi": self.hi,
            "confidence": self.confidence,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "method": self.method,
        }


def _check(diffs: np.ndarray, n_resamples: int, confidence: float) -> None:
    if diffs.ndim != 1:
        raise UsageError("paired differences must be a one-dimensional array")
    whole("the number of resamples", n_resamples, low=1, high=MAX_RESAMPLES)
    number_in("confidence", confidence, 0.0, 1.0, open_low=True, open_high=True)
    if not np.all(np.isfinite(diffs)):
        raise UsageError("paired differences must be finite numbers")


def choose_method(diffs: np.ndarray, n_resamples: int, method: Method = "auto") -> str:
    """The method ``"auto"`` resolves to for these differences (see the module docstring)."""
    if method in ("index", "counts"):
        return method
    if method == "fused":
        return "fused" if _fused.usable(len(diffs)) else "index"
    if method != "auto":
        raise UsageError(f"bootstrap method must be auto, index, counts or fused, got '{method}'")
    n = len(diffs)
    if n_resamples * n <= INDEX_STREAM_LIMIT:
        return "index"
    n_distinct = len(np.unique(diffs))
    if n_distinct * 8 <= n:
        return "counts"
    return "fused" if _fused.usable(n) else "index"


def resample_means(
    diffs: np.ndarray, n_resamples: int, rng: np.random.Generator, method: str = "index"
) -> np.ndarray:
    """``n_resamples`` bootstrap means of ``diffs``, drawn with ``rng`` by ``method``."""
    n = len(diffs)
    if method == "fused":
        return _fused.fused_means(diffs, n_resamples, rng)
    out = np.empty(n_resamples, dtype=np.float64)
    if method == "counts":
        values, mult = np.unique(diffs, return_counts=True)
        # blocks of resamples (the same stream as one draw: multinomial rows are drawn in turn)
        step = max(1, BLOCK_ELEMENTS // len(values))
        for start in range(0, n_resamples, step):
            stop = min(start + step, n_resamples)
            counts = rng.multinomial(n, mult / n, size=stop - start)
            out[start:stop] = (counts @ values) / n
        return out
    rows = max(1, BLOCK_ELEMENTS // max(n, 1))
    # int32 indices draw the same stream as the default int64 (same bounded 32-bit generator).
    dtype = np.int32 if n < 2**31 else np.int64
    for start in range(0, n_resamples, rows):
        stop = min(start + rows, n_resamples)
        idx = rng.integers(0, n, size=(stop - start, n), dtype=dtype)
        out[start:stop] = diffs[idx].mean(axis=1)
    return out


def paired_bootstrap(
    diffs: np.ndarray | list[float],
    *,
    n_resamples: int = 5000,
    seed: int | None = 0,
    confidence: float = 0.95,
    method: Method = "auto",
) -> BootstrapInterval:
    """Percentile interval for ``mean(diffs)`` by resampling questions with replacement.

    ``diffs[i]`` is candidate minus baseline on question i: a flat sequence of at least one
    finite number. Text, NaN, infinity, a nested list and an empty sequence are refused with a
    :class:`UsageError` (there is no interval of a mean over no question). ``seed`` feeds
    ``numpy.random.default_rng``; the same seed, data and method give the same interval.
    """
    d = _as_diffs(diffs)
    if len(d) == 0:
        raise UsageError("paired differences are empty: there is no mean to bound")
    return bootstrap_interval(
        d, n_resamples=n_resamples, seed=seed, confidence=confidence, method=method
    )


def _as_diffs(diffs: object) -> np.ndarray:
    """``diffs`` as a float64 array, refusing what numpy would silently coerce (``"0.5"``)."""
    if isinstance(diffs, np.ndarray):
        if diffs.dtype.kind not in "biuf":
            raise UsageError(f"paired differences must be numbers, got an array of {diffs.dtype}")
        return diffs.astype(np.float64)
    if isinstance(diffs, (str, bytes)) or not isinstance(diffs, Iterable):
        raise UsageError(
            f"paired differences must be a sequence of numbers, got {type(diffs).__name__}"
        )
    items = list(diffs)
    for i, x in enumerate(items):
        if not isinstance(x, numbers.Real):
            what = "a nested sequence" if isinstance(x, (list, tuple, np.ndarray)) else repr(x)
            raise UsageError(f"paired differences must be numbers; item {i} is {what}")
    try:
        return np.asarray(items, dtype=np.float64)
    except OverflowError:
        raise UsageError("paired differences must be finite numbers") from None


def bootstrap_interval(
    d: np.ndarray,
    *,
    n_resamples: int = 5000,
    seed: int | None = 0,
    confidence: float = 0.95,
    method: Method = "auto",
    keep_means: bool = False,
) -> BootstrapInterval:
    """The interval of :func:`paired_bootstrap` for a float array already checked to hold
    numbers; with no question it is ``(nan, nan)`` (a comparison's empty slice, never shown).
    ``keep_means``: the interval also holds the resampled means it was taken from (the lab's
    histogram), so that nothing draws them a second time."""
    _check(d, n_resamples, confidence)
    check_seed(seed)
    chosen = choose_method(d, n_resamples, method)
    if len(d) == 0:
        return BootstrapInterval(float("nan"), float("nan"), confidence, n_resamples, seed, chosen)
    means, _ = bootstrap_means(d, n_resamples=n_resamples, seed=seed, method=method)
    lo, hi = percentile_interval(means, confidence)
    return BootstrapInterval(
        lo, hi, confidence, n_resamples, seed, chosen, means if keep_means else None
    )


def percentile_interval(means: np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile interval of resampled ``means`` at ``confidence``: what
    :func:`bootstrap_interval` reports of the means it drew."""
    tail = round((1.0 - confidence) / 2.0 * 100.0, 10)  # 2.5, not 2.5000000000000022
    lo, hi = np.percentile(means, [tail, 100.0 - tail])
    return float(lo), float(hi)


def bootstrap_means(
    d: np.ndarray,
    *,
    n_resamples: int = 5000,
    seed: int | None = 0,
    method: Method = "auto",
) -> tuple[np.ndarray, str]:
    """The resampled means :func:`bootstrap_interval` takes its percentiles of, and the method
    ``method`` resolved to: the same seed, resamples and method give the very distribution the
    interval came from (the lab draws it as a histogram). ``d`` must hold at least one
    question."""
    d = np.asarray(d, dtype=np.float64)
    _check(d, n_resamples, 0.95)
    check_seed(seed)
    if len(d) == 0:
        raise UsageError("paired differences are empty: there is no mean to resample")
    chosen = choose_method(d, n_resamples, method)
    rng = np.random.default_rng(seed)
    return resample_means(d, n_resamples, rng, chosen), chosen
