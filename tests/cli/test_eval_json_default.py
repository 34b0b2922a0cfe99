"""``ragmeter eval --format json`` prints the aggregate record; per-query values, details,
slices and splits only with ``--per-query`` (the store keeps them either way)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ragmeter
from ragmeter.cli import app
from ragmeter.store import Store

FIX = Path(__file__).parents[1] / "fixtures" / "toy"
QRELS, BASE, RERANKED = FIX / "qrels.txt", FIX / "baseline.run", FIX / "reranked.run"
METRICS = "nDCG@3,RR@3,P@3,AP"
PER_QUERY_KEYS = {"per_query", "details", "slices", "splits"}
runner = CliRunner()


def _json(*args: object) -> object:
    r = runner.invoke(app, ["eval", *map(str, args), "-m", METRICS, "-f", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_default_json_is_the_aggregate_record() -> None:
    got = _json(QRELS, BASE, "--no-store")
    e = ragmeter.evaluate(QRELS, BASE, METRICS.split(","))
    assert e.details  # the evaluation has details; the default record leaves them out
    full = json.loads(json.dumps(e.to_dict(per_query=True)))
    want = {k: v for k, v in full.items() if k not in PER_QUERY_KEYS}
    want["run"], want["config"]["qrels"] = str(BASE), str(QRELS)
    assert got == want
    assert list(got) == [
        "run", "n_queries", "n_missing", "n_no_relevant", "aggregate", "missing_ids",
        "no_relevant_ids", "golden_version", "config",
    ]  # fmt: skip


def test_per_query_json_has_values_and_details() -> None:
    got = _json(QRELS, BASE, "--no-store", "--per-query")
    e = ragmeter.evaluate(QRELS, BASE, METRICS.split(","))
    assert got["per_query"] == e.per_query
    assert got["details"] == {q: dict(v) for q, v in e.details.items()}
    assert got["details"]["name_change"]["n_retrieved"] == 8


@pytest.mark.parametrize("per_query", [False, True])
def test_several_runs_are_a_list_of_records(per_query: bool) -> None:
    flags = ["--per-query"] if per_query else []
    got = _json(QRELS, BASE, RERANKED, "--no-store", *flags)
    assert isinstance(got, list) and [o["run"] for o in got] == [str(BASE), str(RERANKED)]
    for o in got:
        assert (PER_QUERY_KEYS - {"slices", "splits"} <= set(o)) is per_query
        assert not (set(o) & PER_QUERY_KEYS) or per_query


def test_the_store_keeps_per_query_values_and_details_either_way(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    e = ragmeter.evaluate(QRELS, BASE, METRICS.split(","))
    for flags in ([], ["--per-query"]):
        r = runner.invoke(
            app, ["eval", str(QRELS), str(BASE), "-m", METRICS, "-f", "json", "--db", db, *flags]
        )
        assert r.exit_code == 0, r.output
        assert ("per_query" in json.loads(r.stdout)) is bool(flags)
    with Store.open(db) as store:
        runs = store.runs()
        assert len(runs) == 2
        for run in runs:
            back = store.evaluation(run.id, "eval")
            assert back.values.tobytes() == e.values.tobytes()
            assert back.query_ids == e.query_ids
            assert {q: dict(v) for q, v in back.details.items()} == {
                q: dict(v) for q, v in e.details.items()
            }


def test_csv_and_table_are_unchanged_by_the_json_record() -> None:
    r = runner.invoke(app, ["eval", str(QRELS), str(BASE), "-m", "RR@3", "-f", "csv", "--no-store"])
    assert r.exit_code == 0
    assert r.stdout.strip().splitlines() == ["run,query,RR@3", f"{BASE},all,0.472222"]
