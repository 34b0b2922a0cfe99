"""Tokens of a reply the chat client rejected and retried are spent, so they are counted.

A server that answers with the wrong content (prose instead of the judge's JSON object, or a
completion without ``choices[0].message.content``) still billed the reply: when that reply
carried a ``usage`` block, its tokens (and their cost) are added to the judge's and the
generator's token sums, as the accepted reply's are. A rejected reply without counts adds
nothing (the sums are a floor, as always) and is not an "unknown usage" reply: that count is of
the replies whose content was used. The server is a real HTTP server on 127.0.0.1 that plays a
script of replies in arrival order (one request at a time, so the order is the script's).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from _loopback import send_json
from test_experiment_judge import serve

from ragmeter.answers.judges import JudgeRequest
from ragmeter.answers.judges.openai import OpenAIJudge
from ragmeter.generation import (
    ContextSpec,
    OpenAIGenerator,
    assemble,
    load_prompt,
    make_request,
)

#: the judge's well-formed verdict for the correctness task
VERDICT = json.dumps({"verdict": "correct"})
#: per 1000 prompt and completion tokens
PRICE_PROMPT, PRICE_COMPLETION = 0.5, 2.0


def body(content: Any, usage: Any = None) -> bytes:
    """A completion whose message content is ``content`` (None: no content key at all)."""
    message: dict[str, Any] = {"role": "assistant"}
    if content is not None:
        message["content"] = content
    data: dict[str, Any] = {"choices": [{"message": message}]}
    if usage is not None:
        data["usage"] = usage
    return json.dumps(data).encode()


@contextmanager
def scripted(replies: Sequence[bytes]) -> Iterator[dict[str, Any]]:
    """Reply i (arrival order) is ``replies[i]``; the last one repeats after the script ends."""
    lock = threading.Lock()
    seen = {"k": 0}

    def reply(h: BaseHTTPRequestHandler) -> None:
        with lock:
            i = min(seen["k"], len(replies) - 1)
            seen["k"] += 1
        send_json(h, 200, replies[i])

    with serve(reply) as srv:
        yield srv


def judge(url: str, retries: int) -> OpenAIJudge:
    return OpenAIJudge(
        base_url=url,
        model="judge-m",
        max_retries=retries,
        concurrency=1,
        sleep=lambda _s: None,
        price_per_1k_prompt=PRICE_PROMPT,
        price_per_1k_completion=PRICE_COMPLETION,
    )


def generator(url: str) -> OpenAIGenerator:
    return OpenAIGenerator(
        url,
        "gen-m",
        max_retries=1,
        concurrency=1,
        sleep=lambda _s: None,
        price_per_1k_prompt=PRICE_PROMPT,
        price_per_1k_completion=PRICE_COMPLETION,
    )


def ask(j: OpenAIJudge) -> Any:
    (reply,) = j.judge([JudgeRequest("correctness", ({"role": "user", "content": "q?"},))])
    return reply


def cost(pt: int, ct: int) -> Any:
    return pytest.approx(pt / 1000 * PRICE_PROMPT + ct / 1000 * PRICE_COMPLETION, abs=1e-12)


@pytest.mark.parametrize(
    "rejected",
    [
        body("The answer looks correct to me.", {"prompt_tokens": 40, "completion_tokens": 9}),
        body(None, {"prompt_tokens": 40, "completion_tokens": 9}),
    ],
    ids=["prose-not-json", "no-content"],
)
def test_a_rejected_reply_with_counts_is_counted_then_the_retry(rejected: bytes) -> None:
    """40+9 tokens of the rejected reply, then 100+2 of the accepted one: 140+11 spent."""
    ok = body(VERDICT, {"prompt_tokens": 100, "completion_tokens": 2})
    with scripted([rejected, ok]) as srv:
        j = judge(srv["url"], retries=1)
        reply = ask(j)
    assert reply.ok and srv["n"] == 2
    u = j.usage
    assert (u.http_requests, u.retries, u.failures) == (2, 1, 0)
    assert (u.prompt_tokens, u.completion_tokens) == (140, 11)
    assert u.cost == cost(140, 11)
    assert u.unknown_usage == 0
    # the request's own figures are what it spent, both replies
    assert (reply.prompt_tokens, reply.completion_tokens) == (140, 11)


def test_replies_rejected_until_the_request_fails_are_still_spent() -> None:
    """Three prose replies of 30+5, 31+6 and 32+7 tokens and no usable verdict: a failure that
    spent 93+18 tokens."""
    script = [
        body("no JSON here", {"prompt_tokens": 30 + i, "completion_tokens": 5 + i})
        for i in range(3)
    ]
    with scripted(script) as srv:
        j = judge(srv["url"], retries=2)
        reply = ask(j)
    assert not reply.ok and srv["n"] == 3
    u = j.usage
    assert (u.http_requests, u.retries, u.failures) == (3, 2, 1)
    assert (u.prompt_tokens, u.completion_tokens) == (93, 18)
    assert u.cost == cost(93, 18)


def test_a_rejected_reply_without_counts_adds_nothing_and_is_not_unknown_usage() -> None:
    ok = body(VERDICT, {"prompt_tokens": 100, "completion_tokens": 2})
    with scripted([body("prose"), ok]) as srv:
        j = judge(srv["url"], retries=1)
        assert ask(j).ok
    u = j.usage
    assert (u.prompt_tokens, u.completion_tokens, u.unknown_usage) == (100, 2, 0)
    assert u.cost == cost(100, 2)


def test_a_generator_answer_counts_the_reply_it_retried() -> None:
    """The generator's transport is the judge's: a completion without content (40+9 tokens)
    retried, then the answer (100+2): the answer's usage and the generator's sums say 140+11."""
    script = [
        body(None, {"prompt_tokens": 40, "completion_tokens": 9}),
        body("The fee is $100 [1].", {"prompt_tokens": 100, "completion_tokens": 2}),
    ]
    prompt = load_prompt("answer-v1")
    request = make_request("q1", "What is the fee?", assemble("q1", (), ContextSpec()), prompt, {})
    with scripted(script) as srv:
        gen = generator(srv["url"])
        (answer,) = gen.generate([request])
    assert answer.ok and srv["n"] == 2
    assert answer.usage["prompt_tokens"] == 140 and answer.usage["completion_tokens"] == 11
    assert answer.usage["cost_usd"] == cost(140, 11)
    assert (gen.usage.prompt_tokens, gen.usage.completion_tokens) == (140, 11)


def test_a_failed_generator_answer_keeps_what_its_rejected_replies_spent() -> None:
    """Two completions without content, 20+3 and 21+4 tokens: the question fails, its answer's
    usage holds the 41+7 tokens spent and their cost; without counts it holds attempts only."""
    prompt = load_prompt("answer-v1")
    request = make_request("q1", "What is the fee?", assemble("q1", (), ContextSpec()), prompt, {})
    script = [body(None, {"prompt_tokens": 20 + i, "completion_tokens": 3 + i}) for i in range(2)]
    for replies, expected in [
        (script, {"prompt_tokens": 41, "completion_tokens": 7, "attempts": 2,
                  "cost_usd": cost(41, 7)}),
        ([body(None)], {"attempts": 2}),
    ]:  # fmt: skip
        with scripted(replies) as srv:
            gen = generator(srv["url"])
            (answer,) = gen.generate([request])
        assert not answer.ok and srv["n"] == 2
        assert answer.usage == expected
        assert gen.usage.prompt_tokens == expected.get("prompt_tokens", 0)
        assert gen.usage.failures == 1 and gen.usage.unknown_usage == 0
