"""`ragmeter compare` and `ragmeter gate` with `--traffic LOG` / `--traffic-shares`: the
difference weighted to traffic beside the unweighted headline."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ragmeter import Evaluation
from ragmeter.cli import app
from ragmeter.metrics import parse

runner = CliRunner()
M = "Hit@3"
# per slice: baseline, candidate outcomes; a: +1, 0, 0, +1; b: 0, -1, 0; c: +1, +1, 0, 0, 0
SIDES = {
    "a": ([0, 1, 0, 0], [1, 1, 0, 1]),
    "b": ([0, 1, 1], [0, 0, 1]),
    "c": ([0, 0, 1, 0, 0], [1, 1, 1, 0, 0]),
}


def cli(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, [*args], env={"COLUMNS": "200"})
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture()
def runs(tmp_path: Path) -> tuple[str, str]:
    paths = []
    for side, name in ((0, "base"), (1, "cand")):
        qids, values, slices = [], [], {}
        for s, pair in SIDES.items():
            for i, v in enumerate(pair[side]):
                q = f"{s}{i}"
                qids.append(q)
                values.append(v)
                slices[q] = (s,)
        e = Evaluation(name, (parse(M),), tuple(qids), np.array(values, dtype=float), slices=slices)
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(e.to_dict()))
        paths.append(str(p))
    return paths[0], paths[1]


COMMON = ["-m", M, "--no-store", "--resamples", "2000", "--seed", "3"]


def test_compare_with_given_shares(runs: tuple[str, str]) -> None:
    code, out, err = cli(
        "compare", *runs, *COMMON, "--no-ledger", "--traffic-shares", "a=0.5,b=0.3,c=0.2"
    )
    assert code == 0, err
    # 0.5*0.5 - 0.3/3 + 0.2*0.4 = 0.23, beside the unweighted 3/12 = 0.25
    assert "weighted to traffic: +0.230" in out
    assert "Weighted to traffic (given shares): +0.230" in out and "unweighted +0.250" in out
    assert "Weight carried by a 50% of traffic vs 33% of questions" in out
    code, out, err = cli(
        "compare",
        *runs,
        *COMMON,
        "--no-ledger",
        "--traffic-shares",
        "a=0.5,b=0.3,c=0.2",
        "-f",
        "json",
    )
    assert code == 0, err
    d = json.loads(out)
    assert d["mean_delta"] == pytest.approx(0.25)
    assert d["traffic"]["estimate"] == pytest.approx(0.23)
    assert [s["slice"] for s in d["traffic"]["slices"]] == ["a", "b", "c"]
    lo, hi = d["traffic"]["ci"]
    assert lo < 0.23 < hi
    # without the options the JSON is as before: no "traffic" key
    code, out, err = cli("compare", *runs, *COMMON, "--no-ledger", "-f", "json")
    assert code == 0 and "traffic" not in json.loads(out)


def test_compare_with_a_log_and_the_gate(runs: tuple[str, str], tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    counts = {"a": 5, "b": 3, "c": 2}
    log.write_text(
        "".join(
            json.dumps({"question": f"{s} {i}", "slice": s}) + "\n"
            for s, n in counts.items()
            for i in range(n)
        )
    )
    code, out, err = cli(
        "compare", *runs, *COMMON, "--no-ledger", "--traffic", str(log), "-f", "json"
    )
    assert code == 0, err
    t = json.loads(out)["traffic"]
    assert t["estimate"] == pytest.approx(0.23)
    assert t["traffic"]["source"] == f"log {log}" and t["traffic"]["lines"] == 10
    # the gate reports it and decides as without it
    gate = ["gate", *runs, *COMMON, "--max-broken", "0"]
    code_plain, _, _ = cli(*gate, "-f", "json")
    code, out, err = cli(*gate, "--traffic", str(log), "-f", "json")
    assert code == code_plain == 1  # one question broken in slice b
    assert json.loads(out)["traffic"]["estimate"] == pytest.approx(0.23)
    md = tmp_path / "gate.md"
    code, out, err = cli(*gate, "--traffic", str(log), "--markdown", str(md))
    assert code == 1
    report = md.read_text()
    assert "### Weighted to traffic (reported, not gated)" in report
    assert "| a | 4 | 33.3% | 50.0% | x1.50 | +0.500 | +0.250 |" in report
    assert "Reported, not gated:" in out and "gate FAILED" in out
    assert "Weighted to traffic (log " in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--traffic-shares", "a=0.5,b=0.3,d=0.2"], "traffic slice 'd'"),
        (["--traffic-shares", "a=0.5,b=0.3,c=0.3"], "must sum to 1"),
        (["--traffic-shares", "a=0.5,b=0.6,c=-0.1"], "negative"),
        (["--traffic-shares", "a=1,=0"], "empty slice name"),
        (["--traffic-shares", "a=1", "--traffic", "log.jsonl"], "not both"),
        (["--traffic", "missing-log.jsonl"], "missing-log.jsonl"),
    ],
)
def test_bad_traffic_is_a_usage_error(
    runs: tuple[str, str], extra: list[str], message: str
) -> None:
    code, _, err = cli("compare", *runs, *COMMON, "--no-ledger", *extra)
    assert code == 2
    assert message in " ".join(err.split())
    assert "Traceback" not in err


def test_outcome_files_carry_no_slices(tmp_path: Path) -> None:
    a, b = tmp_path / "A.csv", tmp_path / "B.csv"
    a.write_text("id,correct\nq1,1\nq2,0\n")
    b.write_text("id,correct\nq1,1\nq2,1\n")
    code, _, err = cli(
        "compare", str(a), str(b), "--no-store", "--no-ledger", "--traffic-shares", "x=1"
    )
    assert code == 2 and "carry no slices" in " ".join(err.split())
