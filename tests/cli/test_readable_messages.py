"""Messages that used to mislead (issue 16, items 6 and 7): p-values, encoder calls on a run
with no encoder, failures without their reason, Python warnings with source lines, lists cut
without a count."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter.cli import app

runner = CliRunner()


@pytest.mark.parametrize(
    ("p", "text"),
    [
        (0.0, "< 0.001"),
        (0.000999, "< 0.001"),
        (3.05e-5, "< 0.001"),
        (0.001, "0.001"),
        (0.0312, "0.0312"),
        (0.134, "0.134"),
        (0.5, "0.5"),
        (1.0, "1"),
    ],
)
def test_p_values_never_print_as_zero(p: float, text: str) -> None:
    from ragmeter._pvalue import format_p

    assert format_p(p) == text


@pytest.mark.parametrize(
    ("p", "text"),
    [(0.0, "< 0.001"), (0.0009, "< 0.001"), (0.0042, "= 0.0042"), (0.7539, "= 0.75"), (1.0, "= 1")],
)
def test_p_in_a_sentence(p: float, text: str) -> None:
    from ragmeter._pvalue import p_is

    assert p_is(p) == text


@given(st.floats(min_value=0.0, max_value=1.0))
def test_a_printed_p_is_never_zero_and_never_above_one(p: float) -> None:
    from ragmeter._pvalue import format_p

    s = format_p(p)
    if s.startswith("< "):
        assert p < 0.001
    else:
        assert 0.001 <= float(s) <= 1.0 and abs(float(s) - p) <= 0.0005 + 1e-12


def test_answer_comparison_lists_every_id_with_all_and_says_how_many_are_left(
    fare_rules_dir: Path, tmp_path: Path
) -> None:
    golden = fare_rules_dir / "golden.jsonl"
    base = fare_rules_dir / "answers" / "baseline.jsonl"
    rows = [json.loads(x) for x in base.read_text().splitlines() if x.strip()]
    # a candidate that abstains everywhere: it breaks every question the baseline had right
    cand = tmp_path / "abstain.jsonl"
    cand.write_text(
        "".join(json.dumps({"id": r["id"], "answer": "I don't know."}) + "\n" for r in rows)
    )
    args = ["answers", "compare", str(base), str(cand), "--golden", str(golden)]
    args += ["--corpus", str(fare_rules_dir / "corpus.jsonl")]
    out = runner.invoke(app, args, env={"COLUMNS": "100"})
    assert out.exit_code == 0, out.stderr
    js = runner.invoke(app, [*args, "-f", "json"], env={"COLUMNS": "100"})
    broken = json.loads(js.stdout)["broken_ids"]
    assert len(broken) > 10
    assert f"and {len(broken) - 10} more (--all)" in out.stdout
    full = runner.invoke(app, [*args, "--all"], env={"COLUMNS": "100"})
    assert full.exit_code == 0 and "more (--all)" not in full.stdout
    assert all(qid in full.stdout for qid in broken)


def test_judge_failures_say_why_in_the_table(fare_rules_dir: Path, tmp_path: Path) -> None:
    rows = (fare_rules_dir / "answers" / "baseline.jsonl").read_text().splitlines()[:4]
    answers = tmp_path / "a.jsonl"
    answers.write_text("\n".join(rows) + "\n")
    args = [
        "answers", "check", str(answers), "--golden", str(fare_rules_dir / "golden.jsonl"),
        "--judge", "openai", "--judge-metrics", "correctness", "--judge-model", "m",
        "--judge-url", "http://127.0.0.1:9/v1", "--judge-retries", "0",
        "--judge-cache", str(tmp_path / "cache"), "--no-store",
        "--corpus", str(fare_rules_dir / "corpus.jsonl"),
    ]  # fmt: skip
    r = runner.invoke(app, args, env={"COLUMNS": "80"})
    assert r.exit_code == 1
    j = runner.invoke(app, [*args, "-f", "json"], env={"COLUMNS": "80"})
    errors = {
        s["error"]
        for a in json.loads(j.stdout)["answers"]
        for s in (a.get("judged") or {}).values()
        if s.get("error")
    }
    assert errors and all("Connection refused" in e for e in errors)
    flat = " ".join(r.stdout.replace("│", " ").split())
    assert "judge failed (4x) connection failed: [Errno 111] Connection refused" in flat
    assert "4 judgement(s) failed" in r.stderr


def test_python_warnings_print_the_message_only(tmp_path: Path) -> None:
    (tmp_path / "q.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "r.txt").write_text("q1 Q0 d1 1 2.0 r\nq1 Q0 d1 2 1.0 r\n")
    p = subprocess.run(
        [sys.executable, "-m", "ragmeter", "eval", "q.txt", "r.txt", "-m", "nDCG@10", "--no-store"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "120"},
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert "warning: r.txt:2: 1 duplicate row(s)" in p.stderr
    assert ".py:" not in p.stderr and "return callback" not in p.stderr
    assert "RagmeterWarning" not in p.stderr


def test_a_run_with_no_encoder_does_not_claim_the_cache() -> None:
    from ragmeter.cli._run import run_note
    from ragmeter.workflows.experiment import RunCounts

    def note(encoder_calls: int | None) -> str:
        counts = RunCounts(2, 1.0, encoder_calls, 0, 0, 0, None, 0, 0)
        return run_note(counts).split("; ")[1]

    assert note(None) == "no encoder"
    assert note(0) == "encoder calls: 0 (everything from the cache)"
    assert note(5) == "encoder calls: 5"


def test_the_stale_documents_list_of_a_diagnosis_says_how_many_it_cut() -> None:
    from ragmeter.diagnosis._diagnose import _some

    ids = [f"doc-{i}" for i in range(8)]
    assert _some(ids) == "doc-0, doc-1, doc-2, doc-3, doc-4 and 3 more"
    assert _some(ids[:5]) == "doc-0, doc-1, doc-2, doc-3, doc-4"
    assert _some([]) == ""
