"""Answers from any OpenAI-compatible chat endpoint (vLLM, llama.cpp's server, Ollama, OpenAI).

The transport is the judges' too (:class:`ragmeter.chat.ChatClient`): retries on 429,
5xx, timeouts, connection faults and malformed replies (a body that is not JSON, no
``choices[0].message.content``), each with exponential backoff; ``timeout`` seconds for the whole
of one attempt, so a server that drips its reply cannot hold a question longer; a reply cap;
at most ``concurrency`` questions in flight; redirects never followed; token and cost accounting
in :attr:`usage`. A question whose request still fails is that question's ``error``; the batch
goes on.

Each answer's ``usage`` holds the tokens the server reported for it (replies rejected and
retried included: they were billed) and their ``cost_usd`` when prices are set; what the
server did not report is None (null in ``generations.jsonl``), never a 0 or a cost priced from
0 tokens.

The API key is read from the environment variable *named* by ``api_key_env`` when the generator
is built (a missing variable is a :class:`UsageError` naming it); it is never read from the
experiment file. ``api_key_env=None`` sends no key (a local server).

Answers are not cached here: :class:`~._cache.CachedGenerator` caches every backend the same way.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from .._errors import UsageError
from ..chat import MAX_REPLY_BYTES, ChatClient, ChatReply, ChatUsage
from ._citations import find_citations
from ._protocol import Generation, GenerationRequest, Progress

#: request params a generator may not set: the client owns them.
_RESERVED = ("model", "messages", "stream", "n")


class OpenAIGenerator:
    """Generator over ``POST {base_url}/chat/completions``.

    ``extra_params`` are sent with every request under each request's own params (temperature,
    seed, max_tokens), e.g. ``{"top_p": 1}``; ``stream``, ``n``, ``model`` and ``messages`` are
    the client's. Prices (per 1,000 tokens) turn token counts into ``cost_usd``.
    """

    #: what this generator counts: its client's usage (see ragmeter.engines._counters)
    COUNTERS: ClassVar[tuple[str, ...]] = ("client",)

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        *,
        timeout: float = 120.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        concurrency: int = 4,
        price_per_1k_prompt: float | None = None,
        price_per_1k_completion: float | None = None,
        max_reply_bytes: int = MAX_REPLY_BYTES,
        extra_params: Mapping[str, Any] | None = None,
        name: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        extra = dict(extra_params or {})
        reserved = sorted(set(extra) & set(_RESERVED))
        if reserved:
            raise UsageError(
                f"generator params: {', '.join(reserved)} cannot be set (the client sends "
                "model, messages, stream and n itself)"
            )
        self.client = ChatClient(
            base_url=base_url,
            model=model,
            api_key_env=api_key_env,
            params={},
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            max_backoff=max_backoff,
            concurrency=concurrency,
            cache_dir=None,
            price_per_1k_prompt=price_per_1k_prompt,
            price_per_1k_completion=price_per_1k_completion,
            max_reply_bytes=max_reply_bytes,
            sleep=sleep,
            role="generator",
            cli_prefix=None,
        )
        self.base_url = self.client.base_url
        self.model = model
        self.api_key_env = api_key_env
        self.extra_params = extra
        self.name = name or f"openai:{model}"

    @property
    def usage(self) -> ChatUsage:
        """HTTP requests, retries, failures, prompt and completion tokens and cost so far."""
        return self.client.usage

    def _usage(self, reply: ChatReply) -> dict[str, Any]:
        """An answer's token counts, attempts and cost: what the server reported (the replies
        retried for unusable content included), and None for what it did not report, never a 0
        nobody measured (``cost_usd`` only with prices: None when the tokens are unknown)."""
        known = reply.usage_known
        usage: dict[str, Any] = {
            "prompt_tokens": reply.prompt_tokens if known else None,
            "completion_tokens": reply.completion_tokens if known else None,
            "attempts": reply.attempts,
        }
        if self.client.priced:
            usage["cost_usd"] = reply.cost if known else None
        return usage

    def fingerprint(self) -> str:
        """Server, model and the fixed extra params (the key's env var name is not part of it:
        which key pays does not change an answer)."""
        return "openai/" + json.dumps(
            {"base_url": self.base_url, "model": self.model, "extra": self.extra_params},
            sort_keys=True,
            ensure_ascii=False,
            default=str,
        )

    def generate(
        self, requests: Sequence[GenerationRequest], progress: Progress | None = None
    ) -> list[Generation]:
        params = [{**self.extra_params, **dict(r.params)} for r in requests]
        replies = self.client.complete_many([r.messages for r in requests], None, params, progress)
        out: list[Generation] = []
        for req, reply in zip(requests, replies, strict=True):
            if not reply.ok:
                # replies it rejected that came back with counts were spent: counted
                failed = self._usage(reply) if reply.usage_known else {"attempts": reply.attempts}
                out.append(
                    Generation(
                        req.question_id,
                        "",
                        usage=failed,
                        seconds=reply.seconds,
                        error=reply.error or "failed",
                    )
                )
                continue
            text = reply.content or ""
            cites = find_citations(text, req.context)
            usage = self._usage(reply)
            out.append(
                Generation(
                    req.question_id,
                    text,
                    cites.ids,
                    usage,
                    reply.seconds,
                    False,
                    None,
                    cites.unknown,
                )
            )
        return out
