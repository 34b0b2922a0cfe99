"""The ``document`` chunker (one chunk per document, title joined for retrieval) and the
document-level roll-up of a chunk run (each document at its best chunk's rank)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter import InputError, UsageError
from ragmeter.chunking import chunk_corpus, get_tokenizer, index_texts, make_chunker
from ragmeter.data import Document, Evidence, Question
from ragmeter.io import Run
from ragmeter.labels import chunk_qrels, document_qrels, evaluate_spans, rollup_run
from ragmeter.metrics import rank_run

DOCS = [
    Document(id="a", title="Aspirin trial", text="  Aspirin reduces pain.\n"),
    Document(id="b", title=None, text="Caffeine improves alertness."),
    Document(id="c", title="Empty", text=" \n\t "),
    Document(id="d", title="", text="Sleep matters."),
]


# --- the chunker ---------------------------------------------------------------------------------
def test_one_chunk_per_document_over_the_whole_untrimmed_text() -> None:
    c = chunk_corpus(DOCS, "document", tokenizer="regex-words")
    assert c.name == "document"
    # "c" is whitespace only: no chunk, as with every chunker
    assert c.ids == ["a#0-24", "b#0-28", "d#0-14"]
    assert c.doc == ["a", "b", "d"]
    assert c.start.tolist() == [0, 0, 0]
    assert (
        c.end.tolist() == [24, 28, 14] == [len(DOCS[0].text), len(DOCS[1].text), len(DOCS[3].text)]
    )
    # the text is the document's text, leading and trailing whitespace included
    assert c.text == [DOCS[0].text, DOCS[1].text, DOCS[3].text]
    # regex-words: one token per word and per punctuation mark
    assert c.n_tokens.tolist() == [4, 4, 3]
    wordpiece = chunk_corpus(DOCS, "document")
    assert wordpiece.ids == c.ids
    tok = get_tokenizer("minilm-wordpiece")
    assert wordpiece.n_tokens.tolist() == [tok.count(t) for t in c.text]


def test_the_name_parses_and_takes_no_numbers() -> None:
    ch = make_chunker(" document ")
    assert ch.name == "document" and ch.joins_title
    assert not make_chunker("tokens:300:0").joins_title
    for bad in ("document:100", "document:", "documents"):
        with pytest.raises(UsageError) as info:
            make_chunker(bad)
        assert "document" in str(info.value)
    with pytest.raises(UsageError, match="document takes no numbers"):
        make_chunker("document:3")


def test_retrievers_index_title_space_text_only_for_the_document_chunker() -> None:
    docs = chunk_corpus(DOCS, "document")
    assert index_texts(docs, DOCS) == [
        "Aspirin trial   Aspirin reduces pain.\n",  # title + " " + the untrimmed text
        "Caffeine improves alertness.",  # no title
        "Sleep matters.",  # an empty title counts as none
    ]
    # a mapping of id -> Document gives the same titles
    assert index_texts(docs, {d.id: d for d in DOCS}) == index_texts(docs, DOCS)
    # the chunk table itself keeps the document text (offsets index it)
    assert docs.text[0] == DOCS[0].text
    windows = chunk_corpus(DOCS, "tokens:2:0")
    assert index_texts(windows, DOCS) == windows.text  # other chunkers never see titles


def test_spans_map_on_the_text_offsets_not_the_joined_title() -> None:
    """A BEIR judgement (a span over the whole text) is covered exactly by the document's chunk,
    so even cover = 1 finds it."""
    docs = chunk_corpus(DOCS, "document")
    golden = [
        Question(
            id="q1",
            question="pain?",
            evidence=[Evidence(doc="a", start=0, end=len(DOCS[0].text), grade=2)],
        ),
        Question(id="q2", question="sleep?", evidence=[Evidence(doc="d", start=0, end=5, grade=1)]),
    ]
    qrels = chunk_qrels(golden, docs, cover=1.0)
    assert list(
        zip(qrels.qid.to_pylist(), qrels.doc.to_pylist(), qrels.rel.tolist(), strict=True)
    ) == [
        ("q1", "a#0-24", 2),
        ("q2", "d#0-14", 1),
    ]
    run = Run(
        pa.array(["q1", "q1", "q2"]),
        pa.array(["b#0-28", "a#0-24", "d#0-14"]),
        np.array([2.0, 1.0, 5.0]),
    )
    ev = evaluate_spans(golden, docs, run, ["R@1", "R@2"], cover=1.0)
    assert ev.column("R@1") == {"q1": 0.0, "q2": 1.0}
    assert ev.column("R@2") == {"q1": 1.0, "q2": 1.0}


# --- the roll-up ---------------------------------------------------------------------------------
def _run(qids: list[str], ids: list[str], scores: list[float]) -> Run:
    return Run(
        pa.array(qids, pa.string()),
        pa.array(ids, pa.string()),
        np.asarray(scores, dtype=np.float64),
        name="r",
    )


def _ranked(run: Run) -> dict[str, list[str]]:
    r = rank_run(run)
    return {q: r.docs_of(i) for i, q in enumerate(r.qids)}


def test_two_chunks_of_one_document_count_once_at_the_better_rank() -> None:
    windows = chunk_corpus(
        [
            Document(id="x", text="alpha beta gamma delta"),
            Document(id="y", text="eps zeta"),
            Document(id="z", text="eta theta"),
        ],
        "tokens:2:0",
        tokenizer="regex-words",
    )
    assert windows.ids == ["x#0-10", "x#11-22", "y#0-8", "z#0-9"]
    # chunk ranks: x#11-22 1st, y 2nd, x#0-10 3rd, z 4th
    run = _run(["q"] * 4, ["x#0-10", "y#0-8", "x#11-22", "z#0-9"], [2.0, 3.0, 4.0, 1.0])
    docs = rollup_run(run, windows)
    assert _ranked(docs) == {"q": ["x", "y", "z"]}  # x at rank 1, y at rank 2 (not 3)
    assert dict(zip(docs.doc.to_pylist(), docs.score.tolist(), strict=True)) == {
        "x": 4.0,
        "y": 3.0,
        "z": 1.0,
    }
    assert docs.name == "r"


def test_rollup_keeps_queries_apart_and_rejects_unknown_chunks() -> None:
    windows = chunk_corpus(
        [Document(id="x", text="a b c d"), Document(id="y", text="e f")],
        "tokens:1:0",
        tokenizer="regex-words",
    )
    run = _run(
        ["q1", "q1", "q2", "q2", "q2"],
        ["x#0-1", "y#0-1", "x#2-3", "y#2-3", "x#4-5"],
        [1.0, 2.0, 9.0, 8.0, 7.0],
    )
    assert _ranked(rollup_run(run, windows)) == {"q1": ["y", "x"], "q2": ["x", "y"]}
    with pytest.raises(InputError, match="not a chunk"):
        rollup_run(_run(["q"], ["nope#0-1"], [1.0]), windows)
    empty = rollup_run(_run([], [], []), windows)
    assert len(empty) == 0


@settings(
    max_examples=200, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
@given(data=st.data())
def test_rollup_equals_a_brute_force_reference(data) -> None:
    """Each (query, document) keeps the score of its chunk that the engine ranks first, and the
    documents come out in the order of those best chunks (ties included: scores are drawn
    from a few values, so equal scores are common)."""
    n_docs = data.draw(st.integers(1, 5))
    docs = [
        Document(id=f"d{i}", text=" ".join(f"w{i}{j}" for j in range(data.draw(st.integers(1, 6)))))
        for i in range(n_docs)
    ]
    windows = chunk_corpus(docs, "tokens:1:0", tokenizer="regex-words")
    qids, ids, scores = [], [], []
    for q in ("q1", "q2", "q3"):
        chosen = data.draw(st.lists(st.sampled_from(windows.ids), unique=True, max_size=8))
        for cid in chosen:
            qids.append(q)
            ids.append(cid)
            scores.append(data.draw(st.sampled_from([0.5, 1.0, 1.0000001, 2.0, -1.0])))
    run = _run(qids, ids, scores)
    score_of = dict(zip(zip(qids, ids, strict=True), scores, strict=True))
    expected: dict[str, list[tuple[str, float]]] = {}
    for q, ranked in _ranked(run).items():
        seen: dict[str, float] = {}
        for cid in ranked:  # engine order: score desc (float32), then chunk id desc
            seen.setdefault(cid.split("#")[0], score_of[q, cid])
        expected[q] = list(seen.items())
    got = rollup_run(run, windows)
    out: dict[str, list[tuple[str, float]]] = {}
    for q, d, s in zip(got.qid.to_pylist(), got.doc.to_pylist(), got.score.tolist(), strict=True):
        out.setdefault(q, []).append((d, s))
    assert out == expected
    # every best score is the document's highest chunk score as the engine compares them
    for q, pairs in out.items():
        for d, s in pairs:
            best = max(
                np.float32(score_of[q, c])
                for c in ids
                if c.split("#")[0] == d and (q, c) in score_of
            )
            assert np.float32(s) == best


def test_document_qrels_take_the_best_span_grade_per_document() -> None:
    golden = [
        Question(
            id="q1",
            question="?",
            evidence=[
                Evidence(doc="a", start=0, end=3, grade=1),
                Evidence(doc="a", start=5, end=9, grade=2),
                Evidence(doc="b", start=0, end=2, grade=1),
            ],
        ),
        Question(id="q2", question="?", answerable=False),
    ]
    q = document_qrels(golden)
    assert list(zip(q.qid.to_pylist(), q.doc.to_pylist(), q.rel.tolist(), strict=True)) == [
        ("q1", "a", 2),
        ("q1", "b", 1),
    ]
