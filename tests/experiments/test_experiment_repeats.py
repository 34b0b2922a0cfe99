"""``repeat = N`` in ``[judge]`` and ``[generator]``: every variant's answers judged (made) N
times, the verdict of each repeat per question, the flaky questions, the noise against the
headline, and ``ragmeter gate --stable`` on the written ``answer_check.json``.

The judge is a real HTTP server on 127.0.0.1 whose faithfulness verdict is scripted per
(question, repeat): repeat 0 sends no seed, repeat r >= 1 sends ``seed = r``. The generator is
the example's extractive stand-in; the candidate's answers end with a marker the scripted judge
can tell apart, so a question can be broken in one repeat only.
"""

from __future__ import annotations

import json
import random
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from _experiment_files import FARE_RULES, fare_rules_experiment
from _loopback import running, send_json
from typer.testing import CliRunner

from ragmeter import ValidationError
from ragmeter.cli import app
from ragmeter.experiments import load_experiment, run_experiment

#: the 7 questions the extractive stand-in answers right (correct and supported by a judge that
#: says so), 3 it does not and 4 unanswerable ones (lines 81-84 of the example's golden set)
SLICE = (25, 33, 36, 47, 57, 62, 70, 0, 1, 2, *range(80, 84))
MARK = " (candidate)"

EXPERIMENT = """
name = "repeated judge"
golden = "golden.jsonl"
corpus = "{corpus}"
output = "runs"
k = 4
metrics = ["R"]
headroom_k = 20

[generator]
kind = "python"
target = "generators.extractive:answer"
{generator}

[judge]
kind = "openai"
base_url = "{url}"
model = "judge-m"
retries = 0
timeout = 5
{judge}

[baseline]
name = "base"
chunker = "tokens:300:0"
retriever = "bm25"
depth = 50

[[variant]]
name = "cand"
generator = {{target = "generators.marked:answer"}}
"""

MARKED = f'''
from generators.extractive import answer as extractive


def answer(question, passages):
    got = extractive(question, passages)
    if isinstance(got, tuple):
        return got[0] + "{MARK}", got[1]
    return got
'''

#: (question text, answer text, seed or None) -> whether the judge finds the answer supported
Script = Callable[[str, str, Any], bool]


def make(root: Path, url: str, *, judge: str = "", generator: str = "") -> Path:
    text = EXPERIMENT.format(
        corpus=FARE_RULES / "corpus.jsonl", url=url, judge=judge, generator=generator
    )
    path = fare_rules_experiment(
        root, text, files=(), trees=["generators"], cache=["chunkings", "bm25"]
    )
    (root / "generators" / "marked.py").write_text(MARKED)
    lines = (FARE_RULES / "golden.jsonl").read_text().splitlines()
    (root / "golden.jsonl").write_text("\n".join(lines[i] for i in SLICE) + "\n")
    return path


def questions() -> dict[str, str]:
    """Question text -> id, of the slice."""
    lines = (FARE_RULES / "golden.jsonl").read_text().splitlines()
    rows = [json.loads(lines[i]) for i in SLICE]
    return {r["question"]: r["id"] for r in rows}


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


