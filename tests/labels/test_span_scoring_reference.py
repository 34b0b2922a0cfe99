"""evaluate_spans against the span metrics computed question by question from their definitions.

The scoring path is vectorised and keeps run-independent work in the SpanMapping (the scored
questions, their spans and overlaps); these seeded worlds check it end to end against a plain
reading of the definitions (module doc of ragmeter.labels._span_metrics), with one mapping
reused for several runs that answer different questions, with stray query ids, ties and
chunks that overlap no span.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pyarrow as pa
import pytest

from ragmeter.chunking import Chunking
from ragmeter.data import Evidence, Question
from ragmeter.io import Run
from ragmeter.labels import evaluate_spans, span_mapping

METRICS = ["R@1", "R@3", "R", "Hit@2", "RR", "RR@2", "AllR@3", "AllR"]


def world(rng: np.random.Generator) -> tuple[list[Question], Chunking]:
    docs = [f"d{i}" for i in range(int(rng.integers(1, 4)))]
    ids, doc, start, end = [], [], [], []
    for d in docs:
        bounds = [(415, 420)]  # the document's end: every span lies inside what is chunked
        for _ in range(int(rng.integers(0, 7))):
            a = int(rng.integers(0, 300))
            bounds.append((a, a + int(rng.integers(1, 120))))
        for a, b in bounds:
            if f"{d}#{a}-{b}" not in ids:
                ids += [f"{d}#{a}-{b}"]
                doc += [d]
                start += [a]
                end += [b]
    chunking = Chunking(
        name="c", tokenizer="t", ids=ids, doc=doc, start=start, end=end, text=[""] * len(ids),
        n_tokens=[1] * len(ids),
    )  # fmt: skip
    questions = []
    for i in range(int(rng.integers(1, 9))):
        evidence = []
        marked = rng.random() < 0.3
        for _ in range(int(rng.integers(0, 4))):  # 0: unanswerable
            a = int(rng.integers(0, 380))
            evidence.append(
                Evidence(
                    doc=str(rng.choice(docs)), start=a, end=a + int(rng.integers(1, 40)),
                    grade=int(rng.integers(1, 3)),
                    required=bool(rng.random() < 0.5) if marked else None,
                )
            )  # fmt: skip
        questions.append(
            Question(id=f"q{i}", question="?", evidence=evidence, answerable=bool(evidence))
        )
    return questions, chunking


def random_run(rng: np.random.Generator, questions: list[Question], chunking: Chunking) -> Run:
    qids, items, scores = [], [], []
    asked = [q.id for q in questions if rng.random() < 0.8]
    asked.append("stray")  # a query the golden set lacks: ignored, with a warning
    for qid in asked:
        k = int(rng.integers(0, len(chunking) + 1)) if qid != "stray" or qids else 0
        for c in rng.choice(len(chunking), size=k, replace=False).tolist():
            qids.append(qid)
            items.append(chunking.ids[c])
            scores.append(float(rng.integers(0, 4)))  # ties: broken by item id, descending
    order = rng.permutation(len(qids))  # rows in any order
    return Run(
        qid=pa.array([qids[i] for i in order], pa.string()),
        doc=pa.array([items[i] for i in order], pa.string()),
        score=np.array([scores[i] for i in order], dtype=np.float64),
        name="r",
    )


def found_rank(ev: Evidence, ranked: list[int], chunking: Chunking, cover: float) -> float:
    """The first rank at which the union of the ranked chunks' characters covers the span."""
    chars: set[int] = set()
    for rank, c in enumerate(ranked, 1):
        if chunking.doc[c] == ev.doc:
            chars |= set(
                range(max(ev.start, int(chunking.start[c])), min(ev.end, int(chunking.end[c])))
            )
            if len(chars) >= cover * (ev.end - ev.start) - 1e-9:
                return float(rank)
    return math.inf


def reference(questions, chunking, run, missing: str, cover: float):
    """(query_ids, values, missing_ids, no_relevant_ids, first_rank) by the definitions."""
    row_of = {cid: i for i, cid in enumerate(chunking.ids)}
    lists: dict[str, list[tuple[float, str]]] = {}
    for q, d, s in zip(run.qid.to_pylist(), run.doc.to_pylist(), run.score.tolist(), strict=True):
        lists.setdefault(q, []).append((float(np.float32(s)), d))
    no_relevant = sorted(q.id for q in questions if not q.evidence)
    missing_ids = sorted(q.id for q in questions if q.evidence and q.id not in lists)
    scored = [q for q in questions if q.evidence and (q.id in lists or missing == "zero")]
    values, first = [], []
    for q in sorted(scored, key=lambda q: q.id):
        ranked = [row_of[d] for _, d in sorted(lists.get(q.id, []), reverse=True)]
        found = [found_rank(ev, ranked, chunking, cover) for ev in q.evidence]
        required = q.required_spans() or list(range(len(found)))
        row = []
        for m in METRICS:
            name, _, k = m.partition("@")
            cut = float(k) if k else math.inf
            got = [f <= cut and not math.isinf(f) for f in found]
            best = min(found)
            row.append(
                {
                    "R": sum(got) / len(got),
                    "Hit": float(any(got)),
                    "RR": 1 / best if best <= cut and not math.isinf(best) else 0.0,
                    "AllR": float(all(got[j] for j in required))
                    if q.required_spans()
                    else float(any(got)),
                }[name]
            )
        values.append(row)
        first.append(None if math.isinf(min(found)) else int(min(found)))
    ids = sorted(q.id for q in scored)
    return ids, values, missing_ids, no_relevant, first


@pytest.mark.parametrize("seed", range(60))
def test_evaluate_spans_matches_the_definitions(seed: int) -> None:
    rng = np.random.default_rng(seed)
    questions, chunking = world(rng)
    mapping = span_mapping(questions, chunking)
    cover = float(rng.choice([0.25, 0.5, 1.0]))
    for _ in range(3):  # one mapping, several runs answering different questions
        run = random_run(rng, questions, chunking)
        for missing in ("zero", "skip"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # stray query ids, spans no chunk holds
                ev = evaluate_spans(
                    questions, chunking, run, METRICS, cover=cover, missing=missing,
                    mapping=mapping,
                )  # fmt: skip
            ids, values, missing_ids, no_relevant, first = reference(
                questions, chunking, run, missing, cover
            )
            assert list(ev.query_ids) == ids
            np.testing.assert_allclose(ev.values, np.array(values).reshape(len(ids), len(METRICS)))
            assert list(ev.missing_ids) == missing_ids
            assert list(ev.no_relevant_ids) == no_relevant
            assert [ev.details[q]["first_rank"] for q in ids] == first
