"""Claim-level metrics (ragmeter.answers.claims): the hand-labelled fixture reproduced exactly by
the fake judge, the call count and its dry-run plan, failures never passes, and invariants over
generated answers."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragmeter import UsageError
from ragmeter.answers.claims import (
    CALLS,
    CLAIM_INPUTS,
    NO_CLAIMS,
    claim_prompts,
    judge_claims,
    numbered,
    reference_passage,
)
from ragmeter.answers.judged import CLAIM_METRICS, expand_metrics
from ragmeter.answers.judges import FakeJudge, JudgeInfo, JudgeReply, JudgeRequest, PlanningJudge

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "claims"


def fixture() -> list[dict[str, Any]]:
    lines = (FIXTURE / "answers.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def expected() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURE / "expected.json").read_text("utf-8"))
    return data


def _frac(x: str | None) -> float | None:
    return None if x is None else float(Fraction(x))


def _items(cases: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    keys = ("id", "question", "answer", "abstained", "reference", "context", "evidence")
    return [{k: c[k] for k in keys} for c in cases]


def _by(scores: Sequence[Any]) -> dict[tuple[str, str], Any]:
    return {(s.id, s.metric): s for s in scores}


def test_the_fixture_has_twenty_answers_and_every_metric_by_hand() -> None:
    cases = fixture()
    assert len(cases) == 20 and len({c["id"] for c in cases}) == 20
    for c in cases:
        assert set(c["expected"]) == set(CLAIM_METRICS)


def test_the_fake_judge_reproduces_the_hand_numbers_exactly() -> None:
    cases, want = fixture(), expected()
    judge = FakeJudge()
    scores = _by(judge_claims(judge, CLAIM_METRICS, _items(cases)))
    for c in cases:
        for m in CLAIM_METRICS:
            s = scores[(c["id"], m)]
            assert s.ok, (c["id"], m, s.error)
            assert s.score == _frac(c["expected"][m]), (c["id"], m)
            if c["expected"][m] is None:
                assert s.label == NO_CLAIMS
    # the claim lists and verdicts per answer are the hand split and the hand labels
    for c in cases:
        if c["expected"]["claim_faithfulness"] is None:
            continue
        for m in CLAIM_METRICS:
            for check in scores[(c["id"], m)].detail["checks"]:
                hand = c["claims"][check["of"]]
                assert [x["claim"] for x in check["claims"]] == [h["claim"] for h in hand]
                assert [x["supported"] for x in check["claims"]] == [
                    h[check["against"]] for h in hand
                ]
        halluc = scores[(c["id"], "hallucination")].detail["hallucinated"]
        assert halluc == [
            a["claim"] for a in c["claims"]["answer"] if not (a["context"] or a["reference"])
        ]
    # the means, as the report computes them (mean over the answers with claims)
    for m in CLAIM_METRICS:
        vals = [scores[(c["id"], m)].score for c in cases]
        got = [v for v in vals if v is not None]
        assert len(got) == want["scored"] and vals.count(None) == want["no_claims"]
        assert sum(got) / len(got) == pytest.approx(float(Fraction(want["means"][m])), abs=1e-12)
    # calls: one split per text, one check per pair, none for an answer without claims
    assert judge.calls == sum(want["calls"].values())


def test_the_dry_run_counts_every_call_the_real_run_makes() -> None:
    cases, want = fixture(), expected()
    planner = PlanningJudge(FakeJudge())
    scores = judge_claims(planner, CLAIM_METRICS, _items(cases))
    assert all(not s.ok for s in scores if s.label != NO_CLAIMS)  # nothing passes a dry run
    plan = planner.plan
    assert dict(plan.per_metric) == want["calls"]
    assert plan.requests == 51 + 68
    # identical splits are sent once: 8 answers repeat a text among answer, reference and
    # evidence, and c01 and c05 share a question and a reference; the checks that follow a split
    # not in the cache cannot be compared, so each counts as one to send
    assert plan.duplicates == 9 and plan.to_send == 51 + 68 - 9
    # the fake judge sends nothing, whatever it would be asked
    assert plan.to_dict()["to_send"] == 0 and not plan.sends


def test_calls_per_answer_and_metric_names() -> None:
    assert CALLS == {
        "claim_faithfulness": 2,
        "hallucination": 3,
        "claim_precision": 2,
        "claim_recall": 2,
        "context_utilisation": 2,
        "claims": 7,
    }
    assert expand_metrics(["faithfulness", "claims", "claim_recall"]) == [
        "faithfulness",
        *CLAIM_METRICS,
    ]
    with pytest.raises(UsageError, match="unknown judge metric 'claim'"):
        expand_metrics(["claim"])
    assert CLAIM_INPUTS["hallucination"] == ("context", "reference")
    assert CLAIM_INPUTS["context_utilisation"] == ("evidence",)
    assert numbered(["A  b.", "C."]) == "1. A b.\n2. C."


def test_only_the_calls_a_metric_needs_are_made() -> None:
    cases = fixture()[:1]
    for m in CLAIM_METRICS:
        judge = FakeJudge()
        judge_claims(judge, [m], _items(cases))
        assert judge.calls == CALLS[m]


def test_a_missing_input_is_refused_before_any_call() -> None:
    items = _items(fixture()[:1])
    items[0]["evidence"] = None
    judge = FakeJudge()
    with pytest.raises(UsageError, match="context_utilisation needs evidence for 'c01'"):
        judge_claims(judge, ["context_utilisation"], items)
    assert judge.calls == 0


def test_a_bare_reference_is_read_with_its_question() -> None:
    """RAGChecker's way: the check against the reference shows the question, so "$75" answers
    "What is the change fee ...?" and supports the full-sentence claim; the splits get the
    question too."""
    item = {
        "id": "fee",
        "question": "What is the change fee for a Standard fare?",
        "answer": "The change fee for a Standard fare is $75. It applies per direction.",
        "abstained": False,
        "context": "Standard fares: $75.",
        "reference": "$75",
        "evidence": "Standard fares: $75",
    }
    seen: list[JudgeRequest] = []

    def reply(r: JudgeRequest, good: JudgeReply) -> JudgeReply:
        seen.append(r)
        return good

    scores = {s.metric: s for s in judge_claims(Scripted(reply), CLAIM_METRICS, [item])}
    assert scores["claim_precision"].score == 0.5  # "per direction" is in neither text
    assert scores["claim_recall"].score == 1.0  # the reference's one claim, "$75"
    assert scores["hallucination"].detail["hallucinated"] == ["It applies per direction."]
    against_ref = [r for r in seen if r.task == "claim_support" and "reference" in r.inputs]
    assert len(against_ref) == 1
    passage = reference_passage(item["question"], "$75")
    assert passage == "Question: What is the change fee for a Standard fare?\nReference answer: $75"
    assert against_ref[0].inputs["passage"] == passage
    assert f"PASSAGE:\n{passage}\n" in against_ref[0].messages[-1]["content"]
    # the other checks show their text alone; every split shows the question
    others = [r for r in seen if r.task == "claim_support" and "reference" not in r.inputs]
    assert {r.inputs["passage"] for r in others} == {item["context"], item["answer"]}
    splits = [r for r in seen if r.task == "claims"]
    assert len(splits) == 3
    assert all(item["question"] in r.messages[-1]["content"] for r in splits)
    # without a question the passage is the reference alone
    assert reference_passage("  ", "$75") == "$75"
    # the fake judge uses the question's and the reference's words, never the two labels
    claims = ["The answer to the question is $75.", "The change fee is $75."]
    got = FakeJudge().judge(
        [
            JudgeRequest(
                "claim_support",
                (),
                {"passage": passage, "question": item["question"], "reference": "$75",
                 "claims": claims},
            )
        ]
    )[0]  # fmt: skip
    assert [v["supported"] for v in (got.data or {})["verdicts"]] == [False, True]


class Scripted:
    """A judge answering each request from a function of the request (no network)."""

    def __init__(self, reply: Any) -> None:
        self.reply = reply
        self.fake = FakeJudge()

    @property
    def info(self) -> JudgeInfo:
        return JudgeInfo("scripted", "m")

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        return [self.reply(r, self.fake.judge([r])[0]) for r in requests]


BAD_SPLITS = [
    ({"claims": []}, "lists no claim"),
    ({"claims": ["ok", "  "]}, "empty string"),
    ({"claims": "one claim"}, "claims"),
    ({"statements": ["x"]}, "claims"),
]
BAD_VERDICTS = [
    ({"verdicts": []}, "lists no verdict"),
    ({"verdicts": [{"claim": 1, "supported": "true"}]}, "supported"),
    ({"verdicts": [{"claim": "1", "supported": True}]}, "claim"),
    ({"verdicts": [{"claim": 1, "supported": True}]}, "no verdict for claim(s) 2"),
    (
        {"verdicts": [{"claim": n, "supported": True} for n in (1, 2, 3)]},
        "verdicts for claim(s) 3 not sent",
    ),
    (
        {"verdicts": [{"claim": 1, "supported": True}, {"claim": 1, "supported": False}]},
        "claim 1 has two verdicts",
    ),
]


@pytest.mark.parametrize(("data", "why"), BAD_SPLITS)
def test_a_split_that_does_not_fit_fails_every_metric_needing_it(data: Any, why: str) -> None:
    case = fixture()[0]  # c01: two answer claims

    def reply(r: JudgeRequest, good: JudgeReply) -> JudgeReply:
        if r.task == "claims" and r.inputs["text"] == case["answer"]:
            return JudgeReply(True, data, json.dumps(data))
        return good

    scores = _by(judge_claims(Scripted(reply), CLAIM_METRICS, _items([case])))
    for m in ("claim_faithfulness", "hallucination", "claim_precision"):
        s = scores[("c01", m)]
        assert not s.ok and s.score is None and s.label is None
        assert "splitting the answer" in (s.error or "") and why in (s.error or "")
    # the reference and the evidence were split and checked: their metrics stand
    assert scores[("c01", "claim_recall")].ok and scores[("c01", "claim_recall")].score == 1.0
    assert scores[("c01", "context_utilisation")].ok


@pytest.mark.parametrize(("data", "why"), BAD_VERDICTS)
def test_verdicts_that_do_not_fit_fail_the_metrics_needing_them(data: Any, why: str) -> None:
    case = fixture()[0]

    def reply(r: JudgeRequest, good: JudgeReply) -> JudgeReply:
        if r.task == "claim_support" and r.inputs["passage"] == case["context"]:
            return JudgeReply(True, data, json.dumps(data))
        return good

    scores = _by(judge_claims(Scripted(reply), CLAIM_METRICS, _items([case])))
    for m in ("claim_faithfulness", "hallucination"):
        s = scores[("c01", m)]
        assert not s.ok and s.score is None
        assert "answer claims vs context" in (s.error or "") and why in (s.error or "")
    for m in ("claim_precision", "claim_recall", "context_utilisation"):
        assert scores[("c01", m)].ok


def test_a_failed_call_is_a_failure_never_a_pass() -> None:
    def reply(r: JudgeRequest, good: JudgeReply) -> JudgeReply:
        if r.task == "claim_support":
            return JudgeReply(False, error="HTTP 503 after 3 attempts")
        return good

    scores = judge_claims(Scripted(reply), CLAIM_METRICS, _items(fixture()))
    for s in scores:
        if s.label == NO_CLAIMS:
            assert s.ok and s.score is None
        else:
            assert not s.ok and s.score is None and "HTTP 503" in (s.error or "")


def test_prompts_are_versioned_and_recorded() -> None:
    split, support = claim_prompts()
    assert (split.id, support.id) == ("claims.v1", "claim_support.v1")
    assert split.inputs == ("question", "text") and support.inputs == ("passage", "claims")
    s = judge_claims(FakeJudge(), ["claim_recall"], _items(fixture()[:1]))[0]
    assert s.prompt["id"] == "claims.v1+claim_support.v1"
    assert s.prompt["claims_sha256"] == split.sha256
    assert s.prompt["claim_support_sha256"] == support.sha256
    assert s.judge.fake and s.config[0].startswith("FAKE JUDGE")


SENTENCES = st.lists(
    st.sampled_from(
        [
            "The fee is $75.",
            "Refunds take 90 days.",
            "Bags cost $35 each.",
            "Pets are not allowed.",
            "Seats cost $18.",
            "The lounge opens at 6.",
        ]
    ),
    min_size=0,
    max_size=4,
)


@given(answer=SENTENCES, context=SENTENCES, reference=SENTENCES, evidence=SENTENCES)
def test_invariants_over_generated_answers(
    answer: list[str], context: list[str], reference: list[str], evidence: list[str]
) -> None:
    item = {
        "id": "q",
        "question": "q?",
        "answer": " ".join(answer),
        "abstained": False,
        "context": " ".join(context) or "Nothing here.",
        "reference": " ".join(reference) or "Nothing here.",
        "evidence": " ".join(evidence) or "Nothing here.",
    }
    judge = FakeJudge()
    scores = {s.metric: s for s in judge_claims(judge, CLAIM_METRICS, [item])}
    if not answer:  # an empty answer has no claims: None, never 1.0 or 0.0, and no call
        assert all(s.ok and s.score is None and s.label == NO_CLAIMS for s in scores.values())
        assert judge.calls == 0
        return
    assert judge.calls == CALLS["claims"]
    v = {m: s.score for m, s in scores.items()}
    assert all(s.ok and 0.0 <= (s.score or 0.0) <= 1.0 for s in scores.values())
    # a hallucinated claim is supported by neither text
    assert v["hallucination"] + v["claim_faithfulness"] <= 1.0 + 1e-12
    assert v["hallucination"] + v["claim_precision"] <= 1.0 + 1e-12
    assert v["hallucination"] >= 1.0 - v["claim_faithfulness"] - v["claim_precision"] - 1e-12
    # the answer's own claims against the context it repeats: all supported
    if sorted(set(answer)) == sorted(set(context)):
        assert v["claim_faithfulness"] == 1.0


def test_judge_metric_points_a_claim_metric_to_its_scorer() -> None:
    from ragmeter.answers.judged import judge_metric

    with pytest.raises(UsageError, match="claim-level metric"):
        judge_metric(FakeJudge(), "claim_recall", [])


def test_the_answers_check_table_shows_the_claim_metrics(tmp_path: Path) -> None:
    from _answers_fixture import write_world
    from typer.testing import CliRunner

    from ragmeter.cli import app

    files = write_world(tmp_path)
    out = CliRunner().invoke(
        app,
        [
            *("answers", "check", str(files["answers"]), "--golden", str(files["golden"])),
            *("--corpus", str(files["corpus"]), "--judge", "fake", "--no-store"),
            *("--judge-metrics", "claim_recall,context_utilisation"),
        ],
        env={"COLUMNS": "200"},
    )
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    # four answerable questions, none abstained: means over 4, 0 without claims, 0 failed
    assert "judge claim_recall (mean over n, no claims, failed)" in text
    assert "over 4, 0, 0 of 4" in text
    assert "FAKE JUDGE" in text
