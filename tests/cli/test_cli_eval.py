"""`ragmeter eval`: golden outputs and input errors (exit code 2, file and line named)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter.cli import app

FIX = Path(__file__).parents[1] / "fixtures" / "toy"
GOLDEN = Path(__file__).parents[1] / "golden"
runner = CliRunner()
METRICS = "R@3,P@3,RR@3,nDCG(gain=exp)@3,nDCG@10,AP"


def _eval(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, ["eval", *args], env={"COLUMNS": "200"})
    return r.exit_code, r.stdout, r.stderr


def test_json_single_run_golden() -> None:
    code, out, _ = _eval(
        str(FIX / "qrels.txt"),
        str(FIX / "baseline.run"),
        "-m",
        METRICS,
        "--per-query",
        "--format",
        "json",
    )
    assert code == 0
    got = json.loads(out)
    got["run"] = Path(got["run"]).name
    got["config"]["qrels"] = Path(got["config"]["qrels"]).name
    want = json.loads((GOLDEN / "eval_toy_baseline.json").read_text())
    assert got == want
    assert list(got["aggregate"]) == ["R@3", "P@3", "RR@3", "nDCG(gain=exp)@3", "nDCG@10", "AP"]


def test_json_several_runs_is_a_list() -> None:
    code, out, _ = _eval(
        str(FIX / "qrels.txt"),
        str(FIX / "baseline.run"),
        str(FIX / "reranked.run"),
        "-m",
        "nDCG(gain=exp)@3",
        "--format",
        "json",
    )
    assert code == 0
    objs = json.loads(out)
    assert [round(o["aggregate"]["nDCG(gain=exp)@3"], 2) for o in objs] == [0.48, 0.69]
    assert all("per_query" not in o for o in objs)
    assert all(
        o["n_queries"] == 6 and o["n_missing"] == 0 and o["n_no_relevant"] == 0 for o in objs
    )


def test_csv_golden() -> None:
    code, out, _ = _eval(
        str(FIX / "qrels.txt"),
        str(FIX / "reranked.run"),
        "-m",
        "RR@3,P@3",
        "--format",
        "csv",
        "--per-query",
    )
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0] == "run,query,RR@3,P@3"
    assert lines[-1].endswith(",all,0.638889,0.388889")
    assert len(lines) == 1 + 6 + 1


def test_table_prints_canonical_names_and_counts() -> None:
    code, out, _ = _eval(
        str(FIX / "qrels.txt"), str(FIX / "baseline.run"), "-m", "MRR@3,nDCG(gain=exp)@3"
    )
    assert code == 0
    assert "RR@3" in out and "nDCG(gain=exp)@3" in out and "MRR" not in out
    assert "0.4722" in out and "0.4806" in out


def test_unknown_metric_exit_2_with_suggestion() -> None:
    code, _, err = _eval(str(FIX / "qrels.txt"), str(FIX / "baseline.run"), "-m", "nDGC@3")
    assert code == 2
    assert "Did you mean 'nDCG'" in err


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("q Q0 d 1 0.5 tag\nq Q0 e 2 notanumber tag\n", ":2"),
        ("q Q0 d 1 0.5 tag\nq Q0 e 2 nan tag\n", ":2"),
        ("q Q0 d 1 0.5\n", ":1"),
        ("", "empty"),
    ],
)
def test_bad_run_exit_2_names_file_and_line(tmp_path: Path, content: str, fragment: str) -> None:
    bad = tmp_path / "bad.run"
    bad.write_text(content)
    code, out, err = _eval(str(FIX / "qrels.txt"), str(bad), "-m", "RR")
    assert code == 2
    assert "Traceback" not in err + out
    assert "bad.run" in err and fragment in err


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    code, out, err = _eval(str(FIX / "qrels.txt"), str(tmp_path / "nope.run"), "-m", "RR")
    assert code == 2
    assert "nope.run" in err and "Traceback" not in err + out


def test_k_without_golden_is_a_usage_error() -> None:
    code, _, err = _eval(str(FIX / "qrels.txt"), str(FIX / "baseline.run"), "--k", "3")
    assert code == 2 and "--golden" in err
