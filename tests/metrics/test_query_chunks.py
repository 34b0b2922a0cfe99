"""Scoring in chunks of queries gives the numbers of one pass, to the last bit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import ragmeter
from ragmeter._errors import InputError, UsageError
from ragmeter.cli import app
from ragmeter.io import _trec_chunks

METRICS = "nDCG@10,nDCG,RR@10,R@100,P@5,AP,Hit@3"


def _files(tmp: Path, seed: int) -> tuple[Path, Path]:
    """Seeded qrels and a run with ties, missing queries, unlabelled queries, tabs, comments."""
    rng = np.random.default_rng(seed)
    nq = int(rng.integers(1, 40))
    qrels, run = [], []
    for i in range(nq):
        q = f"q{rng.integers(0, 10**6)}-{i}"
        for d in rng.choice(30, size=int(rng.integers(1, 8)), replace=False):
            qrels.append(f"{q} 0 d{d} {rng.integers(0, 4)}\n")
        if rng.random() < 0.2:
            continue  # labelled, absent from the run
        for rank, d in enumerate(rng.choice(30, size=int(rng.integers(1, 25)), replace=False)):
            score = round(float(rng.integers(0, 6)) / 2, 1)  # many ties
            sep = "\t" if rng.random() < 0.05 else " "
            run.append(f"{q} Q0 d{d} {rank + 1}{sep}{score} tag\n")
        if rng.random() < 0.1:
            run.append("# a comment\n")
    run += [f"unlabelled Q0 d{d} 1 0.5 tag\n" for d in range(3)]
    order = rng.permutation(len(run)) if rng.random() < 0.3 else np.arange(len(run))
    (tmp / "q.qrels").write_text("".join(qrels))
    (tmp / "r.run").write_text("".join(run[i] for i in order))
    return tmp / "q.qrels", tmp / "r.run"


def _same(a: ragmeter.Evaluation, b: ragmeter.Evaluation) -> None:
    assert a.query_ids == b.query_ids
    assert np.array_equal(a.values, b.values)  # bit for bit, not approximately
    assert a.aggregate == b.aggregate
    assert (a.missing_ids, a.no_relevant_ids) == (b.missing_ids, b.no_relevant_ids)
    assert dict(a.details) == dict(b.details)
    assert (a.run, a.config) == (b.run, b.config)


@pytest.mark.filterwarnings("ignore::ragmeter.RagmeterWarning")  # random runs may judge nothing
@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    chunks=st.integers(1, 12),
    ties=st.sampled_from(["trec", "given"]),
    missing=st.sampled_from(["zero", "skip"]),
    block=st.sampled_from([64, 512, 1 << 22]),
)
def test_chunks_give_one_pass_numbers(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    chunks: int,
    ties: str,
    missing: str,
    block: int,
) -> None:
    qrels, run = _files(tmp_path_factory.mktemp("c"), seed)
    saved = _trec_chunks.BLOCK_SIZE
    _trec_chunks.BLOCK_SIZE = block  # many blocks, lines cut across reads

    def chunked() -> ragmeter.Evaluation:
        return ragmeter.evaluate(
            qrels,
            run,
            METRICS,
            ties=ties,  # type: ignore[arg-type]
            missing=missing,  # type: ignore[arg-type]
            query_chunks=chunks,
        )

    try:
        try:
            whole = ragmeter.evaluate(qrels, run, METRICS, ties=ties, missing=missing)  # type: ignore[arg-type]
        except InputError as one:  # no labelled query in the run: the same error
            with pytest.raises(InputError) as other:
                chunked()
            assert str(other.value) == str(one)
            return
        parts = chunked()
    finally:
        _trec_chunks.BLOCK_SIZE = saved
    _same(whole, parts)
    in_memory = ragmeter.evaluate(
        qrels, ragmeter.io.read_run(run), METRICS, ties=ties, missing=missing,  # type: ignore[arg-type]
        query_chunks=chunks, run_name=str(run),
    )  # fmt: skip
    assert np.array_equal(in_memory.values, whole.values)


def test_hand_computed(tmp_path: Path) -> None:
    """q1: relevant d1 at rank 2 -> RR 0.5, P@1 0; q2: relevant d3 at rank 1 -> RR 1, P@1 1;
    q3 labelled, not retrieved -> 0. Three chunks of one query each."""
    (tmp_path / "q").write_text("q1 0 d1 1\nq2 0 d3 2\nq3 0 d9 1\n")
    (tmp_path / "r").write_text("q1 Q0 d0 1 2.0 t\nq1 Q0 d1 2 1.0 t\nq2 Q0 d3 1 5.0 t\n")
    e = ragmeter.evaluate(tmp_path / "q", tmp_path / "r", "RR,P@1", query_chunks=3)
    assert e.query_ids == ("q1", "q2", "q3")
    assert e.values.tolist() == [[0.5, 0.0], [1.0, 1.0], [0.0, 0.0]]
    assert e.aggregate == {"RR": 0.5, "P@1": 1 / 3}
    assert e.missing_ids == ("q3",)


def test_a_bad_line_is_named(tmp_path: Path) -> None:
    (tmp_path / "q").write_text("q1 0 d1 1\n")
    lines = "".join(f"q1 Q0 d{i} {i + 1} {100 - i} t\n" for i in range(50))
    (tmp_path / "r").write_text(lines + "q1 Q0 dX 51 high t\n")
    with pytest.raises(InputError) as e:
        ragmeter.evaluate(tmp_path / "q", tmp_path / "r", "RR", query_chunks=2)
    assert (e.value.path, e.value.line, e.value.field) == (str(tmp_path / "r"), 51, "score")


def test_duplicates_keep_their_line_numbers(tmp_path: Path) -> None:
    from ragmeter.metrics import parse_list
    from ragmeter.metrics._chunked import evaluate_chunked

    (tmp_path / "q").write_text("q1 0 d1 1\nq2 0 d1 1\n")
    (tmp_path / "r").write_text("q2 Q0 d1 1 2 t\nq1 Q0 d1 1 2 t\nq1 Q0 d2 2 1 t\nq1 Q0 d1 3 0 t\n")
    with pytest.raises(InputError) as e:
        evaluate_chunked(
            tmp_path / "q", tmp_path / "r", parse_list("RR"), query_chunks=2, duplicates="error"
        )
    assert (e.value.line, e.value.field) == (4, "doc") and "also at line 2" in str(e.value)
    with pytest.warns(ragmeter.RagmeterWarning, match=":4"):
        got = evaluate_chunked(tmp_path / "q", tmp_path / "r", parse_list("RR"), query_chunks=2)
    assert got.values.tolist() == [[1.0], [1.0]]


def test_no_query_in_common_is_the_same_error(tmp_path: Path) -> None:
    (tmp_path / "q").write_text("q1 0 d1 1\n")
    (tmp_path / "r").write_text("x1 Q0 d1 1 2 t\nx2 Q0 d1 1 2 t\n")
    with pytest.raises(InputError) as one:
        ragmeter.evaluate(tmp_path / "q", tmp_path / "r", "RR")
    with pytest.raises(InputError) as chunked:
        ragmeter.evaluate(tmp_path / "q", tmp_path / "r", "RR", query_chunks=4)
    assert str(one.value) == str(chunked.value)


def test_no_item_judged_warns_once(tmp_path: Path) -> None:
    (tmp_path / "q").write_text("q1 0 d1 1\nq2 0 d1 1\n")
    (tmp_path / "r").write_text("q1 Q0 c1 1 2 t\nq2 Q0 c2 1 2 t\n")
    with pytest.warns(ragmeter.RagmeterWarning, match="none of the 2 item id") as w:
        ragmeter.evaluate(tmp_path / "q", tmp_path / "r", "RR", query_chunks=2)
    assert len([x for x in w if "item id" in str(x.message)]) == 1


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_query_chunks_must_be_a_positive_whole_number(tmp_path: Path, bad: object) -> None:
    (tmp_path / "q").write_text("q1 0 d1 1\n")
    (tmp_path / "r").write_text("q1 Q0 d1 1 2 t\n")
    with pytest.raises(UsageError, match="query_chunks"):
        ragmeter.evaluate(tmp_path / "q", tmp_path / "r", "RR", query_chunks=bad)  # type: ignore[arg-type]


def test_cli_query_chunks(tmp_path: Path) -> None:
    qrels, run = _files(tmp_path, 3)
    runner = CliRunner()
    args = ["eval", str(qrels), str(run), "--format", "json", "--per-query", "--no-store"]
    one = runner.invoke(app, args)
    chunked = runner.invoke(app, [*args, "--query-chunks", "5"])
    assert one.exit_code == 0 and chunked.exit_code == 0, chunked.output
    assert json.loads(one.stdout) == json.loads(chunked.stdout)
    bad = runner.invoke(app, [*args, "--query-chunks", "0"])
    assert bad.exit_code == 2 and "query-chunks" in bad.output


@pytest.mark.parametrize("chunks", [None, 2])
def test_evaluate_takes_the_duplicates_rule_streamed_or_not(
    tmp_path: Path, chunks: int | None
) -> None:
    # one call, one dispatch: evaluate() hands its duplicates rule to the reader or the chunked
    # scorer alike (ragmeter eval --duplicates, with or without --query-chunks)
    (tmp_path / "q").write_text("q1 0 d1 1\nq2 0 d1 1\n")
    (tmp_path / "r").write_text("q2 Q0 d1 1 2 t\nq1 Q0 d1 1 2 t\nq1 Q0 d2 2 1 t\nq1 Q0 d1 3 0 t\n")
    with pytest.raises(InputError) as e:
        ragmeter.evaluate(
            tmp_path / "q", tmp_path / "r", "RR", query_chunks=chunks, duplicates="error"
        )
    assert (e.value.line, e.value.field) == (4, "doc") and "also at line 2" in str(e.value)
    with pytest.warns(ragmeter.RagmeterWarning, match=":4"):
        got = ragmeter.evaluate(tmp_path / "q", tmp_path / "r", "RR", query_chunks=chunks)
    assert got.values.tolist() == [[1.0], [1.0]]
    with pytest.raises(UsageError, match="duplicates must be 'best' or 'error'"):
        ragmeter.evaluate(tmp_path / "q", tmp_path / "r", "RR", query_chunks=chunks, duplicates="x")


@pytest.mark.parametrize("chunks", [None, 2])
def test_an_in_memory_table_with_duplicates_follows_the_rule_streamed_or_not(
    chunks: int | None,
) -> None:
    # the chunked scorer once read an in-memory table with the default rule, so
    # duplicates="error" raised without query_chunks and was ignored with it
    import pyarrow as pa

    qrels = {"q1": {"d1": 1}, "q2": {"d1": 1}}
    table = pa.table(
        {
            "qid": ["q1", "q1", "q2"],
            "docno": ["d1", "d1", "d1"],
            "score": [2.0, 1.0, 1.0],
        }
    )
    with pytest.raises(InputError):
        ragmeter.evaluate(qrels, table, "RR", query_chunks=chunks, duplicates="error")
