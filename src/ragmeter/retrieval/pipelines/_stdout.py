"""The user's prints go to stderr while ragmeter runs their code: stdout stays ragmeter's.

``ragmeter run --format json`` prints one JSON document on stdout; a pipeline or a generator
function that prints (a debug line, a progress message, a library's banner) must not land in
it. While :func:`routed` is active (``run_experiment`` holds it for the whole run),
``sys.stdout`` is a :class:`Router`: what the user's code writes to it goes to ``sys.stderr``,
and everything else goes to the stdout that was there before, unchanged.

"The user's code" is known per thread: :func:`user_code` marks the calling thread while
ragmeter imports the user's module, builds their retriever or calls their function
(:mod:`._calls` marks each call, in ragmeter's thread or in the worker thread that runs it).
``sys.stdout`` is one object for the whole process, so a mark per thread is what lets a print
from a worker thread go to stderr while ragmeter's own thread (or another run's, in the lab)
still writes to stdout.

Not covered (said in docs/generation-experiments.md): writes to the file descriptor 1 itself
(a C extension's ``printf``, a subprocess the user starts, ``os.write(1, ...)``) and to
``sys.__stdout__``, which no Python-level redirect reaches; and a call abandoned after its
timeout that prints after the run has ended (the router is gone by then).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

_marks = threading.local()
_lock = threading.Lock()
_active = 0  # runs holding the router (nested or concurrent)
_router: Router | None = None


def in_user_code() -> bool:
    """True while this thread runs the user's code (:func:`user_code`)."""
    return getattr(_marks, "depth", 0) > 0


@contextmanager
def user_code() -> Iterator[None]:
    """Mark this thread as running the user's code for the span of the block."""
    _marks.depth = getattr(_marks, "depth", 0) + 1
    try:
        yield
    finally:
        _marks.depth -= 1


class Router:
    """``sys.stdout`` while a run is on: the user's writes to stderr, the rest to ``real``."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def _target(self) -> Any:
        if in_user_code() and sys.stderr is not None:
            return sys.stderr
        return self.real

    def write(self, text: str) -> int:
        return int(self._target().write(text) or 0)

    def writelines(self, lines: Iterable[str]) -> None:
        self._target().writelines(lines)

    def flush(self) -> None:
        self._target().flush()

    @property
    def buffer(self) -> Any:  # ``sys.stdout.buffer.write(b"...")``: the same routing
        return self._target().buffer

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno, ...: the real stdout's
        return getattr(self.real, name)


@contextmanager
def routed() -> Iterator[None]:
    """``sys.stdout`` routed (:class:`Router`) for the span of the block; the stdout that was
    there is put back when the last run holding it ends (unless someone replaced the router
    meanwhile: theirs is left in place)."""
    global _active, _router
    with _lock:
        if _active == 0:
            _router = Router(sys.stdout)
            sys.stdout = _router
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _router is not None:
                if sys.stdout is _router:
                    sys.stdout = _router.real
                _router = None
