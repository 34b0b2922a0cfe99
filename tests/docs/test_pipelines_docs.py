"""docs/pipelines.md runs as written: its example files are the ones in examples/fare-rules, its
Python block runs from the repository root, and its command runs the three pipelines."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter.cli import app

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "pipelines.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.S | re.M)

pytest.importorskip("langchain_core")  # justified: the test extra installs both libraries
pytest.importorskip("llama_index.core")  # justified: as above, a test-extra library


def blocks() -> list[tuple[str, str]]:
    return BLOCK.findall(DOC.read_text(encoding="utf-8"))


def test_every_example_file_shown_is_the_file_in_the_repository() -> None:
    shown = [(lang, body) for lang, body in blocks() if body.startswith("# examples/")]
    assert {lang for lang, _ in shown} == {"python", "toml"} and len(shown) == 4
    for _, body in shown:
        header, _, rest = body.partition("\n")
        path = REPO / header.removeprefix("# ")
        assert path.read_text(encoding="utf-8") == rest, f"{path} differs from docs/pipelines.md"


def test_the_python_block_runs_from_the_repository_root(monkeypatch) -> None:
    (code,) = [b for lang, b in blocks() if lang == "python" and b.startswith("# run from")]
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the block inserts a folder: undone after
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), {"__name__": "docs_pipelines"})
    first, second = out.getvalue().splitlines()
    assert first == "spans 0 ()"
    scores = ast.literal_eval(second)  # the dict of metric means the block prints
    assert set(scores) == {"R@4", "RR@4", "R@budget=1000"}
    assert 0.1 < scores["R@4"] < 1.0


def test_the_command_runs_the_three_pipelines(tmp_path) -> None:
    (command,) = [b.strip() for lang, b in blocks() if lang == "bash" and "ragmeter run" in b]
    args = command.split()[1:]
    assert args == ["run", "examples/fare-rules/pipelines.toml"]
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        res = CliRunner().invoke(app, [*args, "--no-store", "--format", "json"])
    finally:
        os.chdir(cwd)
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    rows = {r["variant"]: r for r in data["table"]}
    assert list(rows) == ["bm25", "function", "langchain", "llamaindex"]
    assert [rows[v]["errors"] for v in rows] == [None, 0, 0, 0]
    assert [rows[v]["changes"] for v in list(rows)[1:]] == ["pipeline"] * 3
    assert rows["langchain"]["pipeline"] == ("langchain(pipelines/rag_langchain.py:make_retriever)")
    for v in ("langchain", "llamaindex"):  # MiniLM over the pipelines' chunks finds evidence
        assert rows[v]["R@budget=1000"] > 0.7
