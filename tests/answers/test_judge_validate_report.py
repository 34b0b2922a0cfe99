"""``ragmeter judge validate`` reads the JSON document ``ragmeter answers check --format json``
writes (judgements nested under ``answers[i].judged.<metric>``), a bad file's problems of one
kind stop after a few with "... and N more", and the fare-rules human labels validate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter import ValidationError
from ragmeter._errors import Problem
from ragmeter.answers.judge_validation import load_judge_labels
from ragmeter.cli import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"
JUDGE_INFO = {"name": "FAKE JUDGE (rule-based, not a model)", "model": "fake-rules-v1"}
PROMPT = {"id": "correctness.v1", "version": "v1", "sha256": "ab" * 32}


def _judged(qid: str, metric: str, label: str | None, ok: bool = True) -> dict:
    return {
        "id": qid,
        "metric": metric,
        "ok": ok,
        "score": None if label is None else (1.0 if label in ("correct", "supported") else 0.0),
        "label": label,
        "error": None if ok else "connection failed: refused",
        "judge": JUDGE_INFO,
        "prompt": {**PROMPT, "id": f"{metric}.v1"},
    }


def _report(variant: str, judged: dict[str, dict[str, dict]]) -> dict:
    """The shape of one variant's ``answers check --format json`` object (fields trimmed)."""
    return {
        "summary": {"variant": variant},
        "slices": {},
        "faithful_but_wrong": [],
        "missing": [],
        "answers": [
            {"id": qid, "correct": True, "judged": per_metric} for qid, per_metric in judged.items()
        ]
        + [{"id": "no-judgement", "correct": False, "judged": {}}],
        "judge_usage": {"http_requests": 3},
    }


def _write(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value, indent=1), encoding="utf-8")  # pretty: many lines
    return path


def test_report_document_is_read_as_judge_labels(tmp_path: Path) -> None:
    doc = _report(
        "baseline",
        {
            "q1": {"correctness": _judged("q1", "correctness", "correct")},
            "q2": {"correctness": _judged("q2", "correctness", "incorrect")},
            "q3": {"correctness": _judged("q3", "correctness", None, ok=False)},
        },
    )
    labels, info = load_judge_labels(_write(tmp_path / "check.json", doc))
    assert [(x.id, x.label, x.score) for x in labels] == [
        ("q1", "correct", 1.0),
        ("q2", "incorrect", 0.0),
        ("q3", None, None),
    ]
    assert info["judge"] == JUDGE_INFO and info["prompt"]["id"] == "correctness.v1"


def test_report_with_two_metrics_needs_one_chosen(tmp_path: Path) -> None:
    both = {
        "faithfulness": _judged("q1", "faithfulness", "supported"),
        "correctness": _judged("q1", "correctness", "incorrect"),
    }
    path = _write(tmp_path / "check.json", _report("baseline", {"q1": both}))
    with pytest.raises(Exception, match=r"correctness, faithfulness.*--metric"):
        load_judge_labels(path)
    labels, info = load_judge_labels(path, metric="faithfulness")
    assert [(x.id, x.label) for x in labels] == [("q1", "supported")]
    assert info["prompt"]["id"] == "faithfulness.v1"
    with pytest.raises(Exception, match=r"no 'relevance' judgements.*correctness, faithfulness"):
        load_judge_labels(path, metric="relevance")


def test_list_of_reports_needs_one_variant_chosen(tmp_path: Path) -> None:
    a = _report("baseline", {"q1": {"correctness": _judged("q1", "correctness", "correct")}})
    b = _report("rerank", {"q1": {"correctness": _judged("q1", "correctness", "incorrect")}})
    path = _write(tmp_path / "check.json", [a, b])
    with pytest.raises(Exception, match=r"baseline, rerank.*--variant"):
        load_judge_labels(path)
    labels, _ = load_judge_labels(path, variant="rerank")
    assert [(x.id, x.label) for x in labels] == [("q1", "incorrect")]


def test_bad_record_inside_a_report_names_its_place(tmp_path: Path) -> None:
    bad = _judged("q1", "correctness", "correct")
    bad["ok"] = "yes"
    path = _write(tmp_path / "check.json", _report("v", {"q1": {"correctness": bad}}))
    with pytest.raises(ValidationError) as info:
        load_judge_labels(path)
    assert "field 'answers[0].judged.correctness.ok'" in str(info.value)


