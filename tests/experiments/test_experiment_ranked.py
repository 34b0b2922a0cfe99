"""A variant's ranked lists as a table (what the store keeps per run) and the run files written
from the same column-wise ranking: ranked exactly as the metric engine ranks, every chunk at its
document and character span, scores written as Python's ``repr``."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_experiment_document import EXPERIMENT as BEIR_EXPERIMENT
from test_experiment_document import FIXTURE as BEIR_FIXTURE

from ragmeter import InputError
from ragmeter.chunking import Chunking, load_chunking
from ragmeter.data import load_corpus
from ragmeter.experiments import ranked_table, run_experiment, slug
from ragmeter.experiments._outputs import ranked_rows, write_run
from ragmeter.experiments._ranked import RANKED_SCHEMA, repr_strings
from ragmeter.io import Run

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"


def quiet(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_experiment(path, **kwargs)


def make_run(rows: list[tuple[str, str, float]], name: str = "r") -> Run:
    return Run(
        qid=pa.array([r[0] for r in rows], pa.string()),
        doc=pa.array([r[1] for r in rows], pa.string()),
        score=np.array([r[2] for r in rows], dtype=np.float64),
        name=name,
    )


def reference_ranking(rows: list[tuple[str, str, float]]) -> list[tuple[str, str, int, float]]:
    """(qid, item, rank, score) ranked one row at a time in Python: queries in code point order
    (= UTF-8 byte order), then score descending compared as float32 (-0.0 ties 0.0), then item
    descending."""
    by_q: dict[str, list[tuple[str, float]]] = {}
    for q, item, s in rows:
        by_q.setdefault(q, []).append((item, s))
    out = []
    for q in sorted(by_q):
        ranked = sorted(by_q[q], key=lambda r: (float(np.float32(r[1])), r[0]), reverse=True)
        out.extend((q, item, i + 1, s) for i, (item, s) in enumerate(ranked))
    return out


# -- the fare-rules example ------------------------------------------------------------------
@pytest.fixture(scope="module")
def fare_rules(fare_rules_result):
    # conftest ran this experiment before the session: everything comes from its cache
    return fare_rules_result


def test_the_table_holds_what_run_trec_holds(fare_rules) -> None:
    for v in fare_rules.variants:
        table = v.ranked_table()
        assert table.schema == RANKED_SCHEMA
        lines = (EXAMPLE / "runs" / slug(v.name) / "run.trec").read_text().splitlines()
        trec = [ln.split() for ln in lines]
        assert table.num_rows == len(trec) > 0
        assert table.column("qid").to_pylist() == [t[0] for t in trec]
        assert table.column("item").to_pylist() == [t[2] for t in trec]
        assert table.column("rank").to_pylist() == [int(t[3]) for t in trec]
        assert table.column("score").to_pylist() == [float(t[4]) for t in trec]


def test_every_chunk_sits_at_its_span_in_the_chunking_file(fare_rules) -> None:
    corpus = load_corpus(EXAMPLE / "corpus.jsonl")
    chunks = load_chunking(EXAMPLE / "runs" / "chunks-300.jsonl")
    base = fare_rules.baseline
    assert base.settings.chunker == chunks.name == "tokens:300:0"
    span = {c.id: (c.doc, c.start, c.end, c.text) for c in chunks}
    table = base.ranked_table().to_pylist()
    assert {row["item"] for row in table} <= set(span)
    for row in table:
        doc, start, end, text = span[row["item"]]
        assert (row["doc"], row["start"], row["end"]) == (doc, start, end)
        assert corpus[doc].text[start:end] == text


def test_the_table_is_the_engines_ranking_of_the_run(fare_rules) -> None:
    for v in fare_rules.variants:
        rows = list(
            zip(v.run.qid.to_pylist(), v.run.doc.to_pylist(), v.run.score.tolist(), strict=True)
        )
        table = v.ranked_table()
        got = list(
            zip(
                *(table.column(c).to_pylist() for c in ("qid", "item", "rank", "score")),
                strict=True,
            )
        )
        assert got == reference_ranking(rows)


# -- hand-computed rankings ------------------------------------------------------------------
def test_ties_break_as_trec_eval_breaks_them() -> None:
    rows = [
        ("a", "a#0-1", 1.0),
        ("a", "c#0-1", 2.0),
        ("a", "e#0-1", -0.0),
        ("a", "b#0-1", 1.0),
        ("B", "z#5-9", 0.5),
        ("a", "d#0-1", 1.0000000001),  # equal to 1.0 as a 32-bit float: a tie, broken by id
        ("a", "f#0-1", 0.0),  # -0.0 and 0.0 tie
    ]
    table = ranked_table(make_run(rows)).to_pylist()
    got = [(r["qid"], r["item"], r["rank"], r["score"]) for r in table]
    assert got == [
        ("B", "z#5-9", 1, 0.5),  # "B" sorts before "a" in byte order
        ("a", "c#0-1", 1, 2.0),
        ("a", "d#0-1", 2, 1.0000000001),
        ("a", "b#0-1", 3, 1.0),
        ("a", "a#0-1", 4, 1.0),
        ("a", "f#0-1", 5, 0.0),
        ("a", "e#0-1", 6, -0.0),
    ]
    # no chunking: the spans are unknown
    assert {(r["doc"], r["start"], r["end"]) for r in table} == {(None, None, None)}


def synthetic(seed: int, n_q: int, depth: int) -> tuple[list[tuple[str, str, float]], Chunking]:
    """A shuffled run with many ties (scores from a small set, -0.0 and 0.0, float32-equal
    pairs), non-ASCII ids, and the chunking its items come from."""
    rng = np.random.default_rng(seed)
    n_chunks = 3 * depth
    docs = [f"dóc{i % 17}" for i in range(n_chunks)]
    start = rng.integers(0, 5000, size=n_chunks)
    end = start + rng.integers(1, 400, size=n_chunks)
    ids = [f"{d}#{s}-{e}/{i}" for i, (d, s, e) in enumerate(zip(docs, start, end, strict=True))]
    chunking = Chunking(
        name="hand",
        tokenizer="t",
        ids=ids,
        doc=docs,
        start=start,
        end=end,
        text=[""] * n_chunks,
        n_tokens=np.ones(n_chunks, dtype=np.int64),
    )
    palette = np.array([0.0, -0.0, 0.25, 1.0, 1.0 + 1e-9, 2.5, -1.0, 7.0])
    rows = []
    for q in range(n_q):
        picks = rng.choice(n_chunks, size=depth, replace=False)
        scores = palette[rng.integers(0, len(palette), size=depth)]
        qid = f"q{rng.integers(0, 10**6)}-{q}" if q % 7 else f"Q-é{q}"
        rows.extend((qid, ids[p], float(s)) for p, s in zip(picks, scores, strict=True))
    order = rng.permutation(len(rows))
    return [rows[i] for i in order], chunking


def test_a_large_run_ranks_as_the_reference() -> None:
    rows, chunking = synthetic(seed=11, n_q=2_000, depth=100)
    table = ranked_table(make_run(rows), chunking)
    expected = reference_ranking(rows)
    assert table.num_rows == 200_000
    assert table.column("qid").to_pylist() == [e[0] for e in expected]
    assert table.column("item").to_pylist() == [e[1] for e in expected]
    assert table.column("rank").to_numpy().tolist() == [e[2] for e in expected]
    got_scores = table.column("score").to_numpy()
    want_scores = np.array([e[3] for e in expected])
    assert np.array_equal(got_scores, want_scores)
    assert np.array_equal(np.signbit(got_scores), np.signbit(want_scores))  # -0.0 kept
    span = {c.id: (c.doc, c.start, c.end) for c in chunking}
    cols = [table.column(c).to_pylist() for c in ("item", "doc", "start", "end")]
    assert all(span[i] == (d, s, e) for i, d, s, e in zip(*cols, strict=True))


@pytest.mark.parametrize("seed", range(12))
def test_write_run_writes_the_reference_lines(tmp_path, seed) -> None:
    rows, _ = synthetic(seed=seed, n_q=30, depth=20)
    rng = np.random.default_rng(seed)
    # scores of every notation repr uses: exponents, tiny and huge, integral, -0.0
    rows = [
        (q, d, float(s * 10.0 ** rng.integers(-9, 20)) if i % 3 else s)
        for i, (q, d, s) in enumerate(rows)
    ]
    run = make_run(rows, name="my run")
    path = write_run(run, tmp_path / "run.trec", "trec")
    lines = [f"{q} Q0 {d} {r} {s!r} my_run" for q, d, r, s in reference_ranking(rows)]
    assert path.read_text(encoding="utf-8") == "".join(x + "\n" for x in lines)
    write_run(run, tmp_path / "run.parquet", "parquet")
    back = pq.read_table(tmp_path / "run.parquet")
    assert back.column_names == ["qid", "chunk_id", "rank", "score"]
    assert back.schema.field("rank").type == pa.int64()
    assert [tuple(r.values()) for r in back.to_pylist()] == reference_ranking(rows)


def test_ranked_rows_is_columnar_and_points_back_at_the_run() -> None:
    rows, _ = synthetic(seed=3, n_q=50, depth=10)
    run = make_run(rows)
    r = ranked_rows(run)
    assert isinstance(r.qid, pa.Array) and isinstance(r.item, pa.Array)
    assert run.doc.take(pa.array(r.rows)).to_pylist() == r.item.to_pylist()
    assert np.array_equal(run.score[r.rows], r.score)
    assert r.rank.dtype == np.int64


def test_an_id_with_any_unicode_blank_is_refused_in_trec(tmp_path) -> None:
    for blank in ("a b", "a\u00a0b", "a\u3000b", "a\x1cb"):
        run = make_run([("q1", "x", 1.0), ("q1", blank, 0.5)])
        with pytest.raises(InputError, match="contains whitespace"):
            write_run(run, tmp_path / "run.trec", "trec")
        with pytest.raises(InputError, match="contains whitespace"):
            write_run(make_run([(blank, "x", 1.0)]), tmp_path / "run.trec", "trec")
    assert not "\u200b".isspace()  # a zero-width space is no blank for Python's \s either
    write_run(make_run([("q1", "a\u200bb", 1.0)]), tmp_path / "ok.trec", "trec")
    assert (tmp_path / "ok.trec").read_text(encoding="utf-8") == "q1 Q0 a\u200bb 1 1.0 r\n"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), max_size=40))
def test_scores_are_written_as_python_writes_them(values) -> None:
    assert repr_strings(np.array(values, dtype=np.float64)).to_pylist() == [repr(v) for v in values]


def test_score_text_of_every_notation() -> None:
    values = [12.0, -0.0, 0.0, 1e-05, 0.0001, 1e15, 1e16, 1234567890123456.0, 2.5e-7, 5e-324]
    values += [math.inf, -math.inf, 0.1, 1 / 3, -7.0]
    assert repr_strings(np.array(values)).to_pylist() == [repr(v) for v in values]
    assert repr_strings(np.array(values)).to_pylist()[:4] == ["12.0", "-0.0", "0.0", "1e-05"]


# -- document level and imported spans runs --------------------------------------------------
def test_a_document_level_variant_ranks_documents(tmp_path) -> None:
    import shutil

    shutil.copytree(BEIR_FIXTURE, tmp_path / "beir")
    (tmp_path / "experiment.toml").write_text(BEIR_EXPERIMENT)
    result = quiet(tmp_path / "experiment.toml")
    for v in result.variants:
        folder = tmp_path / "out" / slug(v.name)
        docs = v.ranked_table()
        assert docs.schema == RANKED_SCHEMA
        trec = [ln.split() for ln in (folder / "document_run.trec").read_text().splitlines()]
        got = zip(*(docs.column(c).to_pylist() for c in ("qid", "item", "rank")), strict=True)
        assert list(got) == [(t[0], t[2], int(t[3])) for t in trec]
        assert docs.column("doc").to_pylist() == docs.column("item").to_pylist()
        assert docs.column("start").null_count == docs.column("end").null_count == docs.num_rows
        chunks = v.ranked_table("chunk").to_pylist()
        trec = [ln.split() for ln in (folder / "run.trec").read_text().splitlines()]
        assert [(r["qid"], r["item"], r["rank"]) for r in chunks] == [
            (t[0], t[2], int(t[3])) for t in trec
        ]
        for r in chunks:  # built-in chunk ids spell the span: doc#start-end
            doc, rest = r["item"].rsplit("#", 1)
            assert (r["doc"], f"{r['start']}-{r['end']}") == (doc, rest)
    with pytest.raises(Exception, match="level must be"):
        result.baseline.ranked_table("span")  # type: ignore[arg-type]


def test_an_imported_spans_run_keeps_its_spans(tmp_path) -> None:
    from _experiment_files import QUESTIONS, TEXTS
    from test_experiment_run import EXPERIMENT

    from ragmeter.data import Document, Evidence, Question, write_corpus, write_golden

    write_corpus([Document(id=k, text=v) for k, v in TEXTS.items()], tmp_path / "corpus.jsonl")
    write_golden(
        [
            Question(id=q, question=t, evidence=[Evidence(doc=d, start=0, end=len(a))])
            for q, t, d, a in QUESTIONS
        ],
        tmp_path / "golden.jsonl",
    )
    spans = [("q1", "fees", 0, 49, 3.0), ("q1", "seats", 10, 30, 2.0), ("q2", "refunds", 5, 9, 1.0)]
    (tmp_path / "prod.jsonl").write_text(
        "".join(
            json.dumps({"qid": q, "doc": d, "start": s, "end": e, "score": x}) + "\n"
            for q, d, s, e, x in spans
        )
    )
    base = EXPERIMENT.split("[[variant]]")[0]
    (tmp_path / "experiment.toml").write_text(
        base + '[[variant]]\nname = "production"\nrun = "prod.jsonl"\n'
    )
    table = quiet(tmp_path / "experiment.toml").variant("production").ranked_table().to_pylist()
    got = [(r["qid"], r["doc"], r["start"], r["end"], r["score"], r["rank"]) for r in table]
    assert got == [
        ("q1", "fees", 0, 49, 3.0, 1),
        ("q1", "seats", 10, 30, 2.0, 2),
        ("q2", "refunds", 5, 9, 1.0, 1),
    ]
    assert [r["item"] for r in table] == ["fees#0-49", "seats#10-30", "refunds#5-9"]


def test_an_item_outside_the_chunking_has_no_span() -> None:
    chunking = Chunking(
        name="c",
        tokenizer="t",
        ids=["d#0-5"],
        doc=["d"],
        start=[0],
        end=[5],
        text=["hello"],
        n_tokens=[1],
    )
    table = ranked_table(make_run([("q", "d#0-5", 2.0), ("q", "gone", 1.0)]), chunking)
    assert [(r["item"], r["doc"], r["start"], r["end"]) for r in table.to_pylist()] == [
        ("d#0-5", "d", 0, 5),
        ("gone", None, None, None),
    ]
    assert chunking.rows_of(pa.array(["gone", "d#0-5"])).tolist() == [-1, 0]
