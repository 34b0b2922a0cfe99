"""`ragmeter plan` / `ragmeter.plan_size`: expected paired-interval half-widths by golden-set size.

Checked three ways: hand-computed values of the formula; the RAG evaluation lesson's numbers
(one rate near 0.8 at 50 vs 200 questions; the 80-question lab); and simulation with ragmeter's
own paired bootstrap over many seeded golden sets.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import ragmeter
from ragmeter import UsageError
from ragmeter.cli import app
from ragmeter.paired import SizePlan, compare, paired_bootstrap, plan_size, read_comparison
from ragmeter.paired._plan import half_width, n_needed, z_value
from ragmeter.paired._plan_io import spread_from_record

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules" / "runs"
Z95 = 1.959963984540054


def cli(*args: str, columns: int = 80) -> tuple[int, str, str]:
    r = runner.invoke(app, [*args], env={"COLUMNS": str(columns)})
    return r.exit_code, r.stdout, r.stderr


def lab(fixed: int, broken: int, n: int = 80, right: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """The lesson's lab: A right on the first ``right``, B fixes ``fixed`` and breaks ``broken``."""
    a = np.zeros(n)
    a[:right] = 1
    b = a.copy()
    b[right : right + fixed] = 1
    b[:broken] = 0
    return a, b


# -- the formula, by hand ------------------------------------------------------------------------
def test_hand_computed_rates() -> None:
    p = plan_size(0.75, 0.125, difference=0.025, sizes=[50, 200], target=0.05)
    s = p.spread
    assert (s.fixed, s.broken) == pytest.approx((0.075, 0.05))
    assert s.var_diff == pytest.approx(0.124375)  # 0.125 - 0.025^2
    assert s.var_baseline == pytest.approx(0.1875)  # 0.75 * 0.25
    assert s.var_candidate == pytest.approx(0.174375)  # 0.775 * 0.225
    assert p.z == pytest.approx(Z95)
    r50, r200 = p.rows
    # 1.959964 * sqrt(0.124375 / 50) = 1.959964 * 0.0498749 = 0.0977529
    assert r50.paired == pytest.approx(0.0977529, abs=1e-6)
    assert r50.one_rate == pytest.approx(0.1200228, abs=1e-6)  # 1.959964 * sqrt(0.1875/50)
    assert r50.two_averages == pytest.approx(0.1667410, abs=1e-6)  # sqrt(0.361875/50)
    assert r50.expected_changed == pytest.approx(6.25) and not r50.rough
    assert r200.paired == pytest.approx(r50.paired / 2)  # four times the questions, half the width
    # n = ceil(z^2 Var / h^2): 3.841459 * 0.124375 / 0.0025 = 191.1 -> 192; 288.1 -> 289; 556.05
    assert p.n_for(0.05) == {"paired": 192, "one_rate": 289, "two_averages": 557}


def test_n_needed_is_exact_at_integers_and_minimal() -> None:
    assert n_needed(0.25, 0.1, 2.0) == 100  # 4 * 0.25 / 0.01 = 100 exactly, not 101
    assert n_needed(0.0, 0.1, 2.0) == 1
    assert z_value(0.9) == pytest.approx(1.644854, abs=1e-6)


