"""`ragmeter compare --human-labels`: the prediction-powered interval beside the judge-only and
human-only ones (table and JSON), on the constructed example of docs/compare.md
(examples/human-labels), and the errors of a bad labels file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter.cli import app

EXAMPLE = Path(__file__).parents[2] / "examples" / "human-labels"
runner = CliRunner()


def cli(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, [*args], env={"COLUMNS": "200"})
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture()
def example(tmp_path: Path) -> Path:
    for name in ("baseline.csv", "candidate.csv", "human.jsonl"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    return tmp_path


def run(folder: Path, *labels: Path | str, fmt: str = "table") -> tuple[int, str, str]:
    human = [x for f in labels for x in ("--human-labels", str(f))]
    return cli(
        "compare", str(folder / "baseline.csv"), str(folder / "candidate.csv"), *human,
        "--no-store", "--no-ledger", "-f", fmt,
    )  # fmt: skip


def test_json_carries_the_three_intervals(example: Path) -> None:
    code, out, err = run(example, example / "human.jsonl", fmt="json")
    assert code == 0, err
    p = json.loads(out)["ppi"]
    assert (p["n"], p["n_labelled"]) == (400, 100)
    assert p["judge_only"]["estimate"] == pytest.approx(0.275)
    assert p["human_only"]["estimate"] == pytest.approx(0.11)
    assert p["judge_bias"] == pytest.approx(0.15)
    assert f"{p['ppi']['estimate']:+.3f}" == "+0.117"
    assert [f"{p['ppi'][k]:+.3f}" for k in ("lo", "hi")] == ["+0.032", "+0.201"]
    assert f"{p['lambda']:.2f}" == "0.44"
    # judge-only is the comparison's own interval; PPI is narrower than human-only
    assert [p["judge_only"]["lo"], p["judge_only"]["hi"]] == json.loads(out)["ci"]
    assert p["ppi"]["width"] < p["human_only"]["width"]
    assert p["ppi"]["method"] == "normal (PPI++)"
    assert p["judge_only"]["method"] == p["human_only"]["method"] == "paired bootstrap"


def test_table_shows_the_three_intervals_with_widths(example: Path) -> None:
    code, out, err = run(example, example / "human.jsonl")
    assert code == 0, err
    assert "prediction-powered interval" in out
    for row in (
        "prediction-powered   400   +0.117   [+0.032, +0.201]   0.169",
        "judge only           400   +0.275   [+0.215, +0.335]   0.120",
        "human only           100   +0.110   [+0.020, +0.210]   0.190",
    ):
        assert row in out
    assert "lambda = 0.44" in out and "11% narrower than human-only" in out


def test_two_review_exports_one_per_side(example: Path) -> None:
    """The workbench's answer review export has no run: one file per side, baseline first."""
    lines = [json.loads(x) for x in (example / "human.jsonl").read_text().splitlines()]
    words = {"pass": "correct", "fail": "incorrect"}
    for run_name in ("baseline", "candidate"):
        (example / f"review-{run_name}.jsonl").write_text(
            "".join(
                json.dumps({"id": x["id"], "label": words[x["label"]]}) + "\n"
                for x in lines
                if x["run"] == run_name
            )
        )
    _, one, _ = run(example, example / "human.jsonl", fmt="json")
    code, two, err = run(
        example, example / "review-baseline.jsonl", example / "review-candidate.jsonl", fmt="json"
    )
    assert code == 0, err
    assert json.loads(two)["ppi"] == json.loads(one)["ppi"]
    # given once, a file whose lines name no run cannot say which side a verdict is on
    code, _, err = run(example, example / "review-baseline.jsonl")
    assert code == 2 and "review-baseline.jsonl:1" in err and "run" in err


def test_bad_labels_files_name_file_line_and_field(example: Path) -> None:
    bad = example / "bad.jsonl"
    bad.write_text(
        '{"id": "q003", "run": "baseline", "label": "pass"}\n'
        '{"id": "q003", "run": "candidate", "label": "maybe"}\n'
        '{"run": "candidate", "label": "pass"}\n'
        '{"id": "q003", "run": "baseline", "label": "fail"}\n'
    )
    code, _, err = run(example, bad)
    assert code == 2
    assert "bad.jsonl:2" in err and "label" in err and "maybe" in err
    assert "bad.jsonl:3" in err and "id" in err
    assert "bad.jsonl:4" in err and "second verdict for 'q003' on run 'baseline'" in err
    # a question that was not compared, and one labelled on one side only
    bad.write_text(
        '{"id": "nope", "run": "baseline", "label": "pass"}\n'
        '{"id": "nope", "run": "candidate", "label": "pass"}\n'
        '{"id": "q003", "run": "baseline", "label": "pass"}\n'
    )
    code, _, err = run(example, bad)
    assert code == 2
    assert "bad.jsonl:1" in err and "'nope' is not among the 400 compared questions" in err
    assert "bad.jsonl:3" in err and "not the candidate's" in err
    # too few labelled questions: how many are needed
    few = "".join(
        json.dumps({"id": f"q{i:03d}", "run": r, "label": "pass"}) + "\n"
        for i in range(4)
        for r in ("baseline", "candidate")
    )
    bad.write_text(few)
    code, _, err = run(example, bad)
    assert code == 2 and "at least 10" in err and "got 4" in err
    # runs that are neither side
    bad.write_text('{"id": "q003", "run": "other", "label": "pass"}\n')
    code, _, err = run(example, bad)
    assert code == 2 and "no line is on the baseline run 'baseline'" in err and "other" in err
    code, _, err = run(example, example / "missing.jsonl")
    assert code == 2 and "missing.jsonl" in err


def test_a_malformed_labels_file_is_refused_before_the_comparison_is_counted(
    example: Path,
) -> None:
    bad = example / "bad.jsonl"
    bad.write_text('{"id": "q003", "run": "baseline", "label": "maybe"}\n')
    ledger = example / "ledger.jsonl"
    code, _, err = cli(
        "compare", str(example / "baseline.csv"), str(example / "candidate.csv"),
        "--human-labels", str(bad), "--no-store", "--ledger", str(ledger),
    )  # fmt: skip
    assert code == 2 and "bad.jsonl:1" in err
    assert not ledger.exists()
