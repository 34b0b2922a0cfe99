"""Run references (``ragmeter.workflows.refs``): what a user writes to name a run, and the one
resolver that reads it, from files or the store."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragmeter import Evaluation, UsageError
from ragmeter.metrics import parse
from ragmeter.store import Store
from ragmeter.workflows.refs import (
    RunRef,
    Scoring,
    load_pair,
    named_files,
    resolve,
)

FIX = Path(__file__).parents[1] / "fixtures" / "toy"


def ev(run: str, values: list[float]) -> Evaluation:
    return Evaluation(
        run=run,
        metrics=(parse("Hit@5"),),
        query_ids=tuple(f"q{i}" for i in range(len(values))),
        values=np.array(values, dtype=float)[:, None],
        golden_version="v1",
    )


def test_a_stored_run_is_an_id_or_run_colon_id_with_a_level() -> None:
    assert RunRef.parse("12") == RunRef("12", "stored", run_id=12)
    r = RunRef.parse("run:3:chunk")
    assert (r.kind, r.run_id, r.level, r.stored_id) == ("stored", 3, "chunk", 3)
    assert RunRef.stored(5, "chunk") == RunRef("run:5:chunk", "stored", run_id=5, level="chunk")
    assert RunRef.stored(5).text == "run:5"


def test_anything_else_is_an_evaluation_file_with_an_optional_run() -> None:
    r = RunRef.parse("out/eval.json#bm25")
    assert (r.kind, r.path, r.run, r.stored_id) == (
        "evaluation",
        Path("out/eval.json"),
        "bm25",
        None,
    )
    assert RunRef.parse("eval.json").run is None
    f = RunRef.run_file("12")  # with labels, what is written is a run file, even a number
    assert (f.kind, f.path, f.stored_id) == ("run_file", Path("12"), None)


def test_ambiguous_and_malformed_references_are_refused(tmp_path: Path, monkeypatch) -> None:
    with pytest.raises(UsageError, match="is not a stored run: write run:ID"):
        RunRef.parse("run:abc")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "7").write_text("")
    with pytest.raises(UsageError, match="both a stored run id and a file here"):
        RunRef.parse("7")
    assert RunRef.parse("./7").kind == "evaluation"


def test_named_files_are_the_paths_with_and_without_the_run() -> None:
    assert named_files(["a.json#x", "b.json"]) == [
        Path("a.json#x"),
        Path("b.json"),
        Path("a.json"),
        Path("b.json"),
    ]


def test_resolve_reads_files_and_the_store(tmp_path: Path) -> None:
    base, cand = ev("base", [1, 0, 1]), ev("cand", [1, 1, 1])
    p = tmp_path / "both.json"
    p.write_text(json.dumps([base.to_dict(per_query=True), cand.to_dict(per_query=True)]))
    got = resolve(RunRef.parse(f"{p}#cand"))
    assert got.run == "cand" and got.column(parse("Hit@5")) == cand.column(parse("Hit@5"))
    with pytest.raises(UsageError, match="names a stored run: drop --no-store"):
        resolve(RunRef.parse("run:1"))
    with pytest.raises(UsageError, match="is a run file: give labels"):
        resolve(RunRef.run_file("x.run"))
    with Store.open(f"sqlite:///{tmp_path / 's.db'}", migrate=True) as store:
        rid = store.record_evaluation(base, name="base")
        stored = resolve(RunRef.parse(str(rid)), store)
        assert stored.column(parse("Hit@5")) == base.column(parse("Hit@5"))
        pair = load_pair(f"run:{rid}", f"{p}#cand", store=store)
        assert pair.stored_ids == (rid, None)
        assert (pair.baseline.run, pair.candidate.run) == ("base", "cand")


def test_load_pair_scores_run_files_against_labels() -> None:
    base, cand = str(FIX / "baseline.run"), str(FIX / "reranked.run")
    scoring = Scoring(qrels=FIX / "qrels.txt")
    pair = load_pair(base, cand, metric="Hit@3", scoring=scoring)
    assert pair.base.kind == pair.cand.kind == "run_file" and pair.stored_ids == (None, None)
    assert pair.baseline.run == base and pair.baseline.config["qrels"] == str(FIX / "qrels.txt")
    with pytest.raises(UsageError, match="give --metric to score the runs"):
        load_pair(base, cand, scoring=scoring)
    with pytest.raises(UsageError, match="not both"):
        load_pair(base, cand, metric="Hit@3", scoring=Scoring(qrels=FIX / "q", golden=FIX / "g"))
    with pytest.raises(UsageError, match="needs both --golden and --chunks"):
        load_pair(base, cand, metric="R@3", scoring=Scoring(golden=FIX / "g"))
