"""User-facing text states the rule itself; it never says "the seed".

A user does not know what "the seed" (the design source of ragmeter) is. Docs may cite "the RAG
evaluation lesson"; help, output, errors and docstrings (shown by ``help()`` and the CLI) state
the rule. A random seed is fine: "--seed", "the seed 0", "the seed for the bootstrap".
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from ragmeter.cli import app

REPO = Path(__file__).resolve().parents[2]
#: "the seed" not followed by a random-seed context, and any "seed's" / "seeds'".
FORBIDDEN = re.compile(
    r"\bthe\s+seed\b(?!\s+(?:\d|=|for\s+the\s+(?:random|bootstrap|resampl)|of\s+the\s+random|"
    r"value|number))|\bseed'?s'|\bseed's\b",
    re.IGNORECASE,
)


def hits(text: str) -> list[str]:
    return [
        text[max(0, m.start() - 30) : m.end() + 30].replace("\n", " ")
        for m in FORBIDDEN.finditer(text)
    ]


def test_the_pattern_tells_the_design_source_from_a_random_seed() -> None:
    for bad in (
        "as the seed says",
        "The seed's toy table",
        "the seed: keep checks",
        "THE SEED",
        "the\nseed's lab",
    ):
        assert hits(bad), bad
    for fine in (
        "--seed 7",
        "the seed 0 is used",
        "the seed for the bootstrap",
        "the seed of the random generator",
        "seeded runs",
        "seed = 3",
        "across seeds 0..7",
        "the seed value",
    ):
        assert not hits(fine), fine


def _markdown() -> list[Path]:
    return [
        REPO / "README.md",
        *sorted((REPO / "docs").glob("*.md")),
        *sorted((REPO / "examples").glob("*/README.md")),
    ]


@pytest.mark.parametrize("path", _markdown(), ids=lambda p: str(p.relative_to(REPO)))
def test_docs_never_say_the_seed(path: Path) -> None:
    assert hits(path.read_text(encoding="utf-8")) == []


def test_strings_in_the_package_never_say_the_seed() -> None:
    """Every string literal in src/ (help, messages, rendered output, docstrings)."""
    found = []
    for p in sorted((REPO / "src" / "ragmeter").rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found += [f"{p.relative_to(REPO)}:{node.lineno}: {h}" for h in hits(node.value)]
    assert found == []


def _commands(cmd: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of the app (typer vendors click, so groups are found by duck type)."""
    out = [path]
    if hasattr(cmd, "commands"):
        for name, sub in cmd.commands.items():
            if not sub.hidden:
                out += _commands(sub, (*path, name))
    return out


def test_cli_help_never_says_the_seed() -> None:
    runner = CliRunner()
    commands = _commands(typer.main.get_command(app))
    assert len(commands) > 10  # the walk reached the subcommands
    for path in commands:
        r = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert r.exit_code == 0, (path, r.output)
        assert hits(r.output) == [], path


def test_demo_output_never_says_the_seed() -> None:
    r = CliRunner().invoke(app, ["demo"], env={"COLUMNS": "160"})
    assert r.exit_code == 0, r.output
    assert "nDCG(gain=exp)@3" in r.output  # the demo ran its sections
    assert hits(r.output) == []
