"""Output a person can read at 80 columns: no number, date, version or id cut (issue 16, item 5).

Each command is rendered at a width where nothing needs to wrap (1000 columns) and at 80 and
120; every whitespace-separated token of the wide text that holds a digit or joins words with a
hyphen (a number, an interval end, a date, ``version=2024``, a question id) must appear whole in
the narrow text, and nothing is cut with an ellipsis.
"""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from typer.testing import CliRunner

from ragmeter.cli import app

runner = CliRunner()
BOX = re.compile(r"[│┃┆┊║|┏┓┗┛┡┩┣┫╇╋━─═┳┻╭╮╰╯└┘┌┐├┤┬┴┼]+")


def _tokens(text: str) -> set[str]:
    return {t for t in BOX.sub(" ", text).split() if re.search(r"\d|\w-\w", t)}


def _render(args: list[str], cwd: Path, columns: int) -> str:
    import os

    here = os.getcwd()
    os.chdir(cwd)
    try:
        r = runner.invoke(app, args, env={"COLUMNS": str(columns)})
    finally:
        os.chdir(here)
    assert r.exit_code in (0, 1), r.stdout + r.stderr
    return r.stdout


def _means(obj: object) -> set[str]:
    """The two means of every row of a comparison's JSON: under 112 columns the compare table
    leaves them out by design (the difference carries them; the JSON and wide tables hold them)."""
    if isinstance(obj, dict):
        out = {f"{v:.3f}" for k, v in obj.items() if k in ("baseline_mean", "candidate_mean")}
        return out.union(*(_means(v) for v in obj.values()))
    if isinstance(obj, list):
        return set().union(*(_means(v) for v in obj))
    return set()


def _check_whole(
    args: list[str],
    cwd: Path,
    widths: tuple[int, ...] = (80, 120),
    dropped: frozenset[str] | set[str] = frozenset(),
) -> str:
    wide = _render(args, cwd, 1000)
    expected = _tokens(wide) - set(dropped)
    assert expected, "the wide rendering holds no number"
    for columns in widths:
        narrow = _render(args, cwd, columns)
        assert "…" not in narrow, f"cut with an ellipsis at {columns} columns"
        assert max(len(x) for x in narrow.splitlines()) <= columns
        missing = sorted(expected - _tokens(narrow))
        assert not missing, f"cut at {columns} columns: {missing[:12]}"
    return wide


@pytest.fixture(scope="module")
def example(fare_rules_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example's inputs and its run files, in a temporary copy (commands store here)."""
    dest = tmp_path_factory.mktemp("fare") / "fare-rules"
    dest.mkdir()
    for name in ("corpus.jsonl", "golden.jsonl", "answers"):
        src = fare_rules_dir / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dest / name)
    runs = dest / "runs"
    for variant in ("baseline", "smaller-chunks", "hybrid", "reranker"):
        (runs / variant).mkdir(parents=True)
        for f in ("evaluation.json", "run.trec"):
            shutil.copy(fare_rules_dir / "runs" / variant / f, runs / variant / f)
    shutil.copy(fare_rules_dir / "runs" / "chunks-300.jsonl", runs / "chunks-300.jsonl")
    return dest


EVAL = ["runs/baseline/evaluation.json", "runs/smaller-chunks/evaluation.json"]


def _dropped_means(args: list[str], cwd: Path) -> set[str]:
    import json

    return _means(json.loads(_render([*args, "-f", "json"], cwd, 1000)))


def test_compare_keeps_numbers_and_ids_whole(example: Path) -> None:
    args = ["compare", *EVAL, "-m", "AllR@budget=1200", "--no-store"]
    wide = _check_whole(args, example, dropped=_dropped_means(args, example))
    assert "basic-change-plus-seat" in wide  # a mover: ids are among the checked tokens


