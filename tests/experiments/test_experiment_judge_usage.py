"""What the experiment's ``[judge]`` cost, per variant, as ``ragmeter answers check --judge``
reports it: HTTP requests, cache hits, retries, failures, prompt and completion tokens, cost
when prices are set, replies of unknown usage.

Each variant's figures are what the judge's counters gained while that variant's answers were
judged, so two variants sharing one judge object each report their own work, and a re-run
served from the judge cache reports 0 requests and its cache hits (never the first run's
tokens). The judge is a real HTTP server on 127.0.0.1 (tests/experiments/test_experiment_judge.py)
whose n-th reply reports ``100 + n`` prompt and ``n`` completion tokens: the server keeps the sums
of what it replied, and the run's figures must equal them exactly.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
import sqlalchemy as sa
from _loopback import send_json
from test_experiment_judge import FAKE, make, openai_judge, run, serve
from typer.testing import CliRunner

from ragmeter.cli import app

#: the [judge] prices (per 1000 tokens)
PRICES = {"price_per_1k_prompt": 0.5, "price_per_1k_completion": 2.0}
#: the keys of ``answers check --format json``'s ``judge_usage``
KEYS = {
    "http_requests",
    "cache_hits",
    "retries",
    "failures",
    "prompt_tokens",
    "completion_tokens",
    "cost",
    "unknown_usage",
}
VERDICT = json.dumps({"claims": [{"claim": "the answer", "supported": True}]})


@contextmanager
def counting_judge(*, usage: bool = True) -> Iterator[dict[str, Any]]:
    """A judge server whose n-th reply (in arrival order) reports ``100 + n`` prompt tokens and
    ``n`` completion tokens (no ``usage`` at all when ``usage`` is False); ``pt``/``ct`` are
    the sums it replied with."""
    sums = {"pt": 0, "ct": 0, "k": 0}
    lock = threading.Lock()

    def reply(h: BaseHTTPRequestHandler) -> None:
        with lock:
            sums["k"] += 1
            n = sums["k"]
            if usage:
                sums["pt"] += 100 + n
                sums["ct"] += n
        body: dict[str, Any] = {"choices": [{"message": {"role": "assistant", "content": VERDICT}}]}
        if usage:
            body["usage"] = {"prompt_tokens": 100 + n, "completion_tokens": n}
        send_json(h, 200, json.dumps(body).encode())

    with serve(reply) as srv:
        srv["sums"] = sums
        yield srv


def cli(*args: Any, columns: str = "120") -> Any:
    return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": columns})


def snapshot(srv: dict[str, Any]) -> tuple[int, int, int]:
    return srv["n"], srv["sums"]["pt"], srv["sums"]["ct"]


def expected(before: tuple[int, int, int], after: tuple[int, int, int]) -> dict[str, Any]:
    n, pt, ct = (a - b for a, b in zip(after, before, strict=True))
    return {
        "http_requests": n,
        "retries": 0,
        "failures": 0,
        "prompt_tokens": pt,
        "completion_tokens": ct,
        "cost": pytest.approx(pt / 1000 * 0.5 + ct / 1000 * 2.0, abs=1e-9),
        "unknown_usage": 0,
    }


def test_each_variant_reports_what_its_own_judging_cost(tmp_path) -> None:
    """The Python result, answer_check.json and summary.json carry each variant's figures;
    they equal what the server replied while that variant was judged."""
    snaps: list[tuple[int, int, int]] = []
    with counting_judge() as srv:
        path = make(tmp_path, openai_judge(srv["url"], **PRICES))
        result = run(path, on_variant=lambda r: snaps.append(snapshot(srv)))
    assert [v.name for v in result.variants] == ["rank", "sandwich"]
    before = (0, 0, 0)
    summary = json.loads((tmp_path / "runs" / "summary.json").read_text())
    for i, (v, after) in enumerate(zip(result.variants, snaps, strict=True)):
        u = v.answers.judge_usage
        assert set(u) == KEYS
        assert {k: x for k, x in u.items() if k != "cache_hits"} == expected(before, after)
        assert u["http_requests"] > 0  # each variant sent requests of its own
        if i == 0:
            assert u["cache_hits"] == 0  # the cache started empty
        # the same figures in the variant's written results and the run's summary
        written = json.loads((tmp_path / "runs" / v.name / "answer_check.json").read_text())
        assert written["judge_usage"] == u
        assert summary["variants"][i]["answers"]["judge_usage"] == u
        before = after
    assert sum(v.answers.judge_usage["http_requests"] for v in result.variants) == srv["n"]


def test_a_rerun_from_the_judge_cache_reports_hits_not_the_first_runs_tokens(tmp_path) -> None:
    with counting_judge() as srv:
        path = make(tmp_path, openai_judge(srv["url"], **PRICES))
        first = run(path)
        sent = srv["n"]
        again = run(path)
    assert srv["n"] == sent  # the re-run sent nothing ...
    for a, b in zip(first.variants, again.variants, strict=True):
        u, w = a.answers.judge_usage, b.answers.judge_usage
        # ... so it reports no request, no token and no cost, and every distinct request as a
        # cache hit (each one the first run either sent or found in the cache)
        assert w == {
            "http_requests": 0,
            "cache_hits": u["http_requests"] + u["cache_hits"],
            "retries": 0,
            "failures": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost": 0.0,
            "unknown_usage": 0,
        }
        assert w["cache_hits"] > 0


def _usage_rows(text: str) -> dict[str, list[str]]:
    """The rows of the printed "judge usage" table: variant -> cells."""
    lines = text.splitlines()
    start = next((i for i, x in enumerate(lines) if x.startswith("judge usage")), None)
    assert start is not None, "no judge usage table printed"
    rows: dict[str, list[str]] = {}
    for x in lines[start + 1 :]:
        if not x.strip() or x[0] not in "│┃┏┡└┌├":
            if rows:
                break
            continue
        cells = [c.strip() for c in re.split("[│┃]", x)[1:-1]]
        if cells and cells[0] in ("rank", "sandwich"):
            rows[cells[0]] = cells[1:]
    return rows


@pytest.mark.parametrize("columns", ["80", "120"])
def test_ragmeter_run_prints_and_stores_the_judge_usage(tmp_path, columns) -> None:
    with counting_judge() as srv:
        path = make(tmp_path, openai_judge(srv["url"], **PRICES))
        db = f"sqlite:///{tmp_path / 'store.db'}"
        out = cli("run", path, "--db", db, columns=columns)
        written = {
            name: json.loads((tmp_path / "runs" / name / "answer_check.json").read_text())
            for name in ("rank", "sandwich")
        }
        again = cli("run", path, "--no-store", columns=columns)
    assert out.exit_code == 0, out.output
    assert again.exit_code == 0, again.output
    rows = _usage_rows(out.stdout)
    assert set(rows) == {"rank", "sandwich"}
    for name, cells in rows.items():
        u = written[name]["judge_usage"]
        assert u["http_requests"] > 0
        assert cells == [
            str(u["http_requests"]),
            str(u["cache_hits"]),
            str(u["retries"]),
            str(u["failures"]),
            f"{u['prompt_tokens']}+{u['completion_tokens']}",
            f"{u['cost']:.4f}",
        ]
    assert all(len(x) <= int(columns) for x in out.stdout.splitlines())
    total = sum(w["judge_usage"]["http_requests"] for w in written.values())
    assert total == srv["n"]
    assert f"judge HTTP requests: {total};" in " ".join(out.stderr.split())
    # the re-run: nothing sent, every reply from the cache
    for name, cells in _usage_rows(again.stdout).items():
        u = written[name]["judge_usage"]
        hits = u["http_requests"] + u["cache_hits"]
        assert cells == ["0", str(hits), "0", "0", "0+0", "0.0000"]
    assert "judge HTTP requests: 0 (every reply from the cache)" in " ".join(again.stderr.split())
    # the store keeps the figures with each variant's answers, beside the generation usage
    engine = sa.create_engine(db)
    with engine.connect() as conn:
        stored = conn.execute(sa.text("select name, report from answer_sets order by id")).all()
    engine.dispose()
    assert [name for name, _ in stored] == ["rank", "sandwich"]
    for name, report in stored:
        generation = json.loads(report)["generation"]
        assert generation["judge_usage"] == written[name]["judge_usage"]


def test_replies_without_token_counts_are_counted_not_shown_as_zero_tokens(tmp_path) -> None:
    with counting_judge(usage=False) as srv:
        path = make(tmp_path, openai_judge(srv["url"]))
        out = cli("run", path, "--no-store")
    assert out.exit_code == 0, out.output
    rows = _usage_rows(out.stdout)
    for name, cells in rows.items():
        written = json.loads((tmp_path / "runs" / name / "answer_check.json").read_text())
        u = written["judge_usage"]
        assert u["unknown_usage"] == u["http_requests"] > 0 and u["cost"] is None
        # no reply had counts: the token sums are null, as in the generation usage, never 0
        assert u["prompt_tokens"] is None and u["completion_tokens"] is None
        # no cost column without prices; no token count known: "-", never "0+0"
        assert cells == [str(u["http_requests"]), str(u["cache_hits"]), "0", "0", "-",
                         str(u["unknown_usage"])]  # fmt: skip
    assert "unknown usage" in out.stdout and "0+0" not in out.stdout


def test_priced_replies_without_counts_keep_the_cost_column_with_dashes(tmp_path) -> None:
    """With prices and no reply counting a token, every variant's tokens and cost are null in
    answer_check.json and the table keeps its cost column, printed "-" (not dropped because
    every cost is null, and never "0.0000")."""
    with counting_judge(usage=False) as srv:
        path = make(tmp_path, openai_judge(srv["url"], **PRICES))
        out = cli("run", path, "--no-store", columns="80")
    assert out.exit_code == 0, out.output
    rows = _usage_rows(out.stdout)
    assert set(rows) == {"rank", "sandwich"}
    for name, cells in rows.items():
        u = json.loads((tmp_path / "runs" / name / "answer_check.json").read_text())["judge_usage"]
        assert (u["prompt_tokens"], u["completion_tokens"], u["cost"]) == (None, None, None)
        assert u["unknown_usage"] == u["http_requests"] > 0
        assert cells == [str(u["http_requests"]), str(u["cache_hits"]), "0", "0", "-", "-",
                         str(u["unknown_usage"])]  # fmt: skip
    assert "cost from the [judge] prices" in " ".join(out.stdout.split())
    assert "0.0000" not in out.stdout and "0+0" not in out.stdout


def test_the_fake_judge_reports_no_usage(tmp_path) -> None:
    """The fake judge sends nothing and counts nothing: no usage table, no "0 tokens" line,
    ``judge_usage`` None in the result and the files (as answers check leaves it out)."""
    path = make(tmp_path, FAKE)
    out = cli("run", path, "--no-store")
    assert out.exit_code == 0, out.output
    assert "judge usage" not in out.stdout and "HTTP requests" not in out.stdout
    assert "judge HTTP requests" not in out.stderr
    written = json.loads((tmp_path / "runs" / "rank" / "answer_check.json").read_text())
    assert written["judge_usage"] is None
    result = run(path, write=False)
    assert all(v.answers.judge_usage is None for v in result.variants)


def test_no_judge_no_usage(tmp_path) -> None:
    result = run(make(tmp_path, ""), write=False)
    assert all(v.answers.judge_usage is None for v in result.variants)
    assert all(v.answers.to_dict()["judge_usage"] is None for v in result.variants)
