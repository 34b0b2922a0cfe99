"""Judge validation on hand-built label sets with known kappa."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ragmeter import ValidationError
from ragmeter.answers.judge_validation import (
    JudgeLabel,
    cohen_kappa,
    confusion_matrix,
    kappa_from_confusion,
    load_judge_labels,
    validate_judge,
)
from ragmeter.cli import app


def _pairs_from_confusion(c: list[list[int]], labels: list[str]) -> tuple[list[str], list[str]]:
    human, judge = [], []
    for i, row in enumerate(c):
        for j, n in enumerate(row):
            human += [labels[i]] * n
            judge += [labels[j]] * n
    return human, judge


def _sklearn_kappa(y1: list[str], y2: list[str]) -> float:
    """sklearn.metrics.cohen_kappa_score's formula, written out by hand (unweighted):
    confusion = confusion_matrix(y1, y2); expected = outer(sum0, sum1) / sum(sum0);
    w = 1 - eye; kappa = 1 - sum(w * confusion) / sum(w * expected)."""
    labels = sorted(set(y1) | set(y2))
    idx = {lab: i for i, lab in enumerate(labels)}
    conf = np.zeros((len(labels), len(labels)))
    for a, b in zip(y1, y2, strict=True):
        conf[idx[a], idx[b]] += 1
    sum0, sum1 = conf.sum(axis=0), conf.sum(axis=1)
    expected = np.outer(sum0, sum1) / sum0.sum()
    w = np.ones_like(conf) - np.eye(len(labels))
    return float(1 - (w * conf).sum() / (w * expected).sum())


def test_known_kappa_two_classes() -> None:
    # 50 items: humans say supported 25, unsupported 25; the judge agrees on 20 + 15.
    # p_o = 35/50 = 0.70; p_e = 0.5*0.6 + 0.5*0.4 = 0.50; kappa = (0.70 - 0.50) / 0.50 = 0.40
    human, judge = _pairs_from_confusion([[20, 5], [10, 15]], ["supported", "unsupported"])
    assert cohen_kappa(human, judge) == pytest.approx(0.40, abs=1e-12)
    assert _sklearn_kappa(human, judge) == pytest.approx(0.40, abs=1e-12)
    v = validate_judge(
        {f"a{i}": h for i, h in enumerate(human)},
        [JudgeLabel(f"a{i}", j) for i, j in enumerate(judge)],
    )
    assert v.n == 50 and v.labels == ("supported", "unsupported")
    assert v.confusion.tolist() == [[20, 5], [10, 15]]
    assert v.agreement == pytest.approx(0.70) and v.kappa == pytest.approx(0.40)
    assert v.per_class["supported"]["agreement"] == pytest.approx(20 / 25)
    assert v.per_class["supported"]["precision"] == pytest.approx(20 / 30)
    assert v.per_class["unsupported"]["agreement"] == pytest.approx(15 / 25)
    assert v.per_class["unsupported"]["precision"] == pytest.approx(15 / 20)
    # the disagreements themselves, not only the rate
    assert len(v.disagreements) == 15
    assert sum(1 for _, h, j in v.disagreements if h == "supported" and j == "unsupported") == 5


def test_known_kappa_three_classes_matches_sklearn_formula() -> None:
    # p_o = (10+8+9)/40 = 0.675; row sums 14, 13, 13; column sums 13, 14, 13
    # p_e = (14*13 + 13*14 + 13*13) / 1600 = 533/1600; kappa = (0.675 - p_e) / (1 - p_e)
    c = [[10, 2, 2], [3, 8, 2], [0, 4, 9]]
    human, judge = _pairs_from_confusion(c, ["no", "partly", "yes"])
    pe = 533 / 1600
    expected = (0.675 - pe) / (1 - pe)
    assert cohen_kappa(human, judge) == pytest.approx(expected, abs=1e-12)
    assert _sklearn_kappa(human, judge) == pytest.approx(expected, abs=1e-12)
    assert kappa_from_confusion(
        confusion_matrix(human, judge, ["no", "partly", "yes"])
    ) == pytest.approx(expected)


def test_perfect_and_chance_agreement() -> None:
    assert cohen_kappa(["a", "b", "a"], ["a", "b", "a"]) == 1.0
    # judge always says "a": p_o = 0.5, p_e = 0.5 -> kappa 0
    assert cohen_kappa(["a", "b", "a", "b"], ["a", "a", "a", "a"]) == pytest.approx(0.0)


def test_failures_flips_and_repeats() -> None:
    human = {"p1": "a", "p2": "b", "p3": "a", "p4": "tie", "p5": "a"}
    judged = [
        JudgeLabel("p1", "a", 0, "ab", 1.0),
        JudgeLabel("p1", "a", 0, "ba"),
        JudgeLabel("p2", "b", 0, "ab", 0.0),
        JudgeLabel("p2", "a", 0, "ba"),  # flip
        JudgeLabel("p3", "b", 0, "ab", 0.0),
        JudgeLabel("p3", "b", 0, "ba"),
        JudgeLabel("p4", None, 0, "ab"),  # failed judgement
        JudgeLabel("p1", "a", 1, "ab", 1.0),
        JudgeLabel("p2", "a", 1, "ab", 1.0),  # unstable
        JudgeLabel("p3", "b", 1, "ab", 0.5),
    ]
    v = validate_judge(human, judged)
    assert v.failed == ("p4",) and v.unlabelled == ("p5",)
    assert v.n == 3 and v.agreement == pytest.approx(2 / 3)
    assert v.agreement_all == pytest.approx(2 / 4)  # the failure counts as a disagreement
    assert v.order_pairs == 3 and v.order_flips == ("p2",)
    assert v.n_runs == 2 and v.unstable == ("p2",)
    # score variance per item across runs: p1 0, p2 var(0,1)=0.25, p3 var(0,0.5)=0.0625
    assert v.score_variance == pytest.approx((0 + 0.25 + 0.0625) / 3)
    assert v.disagreements == (("p3", "a", "b"),)


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_cli_validate(tmp_path: Path) -> None:
    human, judge = _pairs_from_confusion([[20, 5], [10, 15]], ["supported", "unsupported"])
    h = _write(tmp_path / "human.jsonl", [{"id": f"a{i}", "label": x} for i, x in enumerate(human)])
    info = {
        "name": "FAKE JUDGE (rule-based, not a model)",
        "model": "fake-rules-v1",
        "params": {},
        "fake": True,
    }
    j = _write(
        tmp_path / "judge.jsonl",
        [{"id": f"a{i}", "label": x, "judge": info} for i, x in enumerate(judge)],
    )
    r = CliRunner().invoke(
        app, ["judge", "validate", "--human", str(h), "--judge", str(j), "--format", "json"]
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["kappa"] == pytest.approx(0.4) and out["confusion"]["rows_human_cols_judge"] == [
        [20, 5],
        [10, 15],
    ]
    assert len(out["disagreements"]) == 15
    r = CliRunner().invoke(app, ["judge", "validate", "--human", str(h), "--judge", str(j)])
    assert r.exit_code == 0 and "kappa 0.400" in r.stdout and "FAKE JUDGE" in r.stdout


def test_bad_label_files_report_every_problem(tmp_path: Path) -> None:
    bad = tmp_path / "judge.jsonl"
    bad.write_text(
        '{"id": "a", "label": "x", "order": "xy"}\nnot json\n{"label": "y"}\n', encoding="utf-8"
    )
    with pytest.raises(ValidationError) as exc:
        load_judge_labels(bad)
    text = str(exc.value)
    assert "3 problem(s)" in text and "judge.jsonl:1: field 'order'" in text
    assert "judge.jsonl:2" in text and "judge.jsonl:3: field 'id'" in text
    mixed = _write(
        tmp_path / "mixed.jsonl",
        [
            {"id": "a", "label": "pass", "judge": {"name": "j", "model": "m1"}},
            {"id": "b", "label": "pass", "judge": {"name": "j", "model": "m2"}},
        ],
    )
    with pytest.raises(ValidationError, match="mixes 2 judge configurations"):
        load_judge_labels(mixed)
    r = CliRunner().invoke(app, ["judge", "validate", "--human", str(bad), "--judge", str(bad)])
    assert r.exit_code == 2 and "Traceback" not in r.output
