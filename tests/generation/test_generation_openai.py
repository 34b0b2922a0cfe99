"""The OpenAI-compatible generator against real HTTP servers on 127.0.0.1 (threads): a good
server, one that fails then recovers, one that returns malformed JSON, one that streams its
reply slowly (within and past the timeout); the key from the named environment variable; the
answer cache (a second run sends nothing)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from _loopback import running, send_json

from ragmeter._errors import InputError, UsageError
from ragmeter.generation import (
    CachedGenerator,
    ContextSpec,
    Generator,
    OpenAIGenerator,
    Passage,
    assemble,
    load_prompt,
    make_generator,
    make_request,
)

PASSAGES = [
    Passage("fares#0-40", "fares", 0, 40, "The change fee is $75.", 6, 1),
    Passage("bags#0-30", "bags", 0, 30, "One checked bag is free.", 6, 2),
]

Action = Callable[[BaseHTTPRequestHandler, int], None]


def _completion(content: str) -> bytes:
    return json.dumps(
        {
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        }
    ).encode()


def ok(content: str = "The fee is $75 [1].") -> Action:
    return lambda h, n: send_json(h, 200, _completion(content))


def fails_then_ok(times: int) -> Action:
    def act(h: BaseHTTPRequestHandler, n: int) -> None:
        if n <= times:
            send_json(h, 503, b'{"error": "overloaded"}')
        else:
            send_json(h, 200, _completion("Recovered [2]."))

    return act


def malformed(h: BaseHTTPRequestHandler, n: int) -> None:
    send_json(h, 200, b'{"choices": [{"message": {"content": "cut')


def drip(every: float, chunked: bool = False) -> Action:
    """A valid reply whose body is written a few bytes at a time, ``every`` seconds apart."""

    def act(h: BaseHTTPRequestHandler, n: int) -> None:
        body = _completion("Slow but sure [1].")
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        if chunked:
            h.send_header("Transfer-Encoding", "chunked")
        else:
            h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        try:
            for i in range(0, len(body), 8):
                part = body[i : i + 8]
                h.wfile.write(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part)
                time.sleep(every)
            if chunked:
                h.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client gave up (its timeout): that is the point

    return act


class Server:
    """Answers each request with the scripted action of the ``<<marker>>`` in its question;
    records every request's headers and JSON payload."""

    def __init__(self, script: dict[str, Action]) -> None:
        self.script = script
        self.counts: dict[str, int] = {}
        self.seen: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                text = json.dumps(payload["messages"])
                marker = next(m for m in outer.script if f"<<{m}>>" in text)
                with outer.lock:
                    outer.seen.append((dict(self.headers), payload))
                    outer.counts[marker] = n = outer.counts.get(marker, 0) + 1
                outer.script[marker](self, n)
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def requests(self) -> int:
        return sum(self.counts.values())


@contextmanager
def serve(script: dict[str, Action]) -> Iterator[Server]:
    srv = Server(script)
    with running(srv.server):
        yield srv


def _requests(*markers: str):
    p = load_prompt("answer-v1")
    ctx = assemble("q", PASSAGES, ContextSpec())
    return [make_request(m, f"<<{m}>> What is the fee?", ctx, p) for m in markers]


def _gen(url: str, **kw: Any) -> OpenAIGenerator:
    opts: dict[str, Any] = {"timeout": 5.0, "max_retries": 2, "backoff": 0.0, "concurrency": 2}
    opts.update(kw)
    return OpenAIGenerator(url, "smol", **opts)


def test_answers_with_citations_defaults_and_usage() -> None:
    with serve({"a": ok(), "b": ok("One bag [2, 1].")}) as srv:
        gen = _gen(srv.url, price_per_1k_prompt=1.0, price_per_1k_completion=2.0)
        assert isinstance(gen, Generator)
        out = gen.generate(_requests("a", "b"))
    assert [g.question_id for g in out] == ["a", "b"]
    assert out[0].text == "The fee is $75 [1]." and out[0].citations == ("fares#0-40",)
    assert out[1].citations == ("bags#0-30", "fares#0-40")
    # 10 prompt tokens at $1/1k + 5 completion tokens at $2/1k = 0.01 + 0.01
    assert out[0].usage["prompt_tokens"] == 10 and out[0].usage["completion_tokens"] == 5
    assert out[0].usage["cost_usd"] == pytest.approx(0.02)
    assert gen.usage.prompt_tokens == 20 and gen.usage.cost == pytest.approx(0.04)
    headers, payload = srv.seen[0]
    assert payload["model"] == "smol"
    assert (payload["temperature"], payload["seed"], payload["max_tokens"]) == (0.0, 0, 256)
    assert "stream" not in payload and "Authorization" not in headers
    assert [m["role"] for m in payload["messages"]] == ["system", "user"]
    assert "[1] fares (chars 0-40)\nThe change fee is $75." in payload["messages"][1]["content"]


