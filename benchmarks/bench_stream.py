"""Streaming: how fast a huge run with one bad line fails, and scoring in chunks of queries.

Usage::

    python benchmarks/bench_stream.py                       # 1M queries x 10 = 10M lines
    python benchmarks/bench_stream.py --queries 100000 --chunks 1,4,16 --reps 3

Uses the seeded files of ``benchmarks/_gen.py`` (``$RAGMETER_BENCH_DATA`` or the system's temp
folder). Every measurement runs in a fresh Python process, which reports its own wall time, CPU
time (all threads) and peak resident memory (``VmHWM``), so one measurement's memory never
inflates the next. Medians of ``--reps``.

1. *Fail fast*: ``read_run`` of the clean run, and of the same run with one bad line appended
   (a score that is not a number). The error must name the file, the line and the field, and
   cost about one read of the file.
2. *Query chunks*: ``ragmeter.evaluate`` (nDCG@10, RR@10, R@100, P@5, AP) of the run path in
   one pass and with ``query_chunks=N``: the same means (checked to the last bit), and the peak
   memory against the run's columnar size (qid + doc + score).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _gen import bench_files

METRICS = "nDCG@10,RR@10,R@100,P@5,AP"

_CHILD = """
import json, resource, sys, time
t0, c0 = time.perf_counter(), time.process_time()
out = {}
try:
    exec(sys.argv[1])
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
out["wall"] = time.perf_counter() - t0
out["cpu"] = time.process_time() - c0
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over fork and exec (the parent's peak)
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")]
out["peak_mb"] = (int(hwm[0].split()[1]) if hwm else
                  resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024
print(json.dumps(out))
"""


def child(code: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, code], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def median_of(reps: int, code: str) -> dict:
    runs = [child(code) for _ in range(reps)]
    out = dict(runs[-1])
    for key in ("wall", "cpu", "peak_mb"):
        out[key] = statistics.median(r[key] for r in runs)
    return out


def bad_copy(run: Path) -> Path:
    bad = run.with_name(run.stem + "-bad-last.run")
    if not bad.is_file():
        shutil.copyfile(run, bad)
        with bad.open("a") as fh:
            fh.write("q0 Q0 dX 11 notanumber tag\n")
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=1_000_000)
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--chunks", default="1,10", help="query_chunks values (1 = one chunk)")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    files = bench_files(args.queries, args.depth)
    bad = bad_copy(files.run)
    load = os.getloadavg()
    print(
        f"# bench_stream ({platform.python_version()}, {platform.machine()}, {os.cpu_count()} "
        f"CPUs; load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}); {args.queries:,} queries x "
        f"{args.depth} = {files.n_rows:,} lines, medians of {args.reps}\n"
    )

    read = "from ragmeter.io.trec import read_run\nr = read_run({!r}); out['rows'] = len(r.qid)"
    clean = median_of(args.reps, read.format(str(files.run)))
    failed = median_of(args.reps, read.format(str(bad)))
    print("## A bad last line\n")
    print("| file | wall (s) | CPU (s) | peak (MB) | outcome |")
    print("|---|---|---|---|---|")
    print(f"| clean | {clean['wall']:.2f} | {clean['cpu']:.2f} | {clean['peak_mb']:.0f} | "
          f"{clean.get('rows', 0):,} rows |")  # fmt: skip
    print(f"| bad last line | {failed['wall']:.2f} | {failed['cpu']:.2f} | "
          f"{failed['peak_mb']:.0f} | {failed.get('error', 'no error!')} |")  # fmt: skip
    print(f"\nbad / clean: {failed['wall'] / clean['wall']:.2f}x wall, "
          f"{failed['cpu'] / clean['cpu']:.2f}x CPU\n")  # fmt: skip

    size = (
        "import pyarrow as pa\nfrom ragmeter.io.trec import read_run\nr = read_run({!r})\n"
        "out['mb'] = (r.qid.nbytes + r.doc.nbytes + r.score.nbytes) / 2**20"
    )
    columnar = child(size.format(str(files.run)))["mb"]
    score = (
        "import ragmeter\ne = ragmeter.evaluate({q!r}, {r!r}, {m!r}, query_chunks={n})\n"
        "out['means'] = e.aggregate"
    )
    qrels_only = child(
        f"from ragmeter.io.convert import to_qrels\nq = to_qrels({str(files.qrels)!r})"
    )["peak_mb"]
    print(f"## Query chunks (run columns: {columnar:.0f} MB; reading the qrels alone peaks at "
          f"{qrels_only:.0f} MB)\n")  # fmt: skip
    print("| query_chunks | wall (s) | CPU (s) | peak (MB) | peak / columns | same means |")
    print("|---|---|---|---|---|---|")
    reference = None
    for n in [None] + [int(x) for x in args.chunks.split(",") if x]:
        got = median_of(
            args.reps, score.format(q=str(files.qrels), r=str(files.run), m=METRICS, n=n)
        )
        reference = reference or got["means"]
        print(
            f"| {n or 'off (one pass)'} | {got['wall']:.2f} | {got['cpu']:.2f} | "
            f"{got['peak_mb']:.0f} | {got['peak_mb'] / columnar:.2f}x | "
            f"{got['means'] == reference} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
