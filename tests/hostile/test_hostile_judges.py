"""Hostile judge servers and replies: every fault is one recorded failure of one request, never
an aborted batch, a hang past the timeout, a runaway read, a leaked key or a wrong number.

Real servers on 127.0.0.1 in threads (as tests/answers/judges/test_judge_client.py): a raw TCP
server writes exactly the bytes a broken server would (truncated body, bad status line, a
byte-by-byte drip, a huge body); an HTTP server answers a cross-origin redirect while a second one
records whether the key reached it.
"""

from __future__ import annotations

import json
import math
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from _loopback import running, send_json
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.answers.judged import judge_metric
from ragmeter.answers.judges import JudgeInfo, JudgeReply, JudgeRequest
from ragmeter.answers.judges._protocol import parse_json_object
from ragmeter.answers.judges.openai import OpenAIJudge

GOOD = json.dumps({"verdict": "yes", "reason": "on topic"})
CLAIMS_OK = json.dumps({"claims": [{"claim": "The fee is $75.", "supported": True}]})


def _completion(content: str, usage: Any = None) -> bytes:
    body: dict[str, Any] = {
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5} if usage is None else usage,
    }
    return json.dumps(body).encode()


def _head(length: int | None, status: bytes = b"200 OK") -> bytes:
    lines = [b"HTTP/1.1 " + status, b"Content-Type: application/json", b"Connection: close"]
    if length is not None:
        lines.append(b"Content-Length: " + str(length).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n"


Action = Callable[[socket.socket], None]


class RawServer:
    """A TCP server that reads one HTTP request and answers with the scripted raw action for the
    marker ``<<name>>`` found in it; records how each connection ended."""

    def __init__(self, script: dict[str, Action]) -> None:
        self.script = script
        self.counts: dict[str, int] = {}
        self.ended: list[str] = []  # "complete" or "client closed", per connection
        self.lock = threading.Lock()
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                sock: socket.socket = self.request
                data = b""
                while b"\r\n\r\n" not in data:
                    block = sock.recv(65536)
                    if not block:
                        return
                    data += block
                head, _, body = data.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                while len(body) < length:
                    body += sock.recv(65536)
                text = body.decode()
                marker = next(m for m in outer.script if f"<<{m}>>" in text)
                with outer.lock:
                    outer.counts[marker] = outer.counts.get(marker, 0) + 1
                try:
                    outer.script[marker](sock)
                    end = "complete"
                except OSError:
                    end = "client closed"
                with outer.lock:
                    outer.ended.append(end)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> RawServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def ok(content: str = GOOD, usage: Any = None) -> Action:
    def act(sock: socket.socket) -> None:
        body = _completion(content, usage)
        sock.sendall(_head(len(body)) + body)

    return act


def truncated(sock: socket.socket) -> None:
    body = _completion(GOOD)
    sock.sendall(_head(len(body) + 500) + body)  # promises 500 bytes more, then hangs up


def bad_status(sock: socket.socket) -> None:
    sock.sendall(b"HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\n{}")


def garbage_status(sock: socket.socket) -> None:
    sock.sendall(b"\x00\xff hello there\r\n\r\n")


def bad_chunked(sock: socket.socket) -> None:
    sock.sendall(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n"
        b"\r\nzz\r\n{}\r\n0\r\n\r\n"
    )


def drip(every: float, head_too: bool = False) -> Action:
    """A valid reply sent one byte every ``every`` seconds (headers too when ``head_too``)."""

    def act(sock: socket.socket) -> None:
        body = _completion(GOOD)
        head = _head(len(body))
        if not head_too:
            sock.sendall(head)
            data = body
        else:
            data = head + body
        for i in range(len(data)):
            sock.sendall(data[i : i + 1])
            time.sleep(every)

    return act


def huge(size: int, declare: bool) -> Action:
    """A valid completion whose reason pads it to ``size`` bytes, with or without a length."""

    def act(sock: socket.socket) -> None:
        pad = "x" * size
        body = _completion(json.dumps({"verdict": "yes", "reason": pad}))
        sock.sendall(_head(len(body) if declare else None))
        for i in range(0, len(body), 1 << 20):
            sock.sendall(body[i : i + (1 << 20)])

    return act


def _items(*markers: str) -> list[dict[str, str]]:
    return [
        {"id": m, "question": f"<<{m}>> What is the fee?", "answer": "It is $75."} for m in markers
    ]


def _judge(url: str, **kw: Any) -> OpenAIJudge:
    opts: dict[str, Any] = {
        "base_url": url,
        "model": "m",
        "timeout": 2.0,
        "max_retries": 0,
        "backoff": 0.0,
        "concurrency": 2,
    }
    opts.update(kw)
    return OpenAIJudge(**opts)


def _by_id(judge: OpenAIJudge, metric: str, items: list[dict[str, str]]) -> dict[str, Any]:
    return {s.id: s for s in judge_metric(judge, metric, items)}


# -- transport faults: one recorded failure each, the rest of the batch goes on ----------------
@pytest.mark.parametrize(
    ("fault", "words"),
    [
        (truncated, "incomplete"),
        (bad_status, "status line"),
        (garbage_status, "status line"),
        (bad_chunked, "incomplete"),
    ],
    ids=["truncated-body", "bad-status-line", "garbage-status-line", "bad-chunked-body"],
)
def test_broken_reply_is_one_recorded_failure(fault: Action, words: str) -> None:
    with RawServer({"bad": fault, "good": ok()}) as srv:
        judge = _judge(srv.url, max_retries=1)
        scores = _by_id(judge, "answer_relevance", _items("bad", "good"))
    assert scores["good"].ok and scores["good"].score == 1.0
    bad = scores["bad"]
    assert not bad.ok and bad.score is None
    assert "malformed reply" in (bad.error or "") and words in (bad.error or "").lower()
    assert srv.counts["bad"] == 2  # retried once, then recorded
    assert judge.usage.failures == 1 and judge.usage.retries == 1


@pytest.mark.parametrize("head_too", [False, True], ids=["body-drip", "header-drip"])
def test_slow_drip_ends_at_the_timeout(head_too: bool) -> None:
    # every byte arrives well inside the socket timeout, so only a deadline on the whole request
    # can end it: the full reply would take len(reply) * 0.05 s (over 10 s)
    timeout = 0.4
    with RawServer({"slow": drip(0.05, head_too)}) as srv:
        judge = _judge(srv.url, timeout=timeout)
        (score,) = judge_metric(judge, "answer_relevance", _items("slow"))
        srv.server.shutdown()
    # without a whole-request deadline the drip would finish and be scored: "timed out" proves
    # the deadline ended it (no wall-clock bound here: CI machines are shared and slow)
    assert not score.ok and score.score is None
    assert "timed out" in (score.error or "")


def test_huge_reply_is_refused_not_read() -> None:
    size = 5 * 1024 * 1024  # over the default cap of 4 MiB
    with RawServer({"big": huge(size, True), "stream": huge(size, False), "good": ok()}) as srv:
        judge = _judge(srv.url, max_retries=2)
        scores = _by_id(judge, "answer_relevance", _items("big", "stream", "good"))
    assert scores["good"].ok
    for q in ("big", "stream"):
        s = scores[q]
        assert not s.ok and s.score is None and "4 MiB" in (s.error or ""), s.error
        assert srv.counts[q] == 1  # not retried: the same reply would come back


def test_reply_cap_is_a_setting() -> None:
    with RawServer({"mid": huge(20_000, False)}) as srv:
        small = _judge(srv.url, max_reply_bytes=10_000)
        assert not judge_metric(small, "answer_relevance", _items("mid"))[0].ok
        roomy = _judge(srv.url, max_reply_bytes=100_000)
        assert judge_metric(roomy, "answer_relevance", _items("mid"))[0].ok


# -- redirects: the key never leaves the configured origin -------------------------------------
class _Recorder(BaseHTTPRequestHandler):
    """Records the headers of every request; answers ``code`` to ``location`` when set."""

    seen: list[dict[str, str]]
    location: str = ""
    code: int = 302

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).seen.append(dict(self.headers))
        if type(self).location:
            self.send_response(type(self).code)
            self.send_header("Location", type(self).location)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        send_json(self, 200, _completion(GOOD))


