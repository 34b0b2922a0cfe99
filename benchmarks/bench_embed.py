"""Embedding threads: MiniLM (int8, onnxruntime) with 1 thread, 2 threads and the default.

Usage::

    RAGMETER_DATA=../shared/data python benchmarks/bench_embed.py
    python benchmarks/bench_embed.py --texts 500 --reps 5

Encodes ``--texts`` of the fare-rules example's chunks (``tokens:128:0``, repeated; the
default) or, with ``--source scifact``, SciFact abstracts (title + text, about twice as long;
``$RAGMETER_DATA/beir-scifact``, else ``/work/shared/data``), with
:class:`ragmeter.retrieval.dense.MiniLMEncoder` under each setting:

- ``1 thread`` / ``2 threads``: idle threads do not spin (ragmeter's default);
- ``2 threads, spinning``: onnxruntime's own default (``session.intra_op.allow_spinning = 1``);
- ``auto``: what ragmeter picks from the cores available (``ragmeter.retrieval._threads``).

Each setting gets its own encoder (model loaded and warmed up on one batch, outside the
timings); the settings are then run in turn, ``--reps`` rounds, each round starting one setting
later, so a change in the machine's load hits all of them alike. Reported: median wall time,
median CPU time of the process (all its threads), texts per second, and the ratio to
``1 thread``. The vectors of every setting are
checked to be identical. Prints a markdown table with the machine's cores and load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def texts(n: int, source: str) -> tuple[list[str], str]:
    for root in (
        (os.environ.get("RAGMETER_DATA"), "/work/shared/data") if source == "scifact" else ()
    ):
        path = Path(root or "") / "beir-scifact" / "corpus.jsonl"
        if root and path.is_file():
            out = []
            with path.open(encoding="utf-8") as fh:
                for line in fh:
                    d = json.loads(line)
                    out.append(f"{d.get('title', '')} {d['text']}".strip())
                    if len(out) == n:
                        break
            return out, f"the first {len(out)} SciFact abstracts (title + text)"
    from ragmeter.chunking import chunk_corpus
    from ragmeter.data.corpus import load_corpus

    chunks = chunk_corpus(
        load_corpus(REPO / "examples" / "fare-rules" / "corpus.jsonl"), "tokens:128:0"
    )
    base = list(chunks.text)
    return (base * (n // len(base) + 1))[:n], f"{n} fare-rules chunks (tokens:128:0, repeated)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=500, help="how many texts to encode")
    ap.add_argument("--reps", type=int, default=3, help="rounds; medians are reported")
    ap.add_argument("--source", choices=["fare-rules", "scifact"], default="fare-rules")
    args = ap.parse_args(argv)

    from ragmeter.retrieval._threads import auto_threads, available_cores, cgroup_quota
    from ragmeter.retrieval.dense import MiniLMEncoder

    data, what = texts(args.texts, args.source)
    settings = {
        "1 thread": {"threads": 1},
        "2 threads": {"threads": 2},
        "2 threads, spinning": {"threads": 2, "spinning": True},
        f"auto ({auto_threads()})": {"threads": "auto"},
    }
    encoders = {name: MiniLMEncoder(**kw) for name, kw in settings.items()}  # type: ignore[arg-type]
    for enc in encoders.values():
        enc.encode(data[:32])  # load the model and warm up, outside the timings
    wall: dict[str, list[float]] = {n: [] for n in settings}
    cpu: dict[str, list[float]] = {n: [] for n in settings}
    vectors: dict[str, np.ndarray] = {}
    names = list(encoders)
    for rep in range(args.reps):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:  # rotate the order
            enc = encoders[name]
            t0, c0 = time.perf_counter(), time.process_time()
            vectors[name] = enc.encode(data)
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    first = next(iter(vectors.values()))
    same = all(np.array_equal(first, v) for v in vectors.values())

    load = os.getloadavg()
    print(
        f"# bench_embed ({platform.python_version()}, {platform.machine()}; "
        f"{os.cpu_count()} CPUs, {available_cores()} available, cgroup quota "
        f"{cgroup_quota() or 'none'}; load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})\n"
    )
    print(f"MiniLM int8 on {what}; medians of {args.reps} rounds; vectors identical: {same}\n")
    print("| setting | wall (s) | CPU (s) | texts/s | wall vs 1 thread | CPU vs 1 thread |")
    print("|---|---|---|---|---|---|")
    w1, c1 = statistics.median(wall["1 thread"]), statistics.median(cpu["1 thread"])
    for name in settings:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        print(
            f"| {name} | {w:.2f} | {c:.2f} | {len(data) / w:.0f} | {w / w1:.2f}x | {c / c1:.2f}x |"
        )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
