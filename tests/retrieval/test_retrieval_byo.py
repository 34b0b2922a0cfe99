"""Bring your own run: JSONL runs of chunk ids or of (doc, start, end) spans, scored on span
labels."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _experiment_files import toy_corpus, toy_golden

from ragmeter import InputError, ValidationError
from ragmeter.chunking import chunk_corpus
from ragmeter.data import Corpus, GoldenSet
from ragmeter.labels import evaluate_spans
from ragmeter.retrieval import BM25Retriever, read_byo_run, write_byo_run


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return toy_corpus()


@pytest.fixture(scope="module")
def golden(corpus) -> GoldenSet:
    return toy_golden(corpus, grade=2)


@pytest.fixture(scope="module")
def chunking(corpus):
    return chunk_corpus(corpus, "tokens:12:0")


@pytest.fixture(scope="module")
def bm25_run(chunking, golden):
    r = BM25Retriever(stemmer=None, stopwords=None)
    r.fit(chunking.ids, chunking.text)
    return r.search([q.question for q in golden], 8, qids=[q.id for q in golden])


METRICS = ["R@1", "R@3", "Hit@3", "RR@10", "AllR@5", "R@budget=30", "RR@budget=40"]


def test_a_spans_run_scores_identically_to_the_same_run_as_chunk_ids(
    tmp_path, corpus, golden, chunking, bm25_run
) -> None:
    ids_file = write_byo_run(bm25_run, tmp_path / "ids.jsonl")
    spans_file = write_byo_run(bm25_run, tmp_path / "spans.jsonl", chunking=chunking)
    first = json.loads(spans_file.read_text().splitlines()[0])
    assert set(first) == {"qid", "doc", "start", "end", "score"}
    by_ids = read_byo_run(ids_file, chunking=chunking)
    by_spans = read_byo_run(spans_file, corpus=corpus)
    assert by_ids.shape == "chunks" and by_spans.shape == "spans"
    a = evaluate_spans(golden, chunking, by_ids.run, METRICS)
    b = evaluate_spans(golden, by_spans.chunking, by_spans.run, METRICS)
    assert a.query_ids == b.query_ids
    assert np.array_equal(a.values, b.values)
    assert a.aggregate["R@3"] > 0  # the comparison is not between two empty runs


def test_ranks_are_read_as_descending_scores(tmp_path, corpus, golden, chunking, bm25_run) -> None:
    lines = []
    for qid in ["q1", "q2"]:
        rows = [
            (d, s)
            for q, d, s in zip(
                bm25_run.qid.to_pylist(),
                bm25_run.doc.to_pylist(),
                bm25_run.score.tolist(),
                strict=True,
            )
            if q == qid
        ]
        rows.sort(key=lambda r: -r[1])
        lines += [
            json.dumps({"qid": qid, "chunk": d, "rank": i}) for i, (d, _) in enumerate(rows, 1)
        ]
    path = tmp_path / "ranks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    imported = read_byo_run(path, chunking=chunking)
    by_score = evaluate_spans(golden, chunking, bm25_run, ["RR@10"]).column("RR@10")
    by_rank = evaluate_spans(golden, chunking, imported.run, ["RR@10"]).column("RR@10")
    assert by_rank["q1"] == by_score["q1"] and by_rank["q2"] == by_score["q2"]
    assert imported.run.score.max() == -1.0


def test_every_bad_line_is_reported_at_once(tmp_path, chunking) -> None:
    good = chunking.ids[0]
    path = tmp_path / "bad.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps({"qid": "q1", "chunk": good, "score": 1.0}),
                "{not json",
                json.dumps({"qid": "q1", "chunk": good, "score": 0.5}),
                json.dumps({"qid": "q2", "chunk": "nope#0-5", "score": 0.5}),
                json.dumps({"qid": "q3", "chunk": good}),
                json.dumps({"qid": "q4", "chunk": good, "rank": 1}),
                json.dumps({"qid": "q5", "doc": "fees", "start": 0, "end": 5, "score": 1}),
                json.dumps({"qid": "q6", "chunk": good, "score": "high", "colour": 1}),
            ]
        )
        + "\n"
    )
    with pytest.raises(ValidationError) as info:
        read_byo_run(path, chunking=chunking)
    lines = {p.line: p for p in info.value.problems}
    assert set(lines) == {2, 3, 5, 6, 7, 8}
    assert "invalid JSON" in lines[2].message
    assert "twice (first on line 1)" in lines[3].message
    assert "exactly one of score" in lines[5].message
    assert "earlier lines give score" in lines[6].message
    assert "started with chunks records" in lines[7].message
    assert lines[8].field == "colour"
    assert all(p.path == str(path) for p in info.value.problems)


def test_unknown_chunk_ids_are_named_with_their_line(tmp_path, chunking) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text(
        json.dumps({"qid": "q1", "chunk": chunking.ids[0], "score": 2})
        + "\n"
        + json.dumps({"qid": "q1", "chunk": "fees#0-3", "score": 1})
        + "\n"
    )
    with pytest.raises(ValidationError) as info:
        read_byo_run(path, chunking=chunking)
    (problem,) = info.value.problems
    assert problem.line == 2 and problem.field == "chunk" and "fees#0-3" in problem.message


def test_spans_must_lie_inside_known_documents(tmp_path, corpus) -> None:
    path = tmp_path / "spans.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps({"qid": "q1", "doc": "fees", "start": 0, "end": 10_000, "score": 1}),
                json.dumps({"qid": "q1", "doc": "menus", "start": 0, "end": 5, "score": 0.5}),
                json.dumps({"qid": "q1", "doc": "fees", "start": 9, "end": 3, "score": 0.2}),
            ]
        )
        + "\n"
    )
    with pytest.raises(ValidationError) as info:
        read_byo_run(path, corpus=corpus)
    by_line = {p.line: p.message for p in info.value.problems}
    assert "0 <= start < end" in by_line[3]
    assert "past the end of document 'fees'" in by_line[1]
    assert "'menus' is not in the corpus" in by_line[2]
    with pytest.raises(InputError, match="needs the corpus"):
        read_byo_run(_one_span(tmp_path))


def _one_span(tmp_path):
    p = tmp_path / "one.jsonl"
    p.write_text(json.dumps({"qid": "q1", "doc": "fees", "start": 0, "end": 5, "score": 1}) + "\n")
    return p


def test_an_empty_file_is_an_input_error(tmp_path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    with pytest.raises(InputError, match="no records"):
        read_byo_run(path)
