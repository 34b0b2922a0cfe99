"""`ragmeter demo`: the toy section prints the seed's numbers; the example's slices count once."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from ragmeter.cli import app

runner = CliRunner()


def test_demo_toy_section_prints_the_seed_table() -> None:
    r = runner.invoke(app, ["demo", "--toy-only"], env={"COLUMNS": "160"})
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    cells = " ".join(out.split())  # the nDCG(gain=exp) column is wider than its numbers
    for row in (
        "baseline │ 0.67 │ 0.33 │ 0.47 │ 0.48",
        "reranked │ 0.83 │ 0.39 │ 0.64 │ 0.69",
    ):
        assert row in cells
    assert "┃ nDCG(gain=exp) ┃" in cells  # the header says the gain (issue 27, item 3)
    assert "4 wins, 1 loss, 1 tie" in out
    assert "rule 16 code" in out and "-0.50" in out
    assert "nDCG(gain=exp)@3" in out


def test_demo_budget_table_says_what_the_design_source_says() -> None:
    """Section 2 reads as the design source's table: 900 x 4 against the 300 x 4 baseline is
    "No: three times the text"; 300 x 12 is fair against 900 x 4 only (issue 27, item 1)."""
    import io

    from rich.console import Console

    from ragmeter.cli._demo._chain_section import budget_section

    buf = io.StringIO()
    budget_section(Console(file=buf, width=200))
    lines = {
        line.split("│")[1].strip() + " x " + line.split("│")[2].strip(): line
        for line in buf.getvalue().splitlines()
        if line.startswith("│")
    }
    assert "no: 3.0x the context tokens of 300 x 4" in lines["900 tokens x 4"]
    assert "yes" not in lines["900 tokens x 4"]
    assert "yes, against 900 x 4; not against 300 x 4" in lines["300 tokens x 12"]


def test_demo_without_the_example_says_how_to_point_at_it(tmp_path: Path) -> None:
    r = runner.invoke(app, ["demo", "--example", str(tmp_path)], env={"COLUMNS": "160"})
    assert r.exit_code == 2
    assert "--example" in r.stderr and "Traceback" not in r.stderr


def test_answer_slices_count_each_question_once(fare_rules_dir: Path) -> None:
    from ragmeter.answers import check_answers, load_answers
    from ragmeter.data import load_corpus, load_golden

    corpus = load_corpus(fare_rules_dir / "corpus.jsonl")
    golden = load_golden(fare_rules_dir / "golden.jsonl", corpus)
    answers = load_answers(fare_rules_dir / "answers" / "baseline.jsonl", golden=golden)
    slices = check_answers(answers, golden, corpus=corpus).by_slice()
    n_unanswerable = sum(not q.answerable for q in golden.questions)
    assert slices["unanswerable"]["n"] == n_unanswerable == 10
