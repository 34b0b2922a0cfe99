"""The experiment-wide ``[judge]`` of ``ragmeter run``: generated answers are scored by the judge
besides the deterministic checks, the judge's faithfulness feeds "correct and supported", the
judgements are written, stored with the run and cached, and a judge that fails gives counted
failed judgements: never a pass, never an abort.

The generator is the example's extractive stand-in (a sentence copied from the first passage
with a number, citing it; the abstention sentence when none has one). The model judge is a real
HTTP server on 127.0.0.1 that answers every faithfulness request with one scripted reply.
"""

from __future__ import annotations

import json
import shutil
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from _experiment_files import FARE_RULES, fare_rules_experiment
from _loopback import running, send_json
from typer.testing import CliRunner

from ragmeter import ValidationError
from ragmeter.cli import app
from ragmeter.experiments import load_experiment, run_experiment

#: 10 answerable questions and 4 unanswerable ones (lines 81-84 of the example's golden set)
SLICE = (*range(0, 10), *range(80, 84))

EXPERIMENT = """
name = "judged context order"
golden = "golden.jsonl"
corpus = "{corpus}"
output = "runs"
k = 4
metrics = ["R"]
headroom_k = 20

[generator]
kind = "python"
target = "generators.extractive:answer"

{judge}

[baseline]
name = "rank"
chunker = "tokens:300:0"
retriever = "bm25"
depth = 50

[[variant]]
name = "sandwich"
order = "sandwich"
"""

FAKE = '[judge]\nkind = "fake"\nmetrics = ["faithfulness", "answer_relevance"]'


def openai_judge(url: str, **extra: Any) -> str:
    lines = ["[judge]", 'kind = "openai"', f'base_url = "{url}"', 'model = "judge-m"']
    lines += ["retries = 0", "timeout = 5"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in extra.items()]
    return "\n".join(lines)


def make(root: Path, judge: str) -> Path:
    """The experiment (golden slice, the example's corpus, generator and cached chunking)."""
    text = EXPERIMENT.format(corpus=FARE_RULES / "corpus.jsonl", judge=judge)
    # the example's chunking and BM25 runs: only the slice is retrieved
    path = fare_rules_experiment(
        root, text, files=(), trees=["generators"], cache=["chunkings", "bm25"]
    )
    lines = (FARE_RULES / "golden.jsonl").read_text().splitlines()
    (root / "golden.jsonl").write_text("\n".join(lines[i] for i in SLICE) + "\n")
    return path


