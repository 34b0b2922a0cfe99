"""to_qrels / to_run: dicts, DataFrames (three column styles), tables and paths agree exactly."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from ragmeter import InputError, RagmeterWarning, UsageError
from ragmeter.io import Qrels, Run
from ragmeter.io.convert import to_qrels, to_run
from ragmeter.io.jsonl import write_qrels_jsonl, write_run_jsonl
from ragmeter.io.trec import write_qrels, write_run

RUN = {"q1": {"d1": 2.5, "d2": 0.1 + 0.2, "d3": -1e-300}, "q2": {"d1": 7.0}}
QRELS = {"q1": {"d1": 2, "d3": 0}, "q2": {"d9": 1}}


def triples(obj: Run | Qrels) -> list[tuple[str, str, float | int]]:
    values = obj.score if isinstance(obj, Run) else obj.rel
    return sorted(zip(obj.qid.to_pylist(), obj.doc.to_pylist(), values.tolist(), strict=True))


def frame(d: dict, q: str, doc: str, v: str) -> pd.DataFrame:
    recs = [(qid, did, x) for qid, docs in d.items() for did, x in docs.items()]
    return pd.DataFrame(recs, columns=[q, doc, v])


def test_objects_pass_through() -> None:
    run = to_run(RUN)
    assert to_run(run) is run
    qrels = to_qrels(QRELS)
    assert to_qrels(qrels) is qrels


def test_run_containers_agree(tmp_path: Path) -> None:
    write_run(RUN, tmp_path / "run.txt")
    write_run(RUN, tmp_path / "run.txt.gz")
    write_run_jsonl(RUN, tmp_path / "run.jsonl")
    write_run_jsonl(RUN, tmp_path / "run.jsonl.gz")
    expected = sorted((q, d, s) for q, docs in RUN.items() for d, s in docs.items())
    containers = [
        RUN,
        frame(RUN, "qid", "doc", "score"),
        frame(RUN, "q_id", "doc_id", "score"),  # ranx
        frame(RUN, "query_id", "doc_id", "score"),  # ir_measures
        pa.Table.from_pandas(frame(RUN, "qid", "doc", "score")),
        tmp_path / "run.txt",
        str(tmp_path / "run.txt.gz"),
        tmp_path / "run.jsonl",
        tmp_path / "run.jsonl.gz",
    ]
    for c in containers:
        run = to_run(c)
        assert triples(run) == expected, type(c)
        assert run.score.dtype == np.float64 and str(run.qid.type) == "string"


def test_qrels_containers_agree(tmp_path: Path) -> None:
    write_qrels(QRELS, tmp_path / "qrels.txt")
    write_qrels_jsonl(QRELS, tmp_path / "qrels.jsonl")
    expected = sorted((q, d, g) for q, docs in QRELS.items() for d, g in docs.items())
    containers = [
        QRELS,
        frame(QRELS, "qid", "doc", "rel"),
        frame(QRELS, "q_id", "doc_id", "score"),  # ranx
        frame(QRELS, "query_id", "doc_id", "relevance"),  # ir_measures
        tmp_path / "qrels.txt",
        tmp_path / "qrels.jsonl",
    ]
    for c in containers:
        q = to_qrels(c)
        assert triples(q) == expected, type(c)
        assert q.rel.dtype == np.int64


def test_values_stay_exact() -> None:
    f32 = np.float32(0.1)
    run = to_run({"q": {"a": f32, "b": 2**53, "c": np.int64(3)}})
    assert dict(zip(run.doc.to_pylist(), run.score.tolist(), strict=True)) == {
        "a": float(f32),
        "b": 2.0**53,
        "c": 3.0,
    }
    assert to_qrels({"q": {"a": 2.0, "b": np.int8(-1)}}).rel.tolist() == [2, -1]
    with pytest.raises(InputError, match="no exact float64 value"):
        to_run({"q": {"a": 2**53 + 1}})


def test_integer_ids_become_decimal_strings() -> None:
    run = to_run({301: {7: 1.0}, "302": {"x": 2.0}})
    assert triples(run) == [("301", "7", 1.0), ("302", "x", 2.0)]
    df = pd.DataFrame({"query_id": [301, 302], "doc_id": ["a", "b"], "relevance": [1, 0]})
    assert triples(to_qrels(df)) == [("301", "a", 1), ("302", "b", 0)]


@pytest.mark.parametrize(
    "bad, error, words",
    [
        ({"q": [("d", 1.0)]}, UsageError, "run['q'] is a list; expected a dict {doc: score}"),
        (
            {"q": {"d": "1.0"}},
            InputError,
            "query 'q', doc 'd': score must be a number, got str '1.0'",
        ),
        ({"q": {"d": True}}, InputError, "score must be a number, got bool"),
        ({"q": {"d": None}}, InputError, "score must be a number, got NoneType"),
        (
            {"q": {"d": float("nan")}},
            InputError,
            "query 'q', doc 'd': score is nan; it must be finite",
        ),
        ({"q": {"d": float("-inf")}}, InputError, "score is -inf"),
        ({"q": {"": 1.0}}, InputError, "empty doc id (in query 'q')"),
        ({"q": {1.5: 1.0}}, InputError, "doc ids must be strings or integers, got float 1.5"),
        ({None: {"d": 1.0}}, InputError, "qid id is None"),
        (42, UsageError, "cannot read a run from int"),
        ([("q", "d", 1.0)], UsageError, "cannot read a run from list"),
    ],
)
def test_run_shape_errors(bad: object, error: type, words: str) -> None:
    with pytest.raises(error) as e:
        to_run(bad)
    assert words in str(e.value), str(e.value)


@pytest.mark.parametrize(
    "bad, words",
    [
        ({"q": {"d": 1.5}}, "query 'q', doc 'd': rel 1.5 is not an integer grade"),
        ({"q": {"d": "2"}}, "rel must be a number, got str '2'"),
        ({"q": 3}, "qrels['q'] is a int; expected a dict {doc: grade}"),
    ],
)
def test_qrels_shape_errors(bad: object, words: str) -> None:
    with pytest.raises((InputError, UsageError)) as e:
        to_qrels(bad)
    assert words in str(e.value), str(e.value)


def test_frame_errors() -> None:
    with pytest.raises(UsageError) as e:
        to_run(pd.DataFrame({"query": ["q"], "doc": ["d"], "score": [1.0]}))
    assert (
        "no query id column: expected one of qid, q_id, query_id; found query, doc, score"
        in str(e.value)
    )
    with pytest.raises(UsageError, match="no score column"):
        to_run(pd.DataFrame({"qid": ["q"], "doc": ["d"], "rel": [1]}))
    with pytest.raises(InputError, match="row 2: score is missing or NaN"):
        to_run(pd.DataFrame({"qid": ["q", "q"], "doc": ["a", "b"], "score": [1.0, np.nan]}))
    with pytest.raises(InputError, match="row 2: doc is missing"):
        to_run(pd.DataFrame({"qid": ["q", "q"], "doc": ["a", None], "score": [1.0, 2.0]}))
    with pytest.raises(InputError, match="column 'score' must be numeric"):
        to_run(pd.DataFrame({"qid": ["q"], "doc": ["a"], "score": ["high"]}))
    with pytest.raises(InputError, match="must hold string"):
        to_run(pd.DataFrame({"qid": [1.5], "doc": ["a"], "score": [1.0]}))


def test_frame_duplicates() -> None:
    df = pd.DataFrame({"qid": ["q", "q", "q"], "doc": ["a", "b", "a"], "score": [1.0, 5.0, 3.0]})
    with pytest.warns(RagmeterWarning, match=r"<DataFrame>:3: 1 duplicate row\(s\).*also at row 1"):
        assert triples(to_run(df)) == [("q", "a", 3.0), ("q", "b", 5.0)]
    with pytest.raises(InputError, match="listed more than once"):
        to_run(df, duplicates="error")
    same = pd.DataFrame({"qid": ["q", "q"], "doc": ["a", "a"], "rel": [1, 1]})
    with pytest.warns(RagmeterWarning, match="repeated judgement"):
        assert triples(to_qrels(same)) == [("q", "a", 1)]
    clash = pd.DataFrame({"qid": ["q", "q"], "doc": ["a", "a"], "rel": [1, 2]})
    with pytest.raises(InputError, match=r"different grades \(1 at row 1, 2 at row 2\)"):
        to_qrels(clash)


def test_row_order_is_kept() -> None:
    df = pd.DataFrame({"qid": ["q", "q", "p"], "doc": ["z", "a", "m"], "score": [1.0, 2.0, 3.0]})
    run = to_run(df)
    assert run.doc.to_pylist() == ["z", "a", "m"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert to_run({"q": {"z": 1.0, "a": 2.0}}).doc.to_pylist() == ["z", "a"]


def test_paths_dispatch_by_extension(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_text('{"qid": "q", "doc": "d", "score": 1}\n')
    (tmp_path / "x.txt").write_text("q Q0 d 1 1 t\n")
    assert triples(to_run(tmp_path / "x.jsonl")) == triples(to_run(tmp_path / "x.txt"))
    with pytest.raises(InputError, match="file not found"):
        to_qrels(tmp_path / "missing.jsonl")
    (tmp_path / "y.run").write_text('{"qid": "q", "doc": "d", "score": 1}\n')
    with pytest.raises(InputError) as e:  # JSONL content under a TREC name is read as TREC
        to_run(tmp_path / "y.run")
    assert e.value.line == 1 and "is not a number" in str(e.value)


def test_empty_dict_gives_empty_run() -> None:
    run = to_run({})
    assert len(run) == 0 and str(run.qid.type) == "string"
    assert len(to_qrels({"q": {}})) == 0
