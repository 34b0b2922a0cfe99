"""A real HTTP server on 127.0.0.1 for the tests of clients (judges, generators, the Ray
engine's endpoints): started on a free port in a daemon thread, stopped when the block ends."""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler


@contextmanager
def running(server: socketserver.BaseServer) -> Iterator[str]:
    """Serve ``server`` (bound to 127.0.0.1) until the block ends; yields its base URL."""
    if isinstance(server, socketserver.ThreadingMixIn):
        server.daemon_threads = True
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def send_json(
    h: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str] | None = None
) -> None:
    """Answer the request ``h`` with ``body`` as JSON (and any extra ``headers``)."""
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(body)))
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(body)
