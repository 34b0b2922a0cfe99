"""Paired bootstrap: ragmeter vs scipy.stats.bootstrap on the same data, in one run.

    .venv/bin/python benchmarks/bench_compare.py [--questions 100000] [--resamples 10000]

Two data sets of paired per-question outcomes (seeded):

- binary: answer correct / AllR@budget outcomes, A correct on 70%, B fixes 3% and breaks 2%;
- graded: nDCG-like values in [0, 1] with (almost) every question distinct.

ragmeter's ``paired_bootstrap`` (method "auto") against ``scipy.stats.bootstrap`` with
``paired=True, vectorized=True, method="percentile"`` and the same number of resamples. scipy is
given ``batch=100`` so that it too holds a bounded block of resamples at a time (without it, it
allocates an n_resamples x n index array and two gathered copies: about 24 GB here). Prints the
median wall time of each, the ratio, both intervals to 3 decimals, and ragmeter's peak memory
(tracemalloc; numpy reports its buffers to it).
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

import numpy as np
from scipy import stats

from ragmeter.paired import paired_bootstrap


def data(kind: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    if kind == "binary":
        a = (rng.random(n) < 0.70).astype(float)
        b = a.copy()
        u = rng.random(n)
        b[(a == 0) & (u < 0.10)] = 1.0  # ~3% of all questions fixed
        b[(a == 1) & (u > 1 - 0.0286)] = 0.0  # ~2% broken
        return a, b
    a = np.clip(rng.beta(2, 2, n), 0, 1)
    b = np.clip(a + rng.normal(0.004, 0.08, n), 0, 1)
    return a, b


def mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(y, axis=axis) - np.mean(x, axis=axis)


def run_scipy(a: np.ndarray, b: np.ndarray, resamples: int) -> tuple[float, float]:
    res = stats.bootstrap(
        (a, b),
        mean_diff,
        paired=True,
        vectorized=True,
        method="percentile",
        n_resamples=resamples,
        confidence_level=0.95,
        batch=100,
        rng=0,
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def run_ragmeter(a: np.ndarray, b: np.ndarray, resamples: int) -> tuple[float, float, str]:
    ci = paired_bootstrap(b - a, n_resamples=resamples, seed=0)
    return ci.lo, ci.hi, ci.method


def timed(fn, repeats: int):  # type: ignore[no-untyped-def]
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=100_000)
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3, help="runs of ragmeter (median)")
    ap.add_argument("--scipy-repeats", type=int, default=1, help="runs of scipy (median)")
    ap.add_argument("--kinds", default="binary,graded")
    args = ap.parse_args()
    n, B = args.questions, args.resamples
    print(f"paired percentile bootstrap, {n:,} questions, {B:,} resamples, 95% interval")
    for kind in args.kinds.split(","):
        a, b = data(kind, n)
        tracemalloc.start()
        run_ragmeter(a, b, B)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        t_r, (lo_r, hi_r, method) = timed(lambda a=a, b=b: run_ragmeter(a, b, B), args.repeats)
        t_s, (lo_s, hi_s) = timed(lambda a=a, b=b: run_scipy(a, b, B), args.scipy_repeats)
        same = (round(lo_r, 3), round(hi_r, 3)) == (round(lo_s, 3), round(hi_s, 3))
        print(
            f"\n[{kind}] mean difference {np.mean(b - a):+.5f}; "
            f"{len(np.unique(b - a)):,} distinct differences"
        )
        print(
            f"  ragmeter ({method:6s}) median {t_r:8.3f} s   interval [{lo_r:+.3f}, {hi_r:+.3f}]"
            f"   peak memory {peak / 2**20:.1f} MiB"
        )
        print(f"  scipy    (batch 100) median {t_s:8.3f} s   interval [{lo_s:+.3f}, {hi_s:+.3f}]")
        print(
            f"  ragmeter is {t_s / t_r:,.1f}x faster; intervals equal to 3 decimals: {same} "
            f"(largest gap {max(abs(lo_r - lo_s), abs(hi_r - hi_s)):.1e})"
        )


if __name__ == "__main__":
    main()
