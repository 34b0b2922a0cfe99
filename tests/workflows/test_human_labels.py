"""Reading human verdicts for the prediction-powered interval (ragmeter.workflows._human_labels):
both file shapes, the label words, and every problem named by file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter._errors import UsageError, ValidationError
from ragmeter.workflows._human_labels import LABEL_VALUES, read_human_labels

NAMES = ("base", "cand")


def write(path: Path, *records: object) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_one_file_with_runs_and_the_label_words(tmp_path: Path) -> None:
    f = write(
        tmp_path / "h.jsonl",
        {"id": "q1", "run": "base", "label": "pass"},
        {"id": "q1", "run": "cand", "label": True},
        {"id": "q2", "run": "base", "label": " Incorrect "},
        {"id": "q2", "run": "cand", "label": "partly"},
        {"id": "q2", "run": "other-run", "label": "fail"},  # another run: left out
    )
    h = read_human_labels([f], NAMES)
    assert dict(h.baseline) == {"q1": 1.0, "q2": 0.0}
    assert dict(h.candidate) == {"q1": 1.0, "q2": 0.5}
    h.check(["q1", "q2", "q3"])
    assert LABEL_VALUES["supported"] == 1.0 and LABEL_VALUES["unsupported"] == 0.0


def test_two_files_one_per_side(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", {"id": "q1", "label": "correct"})
    b = write(tmp_path / "b.jsonl", {"id": "q1", "label": "incorrect"})
    h = read_human_labels([a, b], NAMES)
    assert (dict(h.baseline), dict(h.candidate)) == ({"q1": 1.0}, {"q1": 0.0})
    # a line of the baseline's file that names the candidate's run is a mix-up
    write(tmp_path / "a.jsonl", {"id": "q1", "run": "cand", "label": "correct"})
    with pytest.raises(ValidationError, match=r"a\.jsonl:1.*run.*names the candidate run"):
        read_human_labels([a, b], NAMES)


def test_every_problem_at_once_with_file_line_and_field(tmp_path: Path) -> None:
    f = write(
        tmp_path / "h.jsonl",
        {"id": "q1", "run": "base", "label": "a"},
        {"id": "", "run": "base", "label": "pass"},
        {"id": "q2", "run": 3, "label": "pass"},
        {"id": "q3", "run": "base"},
        {"id": "q4", "label": "pass"},
        {"id": "q5", "run": "cand", "label": "pass"},
        {"id": "q5", "run": "cand", "label": "fail"},
    )
    with pytest.raises(ValidationError) as err:
        read_human_labels([f], NAMES)
    shown = [str(p) for p in err.value.problems]
    assert len(shown) == 6
    assert "h.jsonl:1" in shown[0] and "label" in shown[0] and "pairwise" in shown[0]
    assert "h.jsonl:2" in shown[1] and "id" in shown[1]
    assert "h.jsonl:3" in shown[2] and "run" in shown[2]
    assert "h.jsonl:4" in shown[3] and "label" in shown[3] and "missing" in shown[3]
    assert "h.jsonl:5" in shown[4] and "names no run" in shown[4]
    assert "h.jsonl:7" in shown[5] and "second verdict for 'q5' on run 'cand'" in shown[5]
    assert "first is on line 6" in shown[5]


def test_check_against_the_compared_questions(tmp_path: Path) -> None:
    f = write(
        tmp_path / "h.jsonl",
        {"id": "q1", "run": "base", "label": "pass"},
        {"id": "zz", "run": "base", "label": "pass"},
        {"id": "zz", "run": "cand", "label": "pass"},
        {"id": "q2", "run": "cand", "label": "pass"},
    )
    h = read_human_labels([f], NAMES)
    with pytest.raises(ValidationError) as err:
        h.check(["q1", "q2"])
    shown = [str(p) for p in err.value.problems]
    assert any("h.jsonl:1" in s and "not the candidate's" in s for s in shown)
    assert any("h.jsonl:2" in s and "'zz' is not among the 2 compared" in s for s in shown)
    assert any("h.jsonl:4" in s and "not the baseline's" in s for s in shown)
    assert len(shown) == 3  # 'zz' once, not once per side


def test_usage_errors(tmp_path: Path) -> None:
    f = write(tmp_path / "h.jsonl", {"id": "q1", "run": "x", "label": "pass"})
    with pytest.raises(UsageError, match="both sides are named 'x'"):
        read_human_labels([f], ("x", "x"))
    with pytest.raises(UsageError, match=r"once .* or twice"):
        read_human_labels([f, f, f], NAMES)
