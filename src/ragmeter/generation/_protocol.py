"""The generator protocol: what every answer generator (OpenAI-compatible, local, callable)
provides, and the request/answer records that travel between the experiment runner and it.

A generator receives :class:`GenerationRequest` s (the question, the exact assembled context,
the rendered chat messages and the sampling parameters) and returns one :class:`Generation` per
request, in order. It never raises because one question failed: that question's answer carries
``error`` and the run goes on (the runner counts the errors). It raises only for configuration
errors (:class:`~ragmeter._errors.UsageError`, :class:`~ragmeter._errors.MissingExtraError`),
ideally when it is built, before any question is sent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ._assemble import AssembledContext

#: Sampling defaults: deterministic decoding, a fixed seed, a bounded answer.
DEFAULT_PARAMS: Mapping[str, Any] = {"temperature": 0.0, "seed": 0, "max_tokens": 256}

#: ``progress(done, total)`` after each answered request (cache hits included).
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class GenerationRequest:
    """One answer to make.

    ``messages`` is what the model reads (the rendered prompt); ``context`` is the exact context
    inside it, recorded with the answer; ``params`` are the sampling parameters (defaults
    :data:`DEFAULT_PARAMS`); ``prompt`` names the template as ``name@version#hash`` so that the
    answer cache separates prompt versions even when two render the same text.
    """

    question_id: str
    question: str
    context: AssembledContext
    messages: tuple[Mapping[str, str], ...]
    params: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_PARAMS))
    prompt: str = ""
    #: the repeat this answer belongs to (an experiment's ``repeat``): 0 unless repeated; a
    #: repeat r >= 1 is cached apart from the others
    repeat: int = 0

    def messages_hash(self) -> str:
        """sha256 of the messages as canonical JSON (question, context and prompt together)."""
        blob = json.dumps([dict(m) for m in self.messages], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Generation:
    """The outcome of one request.

    ``citations`` are the ids of the passages the answer cites (parsed from ``[1]``,
    ``[2, 3]`` or ``[doc#s-e]`` markers, in order of first mention); ``usage`` holds what the
    backend measured (``prompt_tokens``, ``completion_tokens``, ``cost_usd`` ... when known);
    ``seconds`` is the time spent making it (0 for a cache hit); ``error`` is None on success,
    else the reason (the text is then empty and the answer must be counted as failed, never as
    an abstention or a pass); ``unknown_citations`` are markers that name no passage of the
    context (an answer citing what it was not given).
    """

    question_id: str
    text: str
    citations: tuple[str, ...] = ()
    usage: Mapping[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    cached: bool = False
    error: str | None = None
    #: citation markers that name no passage of the context (``[7]`` of five passages)
    unknown_citations: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "question_id": self.question_id,
            "text": self.text,
            "citations": list(self.citations),
            "usage": dict(self.usage),
            "seconds": self.seconds,
            "cached": self.cached,
            "error": self.error,
            "unknown_citations": list(self.unknown_citations),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Generation:
        return cls(
            str(d["question_id"]),
            str(d.get("text") or ""),
            tuple(str(c) for c in d.get("citations") or ()),
            dict(d.get("usage") or {}),
            float(d.get("seconds") or 0.0),
            bool(d.get("cached", False)),
            None if d.get("error") is None else str(d["error"]),
            tuple(str(c) for c in d.get("unknown_citations") or ()),
        )


@runtime_checkable
class Generator(Protocol):
    """Anything with a ``name``, a ``fingerprint()`` and ``generate(requests)``.

    ``fingerprint()`` identifies everything about the generator that changes its answers (the
    model file or name, the backend, its fixed options) but not the per-request params; it is
    part of the answer cache key.
    """

    name: str

    def fingerprint(self) -> str: ...

    def generate(
        self, requests: Sequence[GenerationRequest], progress: Progress | None = None
    ) -> list[Generation]: ...
