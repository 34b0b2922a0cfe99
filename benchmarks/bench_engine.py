"""Embedding throughput per Ray worker, against the same encoder in this process: the figure
docs/scale.md projects a 10M-chunk corpus from.

Usage::

    .venv/bin/python benchmarks/bench_engine.py                 # 1,024 passages, 1 worker
    .venv/bin/python benchmarks/bench_engine.py --texts 4096 --actors 1

Passages are fare-rules chunks (``tokens:300:0`` over ``examples/fare-rules/corpus.jsonl``),
each made distinct by a number so nothing is deduplicated, and encoded with no cache by
all-MiniLM-L6-v2 (int8 ONNX) with one onnxruntime thread. In process: one ``MiniLMEncoder``
called on batches of 256. On Ray: a local cluster (``num_cpus = actors + 1``), ``actors`` actors
of 1 CPU each, batches of 256; the model load (the first batch) is timed apart. Prints one
markdown table: texts/s, seconds, and the projected hours for 10M chunks per worker count.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fare-rules"


def passages(n: int) -> list[str]:
    from ragmeter.chunking import chunk_corpus
    from ragmeter.data import load_corpus

    chunks = chunk_corpus(load_corpus(EXAMPLE / "corpus.jsonl"), "tokens:300:0")
    base = [str(t) for t in chunks.text]
    return [f"{base[i % len(base)]} ({i})" for i in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--texts", type=int, default=1024)
    ap.add_argument("--actors", type=int, default=1)
    args = ap.parse_args()
    texts = passages(args.texts)
    from ragmeter.engines import RayEngine
    from ragmeter.retrieval._cache import encode_cached
    from ragmeter.retrieval.dense import MiniLMEncoder

    enc = MiniLMEncoder(threads=1)
    enc.encode(texts[:8])  # load the model
    t, c = time.perf_counter(), time.process_time()
    for a in range(0, len(texts), 256):
        enc.encode(texts[a : a + 256])
    local_s, local_cpu = time.perf_counter() - t, time.process_time() - c

    def factory() -> MiniLMEncoder:
        return MiniLMEncoder(threads=1)

    started = time.perf_counter()
    with RayEngine(num_cpus=args.actors + 1, actors=args.actors, batch_texts=256) as eng:
        warm = eng.wrap_encoder(MiniLMEncoder(threads=1), factory)
        encode_cached(warm, texts[:8], role="passage", cache=None)  # start actors, load model
        ready_s = time.perf_counter() - started
        pids = next(iter(eng._pools.values())).pids()
        before = sum(cpu_seconds(p) for p in pids)
        t = time.perf_counter()
        encode_cached(warm, texts, role="passage", cache=None)
        ray_s = time.perf_counter() - t
        ray_cpu = sum(cpu_seconds(p) for p in pids) - before
    print(f"cpus: {os.cpu_count()}, load average (1 min): {os.getloadavg()[0]:.2f}")
    print(
        "| where | texts | wall s | worker CPU s | texts per CPU s | 10M chunks: CPU hours "
        "| on 100 workers |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, secs, cpu in (
        ("in process (1 thread)", local_s, local_cpu),
        (f"Ray, {args.actors} actor(s) of 1 CPU", ray_s, ray_cpu),
    ):
        per_cpu = len(texts) / cpu
        hours = 10_000_000 / per_cpu / 3600
        print(
            f"| {name} | {len(texts):,} | {secs:.1f} | {cpu:.1f} | {per_cpu:.1f} | "
            f"{hours:.0f} | {hours * 60 / 100:.0f} min |"
        )
    print(f"Ray start, actors and model load: {ready_s:.1f} s (once per run)")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process on this machine (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()
