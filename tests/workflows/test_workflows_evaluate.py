"""``ragmeter.workflows.evaluate``: the ``eval`` job called directly. Runs of item ids are scored
through ``metrics.evaluate`` (the same numbers), streamed in query slices with the same numbers,
span runs go to the span scorer, and the evaluations are recorded in the store when asked."""

from __future__ import annotations

import json
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from ragmeter._errors import InputError, RagmeterWarning, UsageError
from ragmeter.metrics import evaluate
from ragmeter.store import Store
from ragmeter.workflows import evaluate as wf

QRELS = "q1 0 d1 1\nq1 0 d2 2\nq2 0 d3 1\nq3 0 d4 1\n"
RUN = "q1 Q0 d2 1 3.0 a\nq1 Q0 d9 2 2.0 a\nq1 Q0 d1 3 1.0 a\nq2 Q0 d8 1 2.0 a\nq2 Q0 d3 2 1.0 a\n"
OTHER = "q1 Q0 d1 1 3.0 b\nq2 Q0 d3 1 2.0 b\nq3 Q0 d4 1 1.0 b\n"


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    out = []
    for name, text in (("qrels.txt", QRELS), ("a.run", RUN), ("b.run", OTHER)):
        (tmp_path / name).write_text(text)
        out.append(tmp_path / name)
    return out


def test_scores_each_run_as_metrics_evaluate_does(files: list[Path]) -> None:
    qrels, a, b = files
    scored = wf.score_runs([qrels, a, b])
    assert scored.run_files == [a, b]
    for e, run in zip(scored.evaluations, (a, b), strict=True):
        same = evaluate(qrels, run, wf.DEFAULT_METRICS, run_name=str(run))
        assert e.run == str(run) and e.aggregate == same.aggregate
        assert [str(m) for m in e.metrics] == wf.DEFAULT_METRICS.split(",")
        assert e.config["qrels"] == str(qrels) and e.n_missing == same.n_missing


def test_query_chunks_give_the_same_numbers(files: list[Path]) -> None:
    whole = wf.score_runs(files, metrics="RR,nDCG@3", missing="skip")
    sliced = wf.score_runs(files, metrics="RR,nDCG@3", missing="skip", query_chunks=2)
    for w, s in zip(whole.evaluations, sliced.evaluations, strict=True):
        assert w.aggregate == s.aggregate and w.per_query == s.per_query


def test_the_reading_status_names_each_file(files: list[Path]) -> None:
    said: list[str] = []

    @contextmanager
    def status(text: str) -> Any:
        said.append(text)
        yield

    wf.score_runs(files, metrics="RR", status=status)
    assert said == [f"reading {files[0]}", *(f"reading and scoring {p}" for p in files[1:])]


def test_a_duplicate_row_suggests_the_callers_fix(files: list[Path]) -> None:
    qrels, a, _ = files
    a.write_text(RUN + "q1 Q0 d2 4 0.5 a\n")
    with pytest.raises(InputError, match="give --duplicates best"):
        wf.score_runs([qrels, a], duplicates="error", duplicates_fix="give --duplicates best")
    with pytest.raises(InputError) as plain:
        wf.score_runs([qrels, a], duplicates="error")
    assert "--duplicates" not in str(plain.value)
    with pytest.raises(InputError, match="give --duplicates best"):  # streamed: the same
        wf.score_runs(
            [qrels, a], duplicates="error", query_chunks=2, duplicates_fix="give --duplicates best"
        )


@pytest.mark.parametrize(
    ("paths", "kwargs", "message"),
    [
        (1, {}, "give QRELS and at least one RUN"),
        (3, {"k": "3"}, "--k and --budget apply to span labels"),
        (2, {"golden": "g.jsonl"}, "needs both --golden and --chunks"),
        (1, {"metrics": "R@nope", "query_chunks": 2}, "R@nope"),  # metrics checked first
    ],
)
def test_bad_requests_are_usage_errors(
    files: list[Path], paths: int, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        wf.score_runs(files[:paths], **kwargs)


def test_record_stores_each_evaluation_with_its_run_file(files: list[Path], tmp_path: Path) -> None:
    scored = wf.score_runs(files, metrics="RR,P@2")
    with Store.open(f"sqlite:///{tmp_path / 'store.db'}") as store:
        ids = wf.record(store, scored)
        assert len(ids) == 2
        for rid, e in zip(ids, scored.evaluations, strict=True):
            assert store.run(rid).status == "finished"
            assert store.evaluation(rid).aggregate == pytest.approx(e.aggregate)


def test_the_commands_default_metrics_are_the_workflows() -> None:
    from ragmeter.cli import _eval

    assert _eval.DEFAULT_METRICS == wf.DEFAULT_METRICS


@pytest.mark.parametrize("duplicates", ["best", "error"])
def test_eval_gives_the_same_with_and_without_query_chunks(
    files: list[Path], duplicates: str
) -> None:
    # `ragmeter eval` makes one evaluate() call either way; --duplicates reaches both paths
    from typer.testing import CliRunner

    from ragmeter.cli import app

    qrels, a, b = files
    a.write_text(RUN + "q1 Q0 d2 4 0.5 a\n")  # d2 twice for q1 (lines 1 and 6)
    args = ["eval", str(qrels), str(a), str(b), "--format", "json", "--per-query", "--no-store"]
    args += ["--duplicates", duplicates, "-m", "RR,nDCG@3,P@2"]
    runner = CliRunner()
    with warnings.catch_warnings(record=True) as said:  # the CLI says warnings on stderr
        warnings.simplefilter("always")
        one = runner.invoke(app, args, env={"COLUMNS": "200"})
        chunked = runner.invoke(app, [*args, "--query-chunks", "2"], env={"COLUMNS": "200"})
    assert (one.exit_code, one.stdout, one.stderr) == (
        chunked.exit_code,
        chunked.stdout,
        chunked.stderr,
    )
    if duplicates == "error":
        assert one.exit_code == 2 and f"{a}:6: field 'doc'" in one.stderr
        assert "give --duplicates best" in one.stderr and not said
        return
    assert one.exit_code == 0
    assert [str(w.message).split(" - ")[0] for w in said] == [f"{a}:6: 1 duplicate row(s)"] * 2
    got = json.loads(one.stdout)
    with pytest.warns(RagmeterWarning, match="duplicate row"):
        want = evaluate(qrels, a, "RR,nDCG@3,P@2", run_name=str(a))
    assert got[0]["aggregate"] == want.aggregate
    assert [o["run"] for o in got] == [str(a), str(b)]
