"""Judge metrics: declared inputs, versioned prompts, recorded configs, the fake judge."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from _answers_fixture import answers, corpus, golden

from ragmeter import UsageError
from ragmeter.answers import answers_from_records
from ragmeter.answers.judge_validation import JudgeLabel, validate_judge
from ragmeter.answers.judged import JUDGE_METRICS, judge_metric, judge_pairwise, require_one_config
from ragmeter.answers.judges import (
    FakeJudge,
    Judge,
    JudgeInfo,
    JudgeReply,
    JudgeRequest,
    load_prompt,
)
from ragmeter.answers.judges._protocol import parse_json_object
from ragmeter.answers.report import check_answers

CTX = "The change fee on Standard fares is $75 per passenger."


def test_prompts_are_versioned_files_with_declared_inputs() -> None:
    for name, metric in JUDGE_METRICS.items():
        p = load_prompt(name)
        assert p.id == f"{name}.v1" and len(p.sha256) == 64
        assert set(p.inputs) == set(metric.inputs), name
        msgs = p.render({k: f"<{k}>" for k in p.inputs})
        assert msgs[0]["role"] == "system" and all(f"<{k}>" in msgs[1]["content"] for k in p.inputs)
    with pytest.raises(UsageError, match="needs context"):
        load_prompt("faithfulness").render({"question": "q", "answer": "a"})
    with pytest.raises(UsageError, match="no shipped prompt"):
        load_prompt("faithfulness", "v9")


def test_missing_inputs_refused_before_any_call() -> None:
    judge = FakeJudge()
    with pytest.raises(UsageError) as exc:
        judge_metric(
            judge,
            "faithfulness",
            [
                {"id": "a", "question": "q", "answer": "x"},
                {"id": "b", "question": "q", "answer": "x", "context": "  "},
            ],
        )
    assert "'context'" in str(exc.value) and "a, b" in str(exc.value)
    assert judge.calls == 0
    with pytest.raises(UsageError, match="needs a judge"):
        judge_metric(None, "faithfulness", [])  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="unknown judge metric"):
        judge_metric(judge, "tone", [])


def test_fake_judge_says_fake_everywhere() -> None:
    items = [
        {
            "id": "ok",
            "question": "What is the change fee?",
            "context": CTX,
            "answer": "The change fee is $75 per passenger.",
        },
        {
            "id": "bad",
            "question": "What is the change fee?",
            "context": CTX,
            "answer": "The change fee is $50 per passenger.",
        },
    ]
    scores = {s.id: s for s in judge_metric(FakeJudge(), "faithfulness", items)}
    assert scores["ok"].score == 1.0 and scores["ok"].label == "supported"
    assert scores["bad"].score == 0.0 and scores["bad"].label == "unsupported"
    for s in scores.values():
        assert s.judge.fake and s.judge.label.startswith("FAKE JUDGE")
        assert s.detail["reason"].startswith("FAKE JUDGE")
        assert "FAKE JUDGE" in json.dumps(s.to_dict())


class _Broken:
    """A judge whose replies fail or do not fit the expected shape."""

    info = JudgeInfo("broken", "m")

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        return [JudgeReply(False, error="HTTP 500"), JudgeReply(True, {"verdict": "maybe"}, "{}")]


def test_failed_and_misshapen_replies_are_failures_never_passes() -> None:
    assert isinstance(_Broken(), Judge)
    items = [{"id": i, "question": "q", "answer": "a"} for i in ("x", "y")]
    x, y = judge_metric(_Broken(), "answer_relevance", items)
    assert (x.ok, x.score, x.error) == (False, None, "HTTP 500")
    assert not y.ok and y.score is None and "one of yes, partly, no" in (y.error or "")


def test_mixing_two_judge_configurations_is_refused() -> None:
    items = [{"id": "a", "question": "q", "answer": "a"}]
    s1 = judge_metric(FakeJudge(), "answer_relevance", items)
    s2 = judge_metric(FakeJudge(position_bias=True), "answer_relevance", items)
    require_one_config(s1 + s1)
    with pytest.raises(UsageError, match="2 judge configurations"):
        require_one_config(s1 + s2)


def test_pairwise_both_orders_counts_flips() -> None:
    items = [
        {"id": "p1", "question": "fee?", "reference": "$75", "answer_a": "$75", "answer_b": "$50"},
        {
            "id": "p2",
            "question": "fee?",
            "reference": "$75",
            "answer_a": "about $60",
            "answer_b": "roughly $40",
        },
    ]  # equal F1: a position-biased judge picks the first
    fair = judge_pairwise(FakeJudge(), items)
    assert [(r.ab, r.ba, r.flipped) for r in fair] == [("a", "a", False), ("tie", "tie", False)]
    biased = judge_pairwise(FakeJudge(position_bias=True), items)
    assert [(r.ab, r.ba, r.flipped) for r in biased] == [("a", "a", False), ("a", "b", True)]
    labels = [JudgeLabel(r.id, r.ab, order="ab") for r in biased] + [
        JudgeLabel(r.id, r.ba, order="ba") for r in biased
    ]
    v = validate_judge({"p1": "a", "p2": "tie"}, labels)
    assert v.order_pairs == 2 and v.order_flips == ("p2",)


def test_check_answers_records_judge_with_every_score() -> None:
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class C:
        id: str
        doc: str
        text: str

    docs = {d.id: d for d in corpus()}
    chunks = [C(d, d, docs[d].text) for d in docs]
    recs = [dict(a, context=["fees-2026", "fees-2024"]) for a in answers()]
    rep = check_answers(
        answers_from_records(recs),
        golden(),
        corpus=corpus(),
        chunks=chunks,
        judge=FakeJudge(),
        judge_metrics=["faithfulness", "context_relevance"],
    )
    assert rep.judge is not None and rep.judge.startswith("FAKE JUDGE")
    for c in rep.checks:
        for s in c.judged.values():
            assert s.judge.fake and s.prompt["id"].endswith(".v1")
    assert rep.summary()["judged"]["faithfulness"]["n"] == 5
    with pytest.raises(UsageError, match="need a judge"):
        check_answers(
            answers_from_records(answers()),
            golden(),
            corpus=corpus(),
            judge_metrics=["faithfulness"],
        )


def test_parse_json_object() -> None:
    assert parse_json_object('```json\n{"a": 1}\n```') == {"a": 1}
    # the whole reply must be the JSON object: prose around it is a malformed reply (a refusal
    # quoting the format would otherwise be read as a verdict); tests/hostile/test_hostile_judges.py
    for bad in ("no json", "[1, 2]", "{broken", 'Sure! {"verdict": "yes"} Hope this helps.'):
        with pytest.raises(ValueError):
            parse_json_object(bad)