@contextmanager
def _http(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    with running(ThreadingHTTPServer(("127.0.0.1", 0), handler)) as url:
        yield url


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_redirect_to_another_origin_never_carries_the_key(
    code: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGMETER_HOSTILE_KEY", "sk-secret")
    other = type("Other", (_Recorder,), {"seen": [], "location": ""})
    with _http(other) as other_url:
        first = type(
            "First",
            (_Recorder,),
            {"seen": [], "location": f"{other_url}/v1/chat/completions", "code": code},
        )
        with _http(first) as url:
            judge = _judge(f"{url}/v1", api_key_env="RAGMETER_HOSTILE_KEY")
            (score,) = judge_metric(judge, "answer_relevance", _items("r"))
    assert first.seen[0]["Authorization"] == "Bearer sk-secret"  # the configured origin
    assert not any("Authorization" in h for h in other.seen)
    assert other.seen == []  # ragmeter follows no redirect at all
    assert not score.ok and "redirect" in (score.error or "")
    assert judge.usage.failures == 1


def test_same_origin_redirect_is_not_followed_either() -> None:
    target = type("Self", (_Recorder,), {"seen": [], "location": "/v2/chat/completions"})
    with _http(target) as url:
        judge = _judge(f"{url}/v1")
        (score,) = judge_metric(judge, "answer_relevance", _items("s"))
    assert not score.ok and "/v2/chat/completions" in (score.error or "")
    assert len(target.seen) == 1


# -- usage the server reports ------------------------------------------------------------------
@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -5, "completion_tokens": 3},
        {"prompt_tokens": 7, "completion_tokens": 2.5},
        {"prompt_tokens": "10", "completion_tokens": 3},
        {"prompt_tokens": True, "completion_tokens": 3},
        {"prompt_tokens": 1e300, "completion_tokens": 3},
        [1, 2],
        "lots",
    ],
    ids=["negative", "fraction", "string", "boolean", "huge-float", "list", "text"],
)
def test_malformed_usage_is_not_summed(usage: Any) -> None:
    with RawServer({"u": ok(usage=usage), "g": ok()}) as srv:
        judge = _judge(srv.url, price_per_1k_prompt=1.0, price_per_1k_completion=1.0)
        scores = _by_id(judge, "answer_relevance", _items("u", "g"))
    assert scores["u"].ok and scores["g"].ok  # the verdict itself is fine
    u = judge.usage
    # only the well-formed reply is summed: 10 + 5 tokens, cost 15/1000
    assert (u.prompt_tokens, u.completion_tokens) == (10, 5)
    assert u.cost == pytest.approx(0.015)
    assert u.unknown_usage == 1


