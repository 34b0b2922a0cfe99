"""The generation usage of ``ragmeter run`` (each variant's ``answers.usage`` in the JSON output,
``summary.json`` and the Python result): tokens and cost summed over the answers made in this
run, and never a token count or a cost of 0 for answers whose replies said nothing.

The rule is the judge usage's (tests/answers/test_answers_judge_usage.py): an answer made without
token counts is counted in ``unknown_usage`` (the sums are then a floor); when no answer had counts,
the tokens (and the cost, with prices) are null. The generator is a real OpenAI-compatible
server on 127.0.0.1 whose n-th reply reports ``100 + n`` prompt and ``n`` completion tokens, or
no ``usage``, by mode; or the example's python function, which measures no token.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from _loopback import send_json
from test_experiment_judge import make, run, serve
from typer.testing import CliRunner

from ragmeter.cli import app

PYTHON = 'kind = "python"\ntarget = "generators.extractive:answer"'
#: an answer with a citation of the first passage
ANSWER = "The fee is $100 [1]."


def openai_generator(url: str) -> str:
    return "\n".join(
        [
            'kind = "openai"',
            f'base_url = "{url}"',
            'model = "gen-m"',
            "max_retries = 0",
            "timeout = 5",
            "price_per_1k_prompt = 0.5",
            "price_per_1k_completion = 2.0",
        ]
    )


@contextmanager
def generator_server(mode: str) -> Iterator[dict[str, Any]]:
    """The n-th reply reports ``100 + n`` prompt and ``n`` completion tokens: every reply
    (``all``), none (``none``) or the even-numbered ones (``even``); ``pt``/``ct``/``known``
    are the sums it replied with and how many replies had counts."""
    sums = {"k": 0, "pt": 0, "ct": 0, "known": 0}
    lock = threading.Lock()

    def reply(h: BaseHTTPRequestHandler) -> None:
        with lock:
            sums["k"] += 1
            n = sums["k"]
            counted = mode == "all" or (mode == "even" and n % 2 == 0)
            if counted:
                sums["pt"] += 100 + n
                sums["ct"] += n
                sums["known"] += 1
        body: dict[str, Any] = {"choices": [{"message": {"role": "assistant", "content": ANSWER}}]}
        if counted:
            body["usage"] = {"prompt_tokens": 100 + n, "completion_tokens": n}
        send_json(h, 200, json.dumps(body).encode())

    with serve(reply) as srv:
        srv["sums"] = sums
        yield srv


def experiment(tmp_path: Any, generator: str) -> Any:
    path = make(tmp_path, "")
    text = path.read_text()
    assert PYTHON in text
    path.write_text(text.replace(PYTHON, generator))
    return path


def cost(pt: int, ct: int) -> Any:
    return pytest.approx(pt / 1000 * 0.5 + ct / 1000 * 2.0, abs=1e-9)


def test_replies_without_token_counts_give_null_tokens_and_cost_not_zero(tmp_path) -> None:
    with generator_server("none") as srv:
        result = run(experiment(tmp_path, openai_generator(srv["url"])))
    summary = json.loads((tmp_path / "runs" / "summary.json").read_text())
    made = 0
    for i, v in enumerate(result.variants):
        n = v.answers.model_calls
        assert n > 0 and not v.answers.errors
        made += n
        # no reply counted a token: null tokens and cost (prices are set), never 0
        assert v.answers.usage() == {
            "prompt_tokens": None,
            "completion_tokens": None,
            "cost_usd": None,
            "attempts": n,
            "unknown_usage": n,
        }
        assert summary["variants"][i]["answers"]["usage"] == v.answers.usage()
    assert made == srv["n"]


def test_some_replies_without_counts_are_a_floor_beside_their_count(tmp_path) -> None:
    with generator_server("even") as srv:
        result = run(experiment(tmp_path, openai_generator(srv["url"])))
    sums = srv["sums"]
    usages = [v.answers.usage() for v in result.variants]
    assert sum(v.answers.model_calls for v in result.variants) == srv["n"] == sums["k"]
    assert 0 < sums["known"] < sums["k"]
    # the sums are exactly what the server reported, the cost that of those tokens only
    assert sum(u["prompt_tokens"] for u in usages) == sums["pt"]
    assert sum(u["completion_tokens"] for u in usages) == sums["ct"]
    assert sum(u["cost_usd"] for u in usages) == cost(sums["pt"], sums["ct"])
    assert sum(u["unknown_usage"] for u in usages) == sums["k"] - sums["known"]


def test_replies_with_counts_are_summed_and_nothing_is_unknown(tmp_path) -> None:
    with generator_server("all") as srv:
        path = experiment(tmp_path, openai_generator(srv["url"]))
        result = run(path)
        again = run(path)
    sums = srv["sums"]
    usages = [v.answers.usage() for v in result.variants]
    assert sum(u["prompt_tokens"] for u in usages) == sums["pt"]
    assert sum(u["completion_tokens"] for u in usages) == sums["ct"]
    assert sum(u["cost_usd"] for u in usages) == cost(sums["pt"], sums["ct"])
    assert all("unknown_usage" not in u for u in usages)
    # a re-run from the answer cache makes nothing and reports nothing spent
    assert [v.answers.usage() for v in again.variants] == [{}, {}]


def test_a_python_generator_counts_no_token_and_says_so(tmp_path) -> None:
    """The example's python function returns text only: its answers' tokens are unknown."""
    path = make(tmp_path, "")
    out = CliRunner().invoke(app, ["run", str(path), "--no-store", "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    for v in data["variants"]:
        n = v["answers"]["summary"]["model_calls"]
        assert n > 0
        assert v["answers"]["usage"] == {
            "prompt_tokens": None,
            "completion_tokens": None,
            "unknown_usage": n,
        }


def _per_answer_usage(tmp_path: Any) -> dict[str, list[tuple[Any, Any]]]:
    """Each variant's generations.jsonl: (usage, cached) per answer, in file order."""
    out: dict[str, list[tuple[Any, Any]]] = {}
    for path in sorted((tmp_path / "runs").glob("*/generations.jsonl")):
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        out[path.parent.name] = [(x["usage"], x["cached"]) for x in lines]
    return out


