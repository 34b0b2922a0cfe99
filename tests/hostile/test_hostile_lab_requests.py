"""The lab's requests (issue 22, item 9): a POST body over the cap is refused whole (413) before
any view sees it, on every route that takes one (the routes are listed from the app, so a new
one cannot be missed), however the body arrives; and ``ragmeter lab`` on a port that is taken or
an address it cannot bind is one ``error:`` line naming host:port and exit 2 (uvicorn's own
handling exited 3 after printing that the lab was running).
"""

from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

# justified: the lab is the web extra (fastapi, uvicorn, python-multipart)
pytest.importorskip("fastapi")  # justified: the lab is the [web] extra
pytest.importorskip("uvicorn")  # justified: the [web] extra's server

from starlette.middleware import Middleware
from starlette.testclient import TestClient

from ragmeter._errors import UsageError
from ragmeter.cli import app as cli_app
from ragmeter.lab import _security, create_app
from ragmeter.lab._security import COOKIE, UNSAFE

#: the cap on a lab request body (the old reader stopped reading there, and went on)
MAX_BODY: int = getattr(_security, "MAX_BODY", 1_000_000)

TOKEN = "t" * 43  # a CSRF token the client chose: double submit accepts any of 20+ characters
HOST = "http://127.0.0.1:8765"


class Spy:
    """Innermost middleware: records every request that got past the lab's own checks (a view
    would have acted on it)."""

    seen: ClassVar[list[tuple[str, str, int]]] = []

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            size = 0
            if scope["method"] in UNSAFE:  # the body the view would read
                message = await receive()
                size = len(message.get("body", b""))
                replayed = False

                async def again() -> dict[str, Any]:
                    nonlocal replayed
                    if not replayed:
                        replayed = True
                        return message
                    return await receive()

                receive = again
            Spy.seen.append((scope["method"], scope["path"], size))
        await self.app(scope, receive, send)


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """The lab over an empty store, with the spy inside and the job starter recorded (a job
    started is the one thing a lab POST does)."""
    import ragmeter.lab._job_plan as job_plan
    import ragmeter.lab._jobs as jobs

    calls: list[dict[str, Any]] = []

    def plan_job(store: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        raise UsageError("recorded, not run")

    monkeypatch.setattr(job_plan, "plan_job", plan_job)
    monkeypatch.setattr(jobs, "start_job", lambda *a, **k: calls.append({"start": a}))
    app = create_app(f"sqlite:///{tmp_path / 'store.db'}")
    app.user_middleware.append(Middleware(Spy))  # appended last = innermost
    Spy.seen = []
    yield {"app": app, "calls": calls}


def all_routes(routes: Any, prefix: str = "") -> Iterator[tuple[set[str], str]]:
    """(methods, path) of every route, included routers and mounts walked into."""
    for r in routes:
        contexts = getattr(r, "effective_route_contexts", None)
        if callable(contexts):  # newer FastAPI keeps an included router's routes inside it
            for c in contexts():
                yield set(c.methods or ()), prefix + c.path
        elif getattr(r, "methods", None):
            yield set(r.methods), prefix + r.path
        elif getattr(r, "routes", None):
            yield from all_routes(r.routes, prefix + getattr(r, "path", ""))


def unsafe_routes(app: Any) -> list[tuple[str, str]]:
    """(method, path) of every route that takes a body; path parameters filled with 1."""
    return sorted(
        (method, re.sub(r"\{[^}]+\}", "1", path))
        for methods, path in all_routes(app.routes)
        for method in methods & UNSAFE
    )


def form(size: int) -> bytes:
    """A form that would start a job, padded to exactly ``size`` bytes: a cut of it still
    holds every field a view reads."""
    head = f"csrf_token={TOKEN}&run=1&retriever=bm25&chunker=tokens%3A200%3A0&k=4&budget=&pad="
    return head.encode() + b"x" * (size - len(head))


def client(app: Any) -> TestClient:
    c = TestClient(app, base_url=HOST)
    c.cookies.set(COOKIE, TOKEN)
    return c


HEADERS = {"x-csrf-token": TOKEN, "content-type": "application/x-www-form-urlencoded"}


def test_the_route_list_is_complete(lab: dict[str, Any]) -> None:
    """The walk finds the lab's pages and its POST routes (so the next test checks them): the
    job form, the login and logout of a shared lab (the label views add theirs)."""
    paths = {path for _, path in all_routes(lab["app"].routes)}
    assert {"/", "/compare", "/lab", "/jobs", "/jobs/{job_id}"} <= paths
    posts = {("POST", "/jobs"), ("POST", "/login"), ("POST", "/logout")}
    assert posts <= set(unsafe_routes(lab["app"]))


def test_every_body_route_refuses_a_body_over_the_cap_whole(lab: dict[str, Any]) -> None:
    c = client(lab["app"])
    for method, path in unsafe_routes(lab["app"]):
        # declared by Content-Length, and sent chunked (no length: counted while read)
        for body in (form(MAX_BODY + 1), iter([form(MAX_BODY + 1)])):
            r = c.request(method, path, content=body, headers=HEADERS)
            assert r.status_code == 413, (method, path, r.status_code, r.text[:200])
            assert "over 1,000,000 bytes" in r.text and "nothing was done" in r.text
    assert Spy.seen == [] and lab["calls"] == [] and lab["app"].state.lab.jobs == {}


def test_a_body_at_the_cap_still_reaches_the_view(lab: dict[str, Any]) -> None:
    """The control: the same form at the cap (and a small one) is read whole and acted on."""
    c = client(lab["app"])
    for size in (MAX_BODY, 200):
        r = c.post("/jobs", content=form(size), headers=HEADERS)
        assert r.status_code == 400 and "recorded, not run" in r.text
    assert [s for _, _, s in Spy.seen] == [MAX_BODY, 200]
    assert len(lab["calls"]) == 2 and lab["calls"][0]["retriever"] == "bm25"


@pytest.mark.parametrize("piece", [4096, 65_536, 333_333, MAX_BODY])
def test_a_streamed_body_is_refused_once_it_passes_the_cap(lab: dict[str, Any], piece: int) -> None:
    """The body in many ``http.request`` messages and no Content-Length, as a server passes a
    chunked upload on (the last case: exactly the cap, then 10 bytes more): refused as soon as
    it passes the cap, the rest never read, no view run (the old reader stopped there too, but
    handed the cut body on as if it were whole)."""
    import anyio

    body = form(MAX_BODY + 10)
    parts = [body[i : i + piece] for i in range(0, len(body), piece)]
    over = next(i for i in range(len(parts)) if sum(map(len, parts[: i + 1])) > MAX_BODY)
    given: list[int] = []
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        i = len(given)
        given.append(i)
        if i >= len(parts):
            return {"type": "http.disconnect"}
        return {"type": "http.request", "body": parts[i], "more_body": i < len(parts) - 1}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/jobs", "raw_path": b"/jobs", "query_string": b"",
        "root_path": "", "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8765),
        "headers": [(b"host", b"127.0.0.1:8765"), (b"cookie", f"{COOKIE}={TOKEN}".encode()),
                    (b"x-csrf-token", TOKEN.encode()),
                    (b"content-type", b"application/x-www-form-urlencoded")],
    }  # fmt: skip
    anyio.run(lab["app"], scope, receive, send)
    assert sent[0]["status"] == 413
    assert len(given) == over + 1  # read up to the message that passed the cap, no further
    assert Spy.seen == [] and lab["calls"] == []


