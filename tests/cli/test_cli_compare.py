"""`ragmeter compare`, `ragmeter gate` and `ragmeter sweep` end to end."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ragmeter import Evaluation
from ragmeter.cli import app
from ragmeter.metrics import parse

FIX = Path(__file__).parents[1] / "fixtures" / "toy"
GOLDEN = Path(__file__).parents[1] / "golden"
runner = CliRunner()
M = "nDCG(gain=exp)@3"


def cli(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    r = runner.invoke(app, [*args], env={"COLUMNS": "200"})
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture()
def toy_json(tmp_path: Path) -> tuple[Path, Path]:
    """The toy runs scored by `ragmeter eval --per-query --format json`."""
    out = []
    for name in ("baseline", "reranked"):
        code, text, err = cli(
            "eval",
            str(FIX / "qrels.txt"),
            str(FIX / f"{name}.run"),
            "-m",
            f"{M},Hit@3",
            "--per-query",
            "--format",
            "json",
        )
        assert code == 0, err
        p = tmp_path / f"{name}.json"
        p.write_text(text)
        out.append(p)
    return out[0], out[1]


def tmp_ledger(tmp_path: Path) -> list[str]:
    return ["--ledger", str(tmp_path / "ledger.jsonl")]


def test_compare_eval_json_matches_golden(toy_json, tmp_path: Path) -> None:
    base, rer = toy_json
    code, out, err = cli("compare", str(base), str(rer), "-m", M, "--format", "json", "--no-ledger")
    assert code == 0, err
    d = json.loads(out)
    assert (d["wins"], d["losses"], d["ties"]) == (4, 1, 1)
    assert d["metric"] == M and d["fixed"] is None
    assert [m["qid"] for m in d["movers"]["worsened"]] == ["rule_16_code"]
    assert round(d["movers"]["worsened"][0]["delta"], 2) == -0.5
    for side in ("baseline", "candidate"):
        d[side] = Path(d[side]).name
    want = json.loads((GOLDEN / "compare_toy.json").read_text())
    assert d == want


def test_compare_runs_with_qrels_prints_table_and_movers(tmp_path: Path) -> None:
    code, out, err = cli(
        "compare",
        str(FIX / "baseline.run"),
        str(FIX / "reranked.run"),
        "--qrels",
        str(FIX / "qrels.txt"),
        "-m",
        M,
        *tmp_ledger(tmp_path),
    )
    assert code == 0, err
    assert "4/1/1" in out and "rule_16_code" in out and "1 -> 3" in out
    assert "Verdict: interval includes zero: consistent with no difference." in out
    assert "paired percentile bootstrap, 5000 resamples, seed 0" in out


def test_compare_binary_shows_fixed_and_broken(toy_json, tmp_path: Path) -> None:
    base, rer = toy_json
    code, out, _ = cli("compare", str(base), str(rer), "-m", "Hit@3", *tmp_ledger(tmp_path))
    assert code == 0
    assert "fixed/broken" in out and "1/0" in out and "fixed" in out


def lab_files(tmp_path: Path, fixed: int, broken: int, version: str = "g1") -> tuple[Path, Path]:
    a = np.zeros(80)
    a[:60] = 1
    b = a.copy()
    b[60 : 60 + fixed] = 1
    b[:broken] = 0
    qids = tuple(f"q{i:02d}" for i in range(80))
    slices = {q: ("rule codes",) if i < 8 else ("fees",) for i, q in enumerate(qids)}
    paths = []
    for name, v in (("A", a), ("B", b)):
        e = Evaluation(
            name,
            (parse("AllR@budget=1200"),),
            qids,
            v[:, None],
            golden_version=version,
            slices=slices,
        )
        p = tmp_path / f"{name}-{fixed}-{broken}.json"
        p.write_text(json.dumps(e.to_dict()))
        paths.append(p)
    return paths[0], paths[1]


def test_compare_lab_json_and_small_slice_warning(tmp_path: Path) -> None:
    a, b = lab_files(tmp_path, 6, 4)
    code, out, err = cli("compare", str(a), str(b), "--format", "json", *tmp_ledger(tmp_path))
    assert code == 0
    d = json.loads(out)
    assert d["metric"] == "AllR@budget=1200"
    assert [round(x, 3) for x in d["ci"]] == [-0.05, 0.1] and round(d["sign_test_p"], 2) == 0.75
    assert (d["fixed"], d["broken"]) == (6, 4)
    assert "direction, not proof: rule codes" in err
    code, out, _ = cli("compare", str(a), str(b), *tmp_ledger(tmp_path))
    assert "a direction, not proof" in out and "sign test p = 0.75" in out


def outcome_files(tmp_path: Path, fixed: int, broken: int) -> tuple[Path, Path]:
    """The hands-on lab's outcomes as a notebook hands them: A as CSV, B as JSON Lines."""
    a = [1] * 60 + [0] * 20  # A answers 60 of 80 correctly
    b = list(a)
    b[60 : 60 + fixed] = [1] * fixed  # B fixes `fixed` questions A got wrong
    b[:broken] = [0] * broken  # and breaks `broken` A got right
    pa, pb = tmp_path / f"A-{fixed}-{broken}.csv", tmp_path / f"B-{fixed}-{broken}.jsonl"
    pa.write_text("id,correct\n" + "".join(f"q{i:02d},{v}\n" for i, v in enumerate(a)))
    pb.write_text(
        "".join(json.dumps({"id": f"q{i:02d}", "correct": v}) + "\n" for i, v in enumerate(b))
    )
    return pa, pb


