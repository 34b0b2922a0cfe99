"""What ``ragmeter answers check --judge openai`` reports its judge cost in: the ``judge usage``
table ``ragmeter run`` prints (one helper renders both), one row per answers file, and each
file's own ``judge_usage`` in ``--format json``.

The rule (the same as the run's, tests/experiments/test_experiment_judge_usage.py): a reply without
token counts is counted under "unknown usage" and the note says the tokens are then a floor; when no
reply had counts, tokens and cost print as "-", never as "0+0" and "0.0000" (a number nobody
measured). The judge is a real HTTP server on 127.0.0.1 whose n-th reply (in arrival order)
reports ``100 + n`` prompt and ``n`` completion tokens, or no ``usage`` at all, by mode. The
answers are the example's first 6 baseline answers: 6 answerable questions, so 6 correctness
requests, replies n = 1..6 whatever their order.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from _experiment_files import FARE_RULES
from _loopback import send_json
from test_experiment_judge import serve
from typer.testing import CliRunner

from ragmeter.cli import app

#: the judge's reply: every answer correct
VERDICT = json.dumps({"verdict": "correct"})
#: answers taken from the example's baseline (all answerable: one request each)
N = 6
#: --price-prompt / --price-completion (per 1000 tokens)
PRICES = ("--price-prompt", "0.5", "--price-completion", "2.0")


@contextmanager
def judge_server(mode: str) -> Iterator[dict[str, Any]]:
    """The n-th reply reports ``100 + n`` prompt and ``n`` completion tokens: every reply
    (``all``), none (``none``) or the even-numbered ones (``even``)."""
    seen = {"k": 0}
    lock = threading.Lock()

    def reply(h: BaseHTTPRequestHandler) -> None:
        with lock:
            seen["k"] += 1
            n = seen["k"]
        body: dict[str, Any] = {"choices": [{"message": {"role": "assistant", "content": VERDICT}}]}
        if mode == "all" or (mode == "even" and n % 2 == 0):
            body["usage"] = {"prompt_tokens": 100 + n, "completion_tokens": n}
        send_json(h, 200, json.dumps(body).encode())

    with serve(reply) as srv:
        yield srv


def answers_file(folder: Path, variant: str) -> Path:
    """The example's first ``N`` baseline answers, named ``variant``."""
    lines = (FARE_RULES / "answers" / "baseline.jsonl").read_text().splitlines()[:N]
    records = [{**json.loads(x), "variant": variant} for x in lines]
    path = folder / f"{variant}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def check(url: str, cache: Path, *files: Path, extra: tuple[str, ...] = (), columns: str = "120"):
    args = [
        "answers", "check", *map(str, files), "--golden", str(FARE_RULES / "golden.jsonl"),
        "--corpus", str(FARE_RULES / "corpus.jsonl"), "--judge", "openai",
        "--judge-url", url, "--judge-model", "judge-m", "--judge-metrics", "correctness",
        "--judge-retries", "0", "--judge-cache", str(cache), "--no-store", *extra,
    ]  # fmt: skip
    out = CliRunner().invoke(app, args, env={"COLUMNS": columns})
    assert out.exit_code == 0, out.output
    return out


def usage_table(text: str) -> tuple[list[str], dict[str, list[str]], str]:
    """The printed "judge usage" table: its header cells, variant -> cells, and its caption."""
    lines = text.splitlines()
    start = next((i for i, x in enumerate(lines) if x.startswith("judge usage")), None)
    assert start is not None, "no judge usage table printed"
    header: list[str] = []
    rows: dict[str, list[str]] = {}
    caption: list[str] = []
    for x in lines[start + 1 :]:
        if x[:1] in "│┃":
            cells = [c.strip() for c in re.split("[│┃]", x)[1:-1]]
            if x[0] == "┃" and header:  # a header wrapped onto a second line
                header = [f"{a} {b}".strip() for a, b in zip(header, cells, strict=True)]
            elif x[0] == "┃":
                header = cells
            else:
                rows[cells[0]] = cells[1:]
        elif x[:1] in "┏┡└":
            continue
        elif not x.strip():
            break
        else:
            caption.append(x.strip())
    return header, rows, " ".join(caption)


@pytest.mark.parametrize("columns", ["80", "120"])
def test_no_token_counts_print_as_unknown_never_as_zero(tmp_path, columns) -> None:
    with judge_server("none") as srv:
        path = answers_file(tmp_path, "baseline")
        out = check(srv["url"], tmp_path / "cache", path, extra=PRICES, columns=columns)
        data = json.loads(
            check(srv["url"], tmp_path / "cache2", path, extra=(*PRICES, "-f", "json")).stdout
        )
    header, rows, caption = usage_table(out.stdout)
    assert header == ["variant", "HTTP requests", "cache hits", "retries", "failures", "tokens",
                      "cost", "unknown usage"]  # fmt: skip
    # 6 requests, no reply said how many tokens it took: "-" for tokens and cost
    assert rows == {"baseline": [str(N), "0", "0", "0", "-", "-", str(N)]}
    assert "unknown usage: replies without token counts" in caption
    assert "- when no reply had them" in caption
    assert "0+0" not in out.stdout and "0.0000" not in out.stdout
    assert all(len(x) <= int(columns) for x in out.stdout.splitlines())
    # the JSON keeps the counters, says how many replies had no counts, and writes null for
    # the tokens and the cost nobody measured (as the generation usage does), never 0
    u = data["judge_usage"]
    assert u["http_requests"] == N and u["unknown_usage"] == N
    assert (u["prompt_tokens"], u["completion_tokens"], u["cost"]) == (None, None, None)


