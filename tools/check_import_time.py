"""CI step: `import ragmeter` must take under a limit (median of fresh interpreters).

ranx takes 4-6 s to import; ragmeter loads nothing heavy until a function needs it.

``--cli`` also prints the CPU time (user+sys, median) of ``ragmeter --help`` and
``ragmeter --version`` in fresh interpreters, the figure of the start-up note (which modules they
load is tests/architecture/test_cli_startup.py's check, not a clock's).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys

SNIPPET = "import time; t = time.perf_counter(); import ragmeter; print(time.perf_counter() - t)"
CLI = "import sys; sys.argv = ['ragmeter', {arg!r}]; from ragmeter.cli import entry; entry()"


def cpu_seconds(code: str) -> float:
    """User+system CPU time of one fresh interpreter running ``code``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=float, default=0.3, help="seconds")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument(
        "--cli", action="store_true", help="also print the CPU time of ragmeter --help/--version"
    )
    args = ap.parse_args()
    times = [
        float(
            subprocess.run(
                [sys.executable, "-c", SNIPPET], check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(args.repeat)
    ]
    med = statistics.median(times)
    ok = med < args.limit
    print(
        f"import ragmeter: median {med * 1000:.1f} ms over {args.repeat} fresh interpreters "
        f"(limit {args.limit * 1000:.0f} ms): {'ok' if ok else 'TOO SLOW'}"
    )
    if args.cli:
        for arg in ("--help", "--version"):
            cpu = statistics.median(cpu_seconds(CLI.format(arg=arg)) for _ in range(args.repeat))
            print(f"ragmeter {arg}: median CPU (user+sys) {cpu:.2f} s over {args.repeat} runs")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
