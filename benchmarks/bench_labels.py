"""Chunking and span-label benchmark: SQuAD v1.1 dev under every chunker, and a synthetic corpus.

Usage::

    RAGMETER_DATA=../shared/data python benchmarks/bench_labels.py
    python benchmarks/bench_labels.py --sizes 250000,500000,1000000 --reps 3

Part 1 (needs ``$RAGMETER_DATA/squad-v1.1-dev/dev-v1.1.json``; skipped with a note otherwise):
for each chunker, the time to chunk the 48 articles (tokenizing included), the chunk count and
median tokens, the time to map every answer span onto the chunks, and the time of a span-level
evaluation (``R@10,AllR@10,RR@10,R@budget=3000``) of a seeded run of 20 chunks per question.

Part 2: a synthetic corpus, 20 overlapping chunks per document (1,000 characters, stride 800)
and one span per 10 chunks (1-300 characters at seeded random places), at three sizes up to
1M chunks / 100k spans. It times the span-to-chunk mapping (best of ``--reps``), both the
integer kernel alone and from string document ids, and reports the time per 100k chunks, which
must stay about constant (linear scaling).

Part 3: span-level scoring at the same sizes (``--span-sizes``, default 10k, 100k and 1M chunks
with one question per 10 chunks and a run of 10 chunks per question): ``span_mapping`` (the
run-independent half, once per golden set and chunking), ``evaluate_spans`` of one run with
that mapping and without it, and the metric engine (``ragmeter.evaluate``) on the equivalent
chunk qrels (``chunk_qrels``, built once) for the same run; medians of ``--reps``, the ratio of
span scoring to the engine, and the time per 100k chunks (linear scaling: about constant).

Prints markdown tables on stdout.
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
from types import SimpleNamespace
from typing import Any

import numpy as np

CHUNKERS = ["tokens:300:0", "tokens:300:50", "sentences:5", "sections:300", "recursive:300:30"]
SPAN_METRICS = "R@10,AllR@10,RR@10,R@budget=3000"


def best_of(reps: int, fn: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    """(best wall time of ``reps`` calls of ``fn(*args)``, its result)."""
    times, out = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - t0)
    return min(times), out


def seeded_run(golden: Any, chunking: Any, per_query: int, seed: int = 0):
    """Per question: the first chunk of its first span's document plus random chunks."""
    import pyarrow as pa

    from ragmeter.io._tables import Run

    rng = np.random.default_rng(seed)
    first_of_doc: dict[str, int] = {}
    for i, d in enumerate(chunking.doc):
        first_of_doc.setdefault(d, i)
    qids, docs, scores = [], [], []
    n = len(chunking)
    for q in golden.questions:
        picks = list(
            dict.fromkeys(
                ([first_of_doc[q.evidence[0].doc]] if q.evidence else [])
                + rng.integers(0, n, per_query).tolist()
            )
        )[:per_query]
        for rank, c in enumerate(picks):
            qids.append(q.id)
            docs.append(chunking.ids[c])
            scores.append(float(per_query - rank))
    return Run(
        qid=pa.array(qids, pa.string()),
        doc=pa.array(docs, pa.string()),
        score=np.array(scores),
        name="seeded",
    )


def bench_squad(root: Path, reps: int) -> str:
    from ragmeter.chunking import chunk_corpus, get_tokenizer
    from ragmeter.data.squad import load_squad
    from ragmeter.labels import SpanTable, evaluate_spans, map_spans

    path = root / "squad-v1.1-dev" / "dev-v1.1.json"
    t0 = time.perf_counter()
    corpus, golden = load_squad(path)
    load_s = time.perf_counter() - t0
    get_tokenizer()  # load once, outside the timings
    spans = SpanTable.from_questions(golden.questions)
    chars = sum(len(d.text) for d in corpus)
    head = (
        f"SQuAD v1.1 dev: {len(corpus)} articles, {chars:,} characters, "
        f"{len(golden):,} questions, {len(spans):,} spans (load {load_s:.2f} s)"
    )
    cols = (
        "| chunker | chunk (s) | chunks | median tokens | map spans (ms) | pairs | "
        f"eval {SPAN_METRICS} (s) |"
    )
    lines = [head, "", cols, "|---|---|---|---|---|---|---|"]
    for name in CHUNKERS:
        chunk_s, chunking = best_of(reps, chunk_corpus, corpus, name)
        map_s, pairs = best_of(reps, map_spans, spans, chunking)
        run = seeded_run(golden, chunking, 20)
        eval_s, _ = best_of(reps, evaluate_spans, golden, chunking, run, SPAN_METRICS)
        lines.append(
            f"| `{name}` | {chunk_s:.2f} | {len(chunking):,} | "
            f"{statistics.median(chunking.n_tokens.tolist()):g} | {map_s * 1e3:.1f} | "
            f"{len(pairs):,} | {eval_s:.2f} |"
        )
    return "\n".join(lines)


