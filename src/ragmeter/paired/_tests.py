"""Significance tests on paired per-question differences: the exact sign test and the paired
randomisation (sign-flip) test.

Sign test
    Count wins W (candidate higher) and losses L (candidate lower); ties are dropped. Under the
    null hypothesis that a question is as likely to move either way, W ~ Binomial(W + L, 1/2).
    The two-sided exact p-value is ``scipy.stats.binomtest(W, W + L, 0.5).pvalue`` (1.0 when
    W + L = 0). It uses only the direction of each change, not its size.

Paired randomisation test
    Under the null hypothesis that the two variants are exchangeable on every question, each
    difference ``d_i`` is as likely to be ``+d_i`` as ``-d_i``. The statistic is ``sum(d)``
    (equivalently the mean difference, n fixed); the p-value is the share of sign assignments
    whose ``|sum|`` is at least the observed one. Zero differences cannot change sign, so only the
    m non-zero ones are flipped: exactly (all 2^m assignments) when 2^m <= ``n_resamples``, else
    by ``n_resamples`` seeded random assignments, with scipy's (count + 1) / (B + 1) estimate.
    Computed by ``scipy.stats.permutation_test(permutation_type="samples")``.

Holm adjustment
    Testing m slices at once, some small p-values turn up by chance. Holm's step-down method
    controls the chance of any false finding among the m at the nominal level: sort the p-values
    p_(1) <= ... <= p_(m); the adjusted value of p_(i) is
    ``min(1, max_{j <= i} (m - j + 1) p_(j))``. Rejecting where the adjusted value is <= alpha
    is Holm's procedure; it is never less powerful than Bonferroni (``m p``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import UsageError
from .._numbers import MAX_RESAMPLES, whole
from .._numbers import seed as check_seed
from ._record import Record


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test p-value for ``wins`` vs ``losses`` (ties already dropped)."""
    if wins < 0 or losses < 0:
        raise UsageError("wins and losses must be non-negative counts")
    if wins + losses == 0:
        return 1.0
    return _binomtest_half(int(wins), int(wins + losses))


def _binomtest_half(k: int, n: int) -> float:
    """``scipy.stats.binomtest(k, n, 0.5).pvalue`` to the last bit, step for step as scipy
    computes it (the same binary search, the same Boost functions, clipped to [0, 1] as
    ``binom.pmf/cdf/sf`` clip them) without importing scipy.stats: that import costs about half
    a second of CPU, the most of a comparison page's first request (issue 28). Where scipy has
    moved those functions, scipy.stats does it. ``0 <= k <= n``, ``n >= 1``."""
    try:
        from scipy.special._ufuncs import _binom_cdf, _binom_pmf, _binom_sf
    except ImportError:  # pragma: no cover - another scipy's layout: the public test
        from scipy.stats import binomtest

        return float(binomtest(k, n, 0.5).pvalue)

    def pmf(x: int) -> float:
        return 0.0 if x < 0 or x > n else float(np.clip(_binom_pmf(x, n, 0.5), 0, 1))

    def cdf(x: int) -> float:
        if x < 0:
            return 0.0
        return 1.0 if x >= n else float(np.clip(_binom_cdf(x, n, 0.5), 0, 1))

    def sf(x: int) -> float:
        if x < 0:
            return 1.0
        return 0.0 if x >= n else float(np.clip(_binom_sf(x, n, 0.5), 0, 1))

    def search(a: Any, d: float, lo: int, hi: int) -> int:  # scipy's _binary_search_for_binom_tst
        while lo < hi:
            mid = lo + (hi - lo) // 2
            midval = a(mid)
            if midval < d:
                lo = mid + 1
            elif midval > d:
                hi = mid - 1
            else:
                return mid
        return lo if a(lo) <= d else lo - 1

    d = pmf(k)
    rerr = 1 + 1e-7
    if k == 0.5 * n:
        return 1.0
    if k < 0.5 * n:
        ix = search(lambda x: -pmf(x), -d * rerr, math.ceil(0.5 * n), n)
        y = n - ix + int(d * rerr == pmf(ix))
        pval = cdf(k) + sf(n - y)
    else:
        ix = search(pmf, d * rerr, 0, math.floor(0.5 * n))
        pval = cdf(ix) + sf(k - 1)
    return float(min(1.0, pval))


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input order (see the module docstring)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out = [0.0] * m
    running = 0.0
    for j, i in enumerate(order):
        running = max(running, min(1.0, (m - j) * float(pvalues[i])))
        out[i] = running
    return out


@dataclass(frozen=True)
class RandomisationTest:
    """Result of the paired sign-flip randomisation test."""

    p_value: float
    exact: bool
    n_resamples: int
    seed: int | None

    def to_dict(self) -> dict[str, object]:
        return {
            "p_value": self.p_value,
            "exact": self.exact,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
        }

    @classmethod
    def from_dict(
        cls, d: Mapping[str, Any], *, source: str | None = None, field: str | None = None
    ) -> RandomisationTest:
        """Rebuild from :meth:`to_dict` output; a bad record raises an ``InputError`` naming
        the field (``field`` is this record's path inside an outer one)."""
        r = Record(d, what="randomisation test", at=field, source=source)
        return cls(
            p_value=r.number("p_value"),
            exact=r.flag("exact"),
            n_resamples=r.integer("n_resamples", low=1),
            seed=r.nullable_integer("seed"),
        )


def randomisation_test(
    diffs: np.ndarray | list[float], *, n_resamples: int = 10_000, seed: int | None = 0
) -> RandomisationTest:
    """Two-sided paired randomisation test of ``mean(diffs) == 0`` (see the module docstring)."""
    whole("the number of resamples", n_resamples, low=1, high=MAX_RESAMPLES)
    check_seed(seed)
    d = np.asarray(diffs, dtype=np.float64)
    # Differences of float metric values carry rounding noise; 1e-12 is far below any real change.
    nz = d[np.abs(d) > 1e-12]
    m = len(nz)
    if m == 0:
        return RandomisationTest(1.0, True, 1, seed)
    if m == 1:
        # two assignments, +d and -d, both as far from zero as the observed one (scipy needs two
        # or more values to permute)
        return RandomisationTest(1.0, True, 2, seed)
    exact = m < 63 and 2**m <= n_resamples
    from scipy.stats import permutation_test

    def total(x: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.sum(x, axis=axis)

    res = permutation_test(
        (nz,),
        total,
        permutation_type="samples",
        vectorized=True,
        n_resamples=n_resamples,
        alternative="two-sided",
        rng=seed,
        batch=max(1, (1 << 22) // m),
    )
    return RandomisationTest(
        float(min(1.0, res.pvalue)), exact, 2**m if exact else n_resamples, seed
    )