@contextmanager
def judge_server(script: Script) -> Iterator[dict[str, Any]]:
    """A judge whose faithfulness verdict is ``script(question, answer, seed)``; counts
    requests (``n``) and the seeds it was sent."""
    seen: dict[str, Any] = {"n": 0, "seeds": set()}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            user = body["messages"][-1]["content"]
            question = _between(user, "QUESTION:\n", "\n\nANSWER:")
            answer = _between(user, "ANSWER:\n", "\n\nSplit")
            seed = body.get("seed")
            with lock:
                seen["n"] += 1
                seen["seeds"].add(seed)
            try:
                ok = script(question, answer, seed)
            except Exception:  # the script's way to make this request fail
                send_json(self, 500, b'{"error": "down"}')
                self.close_connection = True
                return
            reply = {"claims": [{"claim": "the answer", "supported": ok}]}
            out = {
                "choices": [{"message": {"role": "assistant", "content": json.dumps(reply)}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5},
            }
            send_json(self, 200, json.dumps(out).encode())
            self.close_connection = True

    with running(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as url:
        seen["url"] = f"{url}/v1"
        yield seen


def run(path: Path, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_experiment(path, **kw)


def cli(*args: Any) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


def by_name(result: Any) -> dict[str, Any]:
    return {v.name: v.answers for v in result.variants}


@pytest.fixture(scope="module")
def correct(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The questions each variant answers correctly (and is not abstaining on), from one run
    with a judge that supports everything: the questions a flipped judge can make flaky."""
    with judge_server(lambda q, a, s: True) as srv:
        result = run(make(tmp_path_factory.mktemp("all-supported"), srv["url"]), write=False)
    return {
        name: [c.id for c in a.report.checks if c.ok and not c.abstained]
        for name, a in by_name(result).items()
    }


# -- the flaky list -----------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(3))
def test_a_judge_that_flips_on_chosen_questions_makes_exactly_those_flaky(
    tmp_path, correct, seed
) -> None:
    rng = random.Random(seed)
    both = sorted(set(correct["base"]) & set(correct["cand"]))
    assert len(both) >= 3, correct
    chosen = set(rng.sample(both, rng.randint(1, len(both) - 1)))
    # each chosen question unsupported in one or two of the repeats 1..2, never in repeat 0
    flips = {q: set(rng.sample([1, 2], rng.randint(1, 2))) for q in chosen}
    ids = questions()

    def script(question: str, answer: str, s: Any) -> bool:
        return not (ids[question] in flips and s in flips[ids[question]])

    with judge_server(script) as srv:
        result = run(make(tmp_path, srv["url"], judge="repeat = 3"), write=True)
    assert srv["seeds"] == {None, 1, 2}
    order = [ids[q] for q in ids]
    for name, answers in by_name(result).items():
        r = answers.repeats
        assert r.n == 3 and (r.generator_repeat, r.judge_repeat) == (1, 3)
        assert r.flaky() == tuple(q for q in order if q in chosen), name
        for q in chosen:
            assert r.of(q) == [0.0 if i in flips[q] else 1.0 for i in range(3)]
            assert r.share_ok(q) == pytest.approx(1 - len(flips[q]) / 3)
            spread = r.score_spread("faithfulness", q)
            assert spread is not None and spread > 0
        assert r.model_calls[1:] == (0, 0)  # the judge is repeated, not the generator
    noise = by_name(result)["cand"].repeats.vs_baseline
    headline = by_name(result)["cand"].comparison.comparison
    # repeat 0 is the headline, digit for digit; the same flips on both sides move nothing
    assert noise.deltas[0] == pytest.approx(headline.mean_delta)
    assert noise.fixed[0] == headline.fixed and noise.broken[0] == headline.broken
    # answer_check.json carries the repeats
    check = json.loads((tmp_path / "runs" / "cand" / "answer_check.json").read_text())
    assert check["repeats"]["flaky"] == [q for q in order if q in chosen]
    assert check["summary"]["flaky"] == len(chosen)


def test_the_noise_counts_a_break_in_one_repeat_as_flaky(tmp_path, correct) -> None:
    """The candidate's answer to one question is unsupported in repeat 1 only: broken in one
    repeat, so a flaky mover of repeat 1, and never broken in every repeat."""
    target = sorted(set(correct["base"]) & set(correct["cand"]))[0]
    ids = questions()

    def script(question: str, answer: str, s: Any) -> bool:
        return not (ids[question] == target and answer.endswith(MARK) and s == 1)

    with judge_server(script) as srv:
        result = run(make(tmp_path, srv["url"], judge="repeat = 2"), write=True)
    cand = by_name(result)["cand"].repeats
    assert by_name(result)["base"].repeats.flaky() == ()
    assert cand.flaky() == (target,)
    noise = cand.vs_baseline
    assert noise.broken[1] == noise.broken[0] + 1
    assert target not in noise.stable.broken
    assert noise.deltas[1] < noise.deltas[0]


# -- ragmeter gate --stable -------------------------------------------------------------------
@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory, correct) -> tuple[Path, str, str]:
    """A run where the candidate breaks question ``every`` in both repeats and ``once`` in
    repeat 1 only."""
    root = tmp_path_factory.mktemp("gated")
    both = sorted(set(correct["base"]) & set(correct["cand"]))
    every, once = both[0], both[1]
    ids = questions()

    def script(question: str, answer: str, s: Any) -> bool:
        if not answer.endswith(MARK):
            return True
        q = ids[question]
        return not (q == every or (q == once and s == 1))

    with judge_server(script) as srv:
        run(make(root, srv["url"], judge="repeat = 2"), write=True)
    return root / "runs", every, once


def test_gate_stable_counts_only_questions_broken_in_every_repeat(gated) -> None:
    runs, every, once = gated
    base, cand = runs / "base" / "answer_check.json", runs / "cand" / "answer_check.json"
    plain = cli(
        "gate", base, cand, "--no-store", "--stable", "--max-broken", "0", "--format", "json"
    )
    assert plain.exit_code == 1, plain.output  # `every` is broken in both repeats
    data = json.loads(plain.stdout)
    assert data["stable"]["stable_broken_ids"] == [every]
    assert once in data["stable"]["flaky"] and once not in data["stable"]["stable_broken_ids"]
    assert data["checks"][0]["observed"] == 1
    assert data["comparison"]["broken"] == 1  # repeat 1, the headline, breaks `every` only
    # the headline (repeat 0) breaks `every` only; repeat 1 also `once`: 1 broken stably
    loose = cli(
        "gate", base, cand, "--no-store", "--stable", "--max-broken", "1", "--format", "json"
    )
    assert loose.exit_code == 0, loose.output
    table = cli("gate", base, cand, "--no-store", "--stable", "--max-broken", "1")
    assert "every one of 2 repeats" in table.output and "flaky" in table.output


def test_gate_stable_without_repeats_says_so(tmp_path, gated) -> None:
    runs, _, _ = gated
    out = cli("gate", runs / "base" / "evaluation.json", runs / "cand" / "evaluation.json",
              "--no-store", "--stable", "--max-broken", "0")  # fmt: skip
    assert out.exit_code == 2
    assert "--stable" in out.output and "answer_check.json" in out.output
    once = json.loads((runs / "cand" / "answer_check.json").read_text())
    del once["repeats"]
    (tmp_path / "a.json").write_text(json.dumps(once))
    out = cli("gate", runs / "base" / "answer_check.json", tmp_path / "a.json", "--stable",
              "--no-store", "--max-broken", "0")  # fmt: skip
    assert out.exit_code == 2 and "repeat" in out.output


# -- the cache, per repeat --------------------------------------------------------------------
def test_each_repeat_is_cached_so_a_rerun_sends_nothing(tmp_path) -> None:
    with judge_server(lambda q, a, s: True) as srv:
        path = make(tmp_path, srv["url"], judge="repeat = 3")
        run(path)
        first = srv["n"]
        assert first > 0 and srv["seeds"] == {None, 1, 2}
        again = run(path)
        assert srv["n"] == first  # every repeat's replies came from the cache
    for v in again.variants:
        assert v.answers.repeats.n == 3


GENERATED = """
name = "repeated generator"
golden = "golden.jsonl"
corpus = "{corpus}"
output = "runs"
k = 4
metrics = ["R"]
headroom_k = 20

[generator]
kind = "openai"
base_url = "{url}"
model = "gen-m"
max_retries = 0
repeat = 3

[baseline]
name = "rank"
chunker = "tokens:300:0"
retriever = "bm25"
depth = 50

[[variant]]
name = "reverse"
order = "reverse"
"""


@contextmanager
def generator_server() -> Iterator[dict[str, Any]]:
    """An OpenAI-compatible generator that answers "[1]" at an even seed and abstains at an
    odd one; counts the requests and the seeds it was sent."""
    seen: dict[str, Any] = {"n": 0, "seeds": []}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seed = body.get("seed")
            with lock:
                seen["n"] += 1
                seen["seeds"].append(seed)
            text = "The fee is stated in the passage [1]." if seed % 2 == 0 else "I do not know."
            out = {
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5},
            }
            send_json(self, 200, json.dumps(out).encode())
            self.close_connection = True

    with running(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as url:
        seen["url"] = f"{url}/v1"
        yield seen


def test_a_repeated_generator_gets_seed_plus_r_and_a_rerun_makes_no_call(tmp_path) -> None:
    with generator_server() as srv:
        text = GENERATED.format(corpus=FARE_RULES / "corpus.jsonl", url=srv["url"])
        path = fare_rules_experiment(tmp_path, text, files=(), cache=["chunkings", "bm25"])
        lines = (FARE_RULES / "golden.jsonl").read_text().splitlines()
        (tmp_path / "golden.jsonl").write_text("\n".join(lines[i] for i in SLICE) + "\n")
        first = run(path)
        made = srv["n"]
        again = run(path)
        assert srv["n"] == made  # each repeat's answers came from the answer cache
    # two variants (their contexts differ), three repeats, one request per question each
    assert made == 2 * 3 * len(SLICE)
    assert sorted(set(srv["seeds"])) == [0, 1, 2]
    for v, w in zip(first.variants, again.variants, strict=True):
        r = v.answers.repeats
        assert r.seeds == (0, 1, 2) and r.generator_repeat == 3
        assert r.model_calls == (len(SLICE),) * 3
        assert w.answers.repeats.model_calls == (0, 0, 0)
        assert w.answers.repeats.verdicts == r.verdicts
        folder = tmp_path / "runs" / v.name
        for k in (1, 2):
            answers = [
                json.loads(x) for x in (folder / "repeats" / str(k) / "answers.jsonl").open()
            ]
            texts = {a["answer"] for a in answers}
            assert texts == {"I do not know."} if k == 1 else "I do not know." not in texts
        gens = [json.loads(x) for x in (folder / "repeats" / "1" / "generations.jsonl").open()]
        assert {g["params"]["seed"] for g in gens} == {1}


#: keys that hold wall-clock times (they differ between any two runs)
TIMES = {"seconds", "seconds_per_answer", "chunk", "index", "search", "score", "total", "encode"}


def _normal(text: str, folder: str) -> Any:
    """A JSON (or JSON Lines) file's content without wall-clock times, ``folder`` as ``X``."""

    def strip(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in TIMES}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    text = text.replace(folder, "X")
    try:
        return strip(json.loads(text))
    except ValueError:
        return [strip(json.loads(line)) for line in text.splitlines()]


def test_repeat_1_changes_nothing_byte_for_byte(tmp_path) -> None:
    """``repeat = 1`` written in both tables gives the files of a run without it: the same
    files, byte for byte but for the folder's name and wall-clock times; no seed sent."""
    with judge_server(lambda q, a, s: True) as srv:
        plain = make(tmp_path / "plain", srv["url"])
        once = make(tmp_path / "once", srv["url"], judge="repeat = 1", generator="repeat = 1")
        a, b = run(plain), run(once)
    assert srv["seeds"] == {None}
    files = sorted(
        p.relative_to(tmp_path / "plain" / "runs")
        for p in (tmp_path / "plain" / "runs").rglob("*")
        if p.is_file()
    )
    assert files == sorted(
        p.relative_to(tmp_path / "once" / "runs")
        for p in (tmp_path / "once" / "runs").rglob("*")
        if p.is_file()
    )
    assert not any("repeats" in p.parts for p in files)
    for f in files:
        x = (tmp_path / "plain" / "runs" / f).read_text()
        y = (tmp_path / "once" / "runs" / f).read_text()
        if f.suffix in (".json", ".jsonl"):
            assert _normal(x, str(tmp_path / "plain")) == _normal(y, str(tmp_path / "once")), f
        else:
            assert x.replace(str(tmp_path / "plain"), "X") == y.replace(
                str(tmp_path / "once"), "X"
            ), f
    for f in ("answers.jsonl", "judgements.jsonl", "chunks.jsonl"):
        for name in ("base", "cand"):
            assert (tmp_path / "plain" / "runs" / name / f).read_bytes() == (
                tmp_path / "once" / "runs" / name / f
            ).read_bytes()
    for v, w in zip(a.variants, b.variants, strict=True):
        assert v.answers.repeats is None and w.answers.repeats is None
        assert v.answers.summary().keys() == w.answers.summary().keys()


# -- bad values ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("judge", "generator", "field", "line_text"),
    [
        ("repeat = 0", "", "judge.repeat", "repeat = 0"),
        ("repeat = 1.5", "", "judge.repeat", "repeat = 1.5"),
        ("", "repeat = true", "generator.repeat", "repeat = true"),
        ("", "repeat = 101", "generator.repeat", "repeat = 101"),
        ("repeat = 3", "repeat = 2", "judge.repeat", "repeat = 3"),
    ],
)
def test_bad_repeat_values_are_refused_with_file_line_and_field(
    tmp_path, judge, generator, field, line_text
) -> None:
    path = make(tmp_path, "http://127.0.0.1:9/v1", judge=judge, generator=generator)
    with pytest.raises(ValidationError) as e:
        load_experiment(path, warn=False)
    problems = [p for p in e.value.problems if p.field == field]
    assert problems, [str(p) for p in e.value.problems]
    lines = path.read_text().splitlines()
    assert problems[0].path == str(path)
    assert lines[problems[0].line - 1].strip() == line_text


def test_a_variant_may_not_set_its_own_repeat(tmp_path) -> None:
    path = make(tmp_path, "http://127.0.0.1:9/v1")
    path.write_text(
        path.read_text().replace(
            'generator = {target = "generators.marked:answer"}',
            'generator = {target = "generators.marked:answer", repeat = 2}',
        )
    )
    with pytest.raises(ValidationError) as e:
        load_experiment(path, warn=False)
    fields = [p.field for p in e.value.problems]
    assert "variant[1].generator.repeat" in fields, fields


def test_ragmeter_run_shows_the_repeats_after_the_answer_checks(tmp_path, correct) -> None:
    target = sorted(set(correct["base"]) & set(correct["cand"]))[0]
    ids = questions()

    def script(question: str, answer: str, s: Any) -> bool:
        return not (ids[question] == target and s == 1)

    with judge_server(script) as srv:
        path = make(tmp_path, srv["url"], judge="repeat = 2")
        table = cli("run", path, "--no-store")
        data = cli("run", path, "--no-store", "--format", "json")
    assert table.exit_code == 0, table.output
    text = " ".join(table.output.split())
    assert "repeats: answer correct and supported over 2 repeats" in text
    assert f"flaky in base: {target}" in text and f"flaky in cand: {target}" in text
    assert "cand against the baseline: 0 of the 0 fixed and broken questions are flaky" in text
    # after the answers tables, before the retrieval-by-answer table
    assert (
        text.index("answers (each variant")
        < text.index("repeats:")
        < text.index("retrieval-by-answer table")
    )
    assert data.exit_code == 0, data.output
    out = json.loads(data.stdout)
    rows = {r["variant"]: r for r in out["answers"]}
    assert rows["cand"]["flaky"] == 1 and rows["cand"]["repeats"] == 2
    cand = next(v for v in out["variants"] if v["name"] == "cand")
    assert cand["answers"]["repeats"]["flaky"] == [target]
    assert cand["answers"]["repeats"]["vs_baseline"]["flaky_movers"] == []


def test_a_judge_failing_in_a_later_repeat_is_counted_and_exits_1(tmp_path) -> None:
    class Fails(Exception):
        pass

    def script(question: str, answer: str, s: Any) -> bool:
        if s == 1:
            raise Fails
        return True

    with judge_server(script) as srv:
        path = make(tmp_path, srv["url"], judge="repeat = 2")
        out = cli("run", path, "--no-store", "--format", "json")
    assert out.exit_code == 1, out.output
    data = json.loads(out.stdout)
    for r in data["answers"]:
        assert r["judge_failed"] == len(SLICE)  # repeat 2's, all of them; repeat 1's none
    cand = next(v for v in data["variants"] if v["name"] == "cand")
    assert cand["answers"]["repeats"]["judge_failed"] == [0, len(SLICE)]