# -- a real server ------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ragmeter(*args: str, **kwargs: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ragmeter", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
        **kwargs,
    )


def test_a_real_server_refuses_an_oversize_post_before_reading_it(tmp_path: Path) -> None:
    """``ragmeter lab`` listening on a real socket: a POST declaring a body over the cap gets
    413 at once (nothing of the body is read: the client sends none), a small POST reaches the
    view, and Ctrl-C ends the lab with exit 0."""
    port = free_port()
    proc = ragmeter("lab", "--port", str(port), "--db", f"sqlite:///{tmp_path / 'store.db'}")
    try:
        for _ in range(240):
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                conn.request("GET", "/static/lab.css")
                assert conn.getresponse().status == 200
                conn.close()
                break
            except ConnectionRefusedError:
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.25)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.putrequest("POST", "/jobs")
        for name, value in {**HEADERS, "cookie": f"{COOKIE}={TOKEN}"}.items():
            conn.putheader(name, value)
        conn.putheader("content-length", str(MAX_BODY + 1))
        conn.endheaders()  # the headers only: the refusal must not wait for the body
        r = conn.getresponse()
        assert r.status == 413 and b"nothing was done" in r.read()
        conn.close()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        small = form(300)
        conn.request(
            "POST", "/jobs", body=small, headers={**HEADERS, "cookie": f"{COOKIE}={TOKEN}"}
        )
        # the view ran: the store has no run 1 to start a job from
        assert conn.getresponse().status in (400, 404)
        conn.close()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert f"ragmeter lab on http://127.0.0.1:{port}/" in err and "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


# -- binding ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("host", "words"),
    [("127.0.0.1", "the port is taken"), ("::1", "the port is taken"),
     ("192.0.2.1", "this machine has no such address")],
)  # fmt: skip
def test_an_address_that_cannot_be_bound_is_one_error_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str, words: str
) -> None:
    """A real socket listens on 127.0.0.1 (or ::1, skipped without IPv6) first, and the lab is
    asked for the same port; 192.0.2.1 (TEST-NET-1) is no address of this machine. Each is one
    error line naming host:port and exit 2 (uvicorn printed "ERROR: [Errno 98] ..." after the
    lab said it was running, and exited 3). Should the lab bind after all, the patched main loop
    returns at once and the exit code says so: the test cannot hang."""
    import uvicorn

    async def no_loop(self: Any) -> None:
        return None

    monkeypatch.setattr(uvicorn.Server, "main_loop", no_loop)
    port, taken = free_port(), None
    if "taken" in words:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        taken = socket.socket(family)
        try:
            taken.bind((host, 0))
        except OSError:
            taken.close()
            pytest.skip(f"no {host} on this machine")  # justified: ::1 needs IPv6
        taken.listen()
        port = taken.getsockname()[1]
    else:  # beyond loopback the lab starts only with a labeller who has a token (docs/team.md)
        from ragmeter.store import Store

        with Store.open(f"sqlite:///{tmp_path / 's.db'}") as s:
            s.add_labeller("a")
    try:
        result = CliRunner().invoke(
            cli_app,
            ["lab", "--host", host, "--port", str(port), "--db", f"sqlite:///{tmp_path / 's.db'}"],
        )
    finally:
        if taken is not None:
            taken.close()
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert f"cannot listen on {shown}: {words}" in lines[0]
    assert result.stdout == "" and "ragmeter lab on" not in result.output
