"""Progress reporting that costs nothing when nobody watches.

Library calls are silent by default (:data:`SILENT`); the CLI passes a :class:`RichProgress`
that draws a rich progress bar on stderr for each step.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, Protocol


class ProgressSink(Protocol):
    def step(
        self, description: str, total: int | None
    ) -> contextlib.AbstractContextManager[Callable[[int], None]]:
        """A context whose value is ``advance(n)``; ``total=None`` means a spinner."""
        ...


class _Silent:
    @contextlib.contextmanager
    def step(self, description: str, total: int | None) -> Iterator[Callable[[int], None]]:
        yield lambda n: None


SILENT: ProgressSink = _Silent()


class RichProgress:
    """Rich progress bars on a console (the CLI uses stderr, so stdout stays clean)."""

    def __init__(self, console: Any) -> None:
        self.console = console

    @contextlib.contextmanager
    def step(self, description: str, total: int | None) -> Iterator[Callable[[int], None]]:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        # markup=False: descriptions carry variant and chunker names (tokens:100:0, [x]) that
        # must print as written, never as markup or emoji codes
        columns = [
            SpinnerColumn(),
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        ]
        # transient: a finished step leaves no bar behind; the summary table says what happened
        with Progress(*columns, console=self.console, transient=True) as bar:
            task = bar.add_task(description, total=total)
            yield lambda n: bar.advance(task, n)
