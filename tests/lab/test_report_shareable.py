"""``ragmeter report`` writes a file meant to be shared (issue 27, item 8): no absolute local
path in it (paths relative to the experiments folder, where its command lines run; a file
outside it by name only), and a line on stderr while it is built rather than seconds of
silence."""

from __future__ import annotations

import html
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

pytest.importorskip("jinja2")  # justified: a core dependency, named if missing

from _lab_store import FareStore, cli_json, record_fare_rules

from ragmeter.cli import app


@pytest.fixture(scope="module")
def fare(tmp_path_factory: pytest.TempPathFactory) -> FareStore:
    root = tmp_path_factory.mktemp("shared-report-store")
    fare = record_fare_rules(root)
    human = root / "labels" / "human.jsonl"
    human.parent.mkdir()
    judge = root / "judge.jsonl"
    pairs = [("change-fee-standard", "supported"), ("change-fee-basic", "unsupported")]
    human.write_text("".join(json.dumps({"id": i, "label": w}) + "\n" for i, w in pairs))
    judge.write_text("".join(json.dumps({"id": i, "label": w}) + "\n" for i, w in pairs))
    cli_json(
        "judge", "validate", "--human", human, "--judge", judge, "--db", fare.url, "-f", "json"
    )
    return fare


@pytest.fixture(scope="module")
def written(fare: FareStore, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("shared-report") / "report.html"
    r = CliRunner().invoke(
        app,
        ["report", "1", "2", "3", "4", "-o", str(out), "--db", fare.url, "--root", str(fare.root)],
    )
    assert r.exit_code == 0, r.output
    return {"html": out.read_text(encoding="utf-8"), "stderr": r.stderr, "out": out}


def test_no_absolute_local_path_in_the_report(
    written: dict[str, Any], fare: FareStore, tmp_path_factory: pytest.TempPathFactory
) -> None:
    text = html.unescape(written["html"])
    base = tmp_path_factory.getbasetemp()
    for folder in {base, base.resolve(), fare.root, fare.root.resolve(), written["out"].parent}:
        assert str(folder) not in text, f"{folder} is in the report"
    repo = str(Path(__file__).resolve().parents[2])
    assert repo not in text, "the checkout's path is in the report"
    # the store is named as the commands can use it from the experiments folder
    assert "sqlite:///lab.db" in text


def test_the_command_lines_run_from_the_experiments_folder(
    written: dict[str, Any], fare: FareStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = re.findall(r'<pre class="mono cmd">(.*?)</pre>', written["html"], flags=re.S)
    assert blocks
    lines = [shlex.split(ln) for ln in html.unescape(blocks[0]).splitlines()]
    monkeypatch.chdir(fare.root)
    for words in lines:
        assert words[0] == "ragmeter"
        r = CliRunner().invoke(app, words[1:])
        assert r.exit_code == 0, (words, r.output)


def test_a_line_on_stderr_while_the_report_is_built(written: dict[str, Any]) -> None:
    lines = written["stderr"].splitlines()
    assert len(lines) >= 2
    assert lines[0].startswith("building the report")
    assert "report written to" in " ".join(written["stderr"].split())