def test_key_comes_from_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETER_TEST_GEN_KEY", "sk-test-123")
    with serve({"a": ok()}) as srv:
        spec = {
            "kind": "openai",
            "base_url": srv.url,
            "model": "smol",
            "api_key_env": "RAGMETER_TEST_GEN_KEY",
            "temperature": 0.5,
            "seed": 7,
        }
        gen = make_generator(spec)
        gen.generate(_requests("a"))
    headers, _ = srv.seen[0]
    assert headers["Authorization"] == "Bearer sk-test-123"
    assert "sk-test-123" not in gen.fingerprint()


def test_missing_key_variable_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGMETER_NO_SUCH_KEY", raising=False)
    with pytest.raises(UsageError, match="environment variable RAGMETER_NO_SUCH_KEY is not set"):
        OpenAIGenerator("http://127.0.0.1:9/v1", "m", "RAGMETER_NO_SUCH_KEY")
    spec = {
        "kind": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "m",
        "api_key_env": "RAGMETER_NO_SUCH_KEY",
    }
    with pytest.raises(InputError) as e:
        make_generator(spec, path="exp.toml")
    assert e.value.field == "generator.api_key_env"
    assert "RAGMETER_NO_SUCH_KEY is not set" in str(e.value) and "generator's API key" in str(
        e.value
    )


def test_server_error_then_success_is_retried() -> None:
    waits: list[float] = []
    with serve({"flaky": fails_then_ok(2), "a": ok()}) as srv:
        gen = _gen(srv.url, backoff=0.5, sleep=waits.append)
        out = gen.generate(_requests("flaky", "a"))
    assert out[0].ok and out[0].text == "Recovered [2]." and out[0].citations == ("bags#0-30",)
    assert out[0].usage["attempts"] == 3 and srv.counts["flaky"] == 3
    assert gen.usage.retries == 2 and waits == [0.5, 1.0]  # backoff 0.5 * 2**(n-1)
    assert out[1].ok


def test_malformed_json_is_that_questions_error_and_the_run_goes_on() -> None:
    with serve({"bad": malformed, "a": ok(), "b": ok()}) as srv:
        gen = _gen(srv.url, max_retries=1)
        out = gen.generate(_requests("a", "bad", "b"))
    assert [g.ok for g in out] == [True, False, True]
    assert out[1].text == "" and out[1].citations == ()
    assert out[1].error == "malformed reply: body is not JSON (gave up after 2 attempts)"
    assert srv.counts["bad"] == 2 and gen.usage.failures == 1


def test_persistent_server_error_is_recorded() -> None:
    with serve({"down": fails_then_ok(99)}) as srv:
        out = _gen(srv.url, max_retries=1).generate(_requests("down"))
    assert out[0].error is not None and out[0].error.startswith("HTTP 503")
    assert "gave up after 2 attempts" in out[0].error


@pytest.mark.parametrize("chunked", [False, True])
def test_slow_stream_within_the_timeout_is_an_answer(chunked: bool) -> None:
    with serve({"slow": drip(0.01, chunked)}) as srv:
        out = _gen(srv.url, timeout=10.0).generate(_requests("slow"))
    assert out[0].ok and out[0].text == "Slow but sure [1]." and out[0].citations == ("fares#0-40",)


def test_slow_stream_past_the_timeout_is_a_recorded_timeout() -> None:
    with serve({"slow": drip(0.2), "a": ok()}) as srv:
        gen = _gen(srv.url, timeout=0.3, max_retries=0)
        out = gen.generate(_requests("slow", "a"))
    assert out[0].error == "timed out after 0.3s (gave up after 1 attempts)"
    assert out[1].ok


def test_second_run_sends_nothing(tmp_path: Path) -> None:
    with serve({"a": ok(), "b": ok("Bags [2].")}) as srv:
        spec = {"kind": "openai", "base_url": srv.url, "model": "smol", "max_retries": 0}
        first = make_generator(spec, cache_dir=tmp_path).generate(_requests("a", "b"))
        assert srv.requests == 2
        again = make_generator(spec, cache_dir=tmp_path)
        second = again.generate(_requests("a", "b"))
        assert srv.requests == 2  # zero model calls
    assert isinstance(again, CachedGenerator) and again.stats.hit_rate == 1.0
    assert [g.text for g in second] == [g.text for g in first]
    assert [g.citations for g in second] == [("fares#0-40",), ("bags#0-30",)]
    assert all(g.cached for g in second)


def test_identical_requests_are_sent_once() -> None:
    with serve({"a": ok()}) as srv:
        out = _gen(srv.url).generate(_requests("a", "a", "a"))
    assert srv.requests == 1 and [g.text for g in out] == ["The fee is $75 [1]."] * 3