def test_the_hands_on_lab_reproduces_from_outcome_files(tmp_path: Path) -> None:
    # the design source's table: A 60 of 80, B 62 of 80, fixed 6 / broken 4, interval -0.050 to
    # +0.100, sign test p 0.75; then B fixing 14 and breaking 4: the interval leaves zero
    a, b = outcome_files(tmp_path, 6, 4)
    code, out, err = cli("compare", str(a), str(b), "-f", "json", *tmp_ledger(tmp_path))
    assert code == 0, err
    d = json.loads(out)
    assert (d["baseline_mean"], d["candidate_mean"]) == (0.75, 0.775)
    assert (d["fixed"], d["broken"]) == (6, 4) and d["outcome"] == "correct"
    assert [f"{x:+.3f}" for x in d["ci"]] == ["-0.050", "+0.100"]
    assert round(d["sign_test_p"], 2) == 0.75
    code, out, _ = cli("compare", str(a), str(b), *tmp_ledger(tmp_path))
    assert "B-6-4 vs A-6-4 on correct" in out and "[-0.050, +0.100]" in out
    assert "sign test p = 0.75" in out
    a, b = outcome_files(tmp_path, 14, 4)
    code, out, _ = cli("compare", str(a), str(b), "-f", "json", *tmp_ledger(tmp_path))
    d = json.loads(out)
    assert (d["fixed"], d["broken"]) == (14, 4) and d["mean_delta"] == pytest.approx(0.125)
    assert d["ci"][0] > 0 and d["verdict"].endswith("(interval excludes zero)")
    assert round(d["sign_test_p"], 3) == 0.031


def test_outcome_files_refuse_a_metric_and_name_a_bad_row(tmp_path: Path) -> None:
    a, b = outcome_files(tmp_path, 6, 4)
    code, _, err = cli("compare", str(a), str(b), "-m", "R@4", *tmp_ledger(tmp_path))
    assert code == 2 and "drop --metric" in err
    a.write_text("id,correct\nq00,1\nq01,maybe\n")
    code, _, err = cli("compare", str(a), str(b), *tmp_ledger(tmp_path))
    assert code == 2 and f"{a}:3" in err and "'maybe' is not a number" in err


def test_list_of_runs_needs_a_selector(tmp_path: Path) -> None:
    code, out, err = cli(
        "eval",
        str(FIX / "qrels.txt"),
        str(FIX / "baseline.run"),
        str(FIX / "reranked.run"),
        "-m",
        M,
        "--per-query",
        "--format",
        "json",
    )
    both = tmp_path / "both.json"
    both.write_text(out)
    code, _, err = cli("compare", str(both), str(both), "-m", M, *tmp_ledger(tmp_path))
    assert code == 2 and "holds 2 runs" in err and "#RUN" in err
    runs = [o["run"] for o in json.loads(out)]
    code, out, err = cli(
        "compare",
        f"{both}#{runs[0]}",
        f"{both}#{runs[1]}",
        "-m",
        M,
        "--format",
        "json",
        *tmp_ledger(tmp_path),
    )
    assert code == 0, err and json.loads(out)["wins"] == 4
    code, _, err = cli("compare", f"{both}#nope", str(both), "-m", M, *tmp_ledger(tmp_path))
    assert code == 2 and "no run named 'nope'" in err


