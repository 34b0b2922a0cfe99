"""Progress reporting that costs nothing when nobody watches.

Library calls are silent by default (:data:`SILENT`). On a terminal the CLI draws a rich
progress bar per step (:class:`RichProgress`); off a terminal (a file, a pipe, a CI log) a bar
would print nothing useful, so :class:`LineProgress` prints plain lines instead: an estimate once
the work after the first report is measured ("about 13 min left, 88 of 90 items to go on 2 cores
(from 2 items at 9.0 s each; the 1 min 40 s to the first item, start-up such as a model load or
an index build, excluded)"), then a line at least every 30 s while the step runs, and one when
it ends. Steps under 30 s print nothing. :func:`progress_for` picks the sink for a console.

Estimates exclude one-off start-up: everything up to the first item reported (a model load, an
index build, a cache read that arrives at once) is paid once, so counting it as the first
item's time would multiply it by the number of items (a 90 s model load made a 13-minute run
read "about 2.5 h"). The rate is measured from the first report on, and the line says what it
is based on.
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


def _each(rate: float) -> str:
    """A measured rate as people read it: "1.33/s" when faster than one a second, else the
    time one item takes ("9.0 s each")."""
    return f"{rate:.2f}/s" if rate >= 1.0 else f"{1.0 / rate:.1f} s each"


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

    def _rate(self) -> tuple[float, int] | None:
        """Items per second since the first report and how many that is measured on; None
        before a second of work after it is measured (start-up, up to the first report, is
        never in the rate)."""
        st = self._step
        assert st is not None
        first = st["first"]
        if first is None:
            return None
        t0, n0 = first
        n, spent = st["done"] - n0, self.clock() - t0
        if n <= 0 or spent < 1.0:
            return None
        return n / spent, n

    def _periodic(self) -> None:
        st = self._step
        if st is None or self.clock() - st["last"] < self.every:
            return
        elapsed = self.clock() - st["start"]
        total, done = st["total"], st["done"]
        if total is None or done == 0:
            self._line(f"working, {_clock(elapsed)} elapsed")
            return
        head = f"{done:,}/{total:,} ({done / total:.0%}), {_clock(elapsed)} elapsed"
        measured = self._rate()
        if measured is None:  # only start-up and the first report so far: no rate yet
            self._line(f"{head}, no estimate yet (start-up is not counted)")
            return
        rate, _ = measured
        self._line(f"{head}, about {_about((total - done) / rate)} left")

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
            if st["first"] is None:
                if done > 0:  # the first report ends start-up (model load, index build, cache)
                    st["first"] = (self.clock(), done)
            # one estimate, once a second of work after the first report is measured
            elif not st["estimated"] and total and done < total:
                measured = self._rate()
                if measured is not None:
                    st["estimated"] = True
                    rate, n = measured
                    left = (total - done) / rate
                    startup = st["first"][0] - st["start"]
                    # slow work ahead: say so, so it can be stopped
                    if startup + (self.clock() - st["first"][0]) + left >= 2 * self.every:
                        items = "item" if n == 1 else "items"
                        self._line(
                            f"about {_about(left)} left, {total - done:,} of {total:,} items to "
                            f"go on {self.cores} cores (from {n:,} {items} at {_each(rate)}; the "
                            f"{_clock(startup)} to the first item, start-up such as a model "
                            "load or an index build, excluded)"
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
                "first": None,
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
