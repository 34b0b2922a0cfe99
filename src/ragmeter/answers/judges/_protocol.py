"""The judge protocol: what any model judge (or the fake one) must provide.

A judge receives :class:`JudgeRequest` s (rendered chat messages plus the raw inputs they were
rendered from) and returns one :class:`JudgeReply` per request, in order. A reply is ``ok`` only
when the whole reply is one JSON object of its task's shape (:mod:`._replies`); any failure
(HTTP error after retries, timeout, prose around the JSON, a shape that does not fit) is a reply
with ``ok=False`` and an ``error`` — never a pass.

Judges are always passed in explicitly; ragmeter never builds a networked or paid client itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ._replies import parse_reply

FAKE_LABEL = "FAKE JUDGE"


@dataclass(frozen=True)
class JudgeInfo:
    """Identity of a judge configuration; recorded with every judged score."""

    name: str
    model: str
    params: Mapping[str, Any] = field(default_factory=dict)
    fake: bool = False

    @property
    def label(self) -> str:
        """One-line description; starts with "FAKE JUDGE" for a fake judge."""
        params = json.dumps(dict(self.params), sort_keys=True)
        head = f"{FAKE_LABEL}: " if self.fake and not self.name.startswith(FAKE_LABEL) else ""
        return f"{head}{self.name} model={self.model} params={params}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model": self.model,
            "params": dict(self.params),
            "fake": self.fake,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> JudgeInfo:
        return cls(
            str(d["name"]), str(d["model"]), dict(d.get("params") or {}), bool(d.get("fake", False))
        )


@dataclass(frozen=True)
class JudgeRequest:
    """One judgement to make: the task name, the chat messages, and their raw inputs."""

    task: str
    messages: tuple[Mapping[str, str], ...]
    inputs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JudgeReply:
    """The outcome of one request. ``data`` is the parsed JSON object when ``ok``."""

    ok: bool
    data: Mapping[str, Any] | None = None
    content: str | None = None
    error: str | None = None
    attempts: int = 0
    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0


@runtime_checkable
class Judge(Protocol):
    """Anything with ``info`` and ``judge(requests) -> replies`` (same length, same order)."""

    @property
    def info(self) -> JudgeInfo: ...

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]: ...


def parse_json_object(content: str) -> dict[str, Any]:
    """The JSON object a model reply consists of (whitespace or one ```json fence around it
    allowed, nothing else): :func:`._replies.parse_reply` without a task schema.

    Raises ValueError when the reply is not exactly one JSON object (retried by clients).
    """
    return parse_reply(content)
