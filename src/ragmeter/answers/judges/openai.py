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
  bound.
- A request that still fails is returned as ``JudgeReply(ok=False, error=...)``: recorded and
  reported as a failure, never as a pass. No fault of one request (transport, parsing, even an
  unexpected exception) aborts the batch: it is that request's recorded failure.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from os import PathLike
from typing import Any

from ..._errors import UsageError
from ..._numbers import number_in, whole
from ._cache import DiskCache, cache_key
from ._http import Watchdog, describe, retry_after, short, split_url
from ._protocol import JudgeInfo, JudgeReply, JudgeRequest
from ._replies import parse_reply

DEFAULT_PARAMS: Mapping[str, Any] = {"temperature": 0, "max_tokens": 512}
#: the default cap on one reply's size in bytes (``max_reply_bytes``): a chat completion with a
#: short JSON verdict is a few kilobytes.
MAX_REPLY_BYTES = 4 * 1024 * 1024
#: the bounds of the judge's options (docs/answers.md): seconds for one attempt and for one
#: backoff wait, retries after the first attempt, requests in flight, and the largest reply cap.
MAX_TIMEOUT_S = 3600.0
MAX_RETRIES = 20
MAX_CONCURRENCY = 256
MAX_REPLY_CAP = 256 * 1024 * 1024
#: bytes read per socket operation.
_BLOCK = 64 * 1024


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
    #: replies whose token counts were missing or malformed (not summed: totals are a floor)
    unknown_usage: int = 0

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
        max_reply_bytes: int = MAX_REPLY_BYTES,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise UsageError(
                f"judge base URL must start with http:// or https://, got '{base_url}'"
            )
        self._url = split_url(base_url.rstrip("/") + "/chat/completions")
        if not model:
            raise UsageError("the judge needs a model name")
        # every option bounded (ragmeter._numbers): a huge timeout overflowed the socket's
        # deadline, huge retries never ended, a huge pool or reply cap allocates without bound
        timeout = number_in(
            "the judge timeout (timeout, --judge-timeout; seconds)",
            timeout,
            0.0,
            MAX_TIMEOUT_S,
            open_low=True,
        )
        max_retries = whole(
            "the judge retries (max_retries, --judge-retries)", max_retries, 0, MAX_RETRIES
        )
        concurrency = whole(
            "the judge concurrency (concurrency, --judge-concurrency)",
            concurrency,
            1,
            MAX_CONCURRENCY,
        )
        backoff = number_in("the judge backoff (seconds)", backoff, 0.0, MAX_TIMEOUT_S)
        max_backoff = number_in("the judge max_backoff (seconds)", max_backoff, 0.0, MAX_TIMEOUT_S)
        max_reply_bytes = whole("max_reply_bytes", max_reply_bytes, 1, MAX_REPLY_CAP)
        for name, price in (
            ("price_per_1k_prompt", price_per_1k_prompt),
            ("price_per_1k_completion", price_per_1k_completion),
        ):
            if price is not None:
                number_in(name, price, 0.0)
        self._key: str | None = None
        if api_key_env:
            self._key = os.environ.get(api_key_env)
            if not self._key:
                raise UsageError(
                    f"environment variable {api_key_env} is not set; it should hold "
                    "the judge's API key (or give no key variable for a local server)"
                )
            if any(ord(c) < 32 or ord(c) == 127 for c in self._key):
                raise UsageError(
                    f"environment variable {api_key_env} holds a control character (a line "
                    "break?); an API key is one line of printable text"
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
        self.max_reply_bytes = int(max_reply_bytes)
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
        """One attempt: the reply's content and usage, or _Retryable/_Fatal saying why not."""
        with self._lock:
            self.usage.http_requests += 1
        scheme, host, port, path = self._url
        kind = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
        conn = kind(host, port, timeout=self.timeout)
        deadline = time.monotonic() + self.timeout
        timed_out = _Retryable(f"timed out after {self.timeout:g}s")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        with Watchdog(conn, self.timeout) as dog:
            try:
                conn.request("POST", path, body=payload, headers=headers)
                self._left(conn, deadline)
                resp = conn.getresponse()
                status, reason = resp.status, resp.reason
                if 300 <= status < 400:
                    where = short(resp.getheader("Location") or "(no Location)", 200)
                    raise _Fatal(
                        f"HTTP {status}: the server redirects to {where}; redirects are not "
                        "followed (the API key would travel with them): set base_url to the "
                        "final address"
                    )
                limit = self.max_reply_bytes if 200 <= status < 300 else 300
                body = self._read(conn, resp, deadline, limit, status < 300)
            except (_Retryable, _Fatal):
                raise
            except TimeoutError:
                raise timed_out from None
            except http.client.HTTPException as exc:
                if dog.fired:
                    raise timed_out from None
                raise _Retryable(f"malformed reply: {describe(exc)}") from None
            except (OSError, ValueError) as exc:
                if dog.fired:
                    raise timed_out from None
                raise _Retryable(
                    f"connection failed: {short(str(exc) or type(exc).__name__)}"
                ) from None
            finally:
                conn.close()
            if dog.fired:
                raise timed_out
        if not 200 <= status < 300:
            text = short(body.decode("utf-8", "replace"))
            message = f"HTTP {status}: {text or reason}".strip()
            if status == 429 or status >= 500:
                raise _Retryable(message, retry_after(resp.getheader("Retry-After")))
            raise _Fatal(message)
        try:
            data = json.loads(body)
            content = data["choices"][0]["message"]["content"]
            if not isinstance(content, str):
                raise TypeError
        except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError included
            raise _Retryable("malformed reply: body is not JSON") from None
        except (KeyError, IndexError, TypeError):
            raise _Retryable("malformed reply: no choices[0].message.content") from None
        return {"content": content, "usage": data.get("usage")}

    def _left(self, conn: http.client.HTTPConnection, deadline: float) -> None:
        """Give the next socket operation only the time left before the deadline."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        if conn.sock is not None:
            conn.sock.settimeout(left)

    def _read(
        self,
        conn: http.client.HTTPConnection,
        resp: http.client.HTTPResponse,
        deadline: float,
        limit: int,
        refuse_over: bool,
    ) -> bytes:
        """The body, read in blocks under the deadline; past ``limit`` bytes a success reply is
        refused (_Fatal) and an error reply cut (only its start is shown)."""
        declared = resp.getheader("Content-Length")
        if refuse_over and declared is not None and declared.strip().isdigit():
            if int(declared) > limit:
                raise _Fatal(self._too_big(f"declares {int(declared)} bytes"))
        chunks: list[bytes] = []
        size = 0
        while True:
            self._left(conn, deadline)
            block = resp.read1(_BLOCK)
            if not block:
                break
            chunks.append(block)
            size += len(block)
            if size > limit:
                if refuse_over:
                    raise _Fatal(self._too_big(f"sent more than {limit} bytes"))
                return b"".join(chunks)
        expected = int(declared) if declared is not None and declared.strip().isdigit() else None
        if expected is not None and size < expected:
            # read1() reports a body cut short as a plain end of data: say what happened
            raise http.client.IncompleteRead(b"".join(chunks), expected - size)
        return b"".join(chunks)

    def _too_big(self, what: str) -> str:
        cap = self.max_reply_bytes
        shown = f"{cap / 2**20:g} MiB" if cap % 1024 == 0 and cap >= 2**20 else f"{cap} bytes"
        return (
            f"reply too large: the server {what}, over the cap of {shown} (max_reply_bytes); "
            "refused without reading the rest"
        )

    def _call(self, request: JudgeRequest) -> JudgeReply:
        """One request to its end: a success, or one recorded failure whatever went wrong."""
        try:
            return self._attempts(request)
        except Exception as exc:  # one request's fault must never abort the batch
            return self._failed(f"unexpected error: {describe(exc)}", 1)

    def _attempts(self, request: JudgeRequest) -> JudgeReply:
        payload = json.dumps(
            {"model": self.model, "messages": [dict(m) for m in request.messages], **self.params}
        ).encode("utf-8")
        error = "not attempted"
        for attempt in range(1, self.max_retries + 2):
            try:
                out = self._post(payload)
                parsed = parse_reply(out["content"], request.task)
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
            tokens = _tokens(out["usage"])
            pt, ct = tokens or (0, 0)
            with self._lock:
                if tokens is None:
                    self.usage.unknown_usage += 1
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
                    parsed = parse_reply(hit["content"], req.task)
                except (KeyError, TypeError, ValueError):  # damaged, or no longer fits its task
                    hit = None
                else:
                    replies[key] = JudgeReply(True, parsed, str(hit["content"]), None, 0, True)
                    with self._lock:
                        self.usage.cache_hits += 1
                    continue
            todo[key] = req
        if todo:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(todo))) as pool:
                done = dict(zip(todo, pool.map(self._call, todo.values()), strict=True))
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


def _tokens(usage: Any) -> tuple[int, int] | None:
    """(prompt, completion) tokens when both are non-negative JSON integers, else None."""
    if not isinstance(usage, Mapping):
        return None
    pt, ct = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    return None if pt is None or ct is None else (pt, ct)


def _count(value: Any) -> int | None:
    """A token count: a non-negative JSON integer (not a boolean, fraction or string)."""
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return value if ok else None
