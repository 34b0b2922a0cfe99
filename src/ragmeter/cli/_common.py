"""Helpers shared by CLI commands: consoles, error handling, output formats."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Container, Iterable, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer
from rich.console import Console, ConsoleDimensions

from .._errors import RagmeterError
from .._literal import CAPTION, TITLE, line, lit  # noqa: F401  (re-exported for the commands)

if TYPE_CHECKING:  # pragma: no cover
    from rich.table import Table


class _Console(Console):
    """A rich console whose width follows ``$COLUMNS`` when it is set at print time.

    rich fixes the width when the console is built; the CLI's consoles are built at import, so
    a caller (a pipe, a CI log, a test runner) that sets COLUMNS later would be ignored.
    """

    @property
    def size(self) -> ConsoleDimensions:
        dims = super().size
        cols = os.environ.get("COLUMNS", "")
        return ConsoleDimensions(int(cols), dims.height) if cols.isdigit() else dims

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """Tables go through :func:`ragmeter.cli._fit.fit`: at any width no number, date or id is
        cut (wrapped between words, or stacked one row per block when the words cannot fit)."""
        from rich.table import Table

        from ._fit import fit

        super().print(*(fit(o) if isinstance(o, Table) else o for o in objects), **kwargs)


# emoji=False: ":100:" in a chunker name such as tokens:100:0 must never become an emoji. Data
# printed on these consoles still goes through ragmeter._literal (lit/line) or escape().
console = _Console(highlight=False, emoji=False)
err_console = _Console(stderr=True, highlight=False, emoji=False)

F = TypeVar("F", bound=Callable[..., Any])


class Format(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


class TableJson(StrEnum):
    """``--format`` of a command that prints a table or JSON (no CSV)."""

    table = "table"
    json = "json"


def handle_errors(fn: F) -> F:
    """Turn RagmeterError into a clear message on stderr and exit code 2 (never a traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            _finite_options(kwargs)
            return fn(*args, **kwargs)
        except RagmeterError as exc:
            err_console.print(line(("error:", "red"), f" {exc}"), soft_wrap=True)
            raise typer.Exit(2) from None
        except OSError as exc:
            # a path that is a folder, unreadable or on a full disk: say which, never a traceback
            if exc.filename is None:
                raise
            what = exc.strerror or type(exc).__name__
            err_console.print(line(("error:", "red"), f" {exc.filename}: {what}"), soft_wrap=True)
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


def _finite_options(kwargs: dict[str, Any]) -> None:
    """No ragmeter option takes NaN or infinity (click reads 'nan', 'inf' and '1e999' as floats):
    refuse them by the option's name before the command starts; ranges are the library's."""
    from .._numbers import finite

    for name, value in kwargs.items():
        if isinstance(value, float):
            finite("--" + name.replace("_", "-"), value)


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def columns_table(
    title: Any, columns: Iterable[str], *, text: Container[str] | None = None, **options: Any
) -> Table:
    """A table titled ``title``, one column per name: the ``text`` columns left-justified, the
    rest (numbers) right-justified; every column text when ``text`` is None. ``options`` go to
    every column (``overflow``, ``no_wrap``)."""
    from rich.table import Table

    t = Table(title=title)
    for col in columns:
        t.add_column(col, justify="left" if text is None or col in text else "right", **options)
    return t


def write_csv(header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """``--format csv``: the header, then the rows a record's ``csv_rows()`` gives, on stdout."""
    import csv

    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)


def exit_process(code: object) -> NoReturn:
    """End the ``python -m ragmeter`` process with ``code`` (a ``SystemExit`` code), doing what
    the interpreter does before it finalizes, but not the finalization itself.

    Why: pyarrow's worker threads sometimes drop the last reference to a Python object a reader
    lent them (the checked stream of a TREC file, the bytes of a stored blob) only after the
    read has returned, and need the GIL for it. If the interpreter is finalizing by then (a
    command that fails on a file prints its error and exits at once; a loaded machine delays the
    thread), CPython ends that thread inside arrow's C++ worker loop and the process aborts
    (SIGABRT, "terminate called without an active exception") after the right error message.
    Non-daemon threads are joined, atexit callbacks run, the store's connections are closed
    (SQLite folds its write-ahead log back into the database file) and the output is flushed,
    as at a normal exit; then the process ends.
    """
    import atexit
    import threading

    if code is None or isinstance(code, int):
        status = code or 0
    else:  # sys.exit("message") prints the message and ends with 1
        print(code, file=sys.stderr)
        status = 1
    threading._shutdown()  # type: ignore[attr-defined]  # the interpreter's first exit step
    atexit._run_exitfuncs()
    _close_databases()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be said
            pass
    os._exit(status)


def _close_databases() -> None:
    """Dispose of every SQLAlchemy engine still open, as the finalization skipped would have
    (:func:`ragmeter.store.dispose_engines`); a process that opened no store imports none."""
    if "ragmeter.store" in sys.modules:
        from ..store import dispose_engines

        dispose_engines()
