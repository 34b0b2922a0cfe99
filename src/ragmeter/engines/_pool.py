"""A fixed set of Ray actors, each holding one object built once (a model, a client), and a
map over batches of work that survives a worker dying in the middle of a batch.

Why our own loop rather than Ray Data's ``map_batches`` or ``ray.util.ActorPool``: the caller
must see every finished batch the moment it lands (to store it in ragmeter's content cache), a
batch lost with its worker must be sent again to a fresh actor a bounded number of times, and
when it cannot be, the caller must get an error *after* everything finished was handed over, so
a re-run recomputes only what is missing. Ray Data retries inside its own executor and hands
results back only through its iterator; ``ActorPool`` stops at the first dead actor.

Actors are created with ``max_restarts=0``: a dead actor is replaced here (one replacement per
death, however many of its batches were in flight), so the retry count is ours to bound and test.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .._errors import RagmeterError
from ._counters import add, counted_call


class WorkerLost(RagmeterError):
    """A batch's worker died more times than the engine retries: finished batches were already
    handed to the caller (and cached), so running again recomputes only what is missing."""


class _Holder:
    """The body of every actor: builds its object once, then calls one method on each batch."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self.obj = factory()

    def call(self, method: str, batch: Any, kwargs: dict[str, Any]) -> Any:
        """The method's result and what it added to the object's counters (calls, tokens,
        cost: :mod:`._counters`), which the driver adds to the caller's object."""
        return counted_call(self.obj, method, batch, kwargs)

    def pid(self) -> int:
        import os

        return os.getpid()


class ActorPool:
    """``actors`` Ray actors of ``num_cpus`` CPUs each, all built from ``factory`` (a picklable
    zero-argument callable run in the worker), with at most ``per_actor`` batches queued on each
    (two keep an actor busy while the driver stores the last result)."""

    def __init__(
        self,
        ray: Any,
        factory: Callable[[], Any],
        *,
        actors: int = 1,
        num_cpus: float = 1,
        per_actor: int = 2,
        retries: int = 2,
        stall_s: float | None = None,
    ) -> None:
        self.ray = ray
        self.stall_s = stall_s
        self.factory = factory
        self.num_cpus = num_cpus
        self.per_actor = max(1, per_actor)
        self.retries = max(0, retries)
        self._remote = ray.remote(num_cpus=num_cpus, max_restarts=0, max_task_retries=0)(_Holder)
        self.actors: list[Any] = [self._new() for _ in range(max(1, actors))]
        #: per slot: how many times its actor was replaced (a death seen once per actor)
        self.generation = [0] * len(self.actors)
        self.replaced = 0

    def _new(self) -> Any:
        return self._remote.remote(self.factory)

    def pids(self) -> list[int]:
        """The process id of each actor (tests kill one)."""
        return [self.ray.get(a.pid.remote()) for a in self.actors]

    def map(
        self,
        method: str,
        batches: Sequence[Any],
        *,
        kwargs: dict[str, Any] | None = None,
        max_in_flight: int | None = None,
        on_lost: Callable[[int, Exception], Any] | None = None,
        counts: Any = None,
    ) -> Iterator[tuple[int, Any]]:
        """Yield ``(i, obj.method(batches[i], **kwargs))`` as each batch finishes (any order).

        What each batch added to the worker's counters (:mod:`._counters`) is added to
        ``counts`` (the caller's object the workers hold copies of) before the batch is
        yielded, so the caller's object counts as if it had done the work itself; a batch lost
        with its worker adds nothing.

        A batch whose actor died goes back to the front of the queue, to the slot's new actor,
        up to ``retries`` times; one more death raises :class:`WorkerLost`, or, with
        ``on_lost``, yields ``(i, on_lost(i, error))`` and goes on. An exception raised
        by the method itself (the user's code) propagates as it is. ``max_in_flight`` bounds the
        batches in flight across all actors (an endpoint's concurrency)."""
        from ray.exceptions import (
            ActorDiedError,
            ActorUnavailableError,
            RayActorError,
            RayTaskError,
            WorkerCrashedError,
        )

        lost = (RayActorError, ActorDiedError, ActorUnavailableError, WorkerCrashedError)
        kwargs = kwargs or {}
        cap = len(self.actors) * self.per_actor
        if max_in_flight is not None:
            cap = max(1, min(cap, max_in_flight))
        queue: deque[int] = deque(range(len(batches)))
        running: dict[Any, tuple[int, int, int]] = {}  # ref -> (batch, slot, generation)
        load = [0] * len(self.actors)
        deaths = [0] * len(batches)
        try:
            while queue or running:
                while queue and len(running) < cap:
                    slot = min(range(len(self.actors)), key=load.__getitem__)
                    if load[slot] >= self.per_actor:
                        break
                    i = queue.popleft()
                    ref = self.actors[slot].call.remote(method, batches[i], kwargs)
                    running[ref] = (i, slot, self.generation[slot])
                    load[slot] += 1
                ref = self._next(list(running))
                i, slot, gen = running.pop(ref)
                load[slot] -= 1
                try:
                    result = self.ray.get(ref)
                except RayTaskError as exc:
                    cause = exc.as_instanceof_cause()
                    if isinstance(cause, lost):
                        raise
                    raise getattr(exc, "cause", None) or cause from None
                except lost as exc:
                    deaths[i] += 1
                    if gen == self.generation[slot]:  # first news of this actor's death
                        self.generation[slot] += 1
                        self.replaced += 1
                        self.actors[slot] = self._new()
                    if deaths[i] > self.retries:
                        error = WorkerLost(
                            f"a Ray worker died {deaths[i]} time(s) on batch {i + 1} of "
                            f"{len(batches)} ({type(exc).__name__}); the finished batches are "
                            "kept: run again to compute only what is missing"
                        )
                        if on_lost is None:
                            raise error from None
                        yield i, on_lost(i, error)
                        continue
                    queue.appendleft(i)
                    continue
                value, delta = result
                if counts is not None:
                    add(counts, delta)
                yield i, value
        finally:
            for ref in running:  # stop queued work when the caller stops early
                try:
                    self.ray.cancel(ref)
                except Exception:  # an actor task that already ran, or a dead actor
                    pass

    def _next(self, refs: list[Any]) -> Any:
        """The first of ``refs`` to finish. Waits a second at a time, so the calling thread
        runs its signal handlers (Ctrl-C, a test's alarm) instead of blocking inside Ray; with
        ``stall_s``, no batch finishing for that long is an error (an actor Ray cannot place
        waits forever otherwise)."""
        waited = 0.0
        while True:
            ready, _ = self.ray.wait(refs, num_returns=1, timeout=1.0)
            if ready:
                return ready[0]
            waited += 1.0
            if self.stall_s is not None and waited >= self.stall_s:
                raise WorkerLost(
                    f"no Ray batch finished in {self.stall_s:g} s (is there a free CPU for "
                    f"{len(self.actors)} actor(s) of {self.num_cpus:g} CPU?)"
                )

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
        self.actors = []
