"""A command that only reads the store never creates one: a SQLite file that is not there is
named in one line (the resolved path, the folder a relative URL is read from), exit 2, and the
folder is left as it was. Before, `runs list --db sqlite:///lab.db` typed in the wrong folder
created an empty lab.db (and its lock file) and answered "no runs", `report 1` "has no run 1"."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter.cli import app

READERS = [
    ["runs", "list"],
    ["runs", "show", "1"],
    ["runs", "export", "1", "-o", "out"],
    ["runs", "delete", "1", "--yes"],
    ["report", "1", "-o", "report.html"],
    ["lab", "users", "list"],
    ["answers", "export", "1", "-o", "answers.jsonl"],
]


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("args", READERS, ids=lambda a: " ".join(a[:2]))
@pytest.mark.parametrize("given", ["relative", "absolute", "default"])
def test_a_reader_names_the_missing_store_and_creates_nothing(
    args: list[str], given: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAGMETER_DATABASE_URL", raising=False)
    db = {
        "relative": ["--db", "sqlite:///lab.db"],
        "absolute": ["--db", f"sqlite:///{tmp_path}/x/lab.db"],
    }
    result = CliRunner().invoke(app, [*args, *db.get(given, [])])
    err = result.stderr if result.stderr_bytes is not None else result.output
    assert result.exit_code == 2, (result.output, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    if given == "default":
        assert f"no experiment store in {tmp_path}" in err and ".ragmeter/ragmeter.db" in err
    else:
        where = tmp_path / "lab.db" if given == "relative" else tmp_path / "x" / "lab.db"
        assert f"no experiment store at {where}" in err
    assert listing(tmp_path) == []  # no store, no lock file, no folder, no output


def test_a_recording_command_still_creates_its_store(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAGMETER_DATABASE_URL", raising=False)
    (tmp_path / "q.txt").write_text("q1 0 d1 1\n", encoding="utf-8")
    (tmp_path / "r.txt").write_text("q1 Q0 d1 1 1.0 t\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", "q.txt", "r.txt", "--db", "sqlite:///new.db"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "new.db").is_file()
    result = CliRunner().invoke(app, ["runs", "list", "--db", "sqlite:///new.db"])
    assert result.exit_code == 0, result.output
