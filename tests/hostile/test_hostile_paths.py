"""A path that is a folder (or otherwise unreadable) gets one clear line naming it, exit 2, never
a traceback, whichever command reads it."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ragmeter.cli import app


@pytest.mark.parametrize(
    "args",
    [
        ["run", "{d}", "--no-store"],
        ["eval", "{d}", "{d}", "--no-store"],
        ["golden", "validate", "{d}"],
    ],
    ids=["run", "eval", "golden-validate"],
)
def test_a_folder_where_a_file_belongs(tmp_path, args) -> None:
    folder = tmp_path / "a folder"
    folder.mkdir()
    res = CliRunner().invoke(app, [a.format(d=folder) for a in args])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert str(folder) in res.stderr
    assert "error:" in res.stderr
