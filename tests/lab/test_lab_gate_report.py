"""``ragmeter gate BASE CAND --report PATH``: the HTML report beside the markdown and JUnit, with
the same overwrite rules (an earlier report is replaced, any other file needs --force)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _experiment_files import fare_rules_experiment
from typer.testing import CliRunner

pytest.importorskip("bm25s")  # justified: the example's retriever is an optional extra

from ragmeter.cli import app
from ragmeter.store import Store
from ragmeter.workflows.experiment import run_and_record

runner = CliRunner()

EXPERIMENT = """\
name = "fare rules, bm25"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
k = 4
budget = 1200
headroom_k = 20
metrics = ["R", "AllR", "RR"]

[baseline]
chunker = "tokens:300:0"
retriever = "bm25"
depth = 50

[[variant]]
name = "smaller chunks"
chunker = "tokens:100:0"
k = 12
"""


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("gate")
    path = fare_rules_experiment(folder, EXPERIMENT)
    url = f"sqlite:///{folder / 'store.db'}"
    with Store.open(url) as store:
        run_and_record(store, path)
    return url


def gate(db: str, *extra: str) -> object:
    args = ["gate", "1", "2", "-m", "R@budget=1200", "--max-broken", "0", "--db", db, *extra]
    return runner.invoke(app, args, env={"COLUMNS": "120"})


def test_gate_writes_the_html_report_beside_markdown_and_junit(db: str, tmp_path: Path) -> None:
    html, md, xml = tmp_path / "gate.html", tmp_path / "gate.md", tmp_path / "gate.xml"
    r = gate(db, "--report", str(html), "--markdown", str(md), "--junit", str(xml))
    assert r.exit_code == 1, r.output  # 7 questions break: the rule fails, the files are written
    assert md.read_text().startswith("## ragmeter gate ") and xml.is_file()
    text = html.read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>") and "<title>ragmeter report" in text
    assert "smaller chunks" in text and "<script src=" not in text  # inline, no network
    # an earlier report is replaced without --force, like the markdown and JUnit files
    html.write_text(text.replace("smaller chunks", "AN-EARLIER-REPORT", 1), encoding="utf-8")
    assert gate(db, "--report", str(html)).exit_code == 1
    assert "AN-EARLIER-REPORT" not in html.read_text(encoding="utf-8")


def test_gate_report_never_replaces_another_file_without_force(db: str, tmp_path: Path) -> None:
    other = tmp_path / "notes.html"
    other.write_text("<p>mine</p>", encoding="utf-8")
    r = gate(db, "--report", str(other))
    assert r.exit_code == 2 and "--report" in r.stderr and "--force" in r.stderr
    assert other.read_text(encoding="utf-8") == "<p>mine</p>"
    assert gate(db, "--report", str(other), "--force").exit_code == 1
    assert "<title>ragmeter report" in other.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--report", "{d}/same.md", "--markdown", "{d}/same.md"], "both name"),
        (["--report", "{d}"], "is a folder"),
    ],
)
def test_gate_report_refuses_before_any_work(db: str, tmp_path: Path, extra, says) -> None:
    r = gate(db, *(x.format(d=tmp_path) for x in extra))
    assert r.exit_code == 2 and says in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "same.md").exists()


def test_gate_report_needs_stored_runs(tmp_path: Path) -> None:
    base, cand = tmp_path / "a.json", tmp_path / "b.json"
    for p in (base, cand):
        p.write_text("{}", encoding="utf-8")
    r = runner.invoke(
        app,
        ["gate", str(base), str(cand), "--max-broken", "0", "--report", str(tmp_path / "r.html")],
        env={"COLUMNS": "120"},
    )
    assert r.exit_code == 2 and "--report needs BASE and CAND as stored runs" in r.stderr
    assert not (tmp_path / "r.html").exists()


def test_gate_report_needs_the_store(tmp_path: Path) -> None:
    r = runner.invoke(
        app,
        ["gate", "1", "2", "--max-broken", "0", "--no-store", "--report", str(tmp_path / "r.html")],
        env={"COLUMNS": "120"},
    )
    assert r.exit_code == 2 and "drop --no-store" in r.stderr
