"""Chunk qrels from span labels: the cover rule, highest grade, and the TREC file."""

from __future__ import annotations

import pytest

from ragmeter import RagmeterWarning
from ragmeter.chunking import from_ranges
from ragmeter.data import Document, Evidence, Question
from ragmeter.labels import chunk_qrels, write_chunk_qrels

DOC = Document(id="d", text="x" * 400)


def test_grade_is_the_best_span_covered_by_share_of_span_or_of_chunk():
    chunking = from_ranges(
        [DOC],
        [
            ("d", 0, 100),  # holds all of span A (10 chars): 100 % of the span
            ("d", 100, 104),  # 4 chars, all inside span B: 100 % of the chunk, 4 % of B
            ("d", 104, 300),  # 96 of B's 100 chars... and of span C
            ("d", 300, 400),  # holds 30 % of span D and D is 30 % of it: below cover 0.5
        ],
        name="c",
        tokenizer="regex-words",
    )
    golden = [
        Question(
            id="q",
            question="?",
            evidence=[
                Evidence(doc="d", start=10, end=20, grade=1),  # A
                Evidence(doc="d", start=100, end=200, grade=2),  # B
                Evidence(doc="d", start=200, end=210, grade=3),  # C: inside chunk 104-300 too
                Evidence(doc="d", start=270, end=330, grade=3),  # D: 30 of 60 chars in each side
            ],
        )
    ]
    qrels = chunk_qrels(golden, chunking, cover=0.5)
    got = dict(zip(qrels.doc.to_pylist(), qrels.rel.tolist(), strict=True))
    assert got == {"d#0-100": 1, "d#100-104": 2, "d#104-300": 3, "d#300-400": 3}
    strict_qrels = chunk_qrels(golden, chunking, cover=0.6)
    strict = dict(zip(strict_qrels.doc.to_pylist(), strict_qrels.rel.tolist(), strict=True))
    # D: 30 of 60 characters (0.5) in chunk 300-400, and 30 % of that chunk: not at cover 0.6
    assert strict == {"d#0-100": 1, "d#100-104": 2, "d#104-300": 3}
    assert qrels.qid.to_pylist() == ["q"] * 4
    assert "cover=0.5" in qrels.source


def test_question_without_a_qualifying_chunk_warns():
    chunking = from_ranges(
        [DOC], [("d", 0, 100), ("d", 100, 200), ("d", 200, 300)], name="c", tokenizer="regex-words"
    )
    # 50 characters in each of two chunks: half the span and half of each chunk, below 0.7
    golden = [Question(id="q", question="?", evidence=[Evidence(doc="d", start=50, end=150)])]
    with pytest.warns(RagmeterWarning, match="1 question"):
        qrels = chunk_qrels(golden, chunking, cover=0.7)
    assert len(qrels) == 0


def test_write_trec_qrels(tmp_path):
    chunking = from_ranges([DOC], [("d", 0, 100)], name="c", tokenizer="regex-words")
    golden = [
        Question(
            id="q 1".replace(" ", "-"),
            question="?",
            evidence=[Evidence(doc="d", start=0, end=50, grade=2)],
        ),
        Question(id="u", question="?", answerable=False),
    ]
    path = write_chunk_qrels(chunk_qrels(golden, chunking), tmp_path / "qrels.txt")
    assert path.read_text().split() == ["q-1", "0", "d#0-100", "2"]
