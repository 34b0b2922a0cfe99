"""CI step: `import ragmeter` must take under a limit (median of fresh interpreters).

ranx takes 4-6 s to import; ragmeter loads nothing heavy until a function needs it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

SNIPPET = "import time; t = time.perf_counter(); import ragmeter; print(time.perf_counter() - t)"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=float, default=0.3, help="seconds")
    ap.add_argument("--repeat", type=int, default=7)
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
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