@settings(max_examples=200, deadline=None)
@given(
    var=st.floats(1e-4, 0.25),
    target=st.floats(0.005, 0.3),
    conf=st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
def test_n_needed_is_the_smallest_size_that_reaches_the_target(
    var: float, target: float, conf: float
) -> None:
    z = z_value(conf)
    n = n_needed(var, target, z)
    assert half_width(var, n, z) <= target * (1 + 1e-9)
    if n > 1:
        assert half_width(var, n - 1, z) > target


def test_paired_width_ignores_the_baseline_rate_and_tracks_the_changes() -> None:
    """Only the questions that change move the interval: the baseline rate does not enter."""
    widths = {plan_size(p, 0.1, sizes=[100]).rows[0].paired for p in (0.3, 0.5, 0.9)}
    assert len(widths) == 1
    more = plan_size(0.5, 0.3, sizes=[100]).rows[0].paired
    assert more == pytest.approx(widths.pop() * math.sqrt(3))


def test_graded_values_use_the_variance_of_the_differences() -> None:
    base = {"q1": 0.5, "q2": 1.0, "q3": 0.75, "q4": 0.25}
    cand = {"q1": 1.0, "q2": 1.0, "q3": 0.5, "q4": 0.5}  # d = +0.5, 0, -0.25, +0.25
    c = compare(base, cand, "nDCG@3", n_resamples=200)
    p = plan_size(comparison=c, sizes=[100])
    # mean(d) = 0.125; var(d) = mean(d^2) - 0.125^2 = 0.09375 - 0.015625
    assert p.spread.difference == pytest.approx(0.125)
    assert p.spread.var_diff == pytest.approx(0.078125)
    assert p.spread.changed == pytest.approx(0.75) and not p.spread.binary
    assert p.spread.fixed is None
    assert p.rows[0].paired == pytest.approx(Z95 * math.sqrt(0.078125 / 100))


# -- the lesson's numbers -------------------------------------------------------------------------
def test_one_rate_near_08_at_50_and_200_questions() -> None:
    """The chart: a 95% interval on a rate near 0.8 is about +-0.11 at 50, +-0.055 at 200."""
    r50, r200 = plan_size(0.8, sizes=[50, 200]).rows
    assert r50.one_rate == pytest.approx(0.1109, abs=5e-4)
    assert r200.one_rate == pytest.approx(0.0554, abs=5e-4)
    assert r50.paired is None  # no discordance given: no paired width claimed


def test_lab_6_fixed_4_broken_predicts_the_reported_interval() -> None:
    """80 questions, 6 fixed and 4 broken: ragmeter reports [-0.050, +0.100] (half 0.075)."""
    a, b = lab(6, 4)
    c = compare(dict(enumerate(a)), dict(enumerate(b)), "answer correct")
    assert c.ci == pytest.approx((-0.05, 0.10))
    p = plan_size(comparison=c, sizes=[80])
    by_rates = plan_size(0.75, 10 / 80, difference=2 / 80, sizes=[80])
    assert p.rows[0].paired == pytest.approx(by_rates.rows[0].paired)
    obs = p.observed
    assert obs is not None and obs["half_width"] == pytest.approx(0.075)
    assert obs["predicted_half_width"] == pytest.approx(0.0773, abs=1e-4)
    assert abs(obs["predicted_half_width"] / 0.075 - 1) < 0.05


def test_lab_14_fixed_4_broken() -> None:
    a, b = lab(14, 4)
    c = compare(dict(enumerate(a)), dict(enumerate(b)), "answer correct")
    obs = plan_size(comparison=c).observed
    assert obs is not None and obs["ci"] == pytest.approx([0.025, 0.225])
    # Var = 18/80 - (10/80)^2 = 0.209375; 1.96 * sqrt(0.209375 / 80) = 0.1003
    assert obs["predicted_half_width"] == pytest.approx(0.1003, abs=1e-4)
    assert abs(obs["predicted_half_width"] / obs["half_width"] - 1) < 0.05


# -- simulation with ragmeter's own bootstrap -----------------------------------------------------
def _realised_half_width(n: int, p01: float, p10: float, seeds: int) -> float:
    widths = []
    for s in range(seeds):
        rng = np.random.default_rng(7_000 + s)
        d = rng.choice([1.0, -1.0, 0.0], size=n, p=[p01, p10, 1 - p01 - p10])
        iv = paired_bootstrap(d, n_resamples=2000, seed=s)
        widths.append((iv.hi - iv.lo) / 2)
    return float(np.mean(widths))


@pytest.mark.parametrize(
    "n,p01,p10",
    [
        (50, 0.06, 0.04),
        (50, 0.30, 0.20),
        (80, 0.075, 0.05),
        (100, 0.05, 0.05),
        (200, 0.10, 0.05),
        (500, 0.03, 0.02),
    ],
)
def test_simulated_bootstrap_width_matches_the_prediction(n: int, p01: float, p10: float) -> None:
    """Mean half-width of ragmeter's paired bootstrap over many simulated golden sets (150; 60
    at 500 questions) is within 10% of the plan."""
    pred = plan_size(0.6, p01 + p10, difference=p01 - p10, sizes=[n]).rows[0]
    assert not pred.rough
    # 500-question sets vary less from seed to seed (25 changes expected): fewer are enough
    real = _realised_half_width(n, p01, p10, seeds=150 if n < 500 else 60)
    assert abs(real / pred.paired - 1) < 0.10, (real, pred.paired)


def test_simulated_graded_differences_match_the_prediction() -> None:
    values, probs = np.array([-0.5, 0.0, 0.25, 1.0]), np.array([0.15, 0.55, 0.2, 0.1])
    mean = float(values @ probs)
    var = float((values - mean) ** 2 @ probs)
    n = 120
    widths = []
    for s in range(150):
        d = np.random.default_rng(9_000 + s).choice(values, size=n, p=probs)
        iv = paired_bootstrap(d, n_resamples=2000, seed=s)
        widths.append((iv.hi - iv.lo) / 2)
    pred = Z95 * math.sqrt(var / n)
    assert abs(np.mean(widths) / pred - 1) < 0.10


def test_few_changes_are_marked_rough_and_come_out_narrower() -> None:
    pred = plan_size(0.6, 0.02, sizes=[50]).rows[0]  # one question expected to change
    assert pred.rough and pred.expected_changed == pytest.approx(1.0)
    real = _realised_half_width(50, 0.01, 0.01, seeds=150)
    assert real < 0.9 * pred.paired


# -- comparison records ---------------------------------------------------------------------------
def test_record_and_comparison_agree_and_counts_fall_back(tmp_path: Path) -> None:
    a, b = lab(6, 4)
    c = compare(dict(enumerate(a)), dict(enumerate(b)), "answer correct")
    rec = json.loads(json.dumps(c.to_dict()))
    from_obj, from_rec = plan_size(comparison=c), plan_size(comparison=rec)
    assert from_rec.rows == from_obj.rows and from_rec.observed == from_obj.observed
    counts_only = {k: v for k, v in rec.items() if k != "per_query"}
    s = spread_from_record(counts_only)
    assert s.var_diff == pytest.approx(from_obj.spread.var_diff)
    assert s.observed_n == 80 and s.observed_ci == pytest.approx((-0.05, 0.10))
    path = tmp_path / "cmp.json"
    path.write_text(json.dumps(rec))
    assert read_comparison(path).var_diff == pytest.approx(0.124375)


@pytest.mark.parametrize(
    "record,message",
    [
        ([1, 2], "expected a JSON object"),
        ({"run": "x", "aggregate": {}, "per_query": {"q": {"R@5": 1}}}, "one run's evaluation"),
        ({"baseline": "a", "binary": False}, "no per-question values"),
        ({"per_query": {"q1": {"baseline": "high", "candidate": 1}}}, "per_query.q1.baseline"),
        ({"per_query": {"q1": 3}}, "per_query.q1"),
        ({"binary": True, "n": 5, "fixed": 4, "broken": 3, "baseline_mean": 0.5}, "do not fit"),
    ],
)
def test_bad_records_name_the_field(record: object, message: str) -> None:
    with pytest.raises(ragmeter.InputError, match=message):
        spread_from_record(record)


# -- bad inputs -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"baseline_rate": 1.2, "discordance": 0.1}, "baseline rate"),
        ({"baseline_rate": -0.1}, "baseline rate"),
        ({"baseline_rate": 0.7, "discordance": 1.5}, "discordance"),
        ({"baseline_rate": 0.7, "discordance": 0.05, "difference": 0.1}, "at least"),
        ({"baseline_rate": 0.95, "discordance": 0.2, "difference": 0.1}, "candidate rate"),
        ({"baseline_rate": 0.05, "discordance": 0.2}, "more than the baseline gets right"),
        ({"baseline_rate": float("nan"), "discordance": 0.1}, "finite"),
        ({"baseline_rate": 0.7, "discordance": float("inf")}, "finite"),
        ({"baseline_rate": 0.7, "discordance": 0.1, "sizes": [0, 50]}, "at least 1"),
        ({"baseline_rate": 0.7, "discordance": 0.1, "sizes": []}, "at least one"),
        ({"baseline_rate": 0.7, "discordance": 0.1, "sizes": [2.5]}, "whole number"),
        ({"baseline_rate": 0.7, "discordance": 0.1, "target": 0.0}, "positive"),
        ({"baseline_rate": 0.7, "discordance": 0.1, "target": float("nan")}, "finite"),
        ({"baseline_rate": 0.7, "discordance": 0.1, "confidence": 1.0}, "confidence"),
        ({}, "baseline rate"),
    ],
)
def test_bad_inputs_are_usage_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        plan_size(**kwargs)


