"""The answer cache: a generated answer is made once per (generator, prompt, context, params).

Key: sha256 of the canonical JSON of the generator's ``fingerprint()``, the prompt
(``name-version#sha256`` of its file), the context hash (sha256 of the exact text the model
reads), the sampling params, and the sha256 of the rendered messages (which adds the question:
two questions over the same context are two answers), and the repeat when it is not 0 (an
experiment's ``repeat``: each repeat's answers are cached apart). Entries live under
``<cache_root>/answers/<key[:2]>/<key>.json`` (the judge's :class:`DiskCache`: atomic writes, a
damaged entry is a miss), beside the retrieval cache of the same experiment.

Only successes are stored: a failed question is asked again on the next run, never replayed;
an answer whose text no UTF-8 file can hold is a failure (:mod:`._checked`).
:class:`CachedGenerator` wraps any :class:`~._protocol.Generator`, so every backend (an
OpenAI-compatible server, a local model, the user's function) caches the same way, and a second
identical run makes zero model calls.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from ..chat import DiskCache
from ._checked import checked, generation_problem
from ._protocol import Generation, GenerationRequest, Generator, Progress

#: Subfolder of the experiment's cache root that holds answers.
ANSWERS_DIR = "answers"


def answer_key(fingerprint: str, request: GenerationRequest) -> str:
    """The cache key of one request under a generator (see the module docstring)."""
    key: dict[str, Any] = {
        "generator": fingerprint,
        "prompt": request.prompt,
        "context": request.context.hash,
        "params": dict(request.params),
        "messages": request.messages_hash(),
    }
    if request.repeat:  # repeat 0 keeps the key answers had before repeats existed
        key["repeat"] = request.repeat
    blob = json.dumps(
        key,
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass
class CacheStats:
    """Hits and misses of one cached generator (all batches so far)."""

    hits: int = 0
    misses: int = 0

    @property
    def hit_rate(self) -> float | None:
        total = self.hits + self.misses
        return self.hits / total if total else None

    def to_dict(self) -> dict[str, Any]:
        return {"hits": self.hits, "misses": self.misses, "hit_rate": self.hit_rate}


class CachedGenerator:
    """A generator whose answers are read from and written to an answer cache.

    ``name`` and ``fingerprint()`` are the inner generator's; ``inner`` is the wrapped one;
    ``stats`` counts hits and misses (duplicates inside one batch are generated once and count
    as one miss each time they are asked).
    """

    def __init__(self, inner: Generator, cache_root: str | PathLike[str]) -> None:
        self.inner = inner
        self.name = inner.name
        self.folder = Path(cache_root) / ANSWERS_DIR
        self._disk = DiskCache(self.folder)
        self._fingerprint = inner.fingerprint()
        self.stats = CacheStats()
        self._lock = threading.Lock()

    def fingerprint(self) -> str:
        return self._fingerprint

    def _hit(self, key: str, request: GenerationRequest) -> Generation | None:
        entry = self._disk.get(key)
        if entry is None:
            return None
        try:
            g = Generation.from_dict({**entry, "question_id": request.question_id})
        except (KeyError, TypeError, ValueError):  # a damaged entry is a miss
            return None
        if g.error is not None or generation_problem(g) is not None:
            return None  # a failure, or an entry no answer file could hold: asked again
        return Generation(
            g.question_id, g.text, g.citations, g.usage, 0.0, True, None, g.unknown_citations
        )

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        progress: Progress | None = None,
        *,
        map_slices: MapSlices | None = None,
    ) -> list[Generation]:
        """Answers in request order; only misses reach the inner generator. ``map_slices``
        (an engine's, :mod:`ragmeter.engines`) answers the slices of misses elsewhere, yielding
        ``(slice number, answers)`` in any order; each slice is cached as it lands."""
        keys = [answer_key(self._fingerprint, r) for r in requests]
        out: dict[int, Generation] = {}
        todo: dict[str, list[int]] = {}
        for i, (key, req) in enumerate(zip(keys, requests, strict=True)):
            if key in todo:
                todo[key].append(i)
                continue
            hit = self._hit(key, req)
            if hit is None:
                todo[key] = [i]
            else:
                out[i] = hit
        with self._lock:
            self.stats.hits += len(out)
            self.stats.misses += len(requests) - len(out)
        total = len(requests)
        if progress is not None and out:
            progress(len(out), total)
        if todo:
            first = [requests[idx[0]] for idx in todo.values()]
            base = len(out)

            def inner_progress(done: int, _n: int) -> None:
                if progress is not None:
                    progress(base + done, total)

            # in slices, each saved before the next starts: a run stopped half way (Ctrl-C,
            # SIGKILL, a crash) keeps what was made and resumes from it
            items = list(todo.items())
            starts = range(0, len(items), SAVE_EVERY)

            def here() -> Iterator[tuple[int, list[Generation]]]:
                for j, a in enumerate(starts):

                    def part_progress(done: int, _n: int, a: int = a) -> None:
                        inner_progress(a + done, len(first))

                    yield j, self.inner.generate(first[a : a + SAVE_EVERY], part_progress)

            slices = (
                here()
                if map_slices is None
                else map_slices(self.inner, [first[a : a + SAVE_EVERY] for a in starts])
            )
            finished = 0
            for j, made in slices:
                part = items[starts[j] : starts[j] + SAVE_EVERY]
                finished += len(part)
                if map_slices is not None:
                    inner_progress(finished, len(first))
                for (key, idx), g in zip(part, made, strict=True):
                    g = checked(g)  # text no file can hold is that question's error
                    if g.error is None:
                        self._disk.put(key, _entry(g, self._fingerprint))
                    for i in idx:
                        q = requests[i].question_id
                        out[i] = g if g.question_id == q else _renamed(g, q)
        return [out[i] for i in range(total)]


#: requests handed to the generator at a time; each slice's answers are cached before the next
SAVE_EVERY = 16

#: ``map_slices(generator, slices)`` yields ``(slice number, answers)`` as each slice is done
MapSlices = Callable[
    [Generator, list[Sequence[GenerationRequest]]], Iterator[tuple[int, list[Generation]]]
]


def _entry(g: Generation, fingerprint: str) -> Mapping[str, Any]:
    d = g.to_dict()
    d.pop("cached", None)
    d["generator"] = fingerprint
    return d


def _renamed(g: Generation, question_id: str) -> Generation:
    return Generation(
        question_id, g.text, g.citations, g.usage, g.seconds, g.cached, g.error, g.unknown_citations
    )
