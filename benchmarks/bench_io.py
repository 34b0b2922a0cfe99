"""Benchmark: ragmeter's TREC run reader against the floor of reading the columns with pyarrow.

Generates a seeded TREC run (default 100k queries x 100 docs = 10M lines) in a temporary folder,
then times, each in a fresh process (so peak memory is the call's own):

- floor: ``pyarrow.csv.read_csv`` of the file's qid, doc and score columns (single-space
  delimiter, no validation, no duplicate check) - the least any reader has to do;
- read_run: ``ragmeter.io.trec.read_run`` (validation, duplicate check, one string array per
  column, float64 scores).

Reports medians of ``--repeats`` runs, the ratio read_run/floor, and peak memory: the rise of the
process's peak RSS during the call, next to the run's columnar size (qid + doc + score as
arrow arrays). Usage::

    python benchmarks/bench_io.py [--queries 100000] [--depth 100] [--repeats 3] [--gzip]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NAMES = ["qid", "iter", "doc", "rank", "score", "tag"]


def generate(path: Path, n_queries: int, depth: int, seed: int = 0, gzip: bool = False) -> None:
    """A run with scores sorted per query, doc ids drawn from a 1M-document collection."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    rng = np.random.default_rng(seed)
    n = n_queries * depth
    q = np.repeat(np.arange(n_queries), depth)
    j = np.tile(np.arange(depth), n_queries)
    offset = rng.integers(0, 1_000_003, n_queries)
    doc = (offset[q] + j * 7919) % 1_000_003  # distinct within a query (1_000_003 is prime)
    score = -np.sort(-rng.random((n_queries, depth)), axis=1).ravel()
    table = pa.table(
        {
            "qid": pc.binary_join_element_wise("q", pc.cast(pa.array(q), pa.string()), ""),
            "iter": pa.repeat("Q0", n),
            "doc": pc.binary_join_element_wise("doc", pc.cast(pa.array(doc), pa.string()), ""),
            "rank": pa.array(j + 1),
            "score": pa.array(score),
            "tag": pa.repeat("bench", n),
        }
    )
    options = pcsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    with pa.output_stream(str(path), compression="gzip" if gzip else None) as out:
        pcsv.write_csv(table, out, options)


def _status_kib(key: str) -> int:
    """A memory figure of this process from /proc/self/status (Linux), in KiB.

    VmHWM (peak RSS) is used rather than getrusage's ru_maxrss, which Linux carries over from
    the parent across fork/exec and so would report the generator's peak.
    """
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def measure(which: str, path: str) -> dict[str, float]:
    """One timed call in this process; peak RSS rise in MiB (Linux /proc)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    from ragmeter.io import trec

    base = _status_kib("VmRSS")
    t0 = time.perf_counter()
    c0 = time.process_time()
    if which == "floor":
        stream = pa.input_stream(path, compression="gzip" if path.endswith(".gz") else None)
        table = pcsv.read_csv(
            stream,
            read_options=pcsv.ReadOptions(column_names=NAMES),
            parse_options=pcsv.ParseOptions(delimiter=" "),
            convert_options=pcsv.ConvertOptions(
                include_columns=["qid", "doc", "score"],
                column_types={"qid": pa.string(), "doc": pa.string(), "score": pa.float64()},
            ),
        )
        nbytes = table.nbytes
    else:
        run = trec.read_run(path)
        nbytes = run.qid.nbytes + run.doc.nbytes + run.score.nbytes
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - c0
    peak = _status_kib("VmHWM")
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "peak_mib": (peak - base) / 1024,
        "arrow_peak_mib": pa.default_memory_pool().max_memory() / 2**20,
        "columnar_mib": nbytes / 2**20,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--gzip", action="store_true", help="also gzip the file")
    ap.add_argument("--measure", nargs=2, metavar=("WHICH", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(*args.measure)))
        return

    with tempfile.TemporaryDirectory(prefix="ragmeter-bench-io-") as tmp:
        path = Path(tmp) / ("run.txt.gz" if args.gzip else "run.txt")
        t0 = time.perf_counter()
        generate(path, args.queries, args.depth, gzip=args.gzip)
        n = args.queries * args.depth
        print(
            f"run: {args.queries} queries x {args.depth} docs = {n:,} lines, "
            f"{path.stat().st_size / 2**20:.0f} MiB on disk ({time.perf_counter() - t0:.1f} s "
            "to generate)"
        )
        results: dict[str, list[dict[str, float]]] = {"floor": [], "read_run": []}
        for _ in range(args.repeats):
            for which in ("floor", "read_run"):  # interleaved, so machine load hits both alike
                out = subprocess.run(
                    [sys.executable, __file__, "--measure", which, str(path)],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                results[which].append(json.loads(out.stdout.strip().splitlines()[-1]))

    med = {k: {m: statistics.median(r[m] for r in v) for m in v[0]} for k, v in results.items()}
    floor, ours = med["floor"], med["read_run"]
    print(
        f"{'':10} {'wall s':>7} {'runs':>20} {'cpu s':>7} {'RSS rise MiB':>13} "
        f"{'arrow peak MiB':>15}"
    )
    for k, v in results.items():
        runs = ", ".join(f"{r['seconds']:.2f}" for r in v)
        m = med[k]
        print(
            f"{k:10} {m['seconds']:7.2f} {runs:>20} {m['cpu_seconds']:7.2f} "
            f"{m['peak_mib']:13.0f} {m['arrow_peak_mib']:15.0f}"
        )
    print(
        f"read_run / floor: wall {ours['seconds'] / floor['seconds']:.2f}x, "
        f"cpu {ours['cpu_seconds'] / floor['cpu_seconds']:.2f}x "
        "(issue target for the whole evaluation: <= 1.5x)"
    )
    print(
        f"columnar size (qid + doc + score) {ours['columnar_mib']:.0f} MiB; read_run peak: RSS "
        f"rise {ours['peak_mib'] / ours['columnar_mib']:.2f}x, arrow allocations "
        f"{ours['arrow_peak_mib'] / ours['columnar_mib']:.2f}x + the float64 score array "
        "(target <= 2x)"
    )


if __name__ == "__main__":
    main()
