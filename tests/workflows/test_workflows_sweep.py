"""The sweep workflows (``ragmeter.workflows.sweep``): ``ragmeter sweep`` on run files and the
lab's sweep of stored runs, each the :mod:`ragmeter.paired` sweep of the same inputs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from test_sweep import budget_scenario

from ragmeter import Evaluation, UsageError
from ragmeter.io import to_run
from ragmeter.metrics import parse
from ragmeter.paired import sweep, sweep_spans
from ragmeter.store import RunRecord, Store
from ragmeter.workflows.sweep import SpanSource, run_names, stored_sweep, sweep_files

FIX = Path(__file__).parents[1] / "fixtures" / "toy"


def test_run_names_given_tags_stems_then_folders(tmp_path: Path) -> None:
    runs = [FIX / "baseline.run", FIX / "reranked.run"]
    assert run_names(runs, ["a", "b"]) == ["a", "b"]
    with pytest.raises(UsageError, match="one distinct name per run"):
        run_names(runs, ["a", "a"])
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    for d in ("x", "y"):
        (tmp_path / d / "run.trec").write_text("q1 Q0 d1 1 1.0 same\n")
    same = [tmp_path / "x" / "run.trec", tmp_path / "y" / "run.trec"]
    assert run_names(same) == ["x", "y"]  # same tag, same stem: the folders tell them apart


def test_sweep_files_is_the_paired_sweep_per_metric() -> None:
    runs = [FIX / "baseline.run", FIX / "reranked.run"]
    got = sweep_files(runs, qrels=FIX / "qrels.txt", metrics="R,RR", ks="1..3", headroom_k=5)
    names = run_names(runs)
    want = [
        sweep(FIX / "qrels.txt", dict(zip(names, runs, strict=True)), m, "1..3", headroom_k=h)
        for m, h in (("R", 5), ("RR", None))
    ]
    assert [s.to_dict() for s in got] == [s.to_dict() for s in want]


def test_sweep_files_refuses_what_it_cannot_score() -> None:
    runs = [FIX / "baseline.run"]
    with pytest.raises(UsageError, match="give --qrels"):
        sweep_files(runs)
    with pytest.raises(UsageError, match="--budget needs span labels"):
        sweep_files(runs, qrels=FIX / "qrels.txt", budgets="100,200")


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(f"sqlite:///{tmp_path / 'store.db'}", migrate=True) as s:
        yield s


def test_stored_sweep_picks_budgets_for_different_chunkings(store: Store) -> None:
    golden, runs = budget_scenario()
    ids: dict[int, str] = {}
    for name, k in (("S", 6), ("L", 2)):
        e = Evaluation(
            run=name,
            metrics=(parse("R@5"),),
            query_ids=("q00",),
            values=np.array([[1.0]]),
            golden_version="v1",
            config={"settings": {"chunker": name, "k": k, "budget": 600}},
        )
        ids[store.record_evaluation(e, name=name)] = name

    def prepare(run: RunRecord) -> SpanSource:
        chunking, run_map = runs[ids[run.id]]
        return SpanSource(golden, chunking, to_run(run_map), True, 10, 0.5)

    def settings(run: RunRecord):
        return run.config["settings"]

    got = stored_sweep(store, list(ids), metric="R", settings=settings, prepare=prepare)
    assert got.kind == "budget" and got.cutoffs == "100..1200:100"
    assert got.prompt_cuts == (600,) and got.prompt == 600
    named = {f"{i}: {n}": (runs[n][0], to_run(runs[n][1])) for i, n in ids.items()}
    want = sweep_spans(golden, named, "R", "100..1200:100", kind="budget", headroom_k=10, cover=0.5)
    assert got.sweep.to_dict() == want.to_dict()
    by_k = stored_sweep(store, list(ids), metric="R", settings=settings, prepare=prepare, kind="k")
    assert by_k.kind == "k" and by_k.cutoffs == "1..10" and by_k.prompt_cuts == (2, 6)
    with pytest.raises(UsageError, match="sweep over k or budget"):
        stored_sweep(store, list(ids), metric="R", settings=settings, prepare=prepare, kind="x")
    with pytest.raises(UsageError, match="pick at least one run"):
        stored_sweep(store, [], metric="R", settings=settings, prepare=prepare)