def test_bad_inputs_exit_2_with_file_and_line(tmp_path: Path, toy_json) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"run": "x",\n  "per_query": {oops}}')
    code, _, err = cli("compare", str(bad), str(bad), *tmp_ledger(tmp_path))
    assert code == 2 and f"{bad}:2" in err.replace("\n", "")
    code, _, err = cli("compare", str(tmp_path / "missing.json"), str(bad), *tmp_ledger(tmp_path))
    assert code == 2 and "cannot read" in err
    base, rer = toy_json
    code, _, err = cli("compare", str(base), str(rer), *tmp_ledger(tmp_path))
    assert code == 2 and "name the metric" in err
    a, _ = lab_files(tmp_path, 6, 4, "g1")
    _, b2 = lab_files(tmp_path, 5, 4, "g2")
    code, _, err = cli("compare", str(a), str(b2), *tmp_ledger(tmp_path))
    assert code == 2 and "golden set version g1" in err


def test_ledger_counts_in_the_current_directory(tmp_path: Path, monkeypatch) -> None:
    """With --no-store the ledger is the JSONL file under the current directory (with the
    store, its ledger: tests/cli/test_cli_store.py)."""
    monkeypatch.chdir(tmp_path)
    a, b = lab_files(tmp_path, 6, 4)
    _, c = lab_files(tmp_path, 14, 4)
    cli("compare", str(a), str(b), "--no-ledger", "--no-store")
    assert not (tmp_path / ".ragmeter").exists()
    code, out, _ = cli("compare", str(a), str(b), "--no-store")
    assert "Selection: 1 variant(s) tried on golden set g1." in out
    # a second candidate of a different name: two variants, optimism reported
    c.write_text(c.read_text().replace('"run": "B"', '"run": "B2"'))
    code, out, err = cli("compare", str(a), str(c), "--no-store")
    assert code == 0
    assert "Selection: 2 variant(s) tried on golden set g1; the best of 2" in out
    assert "2 variants have been tried" in err
    lines = (tmp_path / ".ragmeter" / "ledger.jsonl").read_text().splitlines()
    assert len(lines) == 2


def gate_args(tmp_path: Path, fixed: int, broken: int) -> list[str]:
    a, b = lab_files(tmp_path, fixed, broken)
    return [
        "gate",
        str(a),
        str(b),
        "--metric",
        "AllR@budget=1200",
        "--max-broken",
        "2",
        "--min-delta",
        "0",
        "--require-ci-above",
        "-0.01",
        "--markdown",
        str(tmp_path / "gate.md"),
        "--junit",
        str(tmp_path / "gate.xml"),
    ]


