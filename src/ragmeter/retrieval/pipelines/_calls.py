"""Calling the user's code (a pipeline, a generator function) one question at a time.

What a call may do and what ragmeter makes of it:

* **raise** an exception: it is that question's error (recorded by the caller, the run goes
  on), described on one line by :func:`describe`;
* **call** ``sys.exit()`` (or raise ``SystemExit``, or any other ``BaseException`` of its own):
  the same, as :class:`UserExit`; it never ends ragmeter's run with exit code 0 and no output;
* **not return** within ``timeout`` seconds: the question's error is :class:`TimedOut`
  ("timed out after 60 s") and the run goes on. Python cannot stop a thread, so the call keeps
  running in the background (a daemon thread: the process still exits at the end);
* **Ctrl-C** (``KeyboardInterrupt``) still stops the run, as everywhere in ragmeter.

With a timeout, each calling thread hands its calls to one worker thread of its own, so a
function sees the same thread from call to call (until a call times out: the next call gets a
fresh worker). ``timeout = 0`` (or None) calls the function in ragmeter's own thread, for code
that must run there (a ``sqlite3`` connection opened at import, ``signal.signal``).
``os._exit()`` ends the process at once, before any of this can run: nothing in-process can
catch it. What a call prints to ``sys.stdout`` goes to stderr while a run is on
(:mod:`._stdout`): ragmeter's stdout (``--format json``) stays its own.
"""

from __future__ import annotations

import math
import queue
import re
import threading
import weakref
from collections.abc import Callable
from typing import Any

from ..._errors import UsageError
from ._stdout import user_code

#: seconds one call of the user's code may take, unless the experiment file says otherwise
DEFAULT_TIMEOUT = 300.0
#: the largest timeout accepted (a day); 0 means no limit
MAX_TIMEOUT = 86_400.0
#: characters of an error message kept (a message of megabytes is cut, saying so)
MAX_MESSAGE = 1000

_SURROGATE = re.compile(r"[\ud800-\udfff]")
_SPACE = re.compile(r"[\x00-\x1f\x7f]+")


class UserCodeError(Exception):
    """Something the user's code did that is not an ordinary exception; its message is the
    whole description (recorded as the question's error as it stands)."""


class UserExit(UserCodeError):
    """The user's code called ``sys.exit()`` or raised another ``BaseException`` of its own."""


class TimedOut(UserCodeError):
    """The user's code did not return within the timeout."""


def check_timeout(value: Any, what: str = "timeout") -> float | None:
    """``value`` as a timeout in seconds, None for no limit (0 or None); a UsageError for a
    value that is not a number from 0 to :data:`MAX_TIMEOUT`."""
    if value is None:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or not 0 <= value <= MAX_TIMEOUT:
        raise UsageError(
            f"{what} must be a number of seconds from 0 (no limit) to {MAX_TIMEOUT:g}, "
            f"got {value!r}"
        )
    return float(value) or None


