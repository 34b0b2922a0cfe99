"""OpenAIJudge against a real HTTP server on 127.0.0.1 speaking the chat-completions protocol,
scripted to fail: 500, 429, slow replies past the timeout, malformed JSON, 400."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import pytest
from _loopback import send_json

from ragmeter import UsageError
from ragmeter.answers.judged import judge_metric
from ragmeter.answers.judges.openai import OpenAIJudge


def _completion(content: str) -> bytes:
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "model": "test-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    ).encode()


OK = ("ok", json.dumps({"verdict": "yes", "reason": "on topic"}))


class ScriptedServer:
    """Each request is routed by the marker (q1, q2, ...) in its user message and answered with
    the next scripted action for that marker; requests are counted per marker."""

    def __init__(self, script: dict[str, list[tuple[Any, ...]]]) -> None:
        self.script = {k: list(v) for k, v in script.items()}
        self.counts: dict[str, int] = {}
        self.headers: list[dict[str, str]] = []
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.in_flight = self.max_in_flight = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                user = body["messages"][-1]["content"]
                marker = next(m for m in outer.script if f"<<{m}>>" in user)
                with outer.lock:
                    outer.counts[marker] = outer.counts.get(marker, 0) + 1
                    outer.headers.append(dict(self.headers))
                    outer.bodies.append(body)
                    actions = outer.script[marker]
                    action = actions.pop(0) if len(actions) > 1 else actions[0]
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                    outer.changed.notify_all()
                self.counted = True
                try:
                    self._act(action)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): expected
                finally:
                    self._done()

            def _done(self) -> None:
                """The request stops counting as in flight once its reply is about to go out:
                the client may read the reply and send its next request before this handler
                thread runs again, so counting until after the write would see one request too
                many on a loaded machine."""
                if self.counted:
                    self.counted = False
                    with outer.lock:
                        outer.in_flight -= 1

            def _act(self, action: tuple[Any, ...]) -> None:
                kind = action[0]
                if kind == "gather":  # hold the reply until n requests were in flight at once
                    with outer.changed:
                        outer.changed.wait_for(
                            lambda: outer.max_in_flight >= action[1], timeout=action[2]
                        )
                    action = OK
                    kind = "ok"
                if kind == "slow":
                    time.sleep(action[1])
                    action = OK
                    kind = "ok"
                if kind == "ok":
                    self._send(200, _completion(action[1]))
                elif kind == "status":
                    extra = {"Retry-After": "0"} if action[1] == 429 else {}
                    self._send(action[1], b'{"error": {"message": "scripted"}}', extra)
                elif kind == "not_json":
                    self._send(200, b"<html>proxy error</html>")
                elif kind == "no_choices":
                    self._send(200, b'{"object": "chat.completion"}')

            def _send(self, code: int, payload: bytes, extra: dict[str, str] | None = None) -> None:
                self._done()
                send_json(self, code, payload, extra)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _items(*markers: str) -> list[dict[str, str]]:
    return [
        {"id": m, "question": f"<<{m}>> What is the change fee?", "answer": "It is $75."}
        for m in markers
    ]


def _judge(url: str, cache: Any, **kw: Any) -> OpenAIJudge:
    opts: dict[str, Any] = {
        "base_url": url,
        "model": "test-model",
        "timeout": 0.3,
        "max_retries": 2,
        "backoff": 0.01,
        "max_backoff": 0.05,
        "concurrency": 4,
        "cache_dir": cache,
        "price_per_1k_prompt": 0.5,
        "price_per_1k_completion": 1.5,
    }
    opts.update(kw)
    return OpenAIJudge(**opts)


SCRIPT = {
    "q1": [OK],
    "q2": [("status", 500), OK],
    "q3": [("status", 429), OK],
    "q4": [("slow", 1.0), OK],
    "q5": [("not_json",), ("ok", "I think yes, it is relevant."), ("no_choices",), OK],
    "q6": [("status", 503)],
    "q7": [("status", 400)],
}


def test_retries_timeouts_failures_and_cache(tmp_path: Any) -> None:
    with ScriptedServer(SCRIPT) as srv:
        judge = _judge(srv.url, tmp_path / "cache")
        scores = {
            s.id: s
            for s in judge_metric(
                judge, "answer_relevance", _items("q1", "q2", "q3", "q4", "q5", "q6", "q7")
            )
        }
        # successes after retries
        for q in ("q1", "q2", "q3", "q4"):
            assert scores[q].ok and scores[q].score == 1.0 and scores[q].label == "yes"
        # q5: non-JSON body, non-JSON content and a reply without choices were all retried, but
        # max_retries=2 allows 3 attempts, so the fourth (good) reply is never asked for
        assert not scores["q5"].ok and scores["q5"].score is None
        assert "malformed" in (scores["q5"].error or "")
        # persistent 503: failed after 1 + 2 retries, recorded as failed, never a pass
        assert not scores["q6"].ok and scores["q6"].score is None
        assert "503" in (scores["q6"].error or "") and "3 attempts" in (scores["q6"].error or "")
        # 400 is not retried
        assert not scores["q7"].ok and "400" in (scores["q7"].error or "")
        assert srv.counts == {"q1": 1, "q2": 2, "q3": 2, "q4": 2, "q5": 3, "q6": 3, "q7": 1}
        u = judge.usage
        assert u.http_requests == 14
        assert u.retries == 1 + 1 + 1 + 2 + 2  # q2, q3, q4, q5, q6
        assert u.failures == 3
        # four successes and q5's prose reply (10+5 tokens reported, rejected, still billed)
        assert (u.prompt_tokens, u.completion_tokens) == (50, 25)
        assert u.cost == pytest.approx(50 / 1000 * 0.5 + 25 / 1000 * 1.5)
        # every score records the judge and prompt it came from
        s = scores["q1"]
        assert s.judge.model == "test-model" and s.prompt["id"] == "answer_relevance.v1"
        assert len(s.prompt["sha256"]) == 64 and not s.judge.fake
        # the request itself: model, params, JSON mode, no key header without a key variable
        body = srv.bodies[0]
        assert body["model"] == "test-model" and body["temperature"] == 0
        assert body["response_format"] == {"type": "json_object"}
        assert all("Authorization" not in h for h in srv.headers)

        # second run, a new judge object on the same cache: zero HTTP calls for the successes
        before = dict(srv.counts)
        again = _judge(srv.url, tmp_path / "cache")
        scores2 = judge_metric(again, "answer_relevance", _items("q1", "q2", "q3", "q4"))
        assert all(s.ok and s.cached for s in scores2)
        assert again.usage.http_requests == 0 and again.usage.cache_hits == 4
        assert srv.counts == before
        # failures were not cached: q5 is asked again (and now gets its good reply)
        scores3 = judge_metric(again, "answer_relevance", _items("q5"))
        assert scores3[0].ok and srv.counts["q5"] == 4


def test_concurrency_limit_and_duplicate_requests(tmp_path: Any) -> None:
    # each reply is held until three requests were in flight at once, or 0.5 s passed: a client
    # that keeps its limit of 2 peaks at exactly 2 (1 if it never runs two at once), one that
    # breaks the limit reaches 3, whatever the machine's load
    script = {f"c{i}": [("gather", 3, 0.5)] for i in range(6)}
    with ScriptedServer(script) as srv:
        judge = _judge(srv.url, None, concurrency=2, timeout=2.0)
        items = _items(*script) + _items("c0")  # one duplicate request
        scores = judge_metric(judge, "answer_relevance", items)
        assert all(s.ok for s in scores) and len(scores) == 7
        assert judge.usage.http_requests == 6  # the duplicate is sent once
        assert srv.max_in_flight == 2  # 6 requests, never more than 2 at a time


def test_api_key_read_from_named_env_var_at_construction(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.delenv("RAGMETER_TEST_KEY", raising=False)
    with pytest.raises(UsageError, match="RAGMETER_TEST_KEY"):
        _judge("http://127.0.0.1:9/v1", None, api_key_env="RAGMETER_TEST_KEY")
    monkeypatch.setenv("RAGMETER_TEST_KEY", "sk-test")
    with ScriptedServer({"k1": [OK]}) as srv:
        judge = _judge(srv.url, None, api_key_env="RAGMETER_TEST_KEY")
        monkeypatch.setenv("RAGMETER_TEST_KEY", "changed-later")  # read once, at construction
        assert judge_metric(judge, "answer_relevance", _items("k1"))[0].ok
        assert srv.headers[0]["Authorization"] == "Bearer sk-test"


def test_connection_refused_is_a_recorded_failure() -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens here now
    judge = _judge(f"http://127.0.0.1:{port}/v1", None, max_retries=1)
    score = judge_metric(judge, "answer_relevance", _items("x"))[0]
    assert not score.ok and score.score is None and "connection failed" in (score.error or "")
    assert judge.usage.http_requests == 2 and judge.usage.failures == 1


def test_bad_options_refused() -> None:
    with pytest.raises(UsageError, match="http"):
        OpenAIJudge(base_url="127.0.0.1:8000", model="m")
    with pytest.raises(UsageError, match="concurrency"):
        OpenAIJudge(base_url="http://x", model="m", concurrency=0)
