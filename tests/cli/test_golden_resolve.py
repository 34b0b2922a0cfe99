"""`ragmeter golden resolve`: spans written as quotes become offsets; a quote that is missing or
ambiguous is listed and nothing is written; `ragmeter run` reads a quote-labelled set as it is."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _experiment_files import FARE_RULES, fare_rules_experiment
from typer.testing import CliRunner

from ragmeter._errors import RagmeterWarning
from ragmeter.cli import app
from ragmeter.data import load_corpus, load_golden

FIX = Path(__file__).parents[1] / "fixtures" / "labellers"
CORPUS = FIX / "corpus.jsonl"
QUOTES = FIX / "quotes.jsonl"


def cli(*args: str | Path) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    return r.exit_code, r.stdout, r.stderr


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def _as_quotes(golden: Path, corpus: Path) -> list[dict[str, Any]]:
    """Every span of ``golden`` rewritten as the quote of its text (``doc`` kept unless the text
    is in one document only, ``occurrence`` where it occurs more than once in its document)."""
    docs = load_corpus(corpus)
    rows = []
    for line in golden.read_text("utf-8").splitlines():
        row = json.loads(line)
        spans = []
        for ev in row.get("evidence", []):
            text = docs[ev["doc"]].text
            quote = text[ev["start"] : ev["end"]]
            starts = [i for i in range(len(text)) if text.startswith(quote, i)]
            span = {"quote": quote, "doc": ev["doc"], "grade": ev["grade"]}
            if sum(quote in d.text for d in docs) == 1:
                del span["doc"]  # found by searching every document
            if len(starts) > 1:
                span["occurrence"] = starts.index(ev["start"]) + 1
            if "required" in ev:
                span["required"] = ev["required"]
            spans.append(span)
        rows.append({**row, "evidence": spans})
    return rows


def test_the_fixture_resolves_and_the_output_validates(tmp_path: Path) -> None:
    out = tmp_path / "golden.jsonl"
    code, stdout, err = cli("golden", "resolve", QUOTES, "--corpus", CORPUS, "-o", out)
    assert code == 0, err
    lines = stdout.splitlines()
    assert lines[-1] == (
        f"4 quote span(s) in {QUOTES}: 3 exact, 1 after normalising whitespace and case, "
        f"0 not resolved; wrote {out}"
    )
    assert lines[0] == (
        f"normalised: {QUOTES}:2: q2 evidence[0] quote 'standard fares pay a $75\\nchange fee.' "
        "read as 'Standard fares pay a $75 change fee.' ('d1' 31-67)"
    )
    rows = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert rows[1]["evidence"] == [
        {
            "doc": "d1",
            "start": 31,
            "end": 67,
            "grade": 2,
            "text": "Standard fares pay a $75 change fee.",
            "required": True,
        },
        {"doc": "d2", "start": 0, "end": 8, "grade": 1, "text": "Refunds:"},
    ]
    code, stdout, err = cli("golden", "validate", out, "--corpus", CORPUS)
    assert code == 0, stdout + err
    # the quote file and its resolved copy are one golden-set version
    with pytest.warns(RagmeterWarning, match="1 of 4 quote span"):
        quoted = load_golden(QUOTES, CORPUS)
    assert load_golden(out, CORPUS).version == quoted.version


def test_json_lists_every_span_with_its_method(tmp_path: Path) -> None:
    out = tmp_path / "golden.jsonl"
    code, stdout, err = cli(
        "golden", "resolve", QUOTES, "-c", CORPUS, "-o", out, "--format", "json"
    )
    assert code == 0, err
    d = json.loads(stdout)
    assert {k: d[k] for k in ("written", "quotes", "exact", "normalised", "errors")} == {
        "written": True,
        "quotes": 4,
        "exact": 3,
        "normalised": 1,
        "errors": 0,
    }
    assert d["output"] == str(out)
    assert [(s["question"], s["evidence"], s["method"]) for s in d["spans"]] == [
        ("q1", 0, "exact"),
        ("q2", 0, "normalised"),
        ("q3", 0, "exact"),
        ("q3", 1, "exact"),
    ]


def test_missing_and_ambiguous_quotes_are_listed_and_nothing_is_written(tmp_path: Path) -> None:
    golden = _write(
        tmp_path / "quotes.jsonl",
        [
            {"id": "ok", "question": "?", "evidence": [{"quote": "Flex fares pay $30."}]},
            {"id": "amb", "question": "?", "evidence": [{"quote": "fares pay", "doc": "d1"}]},
            {"id": "gone", "question": "?", "evidence": [{"quote": "Economy", "doc": "d2"}]},
        ],
    )
    out = tmp_path / "out.jsonl"
    code, stdout, err = cli("golden", "resolve", golden, "-c", CORPUS, "-o", out)
    assert code == 2
    assert not out.exists()
    problems = [line for line in stdout.splitlines() if line.startswith("problem: ")]
    assert len(problems) == 2
    assert problems[0].startswith(
        f"problem: {golden}:2: field 'evidence[0].quote': question 'amb': quote 'fares pay' "
        "occurs 2 times in document 'd1': at 40-49 "
    )
    assert problems[1] == (
        f"problem: {golden}:3: field 'evidence[0].quote': question 'gone': quote 'Economy' is "
        "not in document 'd2', neither exactly nor after normalising whitespace and case"
    )
    assert "3 quote span(s)" in err and "1 exact, 0 after normalising" in err
    assert "2 not resolved" in err and "nothing written" in err


def test_never_writes_over_the_golden_file_or_an_existing_output(tmp_path: Path) -> None:
    golden = tmp_path / "quotes.jsonl"
    shutil.copy(QUOTES, golden)
    before = golden.read_bytes()
    code, _, err = cli("golden", "resolve", golden, "-c", CORPUS, "-o", golden, "--force")
    assert code == 2 and "would overwrite the input" in err
    assert golden.read_bytes() == before
    out = tmp_path / "out.jsonl"
    out.write_text("mine\n")
    code, _, err = cli("golden", "resolve", golden, "-c", CORPUS, "-o", out)
    assert code == 2 and "already exists; pass --force" in err
    assert out.read_text() == "mine\n"
    code, _, err = cli("golden", "resolve", golden, "-c", CORPUS, "-o", out, "--force")
    assert code == 0, err
    assert out.read_text() != "mine\n"


def test_commands_without_the_corpus_say_quotes_need_it() -> None:
    code, stdout, _ = cli("golden", "validate", QUOTES)
    assert code == 2
    assert "needs the corpus to find its offsets" in stdout


EXPERIMENT = """\
name = "quotes"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
output = "runs"
k = 4
metrics = ["R", "AllR"]

