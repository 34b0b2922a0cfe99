"""What a generator, a judge or an encoder counts on itself (calls, errors, HTTP requests,
retries, failures, tokens, cost, cache hits, texts encoded) reads the same after a job on the
Ray engine as after the same job on the local engine: the workers' counts come back with each
batch and are added to the caller's object, never left in the workers' copies.

The model endpoint is an OpenAI-compatible server on 127.0.0.1 whose replies depend only on the
request (tokens from its text, a first attempt refused for some requests), so every count is
the same whatever the order requests arrive in. Token counts are multiples of 125 and prices
powers of two, so every cost is exact in binary and sums the same in any order.

One local Ray cluster of 2 CPUs serves the module; engines use ONE actor of 1 CPU (a 2-actor
pool on a 2-CPU cluster has been seen to hang); each test runs under an alarm.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from _loopback import running, send_json
from _ray_cluster import alarm, cluster  # noqa: F401 (autouse fixtures)
from _retrieval_fakes import HashingEncoder

# justified: Ray is the optional [ray] extra (make test-slow installs it)
ray = pytest.importorskip(
    "ray", reason="the Ray engine's tests need Ray: pip install 'ragmeter[ray]'"
)

from ragmeter.answers.judges import FakeJudge, JudgeRequest, OpenAIJudge  # noqa: E402
from ragmeter.engines import RayEngine, local  # noqa: E402
from ragmeter.generation import (  # noqa: E402
    CallableGenerator,
    ContextSpec,
    OpenAIGenerator,
    Passage,
    assemble,
    load_prompt,
    make_request,
)
from ragmeter.retrieval import Cache  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow]

LIMIT_S = 180
PASSAGES = [
    Passage("fares#0-40", "fares", 0, 40, "The change fee is $75.", 6, 1),
    Passage("bags#0-30", "bags", 0, 30, "One checked bag is free.", 6, 2),
]
#: 23 questions: two slices of 8 and one of 7 on Ray (slice_size=8)
N = 23


def _digest(messages: Any) -> int:
    return int(hashlib.sha256(json.dumps(messages).encode()).hexdigest(), 16)


@contextmanager
def serve() -> Iterator[str]:
    """A chat endpoint: a judge request (JSON mode) gets a faithfulness verdict, any other a
    one-line answer; prompt tokens 125..500 and completion tokens 125 or 250 by the request's
    text; the first attempt of every third request is a 500, the retry succeeds; a request
    whose text holds "NO-USAGE" gets a reply without ``usage``."""
    tried: set[int] = set()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            h = _digest(payload["messages"])
            with lock:
                first = h not in tried
                tried.add(h)
            if first and h % 3 == 0:
                body, status = b'{"error": "busy"}', 500
            else:
                judge = "response_format" in payload
                text = (
                    json.dumps({"claims": [{"claim": "c", "supported": h % 2 == 0}]})
                    if judge
                    else "The change fee is $75 [1]."
                )
                reply: dict[str, Any] = {"choices": [{"message": {"content": text}}]}
                if "NO-USAGE" not in json.dumps(payload["messages"]):
                    reply["usage"] = {
                        "prompt_tokens": 125 * (1 + h % 4),
                        "completion_tokens": 125 * (1 + h % 2),
                    }
                body, status = json.dumps(reply).encode(), 200
            send_json(self, status, body)
            self.close_connection = True

    with running(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as url:
        yield f"{url}/v1"


def _requests() -> list[Any]:
    p = load_prompt("answer-v1")
    ctx = assemble("q", PASSAGES, ContextSpec())
    words = ["fee", "bag", "NO-USAGE fee"]
    return [make_request(f"q{i}", f"question {i} {words[i % 3]}?", ctx, p) for i in range(N)]


def _judge_requests() -> list[JudgeRequest]:
    return [
        JudgeRequest(
            "faithfulness",
            ({"role": "user", "content": f"judge answer {i}" + (" NO-USAGE" if i % 5 else "")},),
            {"answer": f"answer {i}", "context": "The change fee is $75."},
        )
        for i in range(N)
    ]


def answer(question: str, passages: list[Any]) -> str:
    """A python generator that fails on every question holding "bag"."""
    if "bag" in question:
        raise ValueError("no answer about bags")
    return "The change fee is $75 [1]."


def _jobs(eng: Any, url: str, judge_cache: Any) -> dict[str, Any]:
    """Every counter of each object after one generation, judgement and embedding job."""
    gen = OpenAIGenerator(url, "gen-m", backoff=0, price_per_1k_prompt=0.5,
                          price_per_1k_completion=2.0)  # fmt: skip
    eng.generate(gen, _requests())
    fn = CallableGenerator(answer)
    eng.generate(fn, _requests())
    judge = OpenAIJudge(base_url=url, model="judge-m", backoff=0, cache_dir=judge_cache,
                        price_per_1k_prompt=0.25, price_per_1k_completion=1.0)  # fmt: skip
    eng.judge(judge, _judge_requests())
    eng.judge(judge, _judge_requests())  # every reply from the judge's cache now
    assert eng.wrap_judge(judge).usage is judge.usage  # a wrapped judge reads the judge's counts
    fake = FakeJudge()
    eng.judge(fake, _judge_requests())
    enc = HashingEncoder()
    eng.embed(enc, [f"text {i} about fares" for i in range(40)], cache=Cache(None))
    return {
        "generator": gen.usage.to_dict(),
        "python": {"calls": fn.calls, "errors": fn.errors},
        "judge": judge.usage.to_dict(),
        "fake": fake.calls,
        "texts_encoded": enc.texts_encoded,
        "encoder_calls": enc.calls,
    }


def test_every_count_on_the_objects_is_the_local_one(tmp_path: Any) -> None:
    with serve() as url:
        here = _jobs(local(), url, tmp_path / "judge-local")
    with serve() as url, RayEngine(actors=1, cpus_per_actor=1, slice_size=8, batch_texts=16) as eng:
        there = _jobs(eng, url, tmp_path / "judge-ray")
    # the local figures, by hand: 23 generations, 7 replies without usage (questions 2, 5,
    # ..., 20), 8 python failures (questions 1, 4, ..., 22 ask about bags)
    assert here["python"] == {"calls": N, "errors": 8}
    assert here["generator"]["failures"] == 0
    assert here["generator"]["http_requests"] == N + here["generator"]["retries"]
    assert here["generator"]["retries"] > 0 and here["generator"]["unknown_usage"] == 7
    assert here["judge"]["cache_hits"] == N and here["judge"]["http_requests"] > N
    assert here["fake"] == N
    assert here["texts_encoded"] == 40
    # the same on Ray, every field (encoder calls are batches: local ones are sized by timing,
    # Ray's are batch_texts=16 texts: 16 + 16 + 8)
    assert there["encoder_calls"] == 3
    here.pop("encoder_calls"), there.pop("encoder_calls")
    assert there == here
