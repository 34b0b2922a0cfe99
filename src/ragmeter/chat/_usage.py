"""The chat client's accounting: its counters (:class:`ChatUsage`), what one request's replies
spent (:class:`Spent`) and the token counts a reply reports (:func:`reported_tokens`).

A reply that came back is counted by what its ``usage`` block says, whether its content was
used or rejected and retried (it was billed either way): only non-negative JSON integers are
token counts; anything else adds nothing (the sums are then a floor).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

__all__ = ["ChatUsage", "Spent", "reported_tokens"]


@dataclass
class ChatUsage:
    """Counters of one client object (all batches so far)."""

    #: every field adds up (ragmeter.engines adds a worker's copy's counts to the caller's)
    COUNTERS: ClassVar[tuple[str, ...]] = (
        "http_requests",
        "cache_hits",
        "retries",
        "failures",
        "prompt_tokens",
        "completion_tokens",
        "cost",
        "unknown_usage",
    )

    http_requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    #: replies used (not rejected) whose token counts were missing or malformed (not summed:
    #: the totals are a floor); a rejected reply's tokens are summed when it reports them
    unknown_usage: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Spent:
    """The tokens and cost of one request's replies that had counts (rejected ones included)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    counted: int = 0

    def add(self, reply: tuple[int, int, float | None] | None) -> None:
        if reply is None:
            return
        pt, ct, cost = reply
        self.prompt_tokens += pt
        self.completion_tokens += ct
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost
        self.counted += 1


def reported_tokens(usage: Any) -> tuple[int, int] | None:
    """(prompt, completion) tokens when both are non-negative JSON integers, else None."""
    if not isinstance(usage, Mapping):
        return None
    pt, ct = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    return None if pt is None or ct is None else (pt, ct)


def _count(value: Any) -> int | None:
    """A token count: a non-negative JSON integer (not a boolean, fraction or string)."""
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return value if ok else None
