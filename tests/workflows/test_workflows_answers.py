"""``ragmeter.workflows.answers``: the answers jobs written once (check, compare, position,
judge validation, recording in the store), and the commands as thin adapters of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _answers_fixture import FEES_2026, answers, doc_cite, write_jsonl, write_world
from typer.testing import CliRunner

from ragmeter import UsageError
from ragmeter.answers.judges import FakeJudge
from ragmeter.cli import app
from ragmeter.store import Store
from ragmeter.workflows.answers import (
    AnswerInputs,
    JudgeSettings,
    answer_positions,
    check_answer_sets,
    compare_answer_files,
    judge_name,
    load_answer_sets,
    load_inputs,
    make_judge,
    plan_judge_calls,
    prompt_text,
    record_answer_sets,
    record_judge_validation,
    run_contexts,
    stored_answer_set,
    validate_judge_files,
)

runner = CliRunner()


def _cli_json(*args: Any) -> Any:
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    return write_world(tmp_path)


def _inputs(world: dict[str, Path]) -> AnswerInputs:
    return load_inputs(world["golden"], world["corpus"], None)


def test_check_equals_the_command(world: dict[str, Path]) -> None:
    inputs = _inputs(world)
    assert inputs.corpus is not None and inputs.chunking is None
    sets = load_answer_sets([world["answers"]], inputs.golden)
    (checked,) = check_answer_sets(sets, inputs)
    assert checked.usage is None and checked.answers is sets[0]
    cli = _cli_json("answers", "check", world["answers"], "--golden", world["golden"],
                    "--corpus", world["corpus"], "--no-store", "-f", "json")  # fmt: skip
    assert cli == checked.report.to_dict()
    assert checked.report.summary()["faithful_but_wrong"] == 1  # the stale change fee


def test_a_fake_judge_counts_no_usage_and_plans_its_calls(world: dict[str, Path]) -> None:
    inputs = _inputs(world)
    sets = load_answer_sets([world["answers"]], inputs.golden)
    judge = make_judge(JudgeSettings("fake"))
    assert isinstance(judge, FakeJudge)
    (checked,) = check_answer_sets(sets, inputs, judge=judge, judge_metrics=["correctness"])
    assert checked.usage is None
    assert set(checked.report.summary()["judged"]) == {"correctness"}
    plan = plan_judge_calls(
        sets, inputs, judge=judge, judge_metrics=["correctness"], contexts=None, judge_prompts=None
    )
    assert plan.to_dict()["requests"] == len(answers()) - 1  # the unanswerable one is not judged
    with pytest.raises(UsageError, match="--dry-run counts a judge's calls"):
        plan_judge_calls(
            sets, inputs, judge=None, judge_metrics=[], contexts=None, judge_prompts=None
        )


def test_judge_settings_refused() -> None:
    assert make_judge(JudgeSettings("none")) is None
    with pytest.raises(UsageError, match="--judge must be none, fake or openai, got 'gpt'"):
        make_judge(JudgeSettings("gpt"))
    with pytest.raises(UsageError, match="openai needs"):
        make_judge(JudgeSettings("openai"))


def test_run_contexts_need_a_run_and_its_chunks(tmp_path: Path) -> None:
    assert run_contexts(None, None, None, None) is None
    with pytest.raises(UsageError, match="pass --run too"):
        run_contexts(None, None, 4, None)
    with pytest.raises(UsageError, match="--run needs --chunks"):
        run_contexts(tmp_path / "run.trec", None, 4, None)


def test_answer_sets_are_recorded_and_read_back(world: dict[str, Path], tmp_path: Path) -> None:
    inputs = _inputs(world)
    sets = load_answer_sets([world["answers"]], inputs.golden)
    checked = check_answer_sets(sets, inputs)
    contexts = {"change-fee": ("fees-2024#0",)}
    with Store.open(f"sqlite:///{tmp_path}/store.db") as store:
        (sid,) = record_answer_sets(store, checked, contexts, inputs.golden)
        stored = store.answer_set(sid)
        assert stored.golden_version == inputs.golden.version
        assert stored.source == str(world["answers"])
        rows = {a["id"]: a for a in stored.answers}
        assert rows["change-fee"]["context"] == ["fees-2024#0"]  # the run's cut, when none given
        assert "context" not in rows["first-bag"]
        back = stored_answer_set(stored.to_dict())
    assert back.variant == sets[0].variant and back.path == str(world["answers"])
    assert [a.id for a in back.answers] == [a.id for a in sets[0].answers]
    assert back.by_id["change-fee"].context == ["fees-2024#0"]


def test_a_stored_set_with_judge_verdicts_reads_back_as_answers() -> None:
    # ragmeter run stores each answer's judge verdicts under "judged": the store's field, not
    # the answers format's (the lab's diagnosis of a judged run's answers failed on it)
    judged = {"faithfulness": {"ok": True, "score": 1.0, "label": "supported", "error": None}}
    stored = {
        "name": "rank",
        "source": None,
        "answers": [{"id": "q1", "answer": "$75", "context": ["d#0-10"], "judged": judged}],
    }
    back = stored_answer_set(stored)
    assert back.by_id["q1"].answer == "$75" and back.by_id["q1"].context == ["d#0-10"]


def test_compare_equals_the_command(world: dict[str, Path], tmp_path: Path) -> None:
    better = [dict(a) for a in answers()]
    better[0]["answer"] = 'It is $75: "The change fee on Standard fares is $75".'
    better[0]["citations"] = [
        doc_cite("fees-2026", FEES_2026, "The change fee on Standard fares is $75")
    ]
    cand = write_jsonl(tmp_path / "better.jsonl", better)
    comp = compare_answer_files(world["answers"], cand, _inputs(world), seed=3)
    cli = _cli_json("answers", "compare", world["answers"], cand, "--golden", world["golden"],
                    "--corpus", world["corpus"], "--seed", 3, "-f", "json")  # fmt: skip
    assert cli == json.loads(json.dumps(comp.to_dict()))
    assert comp.comparison.fixed == 1 and comp.comparison.broken == 0


def test_position_checks_its_arguments_before_any_file(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.jsonl"
    common: dict[str, Any] = {"golden": missing, "answers": missing, "chunks": missing}
    with pytest.raises(UsageError, match="not both"):
        answer_positions(**common, k=4, budget=100)
    with pytest.raises(UsageError, match="exactly one"):
        answer_positions(**common, run=missing)
    with pytest.raises(UsageError, match="--evidence must be first or best"):
        answer_positions(**common, evidence="last")


def _labels(tmp_path: Path) -> tuple[Path, Path]:
    human = write_jsonl(
        tmp_path / "human.jsonl",
        [{"id": "a", "label": "supported"}, {"id": "b", "label": "unsupported"},
         {"id": "c", "label": "supported"}],
    )  # fmt: skip
    judged = write_jsonl(
        tmp_path / "judge.jsonl",
        [{"id": "a", "label": "supported"}, {"id": "b", "label": "supported"},
         {"id": "c", "label": "supported"}],
    )  # fmt: skip
    return human, judged


def test_judge_validation_equals_the_command_and_is_recorded(tmp_path: Path) -> None:
    human, judged = _labels(tmp_path)
    v = validate_judge_files(human, judged)
    assert v.humans == {"a": "supported", "b": "unsupported", "c": "supported"}
    assert [x.id for x in v.labels] == ["a", "b", "c"]
    cli = _cli_json("judge", "validate", "--human", human, "--judge", judged, "--no-store",
                    "-f", "json")  # fmt: skip
    assert cli == json.loads(json.dumps(v.validation.to_dict()))
    with Store.open(f"sqlite:///{tmp_path}/store.db") as store:
        vid = record_judge_validation(store, v, judged)
        stored = store.judge_validation(vid)
    assert stored.judge == "unknown judge (the labels name none)"
    assert stored.source == str(judged) and stored.prompt is None
    assert [(x["id"], x["label"], x["human"]) for x in stored.labels] == [
        ("a", "supported", "supported"),
        ("b", "supported", "unsupported"),
        ("c", "supported", "supported"),
    ]


def test_judge_name_and_prompt_text() -> None:
    assert judge_name({"name": "j", "model": "m"}) == "j m" or "j" in judge_name(
        {"name": "j", "model": "m"}
    )
    assert judge_name({"odd": 1}) == '{"odd": 1}'
    assert prompt_text(None) is None
    unknown = {"id": "nope.v9", "sha256": "00"}
    assert prompt_text(unknown) == json.dumps(unknown, sort_keys=True)
    from importlib import resources

    shipped = sorted(
        p.name
        for p in resources.files("ragmeter.answers.judges").joinpath("prompts").iterdir()
        if p.name.endswith(".txt")
    )[0]
    text = resources.files("ragmeter.answers.judges").joinpath("prompts", shipped).read_text()
    import hashlib

    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert prompt_text({"id": shipped[: -len(".txt")], "sha256": sha}) == text
    assert prompt_text({"id": shipped[: -len(".txt")], "sha256": "0" * 64}) != text


def test_check_answers_is_the_command_in_one_call(world: dict[str, Path]) -> None:
    """``check_answers`` reads, judges and checks as the building blocks do; the fake judge is
    said through ``warn`` before anything is judged, and the dry run counts its calls."""
    from ragmeter.workflows.answers import (
        FAKE_JUDGE_NOTE,
        CheckRequest,
        check_answers,
        plan_check,
    )

    said: list[str] = []
    request = CheckRequest(
        [world["answers"]], world["golden"], world["corpus"],
        judge=JudgeSettings("fake"), judge_metrics=" correctness, ",
    )  # fmt: skip
    out = check_answers(request, warn=said.append)
    assert said == [FAKE_JUDGE_NOTE]
    inputs = _inputs(world)
    sets = load_answer_sets([world["answers"]], inputs.golden)
    (alone,) = check_answer_sets(sets, inputs, judge=make_judge(JudgeSettings("fake")),
                                 judge_metrics=["correctness"])  # fmt: skip
    (checked,) = out.checked
    assert checked.report.to_dict() == alone.report.to_dict()
    assert out.to_dicts() == [alone.report.to_dict()]  # the fake judge counts no usage
    assert out.failed == 0 and not out.priced and out.contexts is None
    header, rows = checked.report.csv_rows()
    assert header[:2] == ["variant", "id"] and len(rows) == len(checked.report.checks)
    assert all(len(r) == len(header) for r in rows)
    plan = plan_check(request)
    assert plan.to_dict()["requests"] == len(answers()) - 1
    with pytest.raises(UsageError, match="--dry-run counts a judge's calls"):
        plan_check(CheckRequest([world["answers"]], world["golden"]))
