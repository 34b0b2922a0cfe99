"""The lab's defences: corpus text, questions and answers are untrusted input.

* Content-Security-Policy per response, with a fresh nonce: scripts only from the lab itself
  (no inline code, no eval: Vega runs with its expression interpreter), no frames, forms post
  only to the lab; ``style-src`` allows inline styles (Vega sizes its charts with them).
* Host header allow-list (127.0.0.1, localhost, ::1, the bound host and the names given with
  ``--allowed-host``) against DNS rebinding.
* Served beyond loopback, every request but the login page and the static files needs a
  labeller's token (:mod:`._auth`).
* No CORS headers at all: other origins cannot read the lab's responses.
* Every request that could change something (POST, PUT, PATCH, DELETE) must carry the CSRF
  token (double submit: a SameSite=Strict cookie and the ``X-CSRF-Token`` header or the
  ``csrf_token`` form field, compared in constant time).
* Such a request's body is read whole, up to :data:`MAX_BODY` bytes: a larger one (declared by
  its ``Content-Length`` or found while reading) is refused whole with 413 before any view sees
  it, never cut and acted on.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

if TYPE_CHECKING:  # pragma: no cover
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "ragmeter_csrf"
HEADER = b"x-csrf-token"
FIELD = "csrf_token"
UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}
LOOPBACK = ("127.0.0.1", "localhost", "[::1]", "::1")
#: the largest request body the lab reads (its forms are a few hundred bytes)
MAX_BODY = 1_000_000


def csp(nonce: str) -> str:
    return "; ".join(
        [
            "default-src 'none'",
            f"script-src 'self' 'nonce-{nonce}'",
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data:",
            "connect-src 'self'",
            "font-src 'self'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        ]
    )


def allowed_hosts(host: str, extra: Iterable[str] = ()) -> list[str]:
    """The Host header values the lab answers: loopback names, the bound host and ``extra``
    (``ragmeter lab --allowed-host``: the name a reverse proxy passes, see docs/team.md)."""
    hosts = list(LOOPBACK)
    if host not in hosts and host not in ("0.0.0.0", "::"):
        hosts.append(host)
    if host in ("0.0.0.0", "::"):
        # bound to every interface: the user asked for it (with a warning); accept any Host
        return ["*"]
    hosts.extend(h for h in extra if h not in hosts)
    return hosts


def _cookie(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"cookie":
            for part in bytes(value).decode("latin-1").split(";"):
                k, _, v = part.strip().partition("=")
                if k == COOKIE:
                    return v
    return None


def _header(scope: Scope, key: bytes) -> str | None:
    for name, value in scope.get("headers", []):
        if name == key:
            return bytes(value).decode("latin-1")
    return None


class SecurityMiddleware:
    """ASGI middleware: nonce + CSRF token per request, security headers, CSRF check."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        nonce = secrets.token_urlsafe(18)
        token = _cookie(scope)
        fresh = token is None or len(token) < 20
        if fresh:
            token = secrets.token_urlsafe(32)
        scope.setdefault("state", {})
        scope["state"]["nonce"] = nonce
        scope["state"]["csrf_token"] = token
        if scope["method"] in UNSAFE:
            buffered = None if _declared_length(scope) > MAX_BODY else await _buffer(receive)
            if buffered is None:
                await _refuse_large(send)
                return
            body, receive = buffered
            sent = _header(scope, HEADER) or _form_token(scope, body)
            if fresh or not sent or not hmac.compare_digest(sent, token or ""):
                await _refuse(send)
                return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.extend(_security_headers(nonce))
                if fresh:
                    headers.append(
                        (
                            b"set-cookie",
                            f"{COOKIE}={token}; Path=/; SameSite=Strict; HttpOnly".encode(),
                        )
                    )
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _security_headers(nonce: str) -> Iterable[tuple[bytes, bytes]]:
    return [
        (b"content-security-policy", csp(nonce).encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"no-referrer"),
        (b"x-frame-options", b"DENY"),
        (b"cross-origin-opener-policy", b"same-origin"),
        (b"cross-origin-resource-policy", b"same-origin"),
    ]


def _declared_length(scope: Scope) -> int:
    """The body size the request declares (0 without a usable ``Content-Length``: the body
    is then counted while it is read)."""
    value = (_header(scope, b"content-length") or "").strip()
    return int(value) if value.isascii() and value.isdigit() else 0


async def _buffer(receive: Receive, limit: int = MAX_BODY) -> tuple[bytes, Receive] | None:
    """Read the whole request body and a receive that replays it; None as soon as it passes
    ``limit`` bytes (the rest is never read: a cut body must not reach a view)."""
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        more = message.get("more_body", False)
    body = b"".join(chunks)
    done = False

    async def replay() -> Message:
        nonlocal done
        if not done:
            done = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay


def _form_token(scope: Scope, body: bytes) -> str | None:
    ctype = (_header(scope, b"content-type") or "").split(";")[0].strip()
    if ctype != "application/x-www-form-urlencoded":
        return None
    values = parse_qs(body.decode("utf-8", "replace")).get(FIELD)
    return values[0] if values else None


async def _refuse(send: Send) -> None:
    text = b"refused: this request lacks the lab's CSRF token (reload the page and try again)"
    await _plain(send, 403, text)


async def _refuse_large(send: Send) -> None:
    text = (
        f"refused: the request body is over {MAX_BODY:,} bytes (the lab's forms are small); "
        "nothing was done"
    ).encode()
    # the unread rest of the body makes the connection unusable for another request
    await _plain(send, 413, text, [(b"connection", b"close")])


async def _plain(
    send: Send, status: int, text: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                *_security_headers("x"),
                *(extra or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": text})