def test_cli_validate_accepts_the_report_and_agrees(tmp_path: Path) -> None:
    doc = _report(
        "baseline",
        {
            "q1": {"correctness": _judged("q1", "correctness", "correct")},
            "q2": {"correctness": _judged("q2", "correctness", "incorrect")},
            "q3": {"correctness": _judged("q3", "correctness", "correct")},
            "q4": {"correctness": _judged("q4", "correctness", "incorrect")},
        },
    )
    judge = _write(tmp_path / "check.json", doc)
    human = tmp_path / "human.jsonl"
    human.write_text(
        "".join(
            json.dumps({"id": q, "label": lab}) + "\n"
            for q, lab in [
                ("q1", "correct"),
                ("q2", "incorrect"),
                ("q3", "incorrect"),
                ("q4", "incorrect"),
            ]
        ),
        encoding="utf-8",
    )
    r = CliRunner().invoke(
        app,
        [
            "judge",
            "validate",
            "--human",
            str(human),
            "--judge",
            str(judge),
            "-f",
            "json",
            "--no-store",
        ],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    # confusion rows human (correct, incorrect) x columns judge: [[1, 0], [1, 2]]
    assert out["confusion"]["rows_human_cols_judge"] == [[1, 0], [1, 2]]
    assert out["agreement"] == pytest.approx(0.75)
    # p_e = (1/4)(2/4) + (3/4)(2/4) = 0.5; kappa = (0.75 - 0.5) / 0.5 = 0.5
    assert out["kappa"] == pytest.approx(0.5)


def test_many_problems_of_one_kind_stop_after_a_few(tmp_path: Path) -> None:
    lines = ['{"id": "ok-1", "label": "pass"}'] + [f"not json {i}" for i in range(40)]
    lines += ['{"id": "x", "label": "maybe"}']
    path = tmp_path / "judge.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValidationError) as info:
        load_judge_labels(path)
    text = str(info.value)
    assert "41 problem(s)" in text  # the count stays the true one
    assert len(info.value.problems) == 41  # and every problem is kept for callers
    shown = [ln for ln in text.splitlines() if "invalid JSON" in ln and "more like" not in ln]
    assert len(shown) == 5
    assert "... and 35 more like these" in text
    assert "field 'label'" in text  # another kind is still shown


@pytest.mark.parametrize("n", [1, 5, 6, 7, 12, 1000])
def test_problem_cap_counts_add_up(n: int) -> None:
    problems = [Problem(f"invalid JSON: Extra data (column {i})", "f.jsonl", i) for i in range(n)]
    text = str(ValidationError(problems, what="f.jsonl"))
    shown = sum(1 for ln in text.splitlines() if "invalid JSON" in ln and "more like" not in ln)
    more = [ln for ln in text.splitlines() if "more like these" in ln]
    assert shown == min(n, 5)
    hidden = n - shown
    assert more == ([f"  - ... and {hidden:,} more like these (invalid JSON)"] if hidden else [])


def test_fare_rules_human_labels_validate_the_fake_judge(tmp_path: Path) -> None:
    """The shipped labels, against the fake judge's correctness verdicts on the baseline answers
    (the documented command, run through a real ``answers check`` JSON file)."""
    labels = EXAMPLE / "judge" / "human-correctness.jsonl"
    check = tmp_path / "check.json"
    r = CliRunner().invoke(
        app,
        [
            "answers",
            "check",
            str(EXAMPLE / "answers" / "baseline.jsonl"),
            "--golden",
            str(EXAMPLE / "golden.jsonl"),
            "--corpus",
            str(EXAMPLE / "corpus.jsonl"),
            "--judge",
            "fake",
            "--judge-metrics",
            "correctness",
            "--judge-cache",
            str(tmp_path / "cache"),
            "-f",
            "json",
            "--no-store",
        ],
    )
    assert r.exit_code == 0, r.output
    check.write_text(r.stdout, encoding="utf-8")
    r = CliRunner().invoke(
        app,
        [
            "judge",
            "validate",
            "--human",
            str(labels),
            "--judge",
            str(check),
            "-f",
            "json",
            "--no-store",
        ],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    human = [json.loads(x) for x in labels.read_text(encoding="utf-8").splitlines()]
    assert out["n"] == len(human) == 27
    assert out["confusion"]["rows_human_cols_judge"] == [[19, 0], [0, 8]]


# -- answers check --dry-run ----------------------------------------------------------------------
def test_planning_judge_counts_cache_duplicates_and_cost(tmp_path: Path) -> None:
    from ragmeter.answers.judges import JudgeRequest, PlanningJudge
    from ragmeter.answers.judges.openai import OpenAIJudge
    from ragmeter.chat import DiskCache, cache_key

    judge = OpenAIJudge(
        base_url="http://127.0.0.1:9/v1",
        model="m",
        cache_dir=tmp_path,
        price_per_1k_prompt=2.0,
        price_per_1k_completion=10.0,
    )

    def req(text: str) -> JudgeRequest:
        return JudgeRequest("correctness", ({"role": "user", "content": text},))

    cached, stale = req("a" * 40), req("b" * 40)
    cache = DiskCache(tmp_path)
    cache.put(cache_key("m", cached.messages, judge.params), {"content": '{"verdict": "correct"}'})
    # a cached reply that no longer fits the task is asked again, as the real client does
    cache.put(cache_key("m", stale.messages, judge.params), {"content": "Sure! correct"})
    planner = PlanningJudge(judge)
    replies = planner.judge([cached, stale, req("c" * 4001), req("c" * 4001)])
    assert [r.ok for r in replies] == [False] * 4
    p = planner.plan.to_dict()
    assert (p["requests"], p["duplicates"], p["cached"], p["to_send"]) == (4, 1, 1, 2)
    # prompt characters 40 + 4001 = 4041 -> ceil(4041 / 4) = 1011 tokens
    assert p["estimated_prompt_tokens"] == 1011
    assert p["completion_tokens_max"] == 2 * 512
    # 1011/1000 * 2.0 + 1024/1000 * 10.0 = 2.022 + 10.24
    assert p["estimated_cost"]["total_max"] == pytest.approx(12.262)
    assert judge.usage.http_requests == 0


def test_cli_dry_run_sends_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ragmeter.chat import ChatClient

    def no_network(self: object, payload: bytes) -> dict:
        raise AssertionError("a dry run sent a request")

    monkeypatch.setattr(ChatClient, "_post", no_network)
    args = [
        "answers", "check", str(EXAMPLE / "answers" / "baseline.jsonl"),
        "--golden", str(EXAMPLE / "golden.jsonl"), "--corpus", str(EXAMPLE / "corpus.jsonl"),
        "--judge", "openai", "--judge-url", "http://127.0.0.1:9/v1", "--judge-model", "m",
        "--judge-metrics", "correctness,answer_relevance", "--judge-cache", str(tmp_path),
        "--price-prompt", "0.5", "--dry-run", "--no-store",
    ]  # fmt: skip
    r = CliRunner().invoke(app, [*args, "-f", "json"])
    assert r.exit_code == 0, r.output
    plan = json.loads(r.stdout)
    # 90 answers: correctness on the 80 answerable questions, answer relevance on all 90
    assert plan["per_metric"] == {"correctness": 80, "answer_relevance": 90}
    assert (plan["cached"], plan["to_send"]) == (0, 170)
    assert plan["estimated_cost"]["completion_max"] == 0.0  # no completion price given
    r = CliRunner().invoke(app, args, env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    assert "calls to make: 170" in r.stdout and "nothing was sent" in r.stdout


def test_dry_run_uses_the_judge_prompt_folder(tmp_path: Path) -> None:
    """--judge-prompts replaces the shipped prompt: a one-character system prompt and a user
    prompt that is the answer alone make each request 1 + len(answer) characters."""
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "correctness.v1.txt").write_text(
        "# inputs: answer\n### system\nS\n### user\n$answer\n", encoding="utf-8"
    )
    golden = {
        q["id"]: q
        for q in map(json.loads, (EXAMPLE / "golden.jsonl").read_text("utf-8").splitlines())
    }
    answers = [
        json.loads(x)
        for x in (EXAMPLE / "answers" / "baseline.jsonl").read_text("utf-8").splitlines()
    ]
    expected = sum(1 + len(a["answer"].strip()) for a in answers if golden[a["id"]]["answerable"])
    args = [
        "answers", "check", str(EXAMPLE / "answers" / "baseline.jsonl"),
        "--golden", str(EXAMPLE / "golden.jsonl"), "--corpus", str(EXAMPLE / "corpus.jsonl"),
        "--judge", "openai", "--judge-url", "http://127.0.0.1:9/v1", "--judge-model", "m",
        "--judge-metrics", "correctness", "--judge-cache", str(tmp_path / "cache"),
        "--judge-prompts", str(folder), "--dry-run", "-f", "json", "--no-store",
    ]  # fmt: skip
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    plan = json.loads(r.stdout)
    assert plan["to_send"] == 80
    assert plan["estimated_prompt_tokens"] == -(-expected // 4)
