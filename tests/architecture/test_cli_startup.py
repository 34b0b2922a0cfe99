"""``ragmeter --help`` and ``--version`` start light: no numpy, pyarrow, pandas, scipy, SQLAlchemy
or pydantic in ``sys.modules`` afterwards (checked in a fresh interpreter, not with a clock), and
every command's ``--help`` still works.

The command modules are imported explicitly by ``cli/_app.py``; each keeps its heavy imports
inside its command functions. When a module brings one back to its top, the failure names the
heavy package and the import chain that pulled it (from ``python -X importtime``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("numpy", "pyarrow", "pandas", "scipy", "sqlalchemy", "pydantic")

#: ``ragmeter --help``'s commands, in the order it lists them (single commands, then groups)
COMMANDS = [
    "diagnose",
    "eval",
    "demo",
    "compare",
    "confirm",
    "sweep",
    "gate",
    "plan",
    "chunk",
    "run",
    "metrics",
    "report",
    "answers",
    "judge",
    "golden",
    "labels",
    "label",  # labelling queues (docs/labelling.md)
    "explain",
    "runs",
    "db",
    "lab",  # a group since `lab users` (docs/team.md)
]

#: the real entry point (the console script's ``entry``), run as ``ragmeter ARGS``; an atexit
#: hook (``exit_process`` runs them before it ends the process) writes the heavy modules loaded
RUN = """
import atexit, json, os, sys
def report():
    with open(os.environ["RAGMETER_STARTUP_OUT"], "w") as fh:
        json.dump(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r}), fh)
atexit.register(report)
sys.argv = ["ragmeter", *{args!r}]
from ragmeter.cli import entry
entry()
"""


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ, COLUMNS="200", RAGMETER_STARTUP_OUT=str(tmp_path / "modules.json"))
    env.pop("RAGMETER_DB", None)
    return env


def _run(args: list[str], tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    code = RUN.format(heavy=set(HEAVY), args=args)
    return subprocess.run(
        [sys.executable, *flags, "-c", code],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        cwd=tmp_path,
        timeout=120,
    )


def import_chain(importtime: str, module: str) -> list[str]:
    """The chain of imports that first loaded ``module``, outermost first, read from
    ``python -X importtime``'s stderr (a child is printed before its parent, one level
    deeper)."""
    rows = []
    for row in importtime.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+\d+ \|( *)(\S+)", row)
        if m:
            rows.append((len(m.group(1)) // 2, m.group(2)))
    for i, (depth, name) in enumerate(rows):
        if name == module:
            chain = [name]
            for d, parent in rows[i + 1 :]:
                if d < depth:
                    chain.append(parent)
                    depth = d
            return chain[::-1]
    return []


def _heavy_after(args: list[str], tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], str]:
    done = _run(args, tmp_path)
    assert done.returncode == 0, done.stderr
    loaded = json.loads((tmp_path / "modules.json").read_text())
    roots = sorted({m.split(".")[0] for m in loaded})
    if not roots:
        return done, ""
    traced = _run(args, tmp_path, "-X", "importtime")
    chains = [" -> ".join(import_chain(traced.stderr, r)) for r in roots]
    return done, "; ".join(
        f"{r} (via {c or 'unknown'})" for r, c in zip(roots, chains, strict=True)
    )


@pytest.mark.parametrize("args", [["--help"], ["--version"]], ids=["help", "version"])
def test_help_and_version_import_nothing_heavy(args: list[str], tmp_path: Path) -> None:
    done, heavy = _heavy_after(args, tmp_path)
    assert not heavy, f"`ragmeter {args[0]}` imported {heavy}"
    if args == ["--version"]:
        from ragmeter._about import __version__

        assert done.stdout.strip() == f"ragmeter {__version__}"


def test_help_lists_every_command(tmp_path: Path) -> None:
    done = _run(["--help"], tmp_path)
    assert done.returncode == 0, done.stderr
    panel = done.stdout.split("Commands")[1]
    listed = re.findall(r"^│ (\S+)  ", panel, flags=re.MULTILINE)
    assert listed == COMMANDS


def _command_paths() -> list[list[str]]:
    """Every command and group of the app, as the words that name it (the root: [])."""
    import typer

    from ragmeter.cli import app

    out: list[list[str]] = []

    def walk(cmd: object, path: list[str]) -> None:
        out.append(path)
        for name, sub in getattr(cmd, "commands", {}).items():  # a group (typer's own click)
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return out


def test_every_command_help_works() -> None:
    from typer.testing import CliRunner

    from ragmeter.cli import app

    paths = _command_paths()
    assert {p[0] for p in paths if len(p) == 1} == set(COMMANDS)
    runner = CliRunner()
    for path in paths:
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "120"})
        shown = " ".join(["ragmeter", *path])
        assert result.exit_code == 0, f"{shown} --help: {result.output}"
        assert "Usage:" in result.output, f"{shown} --help printed no usage line"


def test_import_chain_reads_importtime() -> None:
    sample = "\n".join(
        [
            "import time: self [us] | cumulative | imported package",
            "import time:        10 |         10 |       numpy.core",
            "import time:        20 |         30 |     numpy",
            "import time:         5 |         35 |   ragmeter.metrics",
            "import time:         5 |         40 | ragmeter.cli._eval",
        ]
    )
    assert import_chain(sample, "numpy") == ["ragmeter.cli._eval", "ragmeter.metrics", "numpy"]
    assert import_chain(sample, "pyarrow") == []