def test_generations_file_writes_null_for_what_the_server_did_not_report(tmp_path) -> None:
    """No reply carried ``usage`` and prices are set: each answer's tokens and cost are null in
    generations.jsonl (never a cost of 0.0 priced from 0 tokens); the re-run answered from the
    cache writes the same per-answer usage, marked cached, and its summary spends nothing."""
    with generator_server("none") as srv:
        path = experiment(tmp_path, openai_generator(srv["url"]))
        run(path)
        first = _per_answer_usage(tmp_path)
        again = run(path)
        second = _per_answer_usage(tmp_path)
        assert srv["n"] == sum(len(v) for v in first.values())  # the re-run sent nothing
    assert len(first) == 2
    unknown = {"prompt_tokens": None, "completion_tokens": None, "cost_usd": None, "attempts": 1}
    for rows in first.values():
        assert rows and all(r == (unknown, False) for r in rows)
    assert second == {v: [(u, True) for u, _ in rows] for v, rows in first.items()}
    assert [v.answers.usage() for v in again.variants] == [{}, {}]
    assert [v.answers.cache_hits for v in again.variants] == [len(r) for r in first.values()]


def test_generations_file_keeps_reported_counts_and_their_cost(tmp_path) -> None:
    """Every reply counted: each answer's line holds its reply's tokens and their cost; the
    file's sums are the server's sums (a reader adding the lines gets the summary's figures)."""
    with generator_server("all") as srv:
        run(experiment(tmp_path, openai_generator(srv["url"])))
    sums = srv["sums"]
    rows = [u for v in _per_answer_usage(tmp_path).values() for u, _ in v]
    assert len(rows) == sums["k"]
    assert sum(u["prompt_tokens"] for u in rows) == sums["pt"]
    assert sum(u["completion_tokens"] for u in rows) == sums["ct"]
    assert sum(u["cost_usd"] for u in rows) == cost(sums["pt"], sums["ct"])
    for u in rows:
        assert u["cost_usd"] == cost(u["prompt_tokens"], u["completion_tokens"])
