"""Who may use the lab: per-labeller tokens when it is served beyond loopback (docs/team.md).

On a loopback address (``--host 127.0.0.1``, the default) one person uses the lab and needs no
token: labels are saved as the lab's local labeller (``ragmeter lab --labeller``). Served beyond
loopback -- ``--host`` not a loopback address, or an ``--allowed-host`` name that a reverse proxy
passes in the Host header -- every request needs a labeller's token (``ragmeter lab users add
NAME`` prints it once; the store keeps only its sha256), and the lab refuses to start while the
store has no labeller with a token. A request shows its token as

* ``Authorization: Bearer TOKEN`` (scripts), or
* the session cookie :data:`SESSION_COOKIE` that ``POST /login`` sets (browsers: the login page
  is a form where the labeller pastes their token). The cookie is ``HttpOnly``,
  ``SameSite=Strict`` and, when the request came over https (to the lab itself, or through a
  proxy on this machine that says so with ``X-Forwarded-Proto: https``), ``Secure``. Sessions
  live in the lab's memory: they end when the lab stops, on ``POST /logout``, and as soon as the
  labeller's token is removed (every request checks the token in the store again).

Anything else is 401: the login page for a browser, JSON for a script. The token's owner goes on
the request (``request.state.labeller``, read by :func:`._labeller.current_labeller`), so a label
is saved as the token's owner whatever name a form or payload carries. On loopback a valid token
names the labeller too; a wrong Bearer token is 401 there as well (a script that sends one
should learn it is wrong).

Open without a token: ``/login``, ``/logout`` and ``/static/*``, the lab's own CSS and JavaScript
(the files of the installed package, the same for everyone, and what the login page itself
needs); nothing from the store is served there.

Failed attempts (a wrong token pasted or sent as Bearer) are counted per client address, in
memory: after :data:`MAX_FAILURES` within :data:`WINDOW_S` seconds that address is answered 429
until the oldest of them is older than the window (a restart forgets the counts). Behind a proxy
on this machine the address is the one the proxy passes in ``X-Forwarded-For`` (uvicorn trusts
it from 127.0.0.1). Tokens are 256 random bits: the limit keeps logs quiet more than it stops a
search that could not succeed anyway.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, RedirectResponse, Response

from ._app_state import state_of

if TYPE_CHECKING:  # pragma: no cover
    from starlette.types import ASGIApp, Receive, Scope, Send

    from ..store import Store

#: the session cookie a browser gets from ``POST /login``
SESSION_COOKIE = "ragmeter_session"
LOGIN_PATH = "/login"
LOGOUT_PATH = "/logout"
#: paths served without a token (besides the login and logout routes)
OPEN_PREFIXES = ("/static/",)
#: failed attempts per client address within :data:`WINDOW_S` before it is answered 429
MAX_FAILURES = 10
WINDOW_S = 600.0
#: sessions kept (the oldest is dropped past it) and client addresses counted
MAX_SESSIONS = 10_000
MAX_TRACKED = 10_000
REALM = 'Bearer realm="ragmeter lab"'


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (``127.0.0.0/8``, ``::1``, brackets or not)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def beyond_loopback(host: str, allowed: Iterable[str] = ()) -> bool:
    """Whether the lab is served beyond loopback: bound to another address, or answering a
    Host name that is not a loopback one (a reverse proxy's, ``--allowed-host``)."""
    return not is_loopback(host) or any(not is_loopback(h) for h in allowed)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class Sessions:
    """Browser sessions: a random id (the cookie) -> the token it was opened with, kept by the
    id's sha256 (a lookup never compares the secret itself byte by byte)."""

    def __init__(self, limit: int = MAX_SESSIONS) -> None:
        self.limit = limit
        self._tokens: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def open(self, token: str) -> str:
        sid = secrets.token_urlsafe(32)
        with self._lock:
            self._tokens[_digest(sid)] = token
            while len(self._tokens) > self.limit:
                self._tokens.popitem(last=False)
        return sid

    def token(self, sid: str | None) -> str | None:
        if not sid:
            return None
        with self._lock:  # keyed by the id's digest: no byte-by-byte compare of the secret
            return self._tokens.get(_digest(sid))

    def close(self, sid: str | None) -> None:
        if sid:
            with self._lock:
                self._tokens.pop(_digest(sid), None)

    def __len__(self) -> int:
        return len(self._tokens)


class FailedLogins:
    """Failed attempts per client address within a sliding window (see the module)."""

    def __init__(
        self,
        limit: int = MAX_FAILURES,
        window: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.window = window
        self.clock = clock
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def _recent(self, who: str, now: float) -> deque[float]:
        times = self._seen.get(who) or deque()
        while times and times[0] <= now - self.window:
            times.popleft()
        return times

    def retry_after(self, who: str) -> int | None:
        """Seconds until ``who`` may try again (None: now)."""
        with self._lock:
            now = self.clock()
            times = self._recent(who, now)
            if len(times) < self.limit:
                return None
            return max(1, math.ceil(times[-self.limit] + self.window - now))

    def fail(self, who: str) -> None:
        with self._lock:
            now = self.clock()
            times = self._recent(who, now)
            times.append(now)
            self._seen[who] = times
            self._seen.move_to_end(who)
            while len(self._seen) > MAX_TRACKED:
                self._seen.popitem(last=False)

    def clear(self, who: str) -> None:
        with self._lock:
            self._seen.pop(who, None)


@dataclass
class Gate:
    """The lab's authentication state (``app.state.auth``): whether tokens are required, the
    browser sessions, the failed attempts."""

    required: bool
    sessions: Sessions = field(default_factory=Sessions)
    failures: FailedLogins = field(default_factory=FailedLogins)


def refuse_without_tokens(store: Store, host: str, allowed: Iterable[str]) -> None:
    """Served beyond loopback with no labeller who has a token, every request would be refused:
    say so before the lab starts."""
    from .._errors import UsageError

    if any(row.has_token for row in store.labellers()):
        return
    where = ", ".join([f"--host {host}"] + [f"--allowed-host {h}" for h in allowed])
    raise UsageError(
        f"the lab would be served beyond loopback ({where}) and the store has no labeller with "
        "a token, so every request would be refused: add one with `ragmeter lab users add "
        "NAME` (see docs/team.md), or serve it on 127.0.0.1"
    )


def gate_of(request: Request) -> Gate:
    gate: Gate = request.app.state.auth
    return gate


def client_of(request: Request) -> str:
    """The client's address (behind a proxy on this machine: the one it passes on)."""
    return request.client.host if request.client else "unknown"


def is_https(request: Request) -> bool:
    """The request came over https: to the lab itself, or to a proxy on this machine that says
    so (``X-Forwarded-Proto``; uvicorn has usually applied it to the scheme already)."""
    if request.url.scheme in ("https", "wss"):
        return True
    forwarded = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    return forwarded == "https" and is_loopback(client_of(request))


def safe_next(value: str | None) -> str:
    """Where to go after signing in: a path of this lab, never another site (``//host``,
    ``/\\host``) nor the login page itself."""
    if (
        not value
        or not value.startswith("/")
        or value.startswith(("//", "/\\"))
        or not value.isprintable()
        or value.split("?")[0] in (LOGIN_PATH, LOGOUT_PATH)
    ):
        return "/"
    return value


def _wants_html(request: Request) -> bool:
    return (
        "text/html" in request.headers.get("accept", "")
        or request.headers.get("hx-request") == "true"
    )


def _bearer(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer`` header ('' for a header with another scheme
    or none: a wrong credential, not a missing one); None without the header."""
    value = request.headers.get("authorization")
    if value is None:
        return None
    scheme, _, token = value.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _here(request: Request) -> str:
    path = request.url.path
    return f"{path}?{request.url.query}" if request.url.query else path


def login_page(
    request: Request, status_code: int = 200, *, error: str | None = None, next_path: str = "/"
) -> Response:
    from ._render import page

    gate = gate_of(request)
    response = page(
        request,
        "login.html",
        status_code,
        title="Sign in",
        error=error,
        next_path=next_path,
        required=gate.required,
    )
    response.headers["Cache-Control"] = "no-store"
    if status_code == 401:
        response.headers["WWW-Authenticate"] = REALM
    return response


def _too_many(request: Request, wait: int) -> Response:
    message = (
        f"too many failed sign-ins from {client_of(request)}: try again in {wait} s "
        "(a wrong token was given too often)"
    )
    response: Response
    if _wants_html(request):
        response = login_page(request, 429, error=message, next_path=safe_next(_here(request)))
    else:
        response = JSONResponse({"error": "too_many_failures", "message": message}, 429)
    response.headers["Retry-After"] = str(wait)
    return response


def unauthorized(request: Request, message: str, *, warn: bool = True) -> Response:
    """401: the login page for a browser (htmx is sent there; ``warn``: with ``message`` on it,
    else the plain form), JSON with ``message`` for a script."""
    if _wants_html(request):
        here = safe_next(_here(request))
        shown = message if warn else None
        response = login_page(request, 401, error=shown, next_path=here)
        if request.headers.get("hx-request") == "true":
            response.headers["HX-Redirect"] = f"{LOGIN_PATH}?next={quote(here, safe='')}"
        return response
    return JSONResponse(
        {"error": "unauthorized", "message": message},
        401,
        headers={"WWW-Authenticate": REALM, "Cache-Control": "no-store"},
    )


class AuthMiddleware:
    """ASGI middleware: the request's labeller from its token (see the module); inside
    :class:`._security.SecurityMiddleware`, so its pages carry the nonce, the CSRF token and the
    security headers, and a POST without the CSRF token never reaches it."""

    def __init__(self, app: ASGIApp, gate: Gate) -> None:
        self.app = app
        self.gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and self.gate.required:
            # the lab has no websocket; should one appear, it is not open to anyone
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        if path in (LOGIN_PATH, LOGOUT_PATH) or path.startswith(OPEN_PREFIXES):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        store = state_of(request).store
        gate = self.gate
        name: str | None = None
        bearer = _bearer(request)
        if bearer is not None:
            who = client_of(request)
            wait = gate.failures.retry_after(who)
            if wait is not None:
                await _too_many(request, wait)(scope, receive, send)
                return
            row = await run_in_threadpool(store.labeller_by_token, bearer) if bearer else None
            if row is None:
                gate.failures.fail(who)
                refused = unauthorized(
                    request, "the Authorization header's token is no labeller's token"
                )
                await refused(scope, receive, send)
                return
            name = row.name
        else:
            sid = request.cookies.get(SESSION_COOKIE)
            token = gate.sessions.token(sid)
            if token is not None:
                row = await run_in_threadpool(store.labeller_by_token, token)
                if row is None:  # the token was removed since: the session ends with it
                    gate.sessions.close(sid)
                else:
                    name = row.name
        if name is None and gate.required:
            message = (
                "this lab is shared: sign in with your labeller token (ragmeter lab users add "
                "NAME printed it), or send Authorization: Bearer TOKEN"
            )
            await unauthorized(request, message, warn=False)(scope, receive, send)
            return
        if name is not None:
            scope.setdefault("state", {})["labeller"] = name
        await self.app(scope, receive, send)


router = APIRouter()


@router.get(LOGIN_PATH)
async def login_form(request: Request, next_path: str = Query("/", alias="next")) -> Response:
    """The login form (open without a token)."""
    return login_page(request, next_path=safe_next(next_path))


@router.post(LOGIN_PATH)
async def login(request: Request) -> Response:
    """A pasted token: a session cookie and back where the labeller was going, or 401."""
    gate = gate_of(request)
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    token = (form.get("token") or [""])[0].strip()
    next_path = safe_next((form.get("next") or ["/"])[0])
    who = client_of(request)
    wait = gate.failures.retry_after(who)
    if wait is not None:
        return _too_many(request, wait)
    if not token:
        return login_page(request, 401, error="paste your token first", next_path=next_path)
    row = await run_in_threadpool(state_of(request).store.labeller_by_token, token)
    if row is None:
        gate.failures.fail(who)
        error = (
            "that is no labeller's token (each is printed once by ragmeter lab users add "
            "NAME: ask whoever runs the lab for yours, or for a new one)"
        )
        return login_page(request, 401, error=error, next_path=next_path)
    gate.failures.clear(who)
    gate.sessions.close(request.cookies.get(SESSION_COOKIE))
    response = RedirectResponse(next_path, status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        gate.sessions.open(token),
        path="/",
        httponly=True,
        samesite="strict",
        secure=is_https(request),
    )
    return response


@router.post(LOGOUT_PATH)
async def logout(request: Request) -> Response:
    """End this browser's session (open without a token)."""
    gate_of(request).sessions.close(request.cookies.get(SESSION_COOKIE))
    response = RedirectResponse(LOGIN_PATH, status_code=303)
    response.delete_cookie(
        SESSION_COOKIE, path="/", httponly=True, samesite="strict", secure=is_https(request)
    )
    return response
