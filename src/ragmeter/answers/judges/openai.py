"""A judge behind any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama,
llama.cpp server), using only the standard library's HTTP client.

Behaviour
- ``POST {base_url}/chat/completions`` with ``model``, ``messages`` and ``params`` (default
  ``temperature=0``, ``max_tokens=512``) plus ``response_format={"type": "json_object"}`` when
  ``json_mode``. The API key is read from the environment variable *named* by ``api_key_env`` when
  the judge is constructed (never at import); ``api_key_env=None`` sends no key (local servers).
- Retries, up to ``max_retries`` after the first attempt, on HTTP 429 and 5xx, timeouts,
  connection errors and malformed replies (a truncated body, a bad status line, a body that is
  not JSON, no ``choices``, or message content that is not exactly the JSON object its task asks
  for: see :mod:`._replies`). The wait before retry ``n`` (1-based) is
  ``min(max_backoff, backoff * 2**(n-1))``, or the server's ``Retry-After`` when larger (capped at
  ``max_backoff``). Other 4xx replies fail at once (a wrong model name will not fix itself).
- ``timeout`` seconds for the whole of one attempt: connecting, sending, the status line, the
  headers and the body. Every socket operation waits at most the time left, and a watchdog
  closes the connection at the deadline, so a server that drips one byte at a time cannot hold a
  request longer than ``timeout`` (plus the scheduling delay of the watchdog thread).
- Replies larger than ``max_reply_bytes`` (default 4 MiB) are refused without being read to the
  end (a declared ``Content-Length`` over the cap is refused before the body is read) and not
  retried: the same reply would come back.
- Redirects are never followed (3xx is a failure naming the ``Location``): a redirect could
  carry the ``Authorization`` header to another origin, and a judge endpoint has no reason to
  move. Point ``base_url`` at the final address instead.
- The client connects to ``base_url`` itself: ``HTTP_PROXY``/``HTTPS_PROXY`` are not used.
- At most ``concurrency`` requests in flight (a thread pool); identical requests in one batch are
  sent once.
- Every option is bounded (a :class:`UsageError` naming it outside): ``timeout`` in (0, 3600]
  seconds, ``max_retries`` 0..20, ``concurrency`` 1..256, ``backoff``/``max_backoff`` in
  [0, 3600] seconds, ``max_reply_bytes`` 1 B..256 MiB, prices finite and >= 0.
- A disk cache (``cache_dir``) keyed by (model, messages, params): a second identical run sends
  nothing. Only successes are cached.
- Accounting in :attr:`usage`: HTTP attempts, cache hits, retries, failures, prompt and
  completion tokens (from the reply's ``usage``), and cost =
  ``prompt_tokens/1000 * price_per_1k_prompt + completion_tokens/1000 * price_per_1k_completion``
  when prices are given. Token counts must be non-negative JSON integers; a reply whose
  ``usage`` is missing or holds anything else (a negative count, a fraction, a string, a
  boolean) adds nothing and is counted in ``unknown_usage``: tokens and cost are then a lower
  bound. A reply rejected and retried (malformed content, no content) was billed all the same:
  the tokens it reports are summed, and priced, like an accepted reply's.
- A request that still fails is returned as ``JudgeReply(ok=False, error=...)``: recorded and
  reported as a failure, never as a pass. No fault of one request (transport, parsing, even an
  unexpected exception) aborts the batch: it is that request's recorded failure.

The transport is :class:`ragmeter.chat.ChatClient`, shared with the answer generator
(:mod:`ragmeter.generation`); this module adds the judge's defaults, its JSON mode and the check
that a reply is its task's JSON object.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from os import PathLike
from typing import Any

from ...chat import (
    MAX_CONCURRENCY,
    MAX_REPLY_BYTES,
    MAX_REPLY_CAP,
    MAX_RETRIES,
    MAX_TIMEOUT_S,
    ChatClient,
    ChatUsage,
)
from ._protocol import JudgeInfo, JudgeReply, JudgeRequest
from ._replies import parse_reply

__all__ = [
    "DEFAULT_PARAMS",
    "MAX_CONCURRENCY",
    "MAX_REPLY_BYTES",
    "MAX_REPLY_CAP",
    "MAX_RETRIES",
    "MAX_TIMEOUT_S",
    "JudgeUsage",
    "OpenAIJudge",
]

DEFAULT_PARAMS: Mapping[str, Any] = {"temperature": 0, "max_tokens": 512}

#: Counters of one judge object (all batches so far): the chat client's.
JudgeUsage = ChatUsage


class OpenAIJudge(ChatClient):
    """Judge over an OpenAI-compatible ``/chat/completions`` endpoint (see module docstring)."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        params: Mapping[str, Any] | None = None,
        json_mode: bool = True,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        concurrency: int = 4,
        cache_dir: str | PathLike[str] | None = None,
        price_per_1k_prompt: float | None = None,
        price_per_1k_completion: float | None = None,
        max_reply_bytes: int = MAX_REPLY_BYTES,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        merged = {**DEFAULT_PARAMS, **dict(params or {})}
        if json_mode:
            merged.setdefault("response_format", {"type": "json_object"})
        super().__init__(
            base_url=base_url,
            model=model,
            api_key_env=api_key_env,
            params=merged,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            max_backoff=max_backoff,
            concurrency=concurrency,
            cache_dir=cache_dir,
            price_per_1k_prompt=price_per_1k_prompt,
            price_per_1k_completion=price_per_1k_completion,
            max_reply_bytes=max_reply_bytes,
            sleep=sleep,
            role="judge",
            cli_prefix="--judge-",
        )

    @property
    def info(self) -> JudgeInfo:
        return JudgeInfo("openai-compatible", self.model, dict(self.params), fake=False)

    # -- the protocol ------------------------------------------------------------------------
    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        checks = [partial(parse_reply, task=r.task) for r in requests]
        replies = self.complete_many([r.messages for r in requests], checks)
        return [
            JudgeReply(
                r.ok,
                r.value if r.ok else None,
                r.content,
                r.error,
                r.attempts,
                r.cached,
                r.prompt_tokens,
                r.completion_tokens,
            )
            for r in replies
        ]