def one_line(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` safe to print and to write as UTF-8 JSON on one line: lone surrogates become
    U+FFFD, control characters and line breaks a space, and a long text is cut, saying so."""
    text = _SPACE.sub(" ", _SURROGATE.sub("\ufffd", text)).strip()
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text) - limit} more characters)"
    return text


def describe(exc: BaseException) -> str:
    """One line for an exception the user's code raised: ``"ValueError: the index is down"``
    (the type alone for an empty message; ours as they stand)."""
    if isinstance(exc, UserCodeError):
        return one_line(str(exc))
    try:
        message = str(exc)
    except Exception:  # a user's __str__ that raises: the type is still worth telling
        message = ""
    name = type(exc).__name__
    return one_line(f"{name}: {message}" if message else name)


def exit_message(exc: BaseException, label: str) -> str:
    """What a ``SystemExit`` (or another ``BaseException``) from ``label`` is recorded as."""
    if isinstance(exc, SystemExit):
        code = "" if exc.code is None else repr(exc.code)
        return one_line(
            f"SystemExit: {label} called sys.exit({code}); raise an exception to fail a "
            "question (ragmeter records it and goes on)"
        )
    return one_line(f"{describe(exc)} (a BaseException raised by {label})")


def _settled(exc: BaseException, label: str) -> BaseException:
    """What the caller re-raises for an exception that left the user's code: the exception
    itself, or a :class:`UserExit` for one that would end the process (KeyboardInterrupt is
    returned as is: Ctrl-C stops the run)."""
    if isinstance(exc, (Exception, KeyboardInterrupt)):
        return exc
    error = UserExit(exit_message(exc, label))
    error.__cause__ = exc
    return error


class _Job:
    """One call handed to a worker: its outcome, and the event that says it is there."""

    __slots__ = ("args", "done", "error", "fn", "value")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn, self.args = fn, args
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with user_code():  # its prints go to stderr during a run (._stdout)
                self.value = self.fn(*self.args)
        except BaseException as exc:  # every outcome goes back to the caller's thread
            self.error = exc
        finally:
            self.done.set()


class _Worker:
    """A daemon thread running jobs one after another; a ``None`` job ends it."""

    def __init__(self, label: str) -> None:
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.thread = threading.Thread(
            target=self._loop, name=f"ragmeter user code: {label}"[:60], daemon=True
        )
        self.thread.start()

    def _loop(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            job.run()


def _stop(workers: list[_Worker]) -> None:
    """End the idle workers of a caller that is gone (a busy one ends after its call)."""
    for worker in workers:
        worker.jobs.put(None)
    workers.clear()


class Caller:
    """Calls the user's code as the module docstring says; ``caller(fn, *args)`` returns what
    ``fn`` returned or raises: the exception it raised, :class:`UserExit`, :class:`TimedOut`,
    or KeyboardInterrupt. ``abandoned`` counts calls left running after their timeout. The
    workers end when the caller is garbage collected (a long-lived process, the lab, makes a
    generator per run and must not keep a thread per generator)."""

    def __init__(self, label: str, timeout: float | None = DEFAULT_TIMEOUT) -> None:
        self.label = label
        self.timeout = check_timeout(timeout)
        self.abandoned = 0
        self._start()

    def _start(self) -> None:
        self._local = threading.local()
        self._workers: list[_Worker] = []
        weakref.finalize(self, _stop, self._workers)

    def __call__(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self.timeout is None:
            try:
                with user_code():
                    return fn(*args)
            except BaseException as exc:
                settled = _settled(exc, self.label)
                if settled is exc:
                    raise
                raise settled from exc
        worker: _Worker | None = getattr(self._local, "worker", None)
        if worker is None:
            worker = self._local.worker = _Worker(self.label)
            self._workers.append(worker)
        job = _Job(fn, args)
        worker.jobs.put(job)
        try:
            finished = job.done.wait(self.timeout)
        except BaseException:  # Ctrl-C while waiting: the call goes on, no later call waits on it
            self._abandon(worker)
            raise
        if not finished:
            self._abandon(worker)
            raise TimedOut(
                f"timed out after {self.timeout:g} s ({self.label} did not return; the call "
                "goes on in the background, as Python cannot stop it)"
            )
        if job.error is not None:
            settled = _settled(job.error, self.label)
            if settled is job.error:
                raise job.error
            raise settled from job.error
        return job.value

    def _abandon(self, worker: _Worker) -> None:
        """Leave ``worker`` to its call (the thread cannot be stopped) and end after it."""
        worker.jobs.put(None)
        self._local.worker = None
        if worker in self._workers:
            self._workers.remove(worker)
        self.abandoned += 1

    # a generator or pipeline may be shipped to other processes (ragmeter.engines): threads
    # do not travel, the setting does
    def __getstate__(self) -> dict[str, Any]:
        return {"label": self.label, "timeout": self.timeout, "abandoned": self.abandoned}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.label, self.timeout = state["label"], state["timeout"]
        self.abandoned = state["abandoned"]
        self._start()
