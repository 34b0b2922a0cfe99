"""The lab's interactive paths on a synthetic experiment: recomputing metrics at a new k or
budget from the stored ranked lists, and the /lab page at a new k (through the ASGI app).

    .venv/bin/python benchmarks/bench_lab.py --questions 1000
    .venv/bin/python benchmarks/bench_lab.py --questions 10000 --page

Synthetic data (seeded): 2,000 documents of 200 words, 5 chunks each (10,000 chunks), N
questions with 1-3 graded evidence spans, an imported run of depth 50 per question. Targets
(issue 13): recompute under 200 ms for 1,000 questions; the page for 10,000 questions under 1 s.
Medians of 5; the machine is shared, so read the medians, not single figures.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
import warnings
from pathlib import Path

WORDS = "fare change fee refund basic standard flex seat bag child infant award miles rule".split()


def build(root: Path, n: int) -> Path:
    rng = random.Random(0)
    docs, chunks = [], []
    for d in range(2000):
        text = " ".join(rng.choice(WORDS) for _ in range(200))
        docs.append({"id": f"d{d}", "text": text})
        step = len(text) // 5
        for c in range(5):
            a, b = c * step, (c + 1) * step if c < 4 else len(text)
            chunks.append(
                {
                    "id": f"d{d}#{a}-{b}",
                    "doc": f"d{d}",
                    "start": a,
                    "end": b,
                    "text": text[a:b],
                    "n_tokens": (b - a) // 4,
                }
            )
    golden, run = [], []
    for i in range(n):
        qid = f"q{i:05d}"
        evs = []
        for d in rng.sample(range(2000), rng.choice([1, 1, 2, 3])):
            a = rng.randrange(0, 700)
            evs.append(
                {
                    "doc": f"d{d}",
                    "start": a,
                    "end": a + rng.randrange(20, 200),
                    "grade": 1 + (a % 2),
                }
            )
        golden.append({"id": qid, "question": f"question {i}?", "evidence": evs})
        ids = rng.sample(range(len(chunks)), 50)
        first = evs[0]
        rel = [
            j
            for j, c in enumerate(chunks)
            if c["doc"] == first["doc"] and c["start"] <= first["start"] < c["end"]
        ]
        if rel and rel[0] not in ids:
            ids[rng.randrange(0, 20)] = rel[0]
        run.extend(
            json.dumps({"qid": qid, "chunk": chunks[j]["id"], "score": 50 - r + 0.5})
            for r, j in enumerate(ids)
        )

    def lines(rows: list) -> str:
        return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)

    (root / "corpus.jsonl").write_text(lines(docs))
    (root / "chunks.jsonl").write_text(lines(chunks))
    (root / "golden.jsonl").write_text(lines(golden))
    (root / "run.jsonl").write_text(lines(run))
    path = root / "experiment.toml"
    path.write_text(
        'name = "synthetic"\ngolden = "golden.jsonl"\ncorpus = "corpus.jsonl"\noutput = "runs"\n'
        'k = 4\nbudget = 1200\nmetrics = ["R", "AllR", "RR", "nDCG"]\n\n[baseline]\n'
        'name = "synthetic"\nchunks = "chunks.jsonl"\nrun = "run.jsonl"\n'
    )
    return path


def median_ms(fn, rounds: int = 5) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--questions", type=int, default=1000)
    ap.add_argument("--page", action="store_true", help="also time the /lab page")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    from ragmeter.store._experiment import run_and_record

    from ragmeter import Store
    from ragmeter.lab._prepared import prepared_run
    from ragmeter.lab._recompute import Cutoff, scores

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = build(root, args.questions)
        store = Store.open(f"sqlite:///{root}/s.db")
        run_and_record(store, path, write=False)
        rid = store.runs()[0].id
        cache: dict = {}
        t = time.perf_counter()
        p = prepared_run(store, rid, cache)
        first = (time.perf_counter() - t) * 1000
        print(f"| first load (files, chunking, ranked lists) | {first:.0f} ms |")
        for cut in (Cutoff(k=3), Cutoff(k=10), Cutoff(budget=900)):

            def once(cut: Cutoff = cut) -> None:
                p._scores.clear()
                scores(p, cut)

            label = f"recompute {args.questions:,} questions at {cut.label}"
            print(f"| {label} | {median_ms(once):.0f} ms |")
        if args.page:
            from fastapi.testclient import TestClient

            from ragmeter.lab._app import create_app

            client = TestClient(create_app(store=store), base_url="http://127.0.0.1")
            client.get(f"/lab?run={rid}&k=4")  # loads the experiment once
            ks = iter(range(5, 100))
            ms = median_ms(lambda: client.get(f"/lab?run={rid}&k={next(ks)}"))
            print(f"| /lab page, {args.questions:,} questions, a new k each time | {ms:.0f} ms |")


if __name__ == "__main__":
    main()