# -- replies that are not exactly the expected JSON --------------------------------------------
def test_refusal_with_empty_claims_is_a_failure_not_cached(tmp_path: Path) -> None:
    refusal = 'I cannot assess this answer. Expected format: {"claims": []}'
    items = [
        {"id": q, "question": f"<<{q}>> fee?", "answer": "It is $75.", "context": "Fee: $75."}
        for q in ("refuse", "empty", "fine")
    ]
    script = {"refuse": ok(refusal), "empty": ok('{"claims": []}'), "fine": ok(CLAIMS_OK)}
    with RawServer(script) as srv:
        judge = _judge(srv.url, cache_dir=tmp_path / "cache")
        scores = {s.id: s for s in judge_metric(judge, "faithfulness", items)}
        assert scores["fine"].ok and scores["fine"].score == 1.0
        for q in ("refuse", "empty"):
            assert not scores[q].ok and scores[q].score is None, q
        assert "text before the JSON" in (scores["refuse"].error or "")
        assert "no claim" in (scores["empty"].error or "")
        assert judge.usage.failures == 2
        # failures were not cached: a second run asks again, the success comes from the cache
        again = _judge(srv.url, cache_dir=tmp_path / "cache")
        scores2 = {s.id: s for s in judge_metric(again, "faithfulness", items)}
    assert scores2["fine"].cached and not scores2["refuse"].ok and not scores2["empty"].ok
    assert srv.counts == {"refuse": 2, "empty": 2, "fine": 1}


