"""The Ray engine: embedding, generation and judging on a Ray cluster (local or existing).

What runs where
- **Workers** (Ray actors, ``actors`` of ``cpus_per_actor`` CPUs each) hold the model or client
  once and answer batches: texts to embed (``batch_texts`` a batch), requests to answer or judge
  (``slice_size`` a batch).
- **The driver** (the process that called ragmeter) reads and writes every cache, decides what
  is missing, sends only that, and stores each batch the moment it lands: vectors into the
  embedding store of the content cache (the same shards a local run writes and reads), answers
  into the answer cache, judge replies through the judge's own cache. Scoring and statistics
  run on the driver as before.
- **Counts** (calls, HTTP requests, tokens, cost, texts encoded): each batch comes back with
  what it added to the worker's copy's counters, added to the caller's object
  (:mod:`._counters`), so the caller's generator, judge or encoder counts as after a local run.

A worker that dies in the middle of a batch is replaced and the batch sent again (``retries``
times, :mod:`._pool`); past that, embedding raises :class:`~._pool.WorkerLost` after storing
every finished batch, and a generation or judgement of the lost batch is recorded as failed
(never cached), so a re-run asks again only for what is missing.

Objects travel to workers as a recipe (:class:`Shipped`): the pickled object plus the folders
its code was imported from (an experiment's ``pkg.module:function`` target) and the driver's
own folders on ``sys.path`` (where that module's sibling imports come from), added to the
worker's ``sys.path`` before unpickling. On a multi-machine cluster those folders, model files
and ragmeter itself must exist on every node (a shared filesystem or one image).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._errors import UsageError
from .._extras import require
from ._local import LocalEngine, Progress
from ._pool import ActorPool

if TYPE_CHECKING:
    from ..answers.judges import JudgeReply, JudgeRequest
    from ..generation import Generation, GenerationRequest
    from ..retrieval import Encoder


class RayEngine(LocalEngine):
    """Batch jobs on Ray (see the module docstring).

    ``address`` names an existing cluster (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``);
    None starts a local one of ``num_cpus`` CPUs (all by default) on first use, stopped by
    :meth:`close`. A cluster that is already connected in this process is used as it is.
    ``concurrency`` bounds the batches in flight per endpoint (one encoder, generator or judge)
    across all workers (default: ``actors x 2``). ``stall_s``: fail when no batch finishes for that
    many seconds (default: wait; a model loading on a busy node can take minutes).
    """

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: int | None = None,
        actors: int = 1,
        cpus_per_actor: float = 1,
        batch_texts: int = 256,
        slice_size: int = 16,
        retries: int = 2,
        concurrency: int | None = None,
        stall_s: float | None = None,
        init: dict[str, Any] | None = None,
    ) -> None:
        for label, value in (("actors", actors), ("batch_texts", batch_texts)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise UsageError(f"RayEngine: {label} must be a whole number >= 1, got {value!r}")
        if not isinstance(slice_size, int) or slice_size < 1:
            raise UsageError(
                f"RayEngine: slice_size must be a whole number >= 1, got {slice_size!r}"
            )
        if not isinstance(retries, int) or retries < 0:
            raise UsageError(f"RayEngine: retries must be a whole number >= 0, got {retries!r}")
        if concurrency is not None and (not isinstance(concurrency, int) or concurrency < 1):
            raise UsageError(f"RayEngine: concurrency must be >= 1, got {concurrency!r}")
        if cpus_per_actor <= 0:
            raise UsageError(f"RayEngine: cpus_per_actor must be > 0, got {cpus_per_actor!r}")
        self.address = address
        self.num_cpus = num_cpus
        self.actors = actors
        self.cpus_per_actor = cpus_per_actor
        self.batch_texts = batch_texts
        self.slice_size = slice_size
        self.retries = retries
        self.concurrency = concurrency
        self.stall_s = stall_s
        self.init_options = dict(init or {})
        self._ray: Any = None
        self._started = False
        self._pools: dict[Any, ActorPool] = {}

    # -- the cluster -----------------------------------------------------------------------
    def ray(self) -> Any:
        """The ``ray`` module, connected (started here when no cluster is connected yet)."""
        if self._ray is None:
            ray = require("ray", "the Ray engine (--engine ray)")
            if not ray.is_initialized():
                options: dict[str, Any] = {
                    "include_dashboard": False,
                    "log_to_driver": False,
                    "configure_logging": False,
                    **self.init_options,
                }
                if self.address is None and self.num_cpus is not None:
                    options.setdefault("num_cpus", self.num_cpus)
                try:
                    ray.init(address=self.address, **options)
                except ConnectionError as exc:
                    raise UsageError(
                        f"cannot connect to the Ray cluster at {self.address}: {exc}"
                    ) from None
                self._started = True
            self._ray = ray
        return self._ray

    def pool(self, key: Any, factory: Callable[[], Any]) -> ActorPool:
        """The actors holding the object ``key`` names (built once, kept while they fit).

        Live actors never take every CPU of the cluster (one is left for the driver, Ray's own
        processes and the next job's actors to be placed): before a new pool starts, the least
        recently used pools are stopped until it fits. On a small cluster that means one pool
        at a time (a model is loaded again after a generation step); on a big one, all stay."""
        if key in self._pools:
            self._pools[key] = self._pools.pop(key)  # most recently used last
            return self._pools[key]
        ray = self.ray()
        need = self.actors * self.cpus_per_actor
        budget = max(need, float(ray.cluster_resources().get("CPU", need)) - 1)
        while self._pools and self._live_cpus() + need > budget:
            oldest = next(iter(self._pools))
            self._pools.pop(oldest).close()
        self._pools[key] = ActorPool(
            ray,
            factory,
            actors=self.actors,
            num_cpus=self.cpus_per_actor,
            retries=self.retries,
            stall_s=self.stall_s,
        )
        return self._pools[key]

    def _live_cpus(self) -> float:
        return sum(len(p.actors) * p.num_cpus for p in self._pools.values())

    def describe(self) -> dict[str, Any]:
        return {
            "engine": "ray",
            "address": self.address,
            "actors": self.actors,
            "cpus_per_actor": self.cpus_per_actor,
            "batch_texts": self.batch_texts,
            "slice_size": self.slice_size,
        }

    def close(self) -> None:
        """Kill this engine's actors; stop the cluster if this engine started it."""
        for p in self._pools.values():
            p.close()
        self._pools.clear()
        if self._started and self._ray is not None:
            self._ray.shutdown()
        self._ray, self._started = None, False

    def __enter__(self) -> RayEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- embedding --------------------------------------------------------------------------
    def wrap_encoder(self, encoder: Encoder, factory: Callable[[], Encoder]) -> Encoder:
        return RayEncoder(self, encoder, Shipped(factory, "encoder", call=True))

    # -- generation -------------------------------------------------------------------------
    def generate(
        self,
        generator: Any,
        requests: Sequence[GenerationRequest],
        progress: Progress | None = None,
    ) -> list[Generation]:
        """Answers in request order. Through a cached generator, the cache is read and written
        on the driver and only the misses travel, ``slice_size`` to a batch."""
        from ..generation import CachedGenerator

        if isinstance(generator, CachedGenerator):
            return generator.generate(requests, progress, map_slices=self._answer_slices)
        slices = [
            list(requests[a : a + self.slice_size])
            for a in range(0, len(requests), self.slice_size)
        ]
        out: list[Any] = [None] * len(slices)
        done = 0
        for j, made in self._answer_slices(generator, slices):
            out[j] = made
            done += len(made)
            if progress is not None:
                progress(done, len(requests))
        return [g for part in out for g in part]

    def _answer_slices(
        self, generator: Any, slices: Sequence[Sequence[GenerationRequest]]
    ) -> Iterator[tuple[int, list[Generation]]]:
        from ..generation import Generation

        pool = self.pool(("generate", generator.fingerprint()), Shipped(generator, "generator"))

        def lost(j: int, exc: Exception) -> list[Generation]:
            return [Generation(r.question_id, "", error=str(exc)) for r in slices[j]]

        yield from pool.map(
            "generate",
            [list(s) for s in slices],
            max_in_flight=self.concurrency,
            on_lost=lost,
            counts=generator,  # the workers' calls, tokens and cost, counted on the caller's
        )

    # -- judging ----------------------------------------------------------------------------
    def wrap_judge(self, judge: Any) -> Any:
        return RayJudge(self, judge)

    def judge(
        self, judge: Any, requests: Sequence[JudgeRequest], progress: Progress | None = None
    ) -> list[JudgeReply]:
        return RayJudge(self, judge).judge(requests, progress)


class RayEncoder:
    """An encoder whose batches run on the engine's actors: same ``model_id`` and vectors as
    the local encoder it stands for. The embedding cache (``retrieval._cache.encode_cached``)
    hands it every missing text at once through :meth:`encode_batches` and stores each batch as
    it lands. What the workers' copies count (``calls``, ``texts_encoded``) is added to the
    local encoder with each batch: ``calls`` and ``texts_encoded`` here are the local one's."""

    def __init__(self, engine: RayEngine, local: Encoder, factory: Callable[[], Encoder]) -> None:
        self.engine, self.local, self.factory = engine, local, factory
        self.symmetric = local.symmetric

    @property
    def calls(self) -> int:
        return self.local.calls

    @calls.setter
    def calls(self, value: int) -> None:
        self.local.calls = value

    @property
    def texts_encoded(self) -> int:
        return self.local.texts_encoded

    @texts_encoded.setter
    def texts_encoded(self, value: int) -> None:
        self.local.texts_encoded = value

    @property
    def model_id(self) -> str:
        return self.local.model_id

    @property
    def config(self) -> dict[str, Any]:
        return dict(getattr(self.local, "config", {"model_id": self.local.model_id}))

    def encode_batches(
        self, texts: Sequence[str], *, role: str = "passage"
    ) -> Iterator[tuple[range, np.ndarray]]:
        """Yield ``(rows of texts, vectors)`` per finished batch, in any order."""
        size = self.engine.batch_texts
        batches = [list(texts[a : a + size]) for a in range(0, len(texts), size)]
        if not batches:
            return
        pool = self.engine.pool(("encoder", self.model_id), self.factory)
        for i, vecs in pool.map(
            "encode",
            batches,
            kwargs={"role": role},
            max_in_flight=self.engine.concurrency,
            counts=self.local,
        ):
            yield range(i * size, i * size + len(batches[i])), np.asarray(vecs)

    def encode(self, texts: Sequence[str], *, role: str = "passage") -> np.ndarray:
        parts: list[tuple[int, np.ndarray]] = [
            (rows.start, vecs) for rows, vecs in self.encode_batches(texts, role=role)
        ]
        if not parts:
            return self.local.encode([], role=role)
        parts.sort(key=lambda p: p[0])
        return np.concatenate([v for _, v in parts])


class RayJudge:
    """A judge whose batches run on the engine's actors (same ``info``, replies in order). A
    batch lost with its worker past the retries is a failed reply per request, never a pass.
    What the workers' copies count (requests, tokens, cost, cache hits) is added to the judge
    it wraps with each batch; any other attribute (``usage``, ``calls``) is read from it."""

    def __init__(self, engine: RayEngine, inner: Any) -> None:
        self.engine, self.inner = engine, inner

    def __getattr__(self, name: str) -> Any:
        if name in ("engine", "inner") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def info(self) -> Any:
        return self.inner.info

    def judge(
        self, requests: Sequence[JudgeRequest], progress: Progress | None = None
    ) -> list[JudgeReply]:
        from ..answers.judges import JudgeReply

        size = self.engine.slice_size
        slices = [list(requests[a : a + size]) for a in range(0, len(requests), size)]
        pool = self.engine.pool(("judge", self.inner.info.label), Shipped(self.inner, "judge"))

        def lost(j: int, exc: Exception) -> list[JudgeReply]:
            return [JudgeReply(False, None, None, str(exc), 0) for _ in slices[j]]

        out: list[Any] = [None] * len(slices)
        done = 0
        for j, replies in pool.map(
            "judge", slices, max_in_flight=self.engine.concurrency, on_lost=lost, counts=self.inner
        ):
            out[j] = replies
            done += len(replies)
            if progress is not None:
                progress(done, len(requests))
        return [r for part in out for r in part]


class Shipped:
    """A picklable recipe for an object on a worker: the object pickled with cloudpickle, and
    the folders its code came from, put on the worker's ``sys.path`` before it is unpickled."""

    def __init__(self, obj: Any, what: str, *, call: bool = False) -> None:
        from ray import cloudpickle

        self.call = call  # obj is a factory: the worker gets what it returns
        self.roots = import_roots(obj)
        try:
            self.blob = cloudpickle.dumps(obj)
        except Exception as exc:  # whatever the object holds that cannot travel (a lock, a socket)
            raise UsageError(
                f"this {what} ({type(obj).__name__}) cannot be sent to Ray workers ({exc}); "
                "run it with the local engine"
            ) from None

    def __call__(self) -> Any:
        from ray import cloudpickle

        for root in self.roots:
            if root not in sys.path:
                sys.path.append(root)
        obj = cloudpickle.loads(self.blob)
        return obj() if self.call else obj


def import_roots(obj: Any) -> list[str]:
    """The folders the code of ``obj`` was imported from (its class's module; a callable
    generator's ``fn``; a ``partial``'s function and arguments), i.e. what must be on a worker's
    ``sys.path`` to unpickle it."""
    names: set[str] = set()
    seen: list[Any] = [obj]
    while seen:
        item = seen.pop()
        if isinstance(item, functools.partial):
            seen.extend([item.func, *item.args, *item.keywords.values()])
            continue
        if callable(item) and hasattr(item, "__module__") and not isinstance(item, type):
            names.add(str(item.__module__))  # a function (or a callable object's module)
        names.add(type(item).__module__)
        fn = getattr(item, "fn", None)
        if fn is not None and fn is not item:
            seen.append(fn)
    roots: list[str] = []
    for name in sorted(n for n in names if n and n != "builtins"):
        module = sys.modules.get(name)
        file = getattr(module, "__file__", None)
        if not file:
            continue
        path = Path(file).resolve()
        depth = name.count(".") + (2 if path.name == "__init__.py" else 1)
        root = str(path.parents[depth - 1])
        if root not in roots:
            roots.append(root)
    # the driver's own folders on sys.path too (not the interpreter's, not installed packages):
    # the object's module may import a sibling module from one of them (a helper beside it)
    return roots + [p for p in own_paths() if p not in roots]


def own_paths() -> list[str]:
    """The folders on this process's ``sys.path`` that hold the user's code: existing folders
    outside the interpreter's prefixes (its standard library and installed packages)."""
    prefixes = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    out: list[str] = []
    for entry in sys.path:
        if not entry:
            continue
        path = Path(entry).resolve()
        if not path.is_dir() or any(path == p or p in path.parents for p in prefixes):
            continue
        if "site-packages" in path.parts or "dist-packages" in path.parts:
            continue
        if str(path) not in out:
            out.append(str(path))
    return out
