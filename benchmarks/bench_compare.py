"""Paired bootstrap: ragmeter vs scipy.stats.bootstrap on the same data, in one run.

    .venv/bin/python benchmarks/bench_compare.py [--questions 100000] [--resamples 10000]
                                                 [--rounds 3] [--kinds binary,graded]

Two data sets of paired per-question outcomes (seeded):

- binary: answer correct / AllR@budget outcomes, A correct on 70%, B fixes 3% and breaks 2%;
- graded: nDCG-like values in [0, 1] with (almost) every question distinct.

Each round runs, one after the other on the same data: ragmeter's ``paired_bootstrap`` with
method "auto" (on graded data the compiled ``fused`` pass when numba is installed), the numpy
``index`` method (what "auto" falls back to without numba), ``compare()`` on the two
``{question: value}`` mappings (the bootstrap plus its bookkeeping), and
``scipy.stats.bootstrap`` with ``paired=True, vectorized=True, method="percentile"`` and the
same number of resamples. scipy is given ``batch=100`` so that it too holds a bounded block of
resamples at a time (without it, it allocates an n_resamples x n index array and two gathered
copies: about 24 GB here). The machine may be shared, so wall time and this process's CPU time
are both printed, as medians over the rounds, and the ratios to scipy are medians of the
per-round ratios. Also printed: the intervals, ragmeter's peak memory (tracemalloc) and the time
a fresh process takes to load the compiled kernel, from numba's cache and compiling it anew.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import stats

from ragmeter.paired import _fused, compare, paired_bootstrap


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


def run_scipy(a: np.ndarray, b: np.ndarray, resamples: int) -> tuple[float, float, str]:
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
    return float(res.confidence_interval.low), float(res.confidence_interval.high), "batch 100"


def run_ragmeter(a: np.ndarray, b: np.ndarray, resamples: int, method: str = "auto"):  # type: ignore[no-untyped-def]
    ci = paired_bootstrap(b - a, n_resamples=resamples, seed=0, method=method)  # type: ignore[arg-type]
    return ci.lo, ci.hi, ci.method


def run_compare(qa: dict[str, float], qb: dict[str, float], resamples: int, metric: str):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = compare(qa, qb, metric, n_resamples=resamples, seed=0)
    return c.ci[0], c.ci[1], c.bootstrap_method


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall seconds, CPU seconds of this process, result)."""
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


KERNEL_LOAD = (
    "import time; from ragmeter.paired import _fused; t = time.perf_counter(); "
    "c = time.process_time(); _fused._kernel(); "
    "print(time.perf_counter() - t, time.process_time() - c)"
)


def kernel_load_seconds(cache: str | None) -> tuple[float, float]:
    """(wall, CPU) seconds a fresh process takes to import numba and load the kernel: from
    numba's cache where it already is, or compiling it into the empty folder ``cache``."""
    env = dict(os.environ)
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = cache
    out = subprocess.run(
        [sys.executable, "-c", KERNEL_LOAD], capture_output=True, text=True, check=True, env=env
    )
    wall, cpu = map(float, out.stdout.split())
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=100_000)
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every contender (median)")
    ap.add_argument("--kinds", default="binary,graded")
    args = ap.parse_args()
    n, B = args.questions, args.resamples
    load = os.getloadavg()
    print(
        f"paired percentile bootstrap, {n:,} questions, {B:,} resamples, 95% interval; "
        f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    if _fused.available():
        with tempfile.TemporaryDirectory() as empty:
            cold = kernel_load_seconds(empty)
            warm = kernel_load_seconds(empty)
        print(
            f"fused kernel, first call in a fresh process (numba's import included): "
            f"compiling {cold[0]:.2f} s wall / {cold[1]:.2f} s CPU, from numba's cache "
            f"{warm[0]:.2f} s / {warm[1]:.2f} s"
        )
    else:
        print("numba is not installed: 'auto' uses the numpy index method")
    for kind in args.kinds.split(","):
        a, b = data(kind, n)
        qa = {f"q{i}": float(x) for i, x in enumerate(a)}
        qb = {f"q{i}": float(x) for i, x in enumerate(b)}
        metric = "Hit@10" if kind == "binary" else "nDCG@10"
        run_ragmeter(a, b, B)  # warm-up: loads the kernel once, outside the timings
        tracemalloc.start()
        run_ragmeter(a, b, B)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        contenders: dict[str, Callable[[], Any]] = {
            "ragmeter auto": lambda a=a, b=b: run_ragmeter(a, b, B),
            "ragmeter index": lambda a=a, b=b: run_ragmeter(a, b, B, "index"),
            "compare()": lambda qa=qa, qb=qb, m=metric: run_compare(qa, qb, B, m),
            "scipy": lambda a=a, b=b: run_scipy(a, b, B),
        }
        if kind == "binary":  # the counts method: index drawing is the graded case's fallback
            del contenders["ragmeter index"]
        rounds: dict[str, list[tuple[float, float]]] = {k: [] for k in contenders}
        results: dict[str, tuple[float, float, str]] = {}
        for _ in range(args.rounds):
            for name, fn in contenders.items():
                w, c, results[name] = timed(fn)
                rounds[name].append((w, c))
        print(
            f"\n[{kind}] mean difference {np.mean(b - a):+.5f}; "
            f"{len(np.unique(b - a)):,} distinct differences; ragmeter peak memory "
            f"{peak / 2**20:.1f} MiB"
        )
        print(
            f"  {'':16s} {'method':>9s} {'wall (s)':>9s} {'CPU (s)':>9s} "
            f"{'x scipy wall':>12s} {'x scipy CPU':>11s}   interval"
        )
        sc = rounds["scipy"]
        for name in contenders:
            ws = [w for w, _ in rounds[name]]
            cs = [c for _, c in rounds[name]]
            rw = statistics.median(s[0] / r[0] for s, r in zip(sc, rounds[name], strict=True))
            rc = statistics.median(s[1] / r[1] for s, r in zip(sc, rounds[name], strict=True))
            lo, hi, method = results[name]
            print(
                f"  {name:16s} {method:>9s} {statistics.median(ws):9.3f} "
                f"{statistics.median(cs):9.3f} {rw:11.1f}x {rc:10.1f}x   [{lo:+.5f}, {hi:+.5f}]"
            )


if __name__ == "__main__":
    main()
