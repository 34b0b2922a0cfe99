"""Benchmark: dataset loaders on the real files (SQuAD v1.1 dev, BEIR SciFact).

The loaders' wall-clock time is measured here, not asserted in a test: a time limit in a test
fails whenever the machine is busy and says nothing about correctness
(tests/data/test_data_loaders.py checks the counts and spans). Each loader runs ``--repeats`` times
in this process after one warm-up call (imports, pydantic model build); the median and the range are
printed, with the load average so a reader can judge how busy the machine was. The target the old
test asserted was ``load_squad`` under 2 s on SQuAD dev (10,570 questions, 48 articles).

Usage::

    RAGMETER_DATA=../shared/data python benchmarks/bench_loaders.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def timed(fn: Callable[[], Any], repeats: int) -> tuple[list[float], Any]:
    result = fn()  # warm-up: imports, model build, file cache
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return times, result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    root = os.environ.get("RAGMETER_DATA")
    if not root or not Path(root).is_dir():
        print(
            "set RAGMETER_DATA to the folder holding squad-v1.1-dev/ and beir-scifact/",
            file=sys.stderr,
        )
        return 2
    from ragmeter.data import load_beir, load_squad

    cases: list[tuple[str, Callable[[], Any], str]] = [
        (
            "load_squad, SQuAD v1.1 dev",
            lambda: load_squad(Path(root) / "squad-v1.1-dev" / "dev-v1.1.json"),
            "target < 2 s",
        ),
        (
            "load_beir, SciFact test",
            lambda: load_beir(Path(root) / "beir-scifact", split="test"),
            "",
        ),
    ]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"python {platform.python_version()}, {os.cpu_count()} cores, load average "
        f"{load:.1f}, {args.repeats} timed runs after one warm-up"
    )
    print("| loader | questions | documents | median (s) | min-max (s) | note |")
    print("|---|---:|---:|---:|---:|---|")
    for name, fn, note in cases:
        times, (corpus, golden) = timed(fn, args.repeats)
        print(
            f"| {name} | {len(golden):,} | {len(corpus):,} | {statistics.median(times):.2f} "
            f"| {min(times):.2f}-{max(times):.2f} | {note} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
