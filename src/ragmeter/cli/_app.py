"""The typer application. Each command group lives in its own module and registers itself here."""

from __future__ import annotations

import importlib
import sys

import typer

from .._errors import RagmeterError
from ._common import err_console, line

app = typer.Typer(
    name="ragmeter",
    help="Evaluate a RAG chain link by link: retrieval at the prompt k, span labels, paired "
    "comparisons and diagnosis.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: Modules under ragmeter.cli that define ``register(app)``. Add one line per command module.
COMMAND_MODULES = [
    "_answers",
    "_answers_position",  # a command of the `answers` group: after _answers
    "_diagnose",
    "_eval",
    "_demo",
    "_golden",
    "_compare",
    "_plan",
    "_chunk",
    "_labels",
    "_run",
    "_explain",
    "_metrics",
    "_runs",
    "_db",
    "_lab",
]

for _name in COMMAND_MODULES:
    importlib.import_module(f"{__package__}.{_name}").register(app)


def main() -> None:
    """Entry point: user errors become a one-line message and exit code 2, never a traceback."""
    try:
        app(standalone_mode=True)
    except RagmeterError as exc:  # pragma: no cover - typer catches inside commands already
        err_console.print(line(("error:", "red"), f" {exc}"), soft_wrap=True)
        sys.exit(2)
