"""A judge behind any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama,
llama.cpp server), using only the standard library's HTTP client.

Behaviour
- ``POST {base_url}/chat/completions`` with ``model``, ``messages`` and ``params`` (default
  ``temperature=0``, ``max_tokens=512``) plus ``response_format={"type": "json_object"}`` when
  ``json_mode``. The API key is read from the environment variable *named* by ``api_key_env`` when
  the judge is constructed (never at import); ``api_key_env=None`` sends no key (local servers).
- Retries, up to ``max_retries`` after the first attempt, on HTTP 429 and 5xx, timeouts,
  connection errors and malformed replies (a body that is not JSON, no ``choices``, or message
  content that is not a JSON object). The wait before retry ``n`` (1-based) is
  ``min(max_backoff, backoff * 2**(n-1))``, or the server's ``Retry-After`` when larger (capped at
  ``max_backoff``). Other 4xx replies fail at once (a wrong model name will not fix itself).
- ``timeout`` seconds per socket operation (connect, each read).
- At most ``concurrency`` requests in flight (a thread pool); identical requests in one batch are
  sent once.
- A disk cache (``cache_dir``) keyed by (model, messages, params): a second identical run sends
  nothing. Only successes are cached.
- Accounting in :attr:`usage`: HTTP attempts, cache hits, retries, failures, prompt and
  completion tokens (from the reply's ``usage``), and cost =
  ``prompt_tokens/1000 * price_per_1k_prompt + completion_tokens/1000 * price_per_1k_completion``
  when prices are given.
- A request that still fails is returned as ``JudgeReply(ok=False, error=...)``: recorded and
  reported as a failure, never as a pass.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from os import PathLike
from typing import Any

from ..._errors import UsageError
from ._cache import DiskCache, cache_key
from ._protocol import JudgeInfo, JudgeReply, JudgeRequest, parse_json_object

DEFAULT_PARAMS: Mapping[str, Any] = {"temperature": 0, "max_tokens": 512}


@dataclass
class JudgeUsage:
    """Counters of one judge object (all batches so far)."""

    http_requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class _Fatal(Exception):
    pass


class OpenAIJudge:
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
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise UsageError(
                f"judge base URL must start with http:// or https://, got '{base_url}'"
            )
        if not model:
            raise UsageError("the judge needs a model name")
        if timeout <= 0 or max_retries < 0 or concurrency < 1 or backoff < 0:
            raise UsageError(
                "judge options: timeout > 0, max_retries >= 0, concurrency >= 1, backoff >= 0"
            )
        self._key: str | None = None
        if api_key_env:
            self._key = os.environ.get(api_key_env)
            if not self._key:
                raise UsageError(
                    f"environment variable {api_key_env} is not set; it should hold "
                    "the judge's API key (or give no key variable for a local server)"
                )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.params = {**DEFAULT_PARAMS, **dict(params or {})}
        if json_mode:
            self.params.setdefault("response_format", {"type": "json_object"})
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.concurrency = int(concurrency)
        self.cache = DiskCache(cache_dir) if cache_dir is not None else None
        self.prices = (price_per_1k_prompt, price_per_1k_completion)
        self._sleep = sleep
        self._lock = threading.Lock()
        self.usage = JudgeUsage(cost=0.0 if any(p is not None for p in self.prices) else None)

    @property
    def info(self) -> JudgeInfo:
        return JudgeInfo("openai-compatible", self.model, dict(self.params), fake=False)

    # -- one HTTP exchange -------------------------------------------------------------------
    def _post(self, payload: bytes) -> dict[str, Any]:
        req = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=payload,
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        if self._key:
            req.add_header("Authorization", f"Bearer {self._key}")
        with self._lock:
            self.usage.http_requests += 1
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                body = resp.read()
        except urllib.error.HTTPError as exc:
            text = exc.read()[:300].decode("utf-8", "replace")
            if exc.code == 429 or exc.code >= 500:
                ra = exc.headers.get("Retry-After") if exc.headers else None
                try:
                    after = float(ra) if ra is not None else None
                except ValueError:
                    after = None
                raise _Retryable(f"HTTP {exc.code}: {text}".strip(), after) from None
            raise _Fatal(f"HTTP {exc.code}: {text}".strip()) from None
        except TimeoutError:
            raise _Retryable(f"timed out after {self.timeout:g}s") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                raise _Retryable(f"timed out after {self.timeout:g}s") from None
            raise _Retryable(f"connection failed: {exc.reason}") from None
        except (ConnectionError, OSError) as exc:
            raise _Retryable(f"connection failed: {exc}") from None
        try:
            data = json.loads(body)
            content = data["choices"][0]["message"]["content"]
            if not isinstance(content, str):
                raise TypeError
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise _Retryable("malformed reply: body is not JSON") from None
        except (KeyError, IndexError, TypeError):
            raise _Retryable("malformed reply: no choices[0].message.content") from None
        return {"content": content, "usage": data.get("usage") or {}}

    def _call(self, messages: Sequence[Mapping[str, str]]) -> JudgeReply:
        payload = json.dumps(
            {"model": self.model, "messages": [dict(m) for m in messages], **self.params}
        ).encode("utf-8")
        error = "not attempted"
        for attempt in range(1, self.max_retries + 2):
            try:
                out = self._post(payload)
                parsed = parse_json_object(out["content"])
            except _Fatal as exc:
                return self._failed(str(exc), attempt)
            except (_Retryable, ValueError) as exc:
                error = str(exc) if isinstance(exc, _Retryable) else f"malformed reply: {exc}"
                if attempt > self.max_retries:
                    break
                with self._lock:
                    self.usage.retries += 1
                delay = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
                after = getattr(exc, "retry_after", None)
                if after is not None:
                    delay = min(self.max_backoff, max(delay, after))
                self._sleep(delay)
                continue
            pt, ct = _tokens(out["usage"])
            with self._lock:
                self.usage.prompt_tokens += pt
                self.usage.completion_tokens += ct
                if self.usage.cost is not None:
                    self.usage.cost += pt / 1000 * (self.prices[0] or 0.0) + ct / 1000 * (
                        self.prices[1] or 0.0
                    )
            return JudgeReply(True, parsed, out["content"], None, attempt, False, pt, ct)
        return self._failed(
            f"{error} (gave up after {self.max_retries + 1} attempts)", self.max_retries + 1
        )

    def _failed(self, error: str, attempts: int) -> JudgeReply:
        with self._lock:
            self.usage.failures += 1
        return JudgeReply(False, None, None, error, attempts)

    # -- the protocol ------------------------------------------------------------------------
    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        keys = [cache_key(self.model, r.messages, self.params) for r in requests]
        replies: dict[str, JudgeReply] = {}
        todo: dict[str, JudgeRequest] = {}
        for key, req in zip(keys, requests, strict=True):
            if key in replies or key in todo:
                continue
            hit = self.cache.get(key) if self.cache is not None else None
            if hit is not None:
                try:
                    parsed = parse_json_object(str(hit["content"]))
                except (KeyError, ValueError):
                    hit = None
                else:
                    replies[key] = JudgeReply(True, parsed, str(hit["content"]), None, 0, True)
                    with self._lock:
                        self.usage.cache_hits += 1
                    continue
            todo[key] = req
        if todo:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(todo))) as pool:
                done = dict(
                    zip(
                        todo, pool.map(lambda r: self._call(r.messages), todo.values()), strict=True
                    )
                )
            for key, reply in done.items():
                replies[key] = reply
                if reply.ok and self.cache is not None:
                    self.cache.put(
                        key,
                        {
                            "content": reply.content,
                            "model": self.model,
                            "usage": {
                                "prompt_tokens": reply.prompt_tokens,
                                "completion_tokens": reply.completion_tokens,
                            },
                        },
                    )
        return [replies[k] for k in keys]


def _tokens(usage: Mapping[str, Any]) -> tuple[int, int]:
    def num(name: str) -> int:
        v = usage.get(name)
        return int(v) if isinstance(v, (int, float)) else 0

    return num("prompt_tokens"), num("completion_tokens")
