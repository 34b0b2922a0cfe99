"""Progress reporting that costs nothing when nobody watches.

Library calls are silent by default (:data:`SILENT`). On a terminal the CLI draws a rich
progress bar per step (:class:`RichProgress`); off a terminal (a file, a pipe, a CI log) a bar
would print nothing useful, so :class:`LineProgress` prints plain lines instead: an estimate once
the first batch of a long step is measured ("about 40 min for 3,176 items on 2 cores"), then a
line at least every 30 s while the step runs, and one when it ends. Steps under 30 s print
nothing. :func:`progress_for` picks the sink for a console.
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


def _clock(seconds: float) -> str:
    """Elapsed time: "45 s", "16 min 24 s", "2 h 5 min"."""
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def _about(seconds: float) -> str:
    """A rough duration: "23 s", "40 min", "2.5 h"."""
    if seconds < 90:
        return f"{round(seconds)} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


class LineProgress:
    """Plain progress lines for a log: never silent for longer than ``every`` seconds of a step.

    ``write`` receives each line; ``clock`` is injected (tests drive it by hand). A step without
    advances (a spinner: indexing, scoring) is kept honest by a heartbeat thread that calls
    :meth:`tick` (``heartbeat=False`` leaves that to the caller).
    """

    def __init__(
        self,
        write: Callable[[str], None],
        *,
        clock: Callable[[], float] | None = None,
        every: float = 30.0,
        cores: int | None = None,
        heartbeat: bool = True,
    ) -> None:
        import os
        import threading
        import time

        self.write, self.every = write, every
        self.clock = clock or time.monotonic
        self.cores = cores or os.cpu_count() or 1
        self.heartbeat = heartbeat
        self._lock = threading.Lock()
        self._step: dict[str, Any] | None = None

    def _line(self, text: str) -> None:
        assert self._step is not None
        self._step["last"] = self.clock()
        self._step["said"] = True
        self.write(f"{self._step['description']}: {text}")

    def _periodic(self) -> None:
        st = self._step
        if st is None or self.clock() - st["last"] < self.every:
            return
        elapsed = self.clock() - st["start"]
        total, done = st["total"], st["done"]
        if total is None or done == 0:
            self._line(f"working, {_clock(elapsed)} elapsed")
            return
        left = (total - done) * elapsed / done
        self._line(
            f"{done:,}/{total:,} ({done / total:.0%}), {_clock(elapsed)} elapsed, "
            f"about {_about(left)} left"
        )

    def tick(self) -> None:
        """Print a line if the step has been quiet for ``every`` seconds (the heartbeat)."""
        with self._lock:
            self._periodic()

    def _advance(self, n: int) -> None:
        with self._lock:
            st = self._step
            if st is None:
                return
            st["done"] += max(n, 0)
            total, done = st["total"], st["done"]
            spent = self.clock() - st["start"]
            # one estimate, once a second of work is measured (a cached head that arrives at
            # once would promise far too little)
            if not st["estimated"] and total and 0 < done < total and spent >= 1.0:
                st["estimated"] = True
                rate = done / spent
                whole = total / rate
                if whole >= 2 * self.every:  # slow work ahead: say so, so it can be stopped
                    self._line(
                        f"about {_about(whole)} for {total:,} items on {self.cores} cores "
                        f"({rate:.2f}/s over the first {done:,})"
                    )
                    return
            if total is None or done < total:
                self._periodic()

    @contextlib.contextmanager
    def step(self, description: str, total: int | None) -> Iterator[Callable[[int], None]]:
        import threading

        now = self.clock()
        with self._lock:
            self._step = {
                "description": description, "total": total, "done": 0,
                "start": now, "last": now, "said": False, "estimated": False,
            }  # fmt: skip
        stop = threading.Event()
        beat = None
        if self.heartbeat:

            def run() -> None:
                while not stop.wait(min(self.every / 6, 5.0)):
                    self.tick()

            beat = threading.Thread(target=run, name="ragmeter-progress", daemon=True)
            beat.start()
        try:
            yield self._advance
        finally:
            stop.set()
            if beat is not None:
                beat.join()
            with self._lock:
                st, self._step = self._step, None
            if st is not None and st["said"]:
                took = _clock(self.clock() - st["start"])
                done = f"done, {st['done']:,} in {took}" if st["total"] else f"done in {took}"
                self.write(f"{description}: {done}")


def progress_for(console: Any) -> ProgressSink:
    """Bars on a terminal, plain lines off one (files, pipes, CI logs), silence without a
    console."""
    if console is None:
        return SILENT
    if getattr(console, "is_terminal", False):
        return RichProgress(console)
    from rich.markup import escape

    # escape: descriptions carry names such as tokens:100:0 or [x] that print as written
    return LineProgress(lambda text: console.print(escape(text), soft_wrap=True, emoji=False))
