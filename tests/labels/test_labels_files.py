"""Span-level scoring from files (what `ragmeter eval --golden G --chunks C RUN` calls)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter import UsageError
from ragmeter.chunking import chunk_corpus
from ragmeter.data import Document
from ragmeter.labels import evaluate_spans_files
from ragmeter.labels._files import parse_ints

TEXT = "Change fee: $75 for Standard fares. Name changes are not allowed. Refunds take 7 days."


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "fees", "text": TEXT}) + "\n", encoding="utf-8")
    golden = tmp_path / "golden.jsonl"
    golden.write_text(
        json.dumps(
            {
                "id": "q1",
                "question": "fee?",
                "evidence": [{"doc": "fees", "start": 12, "end": 15, "grade": 2, "text": "$75"}],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    chunking = chunk_corpus([Document(id="fees", text=TEXT)], "sentences:1")
    chunks = chunking.save(tmp_path / "chunks.parquet")
    run = tmp_path / "run.txt"
    # the evidence sits in the first sentence, ranked second
    run.write_text(
        f"q1 Q0 {chunking.ids[2]} 1 3.0 t\nq1 Q0 {chunking.ids[0]} 2 2.0 t\n", encoding="utf-8"
    )
    return {"corpus": corpus, "golden": golden, "chunks": chunks, "run": run}


def test_scores_a_trec_run_of_chunk_ids(files):
    (ev,) = evaluate_spans_files(
        [files["run"]],
        golden=files["golden"],
        chunks=files["chunks"],
        corpus=files["corpus"],
        metrics="R,RR",
        k="1,2",
        budget="12",
    )
    assert ev.aggregate == {
        "R@1": 0.0,
        "R@2": 1.0,
        "R@budget=12": 0.0,
        "RR@1": 0.0,
        "RR@2": 0.5,
        "RR@budget=12": 0.0,
    }
    assert ev.run == str(files["run"])
    assert ev.config["chunking"] == "sentences:1" and ev.config["golden"] == str(files["golden"])
    assert ev.golden_version is not None and ev.golden_version.startswith("g-")
    assert ev.details["q1"]["effective_k"] == {"12": 1}  # only the top sentence fits in 12


def test_default_metrics_and_option_errors(files):
    (ev,) = evaluate_spans_files([files["run"]], golden=files["golden"], chunks=files["chunks"])
    assert list(ev.aggregate) == ["R", "Hit", "AllR", "RR"]
    assert ev.golden_version is None  # no corpus, not frozen
    with pytest.raises(UsageError, match="--k must be positive integers"):
        parse_ints("5,x", "--k")
    with pytest.raises(UsageError, match="--budget must be positive"):
        parse_ints([0], "--budget")
    with pytest.raises(UsageError, match="at least one RUN"):
        evaluate_spans_files([], golden=files["golden"], chunks=files["chunks"])
