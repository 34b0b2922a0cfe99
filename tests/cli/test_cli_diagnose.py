"""``ragmeter diagnose --experiment FILE`` and the causal section ``ragmeter run`` prints after
the variants of an experiment with context ablations (the fare-rules ablation example, run in a
copy of its folder): proven causes and what is reported apart, the inferred cells against the
proven causes, the oracle ceiling with its interval, which basis named the failing link; the
same counts in the table, in ``--format json`` and in ``ragmeter run``'s section."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from _experiment_files import FARE_RULES, fare_rules_experiment
from typer.testing import CliRunner

from ragmeter.cli import app

EXAMPLE = FARE_RULES / "ablation.toml"


def _invoke(*args: Any) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})


def _flat(text: str) -> str:
    """The output with the table rules and runs of spaces dropped (a cell may wrap)."""
    return re.sub(r"\s+", " ", re.sub(r"[│┃┏┓┗┛┡┩└┘┌┐━─┳┻╇╈┼╋├┤┣┫┠┨┯┷═]", " ", text))


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """The example run once by ``ragmeter run --no-store``: (its path, what it printed)."""
    path = fare_rules_experiment(
        tmp_path_factory.mktemp("cli-diagnose"),
        EXAMPLE.read_text(encoding="utf-8"),
        trees=("generators",),
        cache=["chunkings", "runs", "bm25"],
    )
    r = _invoke("run", path, "--no-store")
    assert r.exit_code == 0, r.output
    return path, r


@pytest.fixture(scope="module")
def as_json(ran: tuple[Path, Any]) -> dict[str, Any]:
    r = _invoke("diagnose", "--experiment", ran[0], "--format", "json")
    assert r.exit_code == 0, r.output
    return dict(json.loads(r.stdout))


def test_run_prints_the_causal_counts_and_the_command_for_the_rest(ran, as_json) -> None:
    path, r = ran
    out = _flat(r.stdout)
    assert "causal table (context sources: retrieved, oracle, none, oracle+distractors)" in out
    counts = as_json["causal"]["counts"]
    for cause in as_json["causal"]["causes"]:
        assert f"{cause['title']} {'proven' if cause['proven'] else 'apart'} {cause['count']} " in (
            out
        ), cause["cause"]
    assert sum(counts.values()) == 90
    assert "oracle ceiling: a perfect retriever at this budget: " in out
    # the section ends the table output with the command that shows it in full, unfolded
    assert r.stdout.rstrip().endswith(f"in full: ragmeter diagnose --experiment {path}")


def test_diagnose_experiment_prints_proven_inferred_and_the_ceiling(ran, as_json) -> None:
    r = _invoke("diagnose", "--experiment", ran[0])
    assert r.exit_code == 0, r.output
    out = _flat(r.stdout)
    causal = as_json["causal"]
    c = causal["ceiling"]
    assert c["n"] == 80  # the answerable questions; the 10 unanswerable are apart
    lo, hi = c["interval"]
    assert f"{c['mean']:+.2f} answer-correct rate [{lo:+.2f}, {hi:+.2f}]" in out
    assert f"(fixed {c['fixed']}, broken {c['broken']}, 80 answerable questions)" in out
    assert f"unanswerable apart {causal['counts']['unanswerable']} " in out
    # each inferred cell with what it proved to be
    assert "inferred cell -> proven causes" in out
    for cell, causes in causal["cross"].items():
        n = sum(causes.values())
        assert f"(inferred, {n})" in out, cell
    assert "basis: the failing link is named by the proven causes (largest: " in out
    assert as_json["basis"] == "proven"
    assert "next experiment (one change):" in out


def test_the_json_names_what_it_read(as_json) -> None:
    abl = as_json["ablations"]
    assert abl["variants"] == {s: s for s in ("retrieved", "oracle", "none", "oracle+distractors")}
    assert abl["left_out"] == [] and abl["no_oracle_passage"] == []
    assert len(abl["unanswerable"]) == as_json["causal"]["counts"]["unanswerable"]
    assert as_json["table"]["n"] == 80


def test_experiment_takes_no_other_input(ran) -> None:
    r = _invoke("diagnose", "--experiment", ran[0], "--golden", "golden.jsonl", "--k", 4)
    assert r.exit_code == 2
    assert "drop --golden, --k" in _flat(r.output)


def test_an_experiment_not_run_names_the_command(tmp_path: Path) -> None:
    path = fare_rules_experiment(
        tmp_path, EXAMPLE.read_text(encoding="utf-8"), trees=("generators",)
    )
    r = _invoke("diagnose", "--experiment", path)
    assert r.exit_code == 2
    assert f"run `ragmeter run {path}` first" in _flat(r.output)
    assert "Traceback" not in r.output
