"""Helpers shared by CLI commands: consoles, error handling, output formats."""

from __future__ import annotations

import functools
import json
import sys
from enum import Enum
from typing import Any, Callable, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from .._errors import RagmeterError

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

F = TypeVar("F", bound=Callable[..., Any])


class Format(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


def handle_errors(fn: F) -> F:
    """Turn RagmeterError into a clear message on stderr and exit code 2 (never a traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RagmeterError as exc:
            err_console.print(f"[red]error:[/red] {escape(str(exc))}")
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