[baseline]
name = "baseline"
chunker = "tokens:300:0"
retriever = "bm25"
depth = 50
"""


def test_run_reads_a_quote_labelled_golden_set_with_its_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fare-rules example with every span written as a quote: `ragmeter run` scores it as
    it scores the offsets it was written from (same golden-set version, same numbers)."""
    rows = _as_quotes(FARE_RULES / "golden.jsonl", FARE_RULES / "corpus.jsonl")
    assert sum(len(r["evidence"]) for r in rows) > 100
    assert any("doc" not in s for r in rows for s in r["evidence"])
    monkeypatch.chdir(tmp_path)
    evaluations = []
    for name in ("quotes", "offsets"):
        files = ("corpus.jsonl",) if name == "quotes" else ("corpus.jsonl", "golden.jsonl")
        experiment = fare_rules_experiment(tmp_path / name, EXPERIMENT, files=files)
        if name == "quotes":
            _write(experiment.parent / "golden.jsonl", rows)
        code, _, err = cli("run", experiment, "--no-store")
        assert code == 0, err
        runs = experiment.parent / "runs" / "baseline"
        evaluations.append(json.loads((runs / "evaluation.json").read_text()))
    quoted, offsets = evaluations
    version = load_golden(FARE_RULES / "golden.jsonl", FARE_RULES / "corpus.jsonl").version
    assert quoted["golden_version"] == offsets["golden_version"] == version
    assert quoted["n_queries"] == offsets["n_queries"] > 0
    assert quoted["aggregate"] == offsets["aggregate"]
    assert quoted["per_query"] == offsets["per_query"]