def run(path: Path, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_experiment(path, **kw)


# -- a judge server on 127.0.0.1 ---------------------------------------------------------------
Reply = Callable[[BaseHTTPRequestHandler], None]


def content(obj: Any) -> Reply:
    """A well-formed completion whose message content is ``obj`` as JSON."""
    body = json.dumps(
        {
            "choices": [{"message": {"role": "assistant", "content": json.dumps(obj)}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        }
    ).encode()
    return lambda h: send_json(h, 200, body)


UNSUPPORTED = content({"claims": [{"claim": "the answer", "supported": False}]})
SUPPORTED = content({"claims": [{"claim": "the answer", "supported": True}]})
FAILURES: dict[str, Reply] = {
    "server error": lambda h: send_json(h, 500, b'{"error": "down"}'),
    "malformed body": lambda h: send_json(h, 200, b'{"choices": [{"message": {"content": "cut'),
    "wrong shape": content({"verdict": "yes"}),
}


@contextmanager
def serve(reply: Reply) -> Iterator[dict[str, Any]]:
    seen: dict[str, Any] = {"n": 0, "auth": set()}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            with lock:
                seen["n"] += 1
                seen["auth"].add(self.headers.get("Authorization"))
            reply(self)
            self.close_connection = True

    with running(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as url:
        seen["url"] = f"{url}/v1"
        yield seen


# -- the fake judge, end to end through `ragmeter run` -----------------------------------------
def cli(*args: Any) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Any]:
    root = tmp_path_factory.mktemp("judged")
    path = make(root, FAKE)
    db = f"sqlite:///{root / 'store.db'}"
    out = cli("run", path, "--format", "json", "--db", db)
    assert out.exit_code == 0, out.output
    engine = sa.create_engine(db)
    with engine.connect() as conn:
        stored = conn.execute(sa.text("select run_id, name from answer_sets order by id")).all()
    engine.dispose()
    return path, json.loads(out.stdout), stored


def test_the_fake_judge_scores_every_variant_through_ragmeter_run(fake_run) -> None:
    path, data, _ = fake_run
    rows = {r["variant"]: r for r in data["answers"]}
    assert set(rows) == {"rank", "sandwich"}
    for name, r in rows.items():
        assert r["judge"].startswith("FAKE JUDGE"), r["judge"]
        assert r["judge_failed"] == 0
        lines = (path.parent / "runs" / name / "judgements.jsonl").read_text().splitlines()
        judged = [json.loads(x) for x in lines]
        # every answer judged on both metrics; the means are those of the written scores
        assert len(judged) == 2 * len(SLICE)
        for metric in ("faithfulness", "answer_relevance"):
            scores = [j["score"] for j in judged if j["metric"] == metric]
            assert len(scores) == len(SLICE)
            assert r[f"judge_{metric}"] == pytest.approx(sum(scores) / len(scores))
        config = json.loads((path.parent / "runs" / name / "config.json").read_text())
        assert config["judge"]["kind"] == "fake"
        assert config["judge"]["metrics"] == ["faithfulness", "answer_relevance"]


def test_the_run_equals_answers_check_with_the_same_judge(fake_run) -> None:
    path, data, _ = fake_run
    for r in data["answers"]:
        folder = path.parent / "runs" / r["variant"]
        out = cli(
            "answers", "check", folder / "answers.jsonl", "--golden", path.parent / "golden.jsonl",
            "--corpus", FARE_RULES / "corpus.jsonl", "--chunks", folder / "chunks.jsonl",
            "--judge", "fake", "--judge-metrics", "faithfulness,answer_relevance",
            "--format", "json", "--no-store",
        )  # fmt: skip
        assert out.exit_code == 0, out.output
        s = json.loads(out.stdout)["summary"]
        assert (s["ok"], s["ok_known"], s["correct"]) == (r["ok"], r["ok_known"], r["correct"])
        for metric in ("faithfulness", "answer_relevance"):
            assert s["judged"][metric]["mean"] == pytest.approx(r[f"judge_{metric}"])


def test_judge_labels_are_stored_with_the_run(fake_run) -> None:
    path, _, stored = fake_run
    from ragmeter.store import Store

    assert len(stored) == 2 and all(run_id is not None for run_id, _ in stored)
    with Store.open(f"sqlite:///{path.parent / 'store.db'}") as store:
        rows = store.answer_set(1).answers
    assert len(rows) == len(SLICE)
    for row in rows:
        assert set(row["judged"]) == {"faithfulness", "answer_relevance"}
        assert row["judged"]["faithfulness"]["judge"]["fake"] is True
        assert row["judged"]["faithfulness"]["ok"] is True


# -- a model judge over HTTP -------------------------------------------------------------------
@pytest.fixture(scope="module")
def no_judge_ok(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, int]]:
    """(ok, ok_known) per variant of the same experiment without a judge."""
    result = run(make(tmp_path_factory.mktemp("plain"), ""), write=False)
    return {
        v.name: (v.answers.summary()["ok"], v.answers.summary()["ok_known"])
        for v in result.variants
    }


def test_the_judges_faithfulness_decides_correct_and_supported(tmp_path, monkeypatch) -> None:
    """A judge that finds no answer supported: no answered question is "correct and supported"
    (only correct abstentions stay ok); the key is sent from the named variable and written
    nowhere."""
    monkeypatch.setenv("RAGMETER_TEST_JUDGE_KEY", "key-value-1234")
    with serve(UNSUPPORTED) as srv:
        path = make(tmp_path, openai_judge(srv["url"], api_key_env="RAGMETER_TEST_JUDGE_KEY"))
        result = run(path)
    assert srv["auth"] == {"Bearer key-value-1234"}
    for v in result.variants:
        checks = v.answers.report.checks
        answered = [c for c in checks if not c.abstained]
        assert answered and all(c.supported is False and c.ok is False for c in answered)
        assert all(c.ok == c.correct for c in checks if c.abstained)
        assert v.answers.summary()["judge_faithfulness"] == 0.0
    written = [p.read_text() for p in (tmp_path / "runs").rglob("*") if p.is_file()]
    assert written and not any("key-value-1234" in text for text in written)


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_a_failing_judge_counts_failures_never_passes_never_aborts(
    tmp_path, failure, no_judge_ok
) -> None:
    with serve(FAILURES[failure]) as srv:
        path = make(tmp_path, openai_judge(srv["url"]))
        out = cli("run", path, "--format", "json", "--no-store")
    assert out.exit_code == 1, out.output
    assert f"{2 * len(SLICE)} judgement(s) failed" in out.stderr
    data = json.loads(out.stdout)
    for r in data["answers"]:
        assert r["judge_failed"] == len(SLICE) and r["judge_faithfulness"] is None
        lines = (path.parent / "runs" / r["variant"] / "judgements.jsonl").read_text()
        judged = [json.loads(x) for x in lines.splitlines()]
        assert all(j["ok"] is False and j["score"] is None and j["error"] for j in judged)
        # a failed judgement counts as neither support nor its absence: ok as without a judge
        assert (r["ok"], r["ok_known"]) == no_judge_ok[r["variant"]]


def test_judge_replies_are_cached_and_no_cache_reads_or_writes_none(tmp_path) -> None:
    with serve(SUPPORTED) as srv:
        path = make(tmp_path, openai_judge(srv["url"]))
        run(path)
        first = srv["n"]
        again = run(path)
        after_rerun = srv["n"]
        shutil.rmtree(tmp_path / ".ragmeter-cache" / "judge")
        run(path, use_cache=False)
    # two variants' answers: the sandwich's answers differ from the rank's only where the
    # order changed the copied sentence; identical requests are sent once
    assert 0 < first <= 2 * len(SLICE)
    assert after_rerun == first  # the re-run sent nothing
    assert all(v.answers.summary()["judge_faithfulness"] == 1.0 for v in again.variants)
    assert srv["n"] > after_rerun  # --no-cache asked again ...
    assert not (tmp_path / ".ragmeter-cache" / "judge").exists()  # ... and kept nothing


# -- the [judge] table -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("judge", "field", "words"),
    [
        ('[judge]\nkind = "fake"\napi_key = "sk-abc"', "judge.api_key", "never write an API key"),
        (
            '[judge]\nkind = "openai"\nbase_url = "http://x/v1"\nmodel = "m"\n'
            'api_key_env = "sk-proj-4f9a8b7c6d5e4f3a2b1c"',
            "judge.api_key_env",
            "never the key itself",
        ),
        (
            '[judge]\nkind = "openai"\nbase_url = "http://x/v1"\nmodel = "m"\n'
            'api_key_env = "sk_live_4f9a8b7c6d5e4f3a2b1c0d"',
            "judge.api_key_env",
            "never the key itself",
        ),
        ('[judge]\nkind = "openai"\nmodel = "m"', "judge.base_url", "needs 'base_url'"),
        ('[judge]\nmetrics = ["faithfulness"]', "judge.kind", "needs a kind"),
        ('[judge]\nkind = "fake"\nmetrics = ["pairwise"]', "judge.metrics", "unknown judge"),
        ('[judge]\nkind = "fake"\nretries = 99', "judge.retries", "0 to 20"),
        ('[judge]\nkind = "fake"\nprompt = "nowhere"', "judge.prompt", "faithfulness"),
        ('[judge]\nkind = "fake"\nmodle = "m"', "judge.modle", "[judge] may set"),
    ],
)
def test_judge_table_problems_name_their_field(tmp_path, judge, field, words) -> None:
    path = make(tmp_path, judge)
    with pytest.raises(ValidationError) as info:
        load_experiment(path, warn=False)
    problems = {p.field: p.message for p in info.value.problems}
    assert field in problems, problems
    assert words in problems[field]


@pytest.mark.parametrize("where", ["baseline", "variant"])
def test_a_variant_cannot_change_the_judge(tmp_path, where) -> None:
    path = make(tmp_path, FAKE)
    text = path.read_text()
    anchor = 'name = "rank"\n' if where == "baseline" else 'order = "sandwich"\n'
    path.write_text(text.replace(anchor, anchor + 'judge = {kind = "fake"}\n'))
    with pytest.raises(ValidationError) as info:
        load_experiment(path, warn=False)
    (problem,) = info.value.problems
    assert "experiment-wide" in problem.message and "do not compare" in problem.message
    assert problem.field.endswith(".judge") and problem.line is not None


def test_a_judge_needs_a_generator(tmp_path) -> None:
    path = make(tmp_path, FAKE)
    path.write_text(
        path.read_text()
        .replace("[generator]", "[unused]")
        .replace('kind = "python"\ntarget = "generators.extractive:answer"\n', "")
        .replace("[unused]\n", "")
    )
    with pytest.raises(ValidationError) as info:
        load_experiment(path, warn=False)
    assert any(p.field == "judge" and "[generator]" in p.message for p in info.value.problems)


def test_a_judge_prompt_folder_replaces_the_shipped_prompt(tmp_path) -> None:
    from importlib import resources

    shipped = resources.files("ragmeter.answers.judges").joinpath("prompts", "faithfulness.v1.txt")
    (tmp_path / "prompts").mkdir(parents=True)
    text = shipped.read_text(encoding="utf-8").replace("### user", "### user\nHOUSE RULES.", 1)
    (tmp_path / "prompts" / "faithfulness.v1.txt").write_text(text)
    path = make(tmp_path, '[judge]\nkind = "fake"\nprompt = "prompts"')
    result = run(path, write=False)
    judged = [s for c in result.baseline.answers.report.checks for s in c.judged.values()]
    assert judged and {s.prompt["sha256"] for s in judged} == {
        __import__("hashlib").sha256(text.encode()).hexdigest()
    }