def test_rates_and_a_comparison_together_are_refused() -> None:
    c = compare({"q": 1.0}, {"q": 0.0}, "answer correct", n_resamples=10)
    with pytest.raises(UsageError, match="not both"):
        plan_size(0.7, comparison=c)


# -- the command ----------------------------------------------------------------------------------
def test_cli_table_at_80_and_120_columns() -> None:
    args = (
        "plan",
        "--baseline-rate",
        "0.75",
        "--discordance",
        "0.125",
        "--difference",
        "0.025",
        "--target",
        "0.05",
    )
    for cols in (80, 120):
        code, out, err = cli(*args, columns=cols)
        assert code == 0, err
        assert "…" not in out
        assert "Var(d) = 0.1244" in " ".join(out.split())
        rows = {ln.split("│")[1].strip(): ln for ln in out.splitlines() if ln.startswith("│")}
        assert set(rows) == {"50", "100", "192", "200", "500"}
        assert "±0.098" in rows["50"] and "±0.120" in rows["50"] and "±0.167" in rows["50"]
        assert "target" in rows["192"] and "±0.050" in rows["192"]
        assert "Target ±0.05: 192 questions for the paired difference; 289" in " ".join(out.split())


def test_cli_one_rate_only_without_discordance() -> None:
    code, out, err = cli("plan", "--baseline-rate", "0.8", "--n", "50,200", "-f", "json")
    assert code == 0, err
    d = json.loads(out)
    assert [r["paired_half_width"] for r in d["rows"]] == [None, None]
    assert [round(r["one_rate_half_width"], 3) for r in d["rows"]] == [0.111, 0.055]


