"""``Evaluation.load``: every writer's evaluation file reads back exactly; anything else is a clean
InputError naming the file and the field."""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import ragmeter
from ragmeter import InputError
from ragmeter.cli import app
from ragmeter.metrics import Evaluation, parse

FIX = Path(__file__).parents[1] / "fixtures" / "toy"
EXAMPLE_RUNS = Path(__file__).resolve().parents[2] / "examples" / "fare-rules" / "runs"
M = "R@3,RR@3,nDCG(gain=exp)@3,AP"
runner = CliRunner()


def same(a: Evaluation, b: Evaluation) -> None:
    """Equal as records and value for value (floats survive JSON exactly)."""
    assert a.to_dict() == b.to_dict()
    assert a.metrics == b.metrics and a.query_ids == b.query_ids
    assert np.array_equal(a.values, b.values)


def eval_json(tmp_path: Path, *runs: str) -> Path:
    r = runner.invoke(
        app,
        [
            "eval",
            str(FIX / "qrels.txt"),
            *(str(FIX / f"{n}.run") for n in runs),
            "-m",
            M,
            "--per-query",
            "--format",
            "json",
        ],
    )
    assert r.exit_code == 0, r.stderr
    path = tmp_path / "eval.json"
    path.write_text(r.stdout, encoding="utf-8")
    return path


# -- writers -------------------------------------------------------------------------------------
def test_ragmeter_eval_json_reads_back(tmp_path: Path) -> None:
    e = Evaluation.load(eval_json(tmp_path, "baseline"))
    want = ragmeter.evaluate(
        FIX / "qrels.txt",
        FIX / "baseline.run",
        M,
        run_name=str(FIX / "baseline.run"),
        config={"qrels": str(FIX / "qrels.txt")},
    )
    same(e, want)
    # by hand: first relevant passage at ranks 2, -, 1, 1, 6, 3 -> RR@3 = (1/2 + 1 + 1 + 1/3) / 6
    assert e.mean("RR@3") == pytest.approx((0.5 + 1 + 1 + 1 / 3) / 6, abs=1e-12)


def test_ragmeter_eval_list_reads_by_run_name(tmp_path: Path) -> None:
    path = eval_json(tmp_path, "baseline", "reranked")
    both = Evaluation.load_all(path)
    assert [Path(e.run).name for e in both] == ["baseline.run", "reranked.run"]
    for e in both:
        same(Evaluation.load(path, run=e.run), e)
    with pytest.raises(InputError) as err:
        Evaluation.load(path)
    assert err.value.path == str(path) and err.value.field == "run"
    assert "holds 2 runs" in str(err.value) and "reranked.run" in str(err.value)
    with pytest.raises(InputError, match="no run named 'nope'") as err:
        Evaluation.load(path, run="nope")
    assert err.value.field == "run"


