"""The chat transport shared by the judge client and the answer generator: one POST to an
OpenAI-compatible ``/chat/completions`` endpoint, with the retries, timeouts, reply cap,
concurrency, disk cache and token and cost accounting that
:mod:`ragmeter.answers.judges.openai` documents.

:class:`ChatClient` knows nothing about what the reply must say: each request comes with a
``check(content)`` that returns the parsed value or raises ``ValueError`` (a malformed reply,
retried like a transport fault). The judge checks for its task's JSON object; the generator
accepts any text. ``role`` only names the client in messages ("judge base URL ...",
"the generator timeout ..."), so a user is told which setting to fix.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from os import PathLike
from typing import Any, ClassVar

from .._errors import UsageError
from .._numbers import number_in, whole
from ._cache import DiskCache, cache_key
from ._http import Watchdog, describe, retry_after, short, split_url
from ._usage import ChatUsage, Spent, reported_tokens

__all__ = ["MAX_REPLY_BYTES", "ChatClient", "ChatReply", "ChatUsage", "Check"]

#: the default cap on one reply's size in bytes (``max_reply_bytes``): a chat completion with a
#: short JSON verdict is a few kilobytes.
MAX_REPLY_BYTES = 4 * 1024 * 1024
#: the bounds of the client's options (docs/answers.md): seconds for one attempt and for one
#: backoff wait, retries after the first attempt, requests in flight, and the largest reply cap.
MAX_TIMEOUT_S = 3600.0
MAX_RETRIES = 20
MAX_CONCURRENCY = 256
MAX_REPLY_CAP = 256 * 1024 * 1024
#: bytes read per socket operation.
_BLOCK = 64 * 1024

#: ``check(content) -> value``; raises ValueError for a reply that does not fit (retried).
Check = Callable[[str], Any]


def _any_text(content: str) -> str:
    return content


@dataclass(frozen=True)
class ChatReply:
    """The outcome of one chat request: ``value`` is what ``check`` returned when ``ok``."""

    ok: bool
    value: Any = None
    content: str | None = None
    error: str | None = None
    attempts: int = 0
    cached: bool = False
    #: tokens this request spent: every reply that came back with counts, the replies
    #: rejected and retried (malformed content) included
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: False when the used reply's ``usage`` was missing or malformed (its tokens then are not
    #: in the counts, which read only what rejected replies spent); for a failed request,
    #: whether any rejected reply had counts
    usage_known: bool = True
    #: time spent on this request, retries and backoff included (0 for a cache hit)
    seconds: float = 0.0
    #: cost of :attr:`prompt_tokens` and :attr:`completion_tokens` when prices are set and
    #: ``usage_known``, else None (never a cost priced from tokens nobody reported)
    cost: float | None = None


class _Retryable(Exception):
    """A fault worth another attempt; ``billed`` is the ``usage`` block of a reply that came
    back but was unusable (it was spent: its tokens are counted)."""

    def __init__(self, message: str, retry_after: float | None = None, billed: Any = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.billed = billed


class _Fatal(Exception):
    pass


class ChatClient:
    """Client of an OpenAI-compatible ``/chat/completions`` endpoint (see
    :mod:`ragmeter.answers.judges.openai` for every rule). ``params`` are sent with every request
    unless a call gives its own."""

    #: what this client counts: :attr:`usage` (see ragmeter.engines._counters)
    COUNTERS: ClassVar[tuple[str, ...]] = ("usage",)

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        params: Mapping[str, Any] | None = None,
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
        role: str = "judge",
        cli_prefix: str | None = "--judge-",
    ) -> None:
        def opt(name: str, unit: str = "") -> str:
            where = f"{name}, {cli_prefix}{name.replace('max_', '')}" if cli_prefix else name
            return f"the {role} {_NOUN[name]} ({where}{unit})"

        if not base_url.startswith(("http://", "https://")):
            raise UsageError(
                f"{role} base URL must start with http:// or https://, got '{base_url}'"
            )
        self._url = split_url(base_url.rstrip("/") + "/chat/completions", role=role)
        if not model:
            raise UsageError(f"the {role} needs a model name")
        # every option bounded (ragmeter._numbers): a huge timeout overflowed the socket's
        # deadline, huge retries never ended, a huge pool or reply cap allocates without bound
        timeout = number_in(opt("timeout", "; seconds"), timeout, 0.0, MAX_TIMEOUT_S, open_low=True)
        max_retries = whole(opt("max_retries"), max_retries, 0, MAX_RETRIES)
        concurrency = whole(opt("concurrency"), concurrency, 1, MAX_CONCURRENCY)
        backoff = number_in(f"the {role} backoff (seconds)", backoff, 0.0, MAX_TIMEOUT_S)
        max_backoff = number_in(
            f"the {role} max_backoff (seconds)", max_backoff, 0.0, MAX_TIMEOUT_S
        )
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
                    f"the {role}'s API key (or give no key variable for a local server)"
                )
            if any(ord(c) < 32 or ord(c) == 127 for c in self._key):
                raise UsageError(
                    f"environment variable {api_key_env} holds a control character (a line "
                    "break?); an API key is one line of printable text"
                )
        self.role = role
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.params: dict[str, Any] = dict(params or {})
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
        self.usage = ChatUsage(cost=0.0 if any(p is not None for p in self.prices) else None)

    def __getstate__(self) -> dict[str, Any]:
        """Everything but the lock: a copy travels to an engine's workers (ragmeter.engines)."""
        state = dict(self.__dict__)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

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
        except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError included
            raise _Retryable("malformed reply: body is not JSON") from None
        usage = data.get("usage") if isinstance(data, dict) else None
        try:
            content = data["choices"][0]["message"]["content"]
            if not isinstance(content, str):
                raise TypeError
        except (KeyError, IndexError, TypeError):
            raise _Retryable(
                "malformed reply: no choices[0].message.content", billed=usage
            ) from None
        return {"content": content, "usage": usage}

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

    # -- one request to its end --------------------------------------------------------------
    def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        check: Check | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> ChatReply:
        """One request (no cache): a success, or one recorded failure whatever went wrong."""
        began = time.monotonic()
        try:
            reply = self._attempts(messages, check or _any_text, params)
        except Exception as exc:  # one request's fault must never abort the batch
            reply = self._failed(f"unexpected error: {describe(exc)}", 1)
        return _with_seconds(reply, time.monotonic() - began)

    def _attempts(
        self,
        messages: Sequence[Mapping[str, str]],
        check: Check,
        params: Mapping[str, Any] | None,
    ) -> ChatReply:
        sent = self.params if params is None else dict(params)
        payload = json.dumps(
            {"model": self.model, "messages": [dict(m) for m in messages], **sent}
        ).encode("utf-8")
        error = "not attempted"
        spent = Spent()  # what the replies rejected so far cost
        for attempt in range(1, self.max_retries + 2):
            out: dict[str, Any] | None = None
            try:
                out = self._post(payload)
                value = check(out["content"])
            except _Fatal as exc:
                return self._failed(str(exc), attempt, spent)
            except (_Retryable, ValueError) as exc:
                error = str(exc) if isinstance(exc, _Retryable) else f"malformed reply: {exc}"
                # a reply that came back was billed even if its content is unusable
                billed = exc.billed if isinstance(exc, _Retryable) else out and out["usage"]
                spent.add(self._spend(reported_tokens(billed)))
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
            tokens = reported_tokens(out["usage"])
            if tokens is None:
                with self._lock:
                    self.usage.unknown_usage += 1
            else:
                spent.add(self._spend(tokens))
            return ChatReply(
                True,
                value,
                out["content"],
                None,
                attempt,
                False,
                spent.prompt_tokens,
                spent.completion_tokens,
                tokens is not None,
                cost=spent.cost if tokens is not None else None,
            )
        return self._failed(
            f"{error} (gave up after {self.max_retries + 1} attempts)",
            self.max_retries + 1,
            spent,
        )

    @property
    def priced(self) -> bool:
        """Whether prices are set (a cost is computed from the token counts)."""
        return any(p is not None for p in self.prices)

    def _spend(self, tokens: tuple[int, int] | None) -> tuple[int, int, float | None] | None:
        """Add one reply's reported tokens (and their cost, with prices) to :attr:`usage`;
        returns (prompt, completion, cost), or None for a reply without counts (nothing added:
        the sums are a floor)."""
        if tokens is None:
            return None
        pt, ct = tokens
        cost = None
        with self._lock:
            self.usage.prompt_tokens += pt
            self.usage.completion_tokens += ct
            if self.usage.cost is not None:
                cost = pt / 1000 * (self.prices[0] or 0.0) + ct / 1000 * (self.prices[1] or 0.0)
                self.usage.cost += cost
        return pt, ct, cost

    def _failed(self, error: str, attempts: int, spent: Spent | None = None) -> ChatReply:
        """A failed request; the replies it had rejected still spent their tokens."""
        with self._lock:
            self.usage.failures += 1
        if spent is None or not spent.counted:
            return ChatReply(False, None, None, error, attempts, usage_known=False)
        return ChatReply(
            False,
            None,
            None,
            error,
            attempts,
            False,
            spent.prompt_tokens,
            spent.completion_tokens,
            True,
            cost=spent.cost,
        )

    # -- a batch: cache, duplicates, concurrency ---------------------------------------------
    def complete_many(
        self,
        batch: Sequence[Sequence[Mapping[str, str]]],
        check: Check | Sequence[Check] | None = None,
        params: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[ChatReply]:
        """One reply per messages list, in order. ``check`` and ``params`` are one for all or
        one per request. Cache hits are re-checked (a damaged entry, or one that no longer fits,
        is asked again); identical requests are sent once; at most ``concurrency`` in flight;
        only successes are cached. ``progress(done, total)`` after each distinct request."""
        n = len(batch)
        checks = _per_request(check, n, _any_text)
        sent = _per_request(params, n, None)
        effective = [self.params if p is None else dict(p) for p in sent]
        keys = [cache_key(self.model, m, p) for m, p in zip(batch, effective, strict=True)]
        replies: dict[str, ChatReply] = {}
        todo: dict[str, int] = {}
        for i, key in enumerate(keys):
            if key in replies or key in todo:
                continue
            hit = self.cache.get(key) if self.cache is not None else None
            if hit is not None:
                try:
                    value = checks[i](hit["content"])
                except (KeyError, TypeError, ValueError):  # damaged, or no longer fits
                    hit = None
                else:
                    replies[key] = ChatReply(True, value, str(hit["content"]), None, 0, True)
                    with self._lock:
                        self.usage.cache_hits += 1
                    continue
            todo[key] = i
        total = len(replies) + len(todo)
        done = len(replies)
        if progress is not None and done:
            progress(done, total)
        if todo:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(todo))) as pool:
                futures = {
                    pool.submit(self.complete, batch[i], checks[i], effective[i]): key
                    for key, i in todo.items()
                }
                for future in as_completed(futures):
                    key = futures[future]
                    reply = future.result()
                    replies[key] = reply
                    if reply.ok and self.cache is not None:
                        # what the request spent, null when the used reply had no counts
                        known = reply.usage_known
                        self.cache.put(
                            key,
                            {
                                "content": reply.content,
                                "model": self.model,
                                "usage": {
                                    "prompt_tokens": reply.prompt_tokens if known else None,
                                    "completion_tokens": reply.completion_tokens if known else None,
                                },
                            },
                        )
                    done += 1
                    if progress is not None:
                        progress(done, total)
        return [replies[k] for k in keys]


_NOUN = {"timeout": "timeout", "max_retries": "retries", "concurrency": "concurrency"}


def _per_request(value: Any, n: int, default: Any) -> list[Any]:
    if value is None:
        return [default] * n
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        if len(value) != n:
            raise UsageError(f"give one value per request ({n}), got {len(value)}")
        return [default if v is None else v for v in value]
    return [value] * n


def _with_seconds(reply: ChatReply, seconds: float) -> ChatReply:
    return replace(reply, seconds=seconds)