def test_gate_passes_on_a_good_pair(tmp_path: Path) -> None:
    code, out, err = cli(*gate_args(tmp_path, 14, 2))
    assert code == 0, err
    assert out.index("Rule: The candidate fails on AllR@budget=1200 if more than 2") < out.index(
        "interval"
    )
    assert "gate passed" in out
    suite = ET.parse(tmp_path / "gate.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "0" and suite.get("tests") == "3"
    assert (tmp_path / "gate.md").read_text().startswith("## ragmeter gate PASSED")


def test_gate_fails_on_a_regressing_pair(tmp_path: Path) -> None:
    code, out, _ = cli(*gate_args(tmp_path, 6, 4))
    assert code == 1
    assert "overall: broken = 4 (limit 2): FAIL" in out and "gate FAILED" in out
    suite = ET.parse(tmp_path / "gate.xml").getroot().find("testsuite")
    assert suite is not None and int(suite.get("failures", "0")) >= 1
    md = (tmp_path / "gate.md").read_text()
    assert (
        md.startswith("## ragmeter gate FAILED") and "| overall | broken | 4 | 2 | **FAIL** |" in md
    )


def test_gate_per_slice_and_json(tmp_path: Path) -> None:
    args = gate_args(tmp_path, 14, 2)
    code, out, _ = cli(*args, "--per-slice", "--format", "json")
    d = json.loads(out)
    assert code == 0 and d["passed"] is True
    scopes = {c["scope"] for c in d["checks"]}
    assert scopes == {"overall", "slice fees"}
    assert d["skipped"] == [{"slice": "rule codes", "n": 8}]  # 8 questions: not gated


def test_gate_without_a_rule_is_a_usage_error(tmp_path: Path) -> None:
    a, b = lab_files(tmp_path, 6, 4)
    code, _, err = cli("gate", str(a), str(b))
    assert code == 2 and "needs a rule" in err


def test_sweep_prints_the_crossover_and_headroom(tmp_path: Path) -> None:
    from test_sweep import sample_leaders, simulate

    qrels, runs = simulate(seed=1)
    at = sample_leaders(1).index("B") + 1  # this sample's crossover, computed by hand
    qp = tmp_path / "qrels.txt"
    qp.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    paths = []
    for name, run in runs.items():
        p = tmp_path / f"{name}.run"
        p.write_text(
            "".join(
                f"{q} Q0 {d} {i + 1} {s} {name}\n"
                for q, docs in run.items()
                for i, (d, s) in enumerate(docs.items())
            )
        )
        paths.append(str(p))
    code, out, err = cli("sweep", *paths, "--qrels", str(qp), "-m", "R,MRR", "--k", "1..20")
    assert code == 0, err
    assert f"A leads R@k for k < {at}, B from k = {at}." in out
    assert "A leads RR@k at every k from 1 to 20." in out
    assert "Pool headroom, R@100 (not quality" in out and "B 1.000" in out
    code, out, _ = cli(
        "sweep", *paths, "--qrels", str(qp), "-m", "R", "--k", "1..20", "--format", "json"
    )
    d = json.loads(out)
    assert d[0]["crossovers"] == [{"at": at, "from": "A", "to": "B"}]
    code, _, err = cli("sweep", *paths, "--qrels", str(qp), "--k", "20..1")
    assert code == 2 and "upwards" in err


def test_sweep_token_budgets_with_span_labels(tmp_path: Path) -> None:
    from test_sweep import budget_scenario

    from ragmeter.data.golden import write_golden

    golden, runs = budget_scenario()
    gp = write_golden(golden, tmp_path / "golden.jsonl")
    args = ["sweep"]
    chunk_args = []
    for name, (chunking, run) in runs.items():
        cp = chunking.save(tmp_path / f"{name}.chunks.jsonl")
        rp = tmp_path / f"{name}.run"
        rp.write_text(
            "".join(
                f"{q} Q0 {d} {i + 1} {s} {name}\n"
                for q, docs in run.items()
                for i, (d, s) in enumerate(docs.items())
            )
        )
        args.append(str(rp))
        chunk_args += ["--chunks", str(cp)]
    code, out, err = cli(
        *args,
        "--golden",
        str(gp),
        *chunk_args,
        "-m",
        "R",
        "--budget",
        "100..1200:300",
        "--headroom-k",
        "10",
    )
    assert code == 0, err
    # S fits 1, 4, 7, 10 chunks; L 0, 1, 2, 3: L leads while S's evidence sits below its budget
    assert (
        "no run (tie) leads R@budget for budget < 400, L for 400 <= budget < 700, "
        "S from budget = 700."
    ) in out
    assert "R@k" not in out
    code, out, _ = cli(
        *args,
        "--golden",
        str(gp),
        *chunk_args,
        "-m",
        "R",
        "--budget",
        "700",
        "--k",
        "1..3",
        "--format",
        "json",
    )
    assert [s["metric"] for s in json.loads(out)] == ["R@k", "R@budget"]
    code, _, err = cli(*args, "--qrels", str(gp), "--budget", "300")
    assert code == 2 and "--budget needs span labels" in err
    code, _, err = cli(
        *args, "--golden", str(gp), *chunk_args[:2], "--chunks", str(gp), "--chunks", str(gp)
    )
    assert code == 2 and "once per run" in err


def test_compare_chunkings_from_span_labels_fair_at_a_budget_only(tmp_path: Path) -> None:
    from test_sweep import budget_scenario

    from ragmeter.data.golden import write_golden

    golden, runs = budget_scenario()
    gp = write_golden(golden, tmp_path / "golden.jsonl")
    paths, chunk_args = [], []
    for name, (chunking, run) in runs.items():
        chunk_args += ["--chunks", str(chunking.save(tmp_path / f"{name}.chunks.jsonl"))]
        rp = tmp_path / f"{name}.run"
        rp.write_text(
            "".join(
                f"{q} Q0 {d} {i + 1} {s} {name}\n"
                for q, docs in run.items()
                for i, (d, s) in enumerate(docs.items())
            )
        )
        paths.append(str(rp))
    code, out, err = cli(
        "compare",
        *paths,
        "--golden",
        str(gp),
        *chunk_args,
        "-m",
        "R@budget=900",
        "--format",
        "json",
        *tmp_ledger(tmp_path),
    )
    assert code == 0, err
    d = json.loads(out)
    assert [c["key"] for c in d["config_diff"]] == ["chunking"] and d["fairness"] == []
    assert d["mean_delta"] == pytest.approx(0.75 - 1.0)  # S -> L at 900 tokens
    code, out, err = cli(
        "compare",
        *paths,
        "--golden",
        str(gp),
        *chunk_args,
        "-m",
        "R@3",
        "--strict",
        *tmp_ledger(tmp_path),
    )
    assert code == 2 and "different chunkings" in err and "R@budget=1200" in err
