"""The HTTP pieces of the OpenAI-compatible chat client (judge and generator): the endpoint
URL, the watchdog that ends an attempt at its deadline, and short descriptions of transport
faults.

Kept apart from :mod:`._client` so the client reads as its retry and accounting rules.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import urllib.parse

from .._errors import UsageError

__all__ = ["Watchdog", "describe", "retry_after", "short", "split_url"]


class Watchdog:
    """Shuts the connection's socket down at the deadline, waking any blocked read or write."""

    def __init__(self, conn: http.client.HTTPConnection, seconds: float) -> None:
        self.conn = conn
        self.fired = False
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def _fire(self) -> None:
        self.fired = True
        sock = self.conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed: nothing left to wake

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


def split_url(url: str, role: str = "judge") -> tuple[str, str, int | None, str]:
    """(scheme, host, port, path) of the endpoint; UsageError for a URL that cannot work
    (``role`` names the client in the message: judge, generator)."""
    bad = next((c for c in url if ord(c) <= 32 or ord(c) == 127), None)
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"{role} base URL '{url}' is not a valid URL ({exc})") from None
    if bad is not None or not parts.hostname or parts.username or parts.password:
        raise UsageError(
            f"{role} base URL {json.dumps(url)} needs a host and no spaces, control characters "
            "or user:password (give the key through api_key_env)"
        )
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, parts.hostname, port, path


def retry_after(value: str | None) -> float | None:
    try:
        after = float(value) if value is not None else None
    except ValueError:
        return None
    return after if after is not None and 0 <= after < float("inf") else None


def short(text: str, n: int = 200) -> str:
    one = " ".join(text.split())
    return one if len(one) <= n else one[: n - 3] + "..."


def describe(exc: BaseException) -> str:
    """A short, readable name for a transport fault."""
    if isinstance(exc, http.client.IncompleteRead):
        return f"incomplete body ({len(exc.partial)} bytes read, more expected)"
    if isinstance(exc, http.client.RemoteDisconnected):
        return "bad status line: the server closed the connection without replying"
    if isinstance(exc, http.client.BadStatusLine):
        line = exc.args[0] if exc.args else ""
        return f"bad status line {short(repr(line), 80)}"
    if isinstance(exc, http.client.LineTooLong):
        return f"a header or status line too long ({short(str(exc), 80)})"
    return f"{type(exc).__name__}: {short(str(exc), 120)}"