def test_ragmeter_run_outputs_read_back(tmp_path: Path) -> None:
    from _experiment_files import toy_experiment

    from ragmeter.experiments import run_experiment

    toy_experiment(
        tmp_path,
        'name = "two chunkings"\ngolden = "golden.jsonl"\ncorpus = "corpus.jsonl"\n'
        'output = "out"\nk = 2\nbudget = 40\nheadroom_k = 8\nmetrics = ["R", "RR", "nDCG"]\n'
        '[baseline]\nchunker = "tokens:20:0"\nretriever = "bm25"\ndepth = 10\n'
        '[[variant]]\nname = "smaller chunks"\nchunker = "tokens:10:0"\nk = 4\n',
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_experiment(tmp_path / "experiment.toml", use_cache=False)
    files = sorted((tmp_path / "out").glob("*/evaluation.json"))
    assert len(files) == 2
    for v in result.variants:
        folder = next(f.parent for f in files if Evaluation.load(f).run == v.evaluation.run)
        same(Evaluation.load(folder / "evaluation.json"), v.evaluation)
        assert v.chunk_evaluation is not None  # nDCG is scored on chunk qrels
        same(Evaluation.load(folder / "chunk_evaluation.json"), v.chunk_evaluation)


def test_the_examples_committed_run_outputs_read() -> None:
    """The bundled example's runs/<variant>/evaluation.json, as `ragmeter run` wrote them."""
    files = sorted(EXAMPLE_RUNS.glob("*/evaluation.json"))
    assert len(files) == 4
    for f in files:
        e = Evaluation.load(f)
        raw = json.loads(f.read_text(encoding="utf-8"))
        assert e.run == raw["run"] and e.n_queries == raw["n_queries"] == 80
        assert e.aggregate == raw["aggregate"]


METRICS = [
    "R@3",
    "RR@10",
    "nDCG@5",
    "nDCG(gain=exp)@3",
    "AP",
    "P@1",
    "Hit@4",
    "AllR@2",
    "R@budget=1200",
]
ids = st.text(min_size=1, max_size=8)  # any characters: "[bold]", ":smile:", "tokens:100:0"


@st.composite
def evaluations(draw: st.DrawFn) -> Evaluation:
    metrics = tuple(
        parse(m)
        for m in draw(st.lists(st.sampled_from(METRICS), min_size=1, max_size=4, unique=True))
    )
    qids = tuple(draw(st.lists(ids, min_size=0, max_size=6, unique=True)))
    values = draw(
        st.lists(
            st.floats(0, 1, allow_nan=False),
            min_size=len(qids) * len(metrics),
            max_size=len(qids) * len(metrics),
        )
    )
    n_sub = 3 if qids else 0  # per-query maps only over the evaluation's own queries
    sub = st.sampled_from(qids or ("-",))
    return Evaluation(
        run=draw(ids),
        metrics=metrics,
        query_ids=qids,
        values=np.array(values, dtype=np.float64).reshape(len(qids), len(metrics)),
        missing_ids=tuple(draw(st.lists(ids, max_size=2))),
        no_relevant_ids=tuple(draw(st.lists(ids, max_size=2))),
        golden_version=draw(st.none() | st.just("g-1a2b3c")),
        config={"missing": draw(st.sampled_from(["zero", "skip"]))},
        slices=draw(st.dictionaries(sub, st.lists(ids, max_size=2).map(tuple), max_size=n_sub)),
        splits=draw(st.dictionaries(sub, st.sampled_from(["tune", "heldout"]), max_size=n_sub)),
        details=draw(
            st.dictionaries(
                sub,
                st.fixed_dictionaries({"first_rank": st.none() | st.integers(1, 9)}),
                max_size=n_sub,
            )
        ),
    )


@settings(max_examples=150, deadline=None)
@given(e=evaluations(), compressed=st.booleans())
def test_to_dict_dumped_reads_back(
    tmp_path_factory: pytest.TempPathFactory, e: Evaluation, compressed: bool
) -> None:
    """``json.dump(e.to_dict())`` (the writer both commands use) reads back equal, gzip or not."""
    path = tmp_path_factory.mktemp("rt") / "e.json"
    data = json.dumps(e.to_dict(), indent=2, ensure_ascii=False).encode()
    path.write_bytes(gzip.compress(data) if compressed else data)
    same(Evaluation.load(path), e)


# -- everything else: a clean InputError naming the file (and the field) -----------------------
GOOD = {"run": "r", "aggregate": {"R@3": 0.5}, "per_query": {"q1": {"R@3": 0.5}}}
BAD_RECORDS = [
    ({"run": "r", "aggregate": {"R@3": 0.5}}, "per_query", "ragmeter eval --per-query"),
    ({**GOOD, "per_query": [1, 2]}, "per_query", "got a list"),
    ({**GOOD, "per_query": {"q1": 0.5}}, "per_query", "query 'q1' must map metric to value"),
    ({**GOOD, "per_query": {"q1": {}}}, "per_query", "query 'q1' lacks a value for R@3"),
    ({**GOOD, "per_query": {"q1": {"R@3": "0.5"}}}, "per_query", "must be a finite number"),
    ({**GOOD, "per_query": {"q1": {"R@3": True}}}, "per_query", "must be a finite number"),
    ({**GOOD, "per_query": {"q1": {"R@3": None}}}, "per_query", "must be a finite number"),
    ({**GOOD, "aggregate": ["R@3"]}, "aggregate", "must be an object"),
    ({**GOOD, "aggregate": {"Bogus@3": 0.5}}, "aggregate", "'Bogus@3' is not a metric"),
    (
        {
            **GOOD,
            "aggregate": {"RR@3": 0.5, "MRR@3": 0.5},
            "per_query": {"q1": {"RR@3": 1.0, "MRR@3": 1.0}},
        },
        "aggregate",
        "the same metric",
    ),
    ({**GOOD, "run": ["r"]}, "run", "must be a string"),
    ({**GOOD, "missing_ids": "q2"}, "missing_ids", "list of query ids"),
    ({**GOOD, "no_relevant_ids": [3]}, "no_relevant_ids", "list of query ids"),
    ({**GOOD, "golden_version": 7}, "golden_version", "must be a string or null"),
    ({**GOOD, "config": "x"}, "config", "must be an object"),
    ({**GOOD, "slices": {"q1": "s"}}, "slices", "{query: [slice name"),
    ({**GOOD, "splits": {"q1": 1}}, "splits", "{query: split name}"),
    ({**GOOD, "details": {"q1": 3}}, "details", "{query: {name: value}}"),
]


@pytest.mark.parametrize(("record", "field", "message"), BAD_RECORDS)
def test_bad_records_name_the_file_and_field(
    tmp_path: Path, record: dict, field: str, message: str
) -> None:
    path = tmp_path / "[bold]x.json"  # a name rich would read as markup
    path.write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises(InputError) as err:
        Evaluation.load(path)
    assert err.value.path == str(path) and err.value.field == field
    assert message in str(err.value) and str(err.value).startswith(f"{path}: field '{field}'")
    with pytest.raises(InputError) as err:  # the same check for a record built in Python
        Evaluation.from_dict(record, source="mine")
    assert err.value.field == field


BAD_FILES = [
    (b"", None, "the file is empty"),
    (b'{"run": "x",\n  "per_query": {oops}}', 2, "invalid JSON"),
    (b"42", None, "got a number"),
    (b"[]", None, "got an empty list"),
    (b'[{"run": "a", "per_query": {}}, "b"]', None, "a list holding a string"),
    (b'{"run": "caf\xe9"}', 1, "not valid UTF-8: byte 0xe9 at byte offset 12"),
]


@pytest.mark.parametrize(("content", "line", "message"), BAD_FILES)
def test_bad_files_name_the_file_and_line(
    tmp_path: Path, content: bytes, line: int | None, message: str
) -> None:
    path = tmp_path / "e.json"
    path.write_bytes(content)
    with pytest.raises(InputError) as err:
        Evaluation.load(path)
    assert err.value.path == str(path) and err.value.line == line
    assert message in str(err.value)


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read the evaluation: file not found") as err:
        Evaluation.load(tmp_path / "nope.json")
    assert err.value.path == str(tmp_path / "nope.json")
    with pytest.raises(InputError, match="not a regular file"):
        Evaluation.load(tmp_path)


def test_a_byte_order_mark_is_read_past(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD).encode())
    assert Evaluation.load(path).column("R@3") == {"q1": 0.5}
