"""The judge protocol: what any model judge (or the fake one) must provide.

A judge receives :class:`JudgeRequest` s (rendered chat messages plus the raw inputs they were
rendered from) and returns one :class:`JudgeReply` per request, in order. A reply is ``ok`` only
when it carries a parsed JSON object; any failure (HTTP error after retries, timeout, malformed
JSON) is a reply with ``ok=False`` and an ``error`` — never a pass.

Judges are always passed in explicitly; ragmeter never builds a networked or paid client itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

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
    """The JSON object in a model reply; tolerates a ```json fence around it.

    Raises ValueError when there is no JSON object (a malformed reply, retried by clients).
    """
    text = content.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            raise ValueError("the reply holds no JSON object") from None
        try:
            data = json.loads(text[start : end + 1])
        except json.JSONDecodeError as exc:
            raise ValueError(f"the reply is not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError("the reply is JSON but not an object")
    return data