def test_cached_reply_that_no_longer_fits_is_asked_again(tmp_path: Path) -> None:
    from ragmeter.answers.judges import load_prompt
    from ragmeter.chat import DiskCache, cache_key

    item = {"id": "c", "question": "<<c>> fee?", "answer": "It is $75.", "context": "Fee: $75."}
    with RawServer({"c": ok(CLAIMS_OK)}) as srv:
        judge = _judge(srv.url, cache_dir=tmp_path)
        messages = load_prompt("faithfulness").render(item)
        DiskCache(tmp_path).put(
            cache_key("m", messages, judge.params), {"content": '{"claims": []}'}
        )
        (score,) = judge_metric(judge, "faithfulness", [item])
    assert score.ok and not score.cached and srv.counts == {"c": 1}


class _Canned:
    """A judge (not the OpenAI client) whose replies are given data."""

    info = JudgeInfo("canned", "m")

    def __init__(self, data: Sequence[Any]) -> None:
        self.data = data

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        return [JudgeReply(True, d, json.dumps(d)) for d in self.data]


@pytest.mark.parametrize(
    ("metric", "data", "words"),
    [
        ("faithfulness", {"claims": []}, "no claim"),
        ("faithfulness", {"claims": [{"claim": "x", "supported": "false"}]}, "boolean"),
        ("faithfulness", {"claims": [{"claim": "x", "supported": 1}]}, "boolean"),
        ("faithfulness", {"claims": "none"}, "list"),
        ("answer_relevance", {"verdict": ["yes"]}, "one of"),
        ("correctness", {"verdict": "Correct-ish"}, "one of"),
        ("pairwise", {"winner": "C"}, "one of"),
        ("answer_relevance", {"verdict": "yes", "reason": {"x": 1}}, "reason"),
    ],
)
def test_any_judge_reply_is_checked_against_its_task(metric: str, data: Any, words: str) -> None:
    items = [
        {
            "id": "x",
            "question": "q",
            "answer": "It is $75.",
            "context": "c",
            "reference": "r",
            "answer_a": "a",
            "answer_b": "b",
        }
    ]
    (score,) = judge_metric(_Canned([data]), metric, items)
    assert not score.ok and score.score is None and words in (score.error or ""), score.error


# -- the reply parser: prose around the JSON never yields a success ----------------------------
_VALID = [
    {"verdict": "yes"},
    {"verdict": "no", "reason": "off topic"},
    {"claims": [{"claim": "a", "supported": False}]},
    {"claims": []},
    {"winner": "tie"},
]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(obj=st.sampled_from(_VALID), prose=st.text(min_size=1), before=st.booleans())
def test_prose_on_one_side_never_parses(obj: dict[str, Any], prose: str, before: bool) -> None:
    if not prose.strip():
        prose = "ok" + prose
    body = json.dumps(obj)
    reply = prose + body if before else body + prose
    with pytest.raises(ValueError):
        parse_json_object(reply)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    obj=st.sampled_from(_VALID),
    before=st.text(alphabet=st.sampled_from(' \n\t`{}[]":,ajsonyes0'), max_size=12),
    after=st.text(alphabet=st.sampled_from(' \n\t`{}[]":,ajsonyes0'), max_size=12),
)
def test_a_reply_parses_only_when_it_is_the_json(
    obj: dict[str, Any], before: str, after: str
) -> None:
    body = json.dumps(obj)
    reply = before + body + after
    try:
        got = parse_json_object(reply)
    except ValueError:
        return
    plain = not before.strip() and not after.strip()
    fenced = before.strip() in ("```", "```json") and "\n" in before and after.strip() == "```"
    whole = _is_one_object(reply)
    assert plain or fenced or whole, repr(reply)
    assert got == obj or whole


def _is_one_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def test_fence_rules() -> None:
    obj = {"verdict": "yes"}
    assert parse_json_object('```json\n{"verdict": "yes"}\n```') == obj
    assert parse_json_object('  ```\n{"verdict": "yes"}\n```\n') == obj
    for bad in (
        '```json\n{"verdict": "yes"}\n```\nHope this helps!',
        'Sure:\n```json\n{"verdict": "yes"}\n```',
        '```json\n{"verdict": "yes"}\n```\n```json\n{"verdict": "no"}\n```',
        '```json {"verdict": "yes"} ```',
        '{"verdict": "yes"}\n{"verdict": "no"}',
        '{"verdict": "no", "verdict": "yes"}',
        '{"verdict": NaN}',
        "[" * 100_000,
    ):
        with pytest.raises(ValueError):
            parse_json_object(bad)