def test_gate_keeps_numbers_whole(example: Path) -> None:
    args = ["gate", "runs/baseline/evaluation.json", "runs/reranker/evaluation.json"]
    args += ["-m", "AllR@budget=1200", "--require-ci-above", "-0.1", "--per-slice"]
    cmp = ["compare", "runs/baseline/evaluation.json", "runs/reranker/evaluation.json"]
    _check_whole(args, example, dropped=_dropped_means([*cmp, "-m", "AllR@budget=1200"], example))


def test_eval_golden_keeps_numbers_whole(example: Path) -> None:
    args = ["eval", "--golden", "golden.jsonl", "--chunks", "runs/chunks-300.jsonl"]
    runs = ["runs/baseline/run.trec", "runs/hybrid/run.trec", "runs/reranker/run.trec"]
    _check_whole([*args, *runs, "--k", "4", "--budget", "1200", "--no-store"], example)


def test_answers_check_keeps_dates_versions_and_ids_whole(example: Path) -> None:
    args = ["answers", "check", "answers/baseline.jsonl", "--golden", "golden.jsonl"]
    wide = _check_whole([*args, "--corpus", "corpus.jsonl", "--no-store"], example)
    assert "(effective_date=2024-01-01," in wide and "version=2026)" in wide


SWEEP = [
    "sweep", "runs/baseline/run.trec", "runs/hybrid/run.trec", "runs/reranker/run.trec",
    "--golden", "golden.jsonl", "--chunks", "runs/chunks-300.jsonl", "-m", "R",
    "--k", "1..6", "--budget", "300..900:300",
]  # fmt: skip


def test_sweep_names_runs_by_their_tag_and_keeps_numbers_whole(example: Path) -> None:
    wide = _check_whole(SWEEP, example)
    # the run tag (the last column of a TREC run line), never the path
    assert "runs/" not in wide
    assert "hybrid leads R@k" in wide
    named = _render([*SWEEP, "--name", "bm25", "--name", "rrf", "--name", "e5"], example, 80)
    assert "rrf leads R@k" in named and "runs/" not in named


def test_sweep_names_must_match_the_runs(example: Path) -> None:
    import os

    here = os.getcwd()
    os.chdir(example)
    try:
        r = runner.invoke(app, [*SWEEP, "--name", "only-one"], env={"COLUMNS": "80"})
    finally:
        os.chdir(here)
    assert r.exit_code == 2 and "--name" in r.stderr


def test_demo_at_80_and_120_columns_cuts_nothing(fare_rules_dir: Path) -> None:
    """`make demo` read top to bottom: no truncated number, date, version or id."""
    wide = _check_whole(["demo", "--example", str(fare_rules_dir)], fare_rules_dir.parent.parent)
    # a sign-test p below 0.001 never prints as 0.000 (hybrid on the headline AllR@budget=1200:
    # 12 wins, 0 losses on 80 questions, p = 0.0005)
    hybrid = [x for x in wide.splitlines() if "│ hybrid " in x and "12/0/68" in x]
    assert hybrid and hybrid[0].rstrip(" │").endswith("< 0.001"), hybrid


# ---- the fitting itself, on random tables ----------------------------------------------------

WORD = st.text(alphabet="abcdefghij-0123456789.", min_size=1, max_size=14)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.lists(st.lists(WORD, min_size=1, max_size=6), min_size=4, max_size=4),
                  min_size=1, max_size=6),
    width=st.integers(min_value=30, max_value=130),
)  # fmt: skip
def test_fit_never_cuts_a_word_at_any_width(rows: list[list[list[str]]], width: int) -> None:
    from ragmeter.cli._fit import fit

    t = Table(title="t")
    for i, name in enumerate(("id", "text", "value", "more")):
        t.add_column(name, justify="right" if i == 2 else "left")
    for row in rows:
        t.add_row(*(" ".join(cell) for cell in row))
    c = Console(width=width, record=True, file=io.StringIO(), emoji=False)
    c.print(fit(t))
    text = c.export_text()
    assert max(len(x) for x in text.splitlines()) <= width
    words = set(BOX.sub(" ", text).split())
    for row in rows:
        for cell in row:
            for w in cell:
                assert w in words
