"""``ragmeter.workflows.runs``: list, show, delete, export and import stored runs, the jobs
behind ``ragmeter runs`` (the command's output is tested in test_cli_store.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragmeter import Evaluation, NotFoundError, UsageError
from ragmeter.metrics import parse
from ragmeter.store import Store
from ragmeter.workflows import runs

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules" / "runs"


def _stored(store: Store, name: str, values: list[float]) -> int:
    e = Evaluation(
        run=name,
        metrics=(parse("Hit@3"),),
        query_ids=tuple(f"q{i}" for i in range(len(values))),
        values=np.array(values, dtype=np.float64).reshape(-1, 1),
        golden_version="g-aaaaaaaaaaaa",
    )
    return store.record_evaluation(e)


def test_list_show_and_delete(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path}/s.db") as store:
        a, b, c = (_stored(store, n, [0, 1]) for n in ("a", "b", "c"))
        listed = runs.list_runs(store, limit=2)
        assert [r.id for r in listed.records] == [c, b] and listed.more == 1
        assert runs.list_runs(store, golden="g-bbbbbbbbbbbb").records == []
        shown = runs.show_run(store, a)
        assert shown.record.name == "a"
        [e] = shown.evaluations.values()
        assert e.n_queries == 2 and dict(e.aggregate) == {"Hit@3": 0.5}
        found = runs.runs_to_delete(store, [b, a, b])
        assert [r.id for r in found] == [b, a]
        with pytest.raises(NotFoundError):
            runs.runs_to_delete(store, [a, 999])
        runs.delete_runs(store, [a, b, a])
        assert [r.id for r in store.runs()] == [c]


def test_export_refuses_to_replace_without_force_then_imports_back(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with (
        Store.open(f"sqlite:///{tmp_path}/s.db") as store,
        Store.open(f"sqlite:///{tmp_path}/other.db") as other,
    ):
        done = runs.import_paths(store, [EXAMPLE / "baseline"])
        [run_id] = done.paths[0].new
        written = runs.export_run(store, run_id, out)
        assert {p.name for p in written} >= {"evaluation.json", "config.json", "run.json"}
        with pytest.raises(UsageError, match="--force"):
            runs.export_run(store, run_id, out)
        assert runs.export_run(store, run_id, out, force=True) == written
        again = runs.import_paths(other, [out])
        [new] = again.paths[0].new
        assert (other.run(new).name, other.run(new).metrics) == (
            store.run(run_id).name,
            store.run(run_id).metrics,
        )
