"""One golden set scores every chunking: the fare-rules example under three chunkers."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from ragmeter.chunking import chunk_corpus
from ragmeter.io import Run
from ragmeter.labels import SpanTable, chunk_qrels, evaluate_spans, map_spans

CHUNKINGS = ["tokens:64:16", "sentences:3", "sections:200"]


@pytest.fixture(scope="module")
def fare_rules(fare_rules_dir):
    from ragmeter.data.corpus import load_corpus
    from ragmeter.data.golden import load_golden

    corpus = load_corpus(fare_rules_dir / "corpus.jsonl")
    return corpus, load_golden(fare_rules_dir / "golden.jsonl", corpus=corpus)


@pytest.fixture(scope="module")
def chunkings(fare_rules):
    return {name: chunk_corpus(fare_rules[0], name) for name in CHUNKINGS}


def oracle_run(golden, chunking) -> Run:
    """Per question, every chunk overlapping its evidence, most overlapping characters first."""
    spans = SpanTable.from_questions(golden.questions)
    pairs = map_spans(spans, chunking)
    best: dict[tuple[str, str], int] = {}
    for s, c, n in zip(
        pairs.span.tolist(), pairs.chunk.tolist(), pairs.chars.tolist(), strict=True
    ):
        key = (spans.question_ids[spans.question[s]], chunking.ids[c])
        best[key] = max(best.get(key, 0), n)
    rows = sorted(best.items())
    return Run(
        qid=pa.array([q for (q, _), _ in rows], pa.string()),
        doc=pa.array([d for (_, d), _ in rows], pa.string()),
        score=np.array([float(n) for _, n in rows]),
        name="oracle",
    )


@pytest.mark.parametrize("name", CHUNKINGS)
def test_same_labels_score_every_chunking(fare_rules, chunkings, name):
    golden = fare_rules[1]
    chunking = chunkings[name]
    ev = evaluate_spans(golden, chunking, oracle_run(golden, chunking), "R,AllR,R@budget=2000")
    answerable = sorted(q.id for q in golden.questions if q.evidence)
    assert list(ev.query_ids) == answerable and ev.missing_ids == ()
    assert set(ev.no_relevant_ids) == {q.id for q in golden.questions if not q.evidence}
    # every span is found when every overlapping chunk is retrieved: no relabelling needed
    assert ev.aggregate["R"] == 1.0 and ev.aggregate["AllR"] == 1.0
    assert ev.golden_version == golden.version and ev.config["chunking"] == name
    qrels = chunk_qrels(golden, chunking)
    assert set(qrels.qid.to_pylist()) == set(answerable)


def test_chunkings_differ_at_the_same_k_but_not_in_what_they_can_find(fare_rules, chunkings):
    golden = fare_rules[1]
    at_1 = {}
    for name, chunking in chunkings.items():
        ev = evaluate_spans(golden, chunking, oracle_run(golden, chunking), "R@1")
        at_1[name] = ev.mean("R@1")
    assert len(set(at_1.values())) > 1, at_1