def test_cli_json_and_csv() -> None:
    args = ("plan", "--baseline-rate", "0.75", "--discordance", "0.04", "--n", "50,400")
    code, out, _ = cli(*args, "-f", "json")
    assert code == 0
    d = json.loads(out)
    assert d["var_diff"] == pytest.approx(0.04) and d["n_for_target"] is None
    assert [r["rough"] for r in d["rows"]] == [True, False]
    assert d["notes"] == {"50": "rough"}
    code, out, _ = cli(*args, "-f", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["n"] for r in rows] == ["50", "400"]
    assert float(rows[0]["paired_half_width"]) == pytest.approx(
        Z95 * math.sqrt(0.04 / 50), abs=1e-6
    )
    assert rows[0]["rough"] == "true" and rows[0]["note"] == "rough"


def test_cli_from_a_saved_comparison_and_from_two_evaluations(tmp_path: Path) -> None:
    base, cand = (
        str(EXAMPLE / "baseline" / "evaluation.json"),
        str(EXAMPLE / "reranker" / "evaluation.json"),
    )
    m = "AllR@budget=1200"
    code, out, err = cli("compare", base, cand, "-m", m, "--no-ledger", "-f", "json")
    assert code == 0, err
    saved = tmp_path / "cmp.json"
    saved.write_text(out)
    rec = json.loads(out)
    code, out, err = cli("plan", "--from", str(saved), "--target", "0.05", "-f", "json")
    assert code == 0, err
    d = json.loads(out)
    n, fixed, broken = rec["n"], rec["fixed"], rec["broken"]
    q, diff = (fixed + broken) / n, (fixed - broken) / n
    assert d["var_diff"] == pytest.approx(q - diff**2)
    assert d["observed"]["n"] == n and d["observed"]["ci"] == rec["ci"]
    assert d["n_for_target"]["paired"] == math.ceil(Z95**2 * (q - diff**2) / 0.05**2)
    code, out2, err = cli("plan", base, cand, "-m", m, "--target", "0.05", "-f", "json")
    assert code == 0, err
    assert json.loads(out2) == d
    code, out, err = cli("plan", "--from", str(saved))
    assert code == 0, err
    assert "This comparison: 80 questions" in " ".join(out.split())
    code, out, err = cli("plan", base, cand, "-m", "RR@4", "--confidence", "0.9", "-f", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["z"] == pytest.approx(1.644854, abs=1e-6) and not d["binary"]
    assert d["observed"]["predicted_half_width"] == pytest.approx(
        1.644854 * math.sqrt(d["var_diff"] / 80), abs=1e-6
    )


@pytest.mark.parametrize(
    "args,message",
    [
        (["--baseline-rate", "1.5", "--discordance", "0.1"], "baseline rate"),
        (["--baseline-rate", "0.7", "--discordance", "0.02", "--difference", "0.05"], "at least"),
        (["--baseline-rate", "nan", "--discordance", "0.1"], "finite"),
        (["--baseline-rate", "0.7", "--discordance", "inf"], "finite"),
        (["--baseline-rate", "0.7", "--discordance", "0.1", "--n", "0,50"], "at least 1"),
        (["--baseline-rate", "0.7", "--discordance", "0.1", "--n", "-5"], "at least 1"),
        (["--baseline-rate", "0.7", "--discordance", "0.1", "--n", "fifty"], "fifty"),
        (["--baseline-rate", "0.7", "--discordance", "0.1", "--target", "-0.05"], "positive"),
        (["--discordance", "0.1"], "--baseline-rate"),
        ([], "--baseline-rate"),
        (["--from", "x.json", "--baseline-rate", "0.7"], "one input"),
        (["--metric", "Hit@5", "--baseline-rate", "0.7"], "BASE CAND"),
        (["only-one.json"], "BASE and CAND"),
    ],
)
def test_cli_bad_inputs_exit_2_without_traceback(args: list[str], message: str) -> None:
    code, out, err = cli("plan", *args)
    assert code == 2, out
    assert message in err and "Traceback" not in err + out


def test_cli_bad_files_exit_2_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "[bold]x[red].json"
    bad.write_text("{not json")
    code, _, err = cli("plan", "--from", str(bad))
    assert code == 2 and "[bold]x[red].json" in err and "invalid JSON" in err
    code, _, err = cli("plan", "--from", str(EXAMPLE / "baseline" / "evaluation.json"))
    assert code == 2 and "one run's evaluation" in err
    code, _, err = cli("plan", "--from", str(tmp_path / "missing.json"))
    assert code == 2 and "file not found" in err


def test_public_names() -> None:
    assert ragmeter.plan_size is plan_size and ragmeter.SizePlan is SizePlan
