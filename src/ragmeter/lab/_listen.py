"""``listen`` and ``serve``: the lab's listening socket, bound before the server starts.

uvicorn binds the address itself and, when it cannot (the port is taken, the machine has no
such address, the name does not resolve), logs a line and exits 3. The lab binds first, so each
of those is one ``error:`` line naming host:port and exit 2, like every other refusal, and the
"ragmeter lab on http://..." line is printed only once the lab really listens there.
"""

from __future__ import annotations

import errno
import socket
from typing import TYPE_CHECKING

from .._errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from starlette.types import ASGIApp

#: why a bind fails, in words, and what to do about it
_REASONS = {
    errno.EADDRINUSE: "the port is taken (another server, perhaps another ragmeter lab, listens "
    "there); pick another with --port",
    errno.EADDRNOTAVAIL: "this machine has no such address; give one of its own with --host "
    "(127.0.0.1 keeps the lab local)",
    errno.EACCES: "permission denied (ports under 1024 need privileges); pick another with --port",
}


def where(host: str, port: int) -> str:
    """``host:port``, an IPv6 address in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def listen(host: str, port: int, backlog: int = 2048) -> socket.socket:
    """A socket bound to ``host``:``port`` and listening, ready to hand to the server."""
    try:
        infos = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP, flags=socket.AI_PASSIVE
        )
    except (socket.gaierror, UnicodeError) as exc:
        reason = exc.strerror if isinstance(exc, socket.gaierror) else str(exc)
        raise UsageError(
            f"cannot listen on {where(host, port)}: the host does not resolve ({reason})"
        ) from None
    failure: OSError | None = None
    for family, kind, proto, _, address in infos:
        sock = socket.socket(family, kind, proto)
        try:
            # as uvicorn does: a lab restarted at once takes its port back from TIME_WAIT (a port
            # another socket listens on still fails)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
            sock.listen(backlog)
        except OSError as exc:
            sock.close()
            failure = failure or exc
            continue
        sock.set_inheritable(True)
        return sock
    code = failure.errno if failure is not None else None
    reason = _REASONS.get(code or 0) or (
        failure.strerror if failure is not None and failure.strerror else "no usable address"
    )
    raise UsageError(f"cannot listen on {where(host, port)}: {reason}")


def serve(app: ASGIApp, sock: socket.socket, host: str, port: int) -> None:
    """Serve ``app`` on ``sock`` (from :func:`listen`) until Ctrl-C, which is a normal end."""
    from .._extras import require

    uvicorn = require("uvicorn", "the lab (ragmeter lab)")
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises Ctrl-C once it has shut down
        pass
    finally:
        sock.close()
