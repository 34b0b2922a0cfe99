"""The typer application. Each command group lives in its own module and registers itself here.

Every command module is imported explicitly (the import-graph test sees each one) and cheaply:
a command module's top imports only typer, rich and the CLI's helpers, everything heavy (numpy,
pyarrow, pydantic, SQLAlchemy, the library's packages and ``ragmeter.workflows``) inside its
command functions, so ``ragmeter --help`` and ``--version`` load none of it
(tests/architecture/test_cli_startup.py checks ``sys.modules`` after both).
"""

from __future__ import annotations

import sys

import typer

from .._errors import RagmeterError
from . import (
    _answers,
    _answers_export,
    _answers_position,
    _chunk,
    _compare,
    _confirm,
    _db,
    _demo,
    _diagnose,
    _eval,
    _explain,
    _gate,
    _golden,
    _lab,
    _label,
    _labels,
    _metrics,
    _plan,
    _report,
    _run,
    _runs,
    _sweep,
)
from ._common import err_console, line
from ._words import tidy_help, use_words_for_types

app = typer.Typer(
    name="ragmeter",
    help="Evaluate a RAG chain link by link: retrieval at the prompt k, span labels, paired "
    "comparisons and diagnosis.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from .._about import __version__

        typer.echo(f"ragmeter {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_version, help="Print the version and exit."
    ),
) -> None:
    """Evaluate a RAG chain link by link: retrieval at the prompt k, span labels, paired
    comparisons and diagnosis."""
    from ._words import show_warnings_as_messages

    show_warnings_as_messages()


#: The command modules, each defining ``register(app)``, in the order their commands appear in
#: ``ragmeter --help`` (typer lists single commands first, then groups). A new command module is
#: one line here and one name in the import above (ruff flags a name imported and not listed).
COMMAND_MODULES = (
    _answers,
    _answers_position,  # a command of the `answers` group: after _answers
    _answers_export,  # likewise
    _diagnose,
    _eval,
    _demo,
    _golden,
    _compare,
    _confirm,
    _sweep,
    _gate,
    _plan,
    _chunk,
    _labels,
    _label,
    _run,
    _explain,
    _metrics,
    _runs,
    _db,
    _lab,
    _report,
)

for _module in COMMAND_MODULES:
    _module.register(app)

use_words_for_types()
tidy_help(app)


def main() -> None:
    """Entry point: user errors become a one-line message and exit code 2, never a traceback."""
    try:
        app(standalone_mode=True)
    except RagmeterError as exc:  # pragma: no cover - typer catches inside commands already
        err_console.print(line(("error:", "red"), f" {exc}"), soft_wrap=True)
        sys.exit(2)


def entry() -> None:
    """The ``ragmeter`` console script: :func:`main`, ended through
    :func:`~ragmeter.cli._common.exit_process` (``python -m ragmeter`` does the same), so a
    pyarrow thread still inside Python at exit cannot abort the process after its output."""
    from ._common import exit_process

    try:
        main()
    except SystemExit as exc:
        exit_process(exc.code)
    exit_process(0)