def synthetic(n_chunks: int, seed: int = 0) -> tuple[SimpleNamespace, SimpleNamespace]:
    per_doc, length, stride = 20, 1_000, 800
    n_docs = n_chunks // per_doc
    doc = np.repeat(np.arange(n_docs, dtype=np.int64), per_doc)
    start = np.tile(np.arange(per_doc, dtype=np.int64) * stride, n_docs)
    chunks = SimpleNamespace(doc=doc, start=start, end=start + length)
    rng = np.random.default_rng(seed)
    n_spans = n_chunks // 10
    s_doc = rng.integers(0, n_docs, n_spans)
    s_start = rng.integers(0, (per_doc - 1) * stride + length - 300, n_spans)
    spans = SimpleNamespace(doc=s_doc, start=s_start, end=s_start + rng.integers(1, 301, n_spans))
    return chunks, spans


def _from_strings(
    s_ids: list[str], s: SimpleNamespace, c_ids: list[str], c: SimpleNamespace
) -> Any:
    from ragmeter.labels import overlap_pairs
    from ragmeter.labels._mapping import encode_docs

    sd, cd = encode_docs(s_ids, c_ids)
    return overlap_pairs(sd, s.start, s.end, cd, c.start, c.end)


def bench_synthetic(sizes: list[int], reps: int) -> str:
    from ragmeter.labels import overlap_pairs

    cols = (
        "| chunks | spans | pairs | kernel (s) | per 100k chunks (ms) | "
        "with string ids (s) | per 100k chunks (ms) |"
    )
    lines = [cols, "|---|---|---|---|---|---|---|"]
    for n in sizes:
        c, s = synthetic(n)
        kernel_s, pairs = best_of(reps, overlap_pairs, s.doc, s.start, s.end, c.doc, c.start, c.end)
        c_ids = [f"doc-{d}" for d in c.doc.tolist()]
        s_ids = [f"doc-{d}" for d in s.doc.tolist()]
        full_s, _ = best_of(reps, _from_strings, s_ids, s, c_ids, c)
        lines.append(
            f"| {n:,} | {len(s.start):,} | {len(pairs):,} | {kernel_s:.3f} | "
            f"{kernel_s / n * 1e5 * 1e3:.1f} | {full_s:.3f} | "
            f"{full_s / n * 1e5 * 1e3:.1f} |"
        )
    return "\n".join(lines)