def test_some_replies_without_counts_give_a_floor_and_the_count_of_the_rest(tmp_path) -> None:
    """Replies 2, 4 and 6 report tokens: 102+104+106 = 312 prompt and 2+4+6 = 12 completion
    tokens, 312/1000*0.5 + 12/1000*2.0 = 0.18; replies 1, 3 and 5 are unknown usage."""
    with judge_server("even") as srv:
        path = answers_file(tmp_path, "baseline")
        out = check(srv["url"], tmp_path / "cache", path, extra=PRICES, columns="80")
    _, rows, caption = usage_table(out.stdout)
    assert rows == {"baseline": [str(N), "0", "0", "0", "312+12", "0.1800", "3"]}
    assert "the tokens and cost are then a floor" in caption


def test_replies_with_counts_print_them_and_no_unknown_column(tmp_path) -> None:
    """6 replies: 600 + (1+...+6) = 621 prompt, 21 completion tokens; 0.3105 + 0.042."""
    with judge_server("all") as srv:
        path = answers_file(tmp_path, "baseline")
        out = check(srv["url"], tmp_path / "cache", path, extra=PRICES, columns="80")
        again = check(srv["url"], tmp_path / "cache", path, extra=PRICES, columns="80")
        assert srv["n"] == N  # the second check was answered from the cache
    header, rows, caption = usage_table(out.stdout)
    assert rows == {"baseline": [str(N), "0", "0", "0", "621+21", "0.3525"]}
    assert "unknown usage" not in header and "unknown usage" not in caption
    assert "cost from --price-prompt and --price-completion" in caption
    # nothing sent, nothing spent: a measured 0, not an unknown one
    assert usage_table(again.stdout)[1] == {"baseline": ["0", str(N), "0", "0", "0+0", "0.0000"]}


def test_each_answers_file_reports_its_own_judge_usage(tmp_path) -> None:
    """Two files with the same answers: the first sends the 6 requests, the second is answered
    from the judge cache. Each file's ``judge_usage`` (JSON) and row (table) is its own work,
    not the judge's total repeated under every file."""
    with judge_server("all") as srv:
        a, b = answers_file(tmp_path, "first"), answers_file(tmp_path, "second")
        data = json.loads(check(srv["url"], tmp_path / "c1", a, b, extra=("-f", "json")).stdout)
        out = check(srv["url"], tmp_path / "c2", a, b, columns="80")
        assert srv["n"] == 2 * N  # each command sent the 6 requests once
    first, second = (d["judge_usage"] for d in data)
    assert first == {"http_requests": N, "cache_hits": 0, "retries": 0, "failures": 0,
                     "prompt_tokens": 621, "completion_tokens": 21, "cost": None,
                     "unknown_usage": 0}  # fmt: skip
    assert second == {"http_requests": 0, "cache_hits": N, "retries": 0, "failures": 0,
                      "prompt_tokens": 0, "completion_tokens": 0, "cost": None,
                      "unknown_usage": 0}  # fmt: skip
    # the second command's replies are n = 7..12: 600 + (7+...+12) = 657 prompt, 57 completion
    header, rows, _ = usage_table(out.stdout)
    assert "cost" not in header  # no prices: no cost column
    assert rows == {
        "first": [str(N), "0", "0", "0", "657+57"],
        "second": ["0", str(N), "0", "0", "0+0"],
    }


def test_the_fake_judge_prints_no_usage(tmp_path) -> None:
    path = answers_file(tmp_path, "baseline")
    args = [
        "answers", "check", str(path), "--golden", str(FARE_RULES / "golden.jsonl"),
        "--corpus", str(FARE_RULES / "corpus.jsonl"), "--judge", "fake",
        "--judge-metrics", "correctness", "--no-store",
    ]  # fmt: skip
    out = CliRunner().invoke(app, args, env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    assert "judge usage" not in out.stdout and "tokens" not in out.stdout
    js = CliRunner().invoke(app, [*args, "-f", "json"], env={"COLUMNS": "80"})
    assert "judge_usage" not in json.loads(js.stdout)


def _usage(pt: int | None, ct: int | None, unknown: int, cost: float | None) -> dict[str, Any]:
    return {"http_requests": 6, "cache_hits": 0, "retries": 0, "failures": 0,
            "prompt_tokens": pt, "completion_tokens": ct, "cost": cost,
            "unknown_usage": unknown}  # fmt: skip


@pytest.mark.parametrize(
    ("usage", "tokens", "cost"),
    [
        (_usage(621, 21, 0, 0.3525), "621+21", "0.3525"),  # every reply counted
        (_usage(312, 12, 3, 0.18), "312+12", "0.1800"),  # a floor: 3 replies unknown
        (_usage(0, 0, 6, 0.0), "-", "-"),  # no reply counted: nothing measured
        (_usage(None, None, 6, None), "-", "-"),  # ... as judge_usage writes it (null)
        (_usage(0, 0, 0, 0.0), "0+0", "0.0000"),  # all from the cache: a measured 0
        (_usage(0, 0, 6, None), "-", "-"),  # no prices
    ],
)
def test_the_shared_cells_never_show_an_unmeasured_zero(usage, tokens, cost) -> None:
    """The rule both commands print by (cli/_render_usage.py, used by answers check and run)."""
    from ragmeter.answers.judges import tokens_unknown
    from ragmeter.cli._render_usage import usage_cells

    cells = usage_cells(usage, priced=True, unknown=True)
    assert cells == ["6", "0", "0", "0", tokens, cost, str(usage["unknown_usage"])]
    assert tokens_unknown(usage) == (tokens == "-")
