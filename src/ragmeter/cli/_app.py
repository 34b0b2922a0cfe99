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

#: commands a process started as ``ragmeter CMD ...`` registers alone: the lab starts a server,
#: and its start (and --help) should not wait for every other command's imports. The module
#: registers at least two commands, so the app stays a group (``ragmeter lab``, not ``ragmeter``).
ALONE = {"lab": "_lab", "report": "_lab"}


def _modules(argv: list[str]) -> list[str]:
    """Every command module, or only the one a ``ragmeter lab|report ...`` process runs (an
    imported app, as in tests, always has every command)."""
    script = argv[0].replace("\\", "/").rsplit("/", 1)[-1] if argv else ""
    if script in ("ragmeter", "__main__.py") and len(argv) > 1 and argv[1] in ALONE:
        return [ALONE[argv[1]]]
    return COMMAND_MODULES


for _name in _modules(sys.argv):
    importlib.import_module(f"{__package__}.{_name}").register(app)

importlib.import_module(f"{__package__}._words").use_words_for_types()


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
