"""A dry run of a judged check: how many calls a judge would get, how many its cache already
holds, and what the rest would cost, before one request is sent.

:class:`PlanningJudge` stands in for the real judge during an ordinary ``check_answers`` (so the
requests are exactly those of the real run: same items, same skips, same prompts) and records
each request instead of sending it. A request is **cached** when the judge's disk cache holds a
reply for its key (model, messages, params) that still fits the task (the rule the real client
applies before reusing a reply); identical requests are counted once, as the client sends them
once. Every reply it returns is a failure ("dry run: not sent"): the report of a dry run is
thrown away, never shown as scores. One exception, so that calls which depend on earlier replies
are counted right: a claim split (task ``claims``) the cache holds is answered from the cache, so
the claim checks that follow it are rendered and counted exactly (cached or not); the checks
that would follow a split not in the cache cannot be rendered and are counted by
:meth:`PlanningJudge.unrendered` (to send, their prompt size estimated by the caller).

Token estimate: prompt tokens ~ characters / 4 (English text through a BPE tokenizer; a
tokenizer-free estimate, good to a few tens of percent), completion tokens at most the judge's
``max_tokens`` per call. Cost, when prices are given: the prompt estimate plus that completion
bound, so it is an upper estimate rather than a forecast.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...chat import cache_key
from ._protocol import JudgeInfo, JudgeReply, JudgeRequest
from ._replies import parse_reply

#: characters per token of the prompt estimate (see module docstring)
CHARS_PER_TOKEN = 4
DRY_RUN_ERROR = "dry run: not sent"
#: tasks whose cached replies a dry run returns (later calls depend on them: module docstring)
ANSWERED_FROM_CACHE = frozenset({"claims"})


@dataclass
class JudgePlan:
    """What a judged run would ask of its judge (see module docstring for each estimate)."""

    judge: str
    model: str
    base_url: str | None
    requests: int = 0
    duplicates: int = 0
    cached: int = 0
    to_send: int = 0
    per_metric: Counter[str] = field(default_factory=Counter)
    prompt_chars: int = 0
    max_tokens: int | None = None
    price_prompt: float | None = None
    price_completion: float | None = None
    sends: bool = True  # False for the fake judge: nothing goes over the network

    @property
    def prompt_tokens(self) -> int:
        return math.ceil(self.prompt_chars / CHARS_PER_TOKEN)

    @property
    def completion_tokens_max(self) -> int | None:
        return None if self.max_tokens is None else self.max_tokens * self.to_send

    @property
    def cost(self) -> dict[str, float] | None:
        """``{"prompt", "completion_max", "total_max"}`` when a price is given, else None."""
        if self.price_prompt is None and self.price_completion is None:
            return None
        prompt = self.prompt_tokens / 1000 * (self.price_prompt or 0.0)
        done = self.completion_tokens_max
        completion = 0.0 if done is None else done / 1000 * (self.price_completion or 0.0)
        return {"prompt": prompt, "completion_max": completion, "total_max": prompt + completion}

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": True,
            "judge": self.judge,
            "model": self.model,
            "base_url": self.base_url,
            "requests": self.requests,
            "per_metric": dict(self.per_metric),
            "duplicates": self.duplicates,
            "cached": self.cached,
            "to_send": self.to_send if self.sends else 0,
            "estimated_prompt_tokens": self.prompt_tokens if self.sends else 0,
            "chars_per_token": CHARS_PER_TOKEN,
            "max_tokens": self.max_tokens,
            "completion_tokens_max": self.completion_tokens_max if self.sends else 0,
            "price_per_1k_prompt": self.price_prompt,
            "price_per_1k_completion": self.price_completion,
            "estimated_cost": self.cost if self.sends else None,
        }

    def lines(self) -> list[str]:
        """The plan as plain lines for a console (numbers whole, nothing cut)."""
        metrics = ", ".join(f"{m} {n:,}" for m, n in sorted(self.per_metric.items()))
        out = [
            "dry run: nothing was sent to the judge",
            f"judge: {self.judge}, model {self.model}",
            *([f"  server: {self.base_url}"] if self.base_url else []),
            f"judge requests: {self.requests:,} ({metrics or 'none'})",
        ]
        if self.duplicates:
            out.append(f"  identical requests, sent once: {self.duplicates:,}")
        if not self.sends:
            out.append("  the fake judge answers locally: no HTTP calls, no tokens, no cost")
            return out
        out += [
            f"  from the cache: {self.cached:,}",
            f"  calls to make: {self.to_send:,}",
            f"estimated prompt tokens: about {self.prompt_tokens:,} "
            f"({self.prompt_chars:,} characters / {CHARS_PER_TOKEN})",
        ]
        done = self.completion_tokens_max
        out.append(
            "completion tokens: at most "
            + (
                f"{done:,} ({self.max_tokens:,} max_tokens per call)"
                if done is not None
                else "unknown (no max_tokens set)"
            )
        )
        cost = self.cost
        if cost is None:
            out.append("cost: give --price-prompt and --price-completion for an estimate")
        else:
            out += [
                f"estimated cost: at most {cost['total_max']:,.4f}",
                f"  prompts about {cost['prompt']:,.4f}, "
                f"completions at most {cost['completion_max']:,.4f}",
            ]
        return out


class PlanningJudge:
    """A judge that records what it is asked and answers nothing (see module docstring)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        info: JudgeInfo = inner.info
        params = dict(getattr(inner, "params", {}) or {})
        prices = getattr(inner, "prices", (None, None))
        max_tokens = params.get("max_tokens")
        self.plan = JudgePlan(
            judge=info.name,
            model=info.model,
            base_url=getattr(inner, "base_url", None),
            max_tokens=max_tokens if isinstance(max_tokens, int) else None,
            price_prompt=prices[0],
            price_completion=prices[1],
            sends=not info.fake,
        )
        self._params = params
        self._cache = getattr(inner, "cache", None)
        self._seen: set[str] = set()

    @property
    def info(self) -> JudgeInfo:
        return self.inner.info

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        p = self.plan
        for r in requests:
            p.requests += 1
            p.per_metric[r.task] += 1
            key = cache_key(p.model, r.messages, self._params)
            if key in self._seen:
                p.duplicates += 1
                continue
            self._seen.add(key)
            if self._cached(key, r.task) is not None:
                p.cached += 1
            else:
                p.to_send += 1
                p.prompt_chars += sum(len(m.get("content", "")) for m in r.messages)
        out = []
        for r in requests:
            data = self._cached(cache_key(p.model, r.messages, self._params), r.task)
            if r.task in ANSWERED_FROM_CACHE and data is not None:
                out.append(JudgeReply(True, data, None, None, 0, cached=True))
            else:
                out.append(JudgeReply(False, error=DRY_RUN_ERROR))
        return out

    def unrendered(self, task: str, prompt_chars: int) -> None:
        """Count one request that would follow a reply the dry run does not have (a claim
        check after a split not in the cache): to send, about ``prompt_chars`` characters."""
        p = self.plan
        p.requests += 1
        p.per_metric[task] += 1
        p.to_send += 1
        p.prompt_chars += prompt_chars

    def _cached(self, key: str, task: str) -> dict[str, Any] | None:
        """A reply the real client would reuse (present and still fitting the task), else None."""
        hit = self._cache.get(key) if self._cache is not None else None
        if hit is None:
            return None
        try:
            return parse_reply(hit["content"], task)
        except (KeyError, TypeError, ValueError):
            return None