# -- the judge's options are bounded where they are validated (OpenAIJudge) -------------------
_FARE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("timeout", 1e308, "timeout"),  # before: OverflowError (timestamp out of range)
        ("timeout", 10**20, "timeout"),
        ("timeout", 3600.5, "timeout"),
        ("timeout", 0, "timeout"),
        ("timeout", float("nan"), "timeout"),
        ("max_retries", 10**20, "retries"),  # before: ran on past 60 s
        ("max_retries", 21, "retries"),
        ("max_retries", -1, "retries"),
        ("max_retries", 2.5, "retries"),
        ("concurrency", 257, "concurrency"),
        ("concurrency", 10**20, "concurrency"),
        ("concurrency", True, "concurrency"),
        ("backoff", 1e308, "backoff"),
        ("max_backoff", -1.0, "max_backoff"),
        ("max_reply_bytes", 2**40, "max_reply_bytes"),
        ("max_reply_bytes", 0, "max_reply_bytes"),
        ("price_per_1k_prompt", float("inf"), "price_per_1k_prompt"),
        ("price_per_1k_completion", -0.5, "price_per_1k_completion"),
    ],
)
def test_judge_options_outside_their_bounds_are_refused(
    option: str, value: object, words: str
) -> None:
    from ragmeter import UsageError

    with pytest.raises(UsageError, match=words):
        kw: dict[str, Any] = {option: value}
        OpenAIJudge(base_url="http://127.0.0.1:9/v1", model="m", **kw)


def test_judge_options_at_their_bounds_are_kept() -> None:
    j = OpenAIJudge(
        base_url="http://127.0.0.1:9/v1",
        model="m",
        timeout=3600,
        max_retries=20,
        concurrency=256,
        backoff=0,
        max_backoff=3600,
        max_reply_bytes=256 * 1024 * 1024,
    )
    assert (j.timeout, j.max_retries, j.concurrency) == (3600.0, 20, 256)
    j = OpenAIJudge(base_url="http://127.0.0.1:9/v1", model="m", timeout=0.001, max_retries=0)
    assert (j.timeout, j.max_retries, j.concurrency) == (0.001, 0, 4)


@pytest.mark.parametrize(
    ("option", "value", "bound"),
    [
        ("--judge-timeout", "1e308", "3600"),
        ("--judge-timeout", "100000000000000000000", "3600"),
        ("--judge-retries", "100000000000000000000", "20"),
        ("--judge-concurrency", "1000", "256"),
    ],
)
def test_judge_cli_options_are_refused_and_their_help_says_the_bound(
    option: str, value: str, bound: str
) -> None:
    from typer.testing import CliRunner

    from ragmeter.cli import app

    runner = CliRunner()
    args = [
        "answers", "check", str(_FARE / "answers" / "baseline.jsonl"),
        "--golden", str(_FARE / "golden.jsonl"), "--judge", "openai",
        "--judge-url", "http://127.0.0.1:9/v1", "--judge-model", "m", "--judge-cache", "",
        option, value,
    ]  # fmt: skip
    r = runner.invoke(app, args, env={"COLUMNS": "120"})
    assert not (r.exception and not isinstance(r.exception, SystemExit)), repr(r.exception)
    assert r.exit_code == 2, r.stderr[-400:]
    assert "error:" in r.stderr and bound in r.stderr
    help_text = runner.invoke(app, ["answers", "check", "--help"], env={"COLUMNS": "200"}).stdout
    assert bound in help_text


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    timeout=st.one_of(st.floats(), st.integers(-(10**30), 10**30)),
    retries=st.integers(-(10**30), 10**30),
)
def test_any_timeout_and_retries_are_bounded_or_refused(timeout: Any, retries: int) -> None:
    from ragmeter import UsageError

    try:
        j = OpenAIJudge(
            base_url="http://127.0.0.1:9/v1", model="m", timeout=timeout, max_retries=retries
        )
    except UsageError:
        ok = 0 < timeout <= 3600 and 0 <= retries <= 20
        assert not ok, (timeout, retries)
        return
    assert 0 < j.timeout <= 3600 and 0 <= j.max_retries <= 20
    # the deadline of one attempt (now + timeout) is a representable time: a finite timeout
    assert math.isfinite(j.timeout)
