"""``ragmeter.workflows.experiment``: run and record an experiment (``ragmeter run``), one new
variant of it (the lab's jobs), the checks before anything runs, and the ledger the lab's
experiments page reads; each called directly, on the toy data set with BM25 variants only."""

from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from _experiment_files import toy_experiment
from test_experiment_hooks import BM25_ONLY, NAMES

from ragmeter._errors import InputError, UsageError
from ragmeter.experiments import load_experiment
from ragmeter.store import Store
from ragmeter.workflows import experiment as wf


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return toy_experiment(tmp_path, BM25_ONLY)


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with Store.open(f"sqlite:///{tmp_path / 'store.db'}") as s:
        yield s


def quiet(fn: Any, *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def test_run_and_record_stores_every_variant_finished(path: Path, store: Store) -> None:
    result, ids = quiet(wf.run_and_record, store, path, use_cache=False)
    assert list(ids) == NAMES == [v.name for v in result.variants]
    for v in result.variants:
        run = store.run(ids[v.name])
        assert run.status == "finished" and run.experiment == "toy experiment"
        assert run.is_baseline == v.is_baseline
        stored = store.evaluation(run.id, "span")
        assert stored.aggregate == pytest.approx(v.evaluation.aggregate)
    # the golden set the variants were scored on is stored with them
    assert result.golden_version in [g["version"] for g in store.golden_versions()]


def test_a_failing_variant_leaves_the_rest_failed(
    path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = wf.record_variant
    calls: list[str] = []

    def record(store_: Store, exp: Any, run_id: int, r: Any) -> None:
        calls.append(r.name)
        if len(calls) == 2:
            raise RuntimeError("disk full")
        real(store_, exp, run_id, r)

    monkeypatch.setattr(wf, "record_variant", record)
    with pytest.raises(RuntimeError, match="disk full"):
        quiet(wf.run_and_record, store, path, use_cache=False)
    runs = sorted(store.runs(), key=lambda r: r.id)
    assert [r.status for r in runs] == ["finished", "failed", "failed", "failed"]
    assert {r.message for r in runs[1:]} == {"disk full"}


def test_run_and_record_variant_records_only_the_new_variant(path: Path, store: Store) -> None:
    _, ids = quiet(wf.run_and_record, store, path, use_cache=False)
    variant = wf.check_variant(path, {"k": 3, "depth": 20})
    exp = replace(load_experiment(path, warn=False), variants=(variant,))  # as the lab plans
    started: list[int] = []
    result, run_id = quiet(
        wf.run_and_record_variant, store, exp, variant, on_started=started.append
    )
    assert started == [run_id] and run_id not in ids.values()
    assert len(store.runs()) == len(ids) + 1  # the others are stored already: never twice
    run = store.run(run_id)
    assert run.status == "finished" and run.name == variant.name
    assert store.evaluation(run_id, "span").aggregate == pytest.approx(
        result.variant(variant.name).evaluation.aggregate
    )


def test_run_and_record_variant_ends_the_run_failed_with_the_callers_message(
    path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: Any) -> None:
        raise RuntimeError("no space left\nsecond line")

    monkeypatch.setattr(wf, "record_variant", broken)
    variant = wf.check_variant(path, {"k": 3})
    exp = replace(load_experiment(path, warn=False), variants=(variant,))
    with pytest.raises(RuntimeError):
        quiet(
            wf.run_and_record_variant,
            store,
            exp,
            variant,
            failure=lambda exc: str(exc).splitlines()[0],
            use_cache=False,
        )
    (run,) = store.runs()
    assert run.status == "failed" and run.message == "no space left"


def test_check_variant_names_the_field_of_a_bad_table(path: Path) -> None:
    with pytest.raises(UsageError, match=r"^k: "):
        wf.check_variant(path, {"k": "three"})
    v = wf.check_variant(path, {"chunker": "tokens:10:0"})
    assert v.settings.chunker == "tokens:10:0" and not v.is_baseline


def test_variant_warnings_say_a_variant_that_changes_nothing(path: Path) -> None:
    exp = load_experiment(path, warn=False)
    same = wf.check_variant(path, {"k": exp.baseline.settings.k})
    assert any("changes nothing" in w for w in wf.variant_warnings(exp, [same]))
    assert wf.variant_warnings(exp, [wf.check_variant(path, {"k": 3})]) == []


def test_check_store_writes_refuses_a_store_inside_a_variant_folder(path: Path) -> None:
    exp = load_experiment(path, warn=False)
    inside = path.parent / "out" / "baseline" / "store.db"
    with pytest.raises(InputError) as err:
        wf.check_store_writes(exp, db=f"sqlite:///{inside}", cache_dir=None)
    assert err.value.field == "output"
    wf.check_store_writes(exp, db=f"sqlite:///{path.parent / 'elsewhere.db'}", cache_dir=None)


def test_start_variants_records_the_run_spec(path: Path, store: Store) -> None:
    exp = load_experiment(path, warn=False)
    ids = wf.start_variants(store, exp, exp.all_variants)
    runs = [store.run(i) for i in ids]
    assert [r.name for r in runs] == NAMES
    assert all(r.status == "running" for r in runs)
    spec = wf.run_spec(exp, exp.baseline)
    assert spec["is_baseline"] and spec["file"] == str(exp.path)
    assert runs[0].config["settings"] == spec["config"]["settings"]


def test_ledger_by_version_of_an_empty_store_is_empty(store: Store) -> None:
    assert wf.ledger_by_version(store) == []