def span_world(n_chunks: int, seed: int = 0, per_query: int = 10) -> tuple[Any, Any, Any]:
    """Questions (one span each, as in part 2), their Chunking and a seeded run: per question
    the chunk holding its span's start at a random rank among random chunks."""
    import pyarrow as pa

    from ragmeter.chunking._chunking import Chunking
    from ragmeter.data._schema import Evidence, Question
    from ragmeter.io._tables import Run

    per_doc, stride = 20, 800
    c, s = synthetic(n_chunks, seed)
    n_docs = n_chunks // per_doc
    doc_ids = [f"doc-{d}" for d in range(n_docs)]
    ids = [f"doc-{d}#{i % per_doc}" for i, d in enumerate(c.doc.tolist())]
    chunking = Chunking(
        name="synthetic",
        tokenizer="none",
        ids=ids,
        doc=[doc_ids[d] for d in c.doc.tolist()],
        start=c.start,
        end=c.end,
        text=[""] * n_chunks,
        n_tokens=np.full(n_chunks, 250),
    )
    rng = np.random.default_rng(seed + 1)
    nq = len(s.doc)
    questions = [
        Question.model_construct(
            id=f"q{i}",
            question="",
            evidence=[
                Evidence.model_construct(
                    doc=doc_ids[d], start=a, end=b, grade=1, text=None, required=None
                )
            ],
            answer=None,
            answerable=True,
            slices=[],
            split="tune",
        )
        for i, (d, a, b) in enumerate(
            zip(s.doc.tolist(), s.start.tolist(), s.end.tolist(), strict=True)
        )
    ]
    picks = rng.integers(0, n_chunks, (nq, per_query))
    home = s.doc * per_doc + np.minimum(s.start // stride, per_doc - 1)
    picks[np.arange(nq), rng.integers(0, per_query, nq)] = home
    run = Run(
        qid=pa.array(np.repeat([f"q{i}" for i in range(nq)], per_query).tolist(), pa.string()),
        doc=pa.array([ids[x] for x in picks.ravel().tolist()], pa.string()),
        score=np.tile(np.arange(per_query, 0, -1, dtype=np.float64), nq),
        name="seeded",
    )
    return questions, chunking, run


def median_of(reps: int, fn: Callable[..., Any], *args: Any, **kw: Any) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn(*args, **kw)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def bench_span_scoring(sizes: list[int], reps: int) -> str:
    import warnings

    import ragmeter
    from ragmeter.labels import chunk_qrels, evaluate_spans, span_mapping

    span_m, item_m = "R@10,RR@10,Hit@10,AllR@10", "R@10,RR@10,Hit@10"
    cols = (
        "| chunks | questions | mapping (s) | spans, one run (s) | spans, no mapping (s) | "
        "engine on chunk qrels (s) | spans / engine | no mapping / engine | "
        "per 100k chunks (ms) |"
    )
    lines = [cols, "|---|---|---|---|---|---|---|---|---|"]
    for n in sizes:
        questions, chunking, run = span_world(n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # questions no chunk meets the qrels rule for
            qrels = chunk_qrels(questions, chunking)
        map_s, mapping = median_of(reps, span_mapping, questions, chunking)
        run_s, _ = median_of(
            reps, evaluate_spans, questions, chunking, run, span_m, mapping=mapping
        )
        full_s, _ = median_of(reps, evaluate_spans, questions, chunking, run, span_m)
        eng_s, _ = median_of(reps, ragmeter.evaluate, qrels, run, item_m)
        lines.append(
            f"| {n:,} | {len(questions):,} | {map_s:.2f} | {run_s:.2f} | {full_s:.2f} | "
            f"{eng_s:.2f} | {run_s / eng_s:.2f}x | {full_s / eng_s:.2f}x | "
            f"{full_s / n * 1e5 * 1e3:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--sizes", default="250000,500000,1000000", help="synthetic chunk counts, comma-separated"
    )
    ap.add_argument("--reps", type=int, default=3, help="repetitions; the best is reported")
    ap.add_argument("--no-squad", action="store_true", help="skip the SQuAD part")
    ap.add_argument(
        "--span-sizes", default="10000,100000,1000000", help="chunk counts for span scoring"
    )
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",") if x]
    print(
        f"# bench_labels ({platform.python_version()}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs)\n"
    )
    root = os.environ.get("RAGMETER_DATA")
    if args.no_squad:
        pass
    elif root and (Path(root) / "squad-v1.1-dev").is_dir():
        print("## SQuAD v1.1 dev under each chunker\n")
        print(bench_squad(Path(root), args.reps))
        print()
    else:
        print(
            "(SQuAD part skipped: set RAGMETER_DATA to the folder holding squad-v1.1-dev/)\n",
            file=sys.stderr,
        )
    print("## Synthetic span-to-chunk mapping (linear scaling)\n")
    print(bench_synthetic(sizes, args.reps))
    span_sizes = [int(x) for x in args.span_sizes.split(",") if x]
    if span_sizes:
        load = os.getloadavg()
        print(
            f"\n## Span-level scoring against the metric engine (load {load[0]:.2f} "
            f"{load[1]:.2f} {load[2]:.2f}; medians of {args.reps})\n"
        )
        print(bench_span_scoring(span_sizes, args.reps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
