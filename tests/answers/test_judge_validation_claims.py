"""``judge validate`` on claim-level human labels: one line per (answer id, claim, against),
matched to the judge's verdicts in the answers-check JSON; the hand-computed agreement and kappa
of the fixture (tests/fixtures/claims/expected.json)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from test_claims import _items, expected, fixture
from typer.testing import CliRunner

from ragmeter import UsageError, ValidationError
from ragmeter.answers.claims import claim_key, judge_claims
from ragmeter.answers.judge_validation import load_human_labels, load_judge_labels, validate_judge
from ragmeter.answers.judged import CLAIM_METRICS
from ragmeter.answers.judges import FakeJudge
from ragmeter.cli import app


def human_lines() -> list[dict[str, Any]]:
    """The fixture's claim checks as a person labelled them (the rule's label unless the
    fixture marks a ``human_<against>`` one), each (answer id, claim, against) once."""
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for c in fixture():
        for of, claims in c["claims"].items():
            for h in claims:
                for against in ("context", "reference") if of == "answer" else ("answer",):
                    rec = {
                        "id": c["id"],
                        "claim": h["claim"],
                        "against": against,
                        "supported": h.get(f"human_{against}", h[against]),
                    }
                    out.setdefault((c["id"], h["claim"], against), rec)
    return list(out.values())


def write(tmp: Path) -> tuple[Path, Path]:
    human = tmp / "human.jsonl"
    human.write_text("".join(json.dumps(r) + "\n" for r in human_lines()), "utf-8")
    scores = judge_claims(FakeJudge(), CLAIM_METRICS, _items(fixture()))
    per: dict[str, dict[str, Any]] = {}
    for s in scores:
        per.setdefault(s.id, {})[s.metric] = s.to_dict()
    doc = {
        "summary": {"variant": "fixture"},
        "answers": [{"id": i, "judged": j} for i, j in per.items()],
    }
    judged = tmp / "judged.json"
    judged.write_text(json.dumps(doc), "utf-8")
    return human, judged


def test_claim_level_agreement_and_kappa_are_the_hand_numbers(tmp_path: Path) -> None:
    want = expected()["validation"]
    human_file, judged_file = write(tmp_path)
    human = load_human_labels(human_file)
    assert len(human) == want["n"]
    for metric in (None, "claims", "claim_recall"):  # any claim metric reads every verdict
        labels, info = load_judge_labels(judged_file, metric=metric)
        v = validate_judge(human, labels, judge=info)
        assert v.n == want["n"] and list(v.labels) == want["labels"]
        assert v.confusion.tolist() == want["confusion_rows_human_cols_judge"]
        assert v.agreement == pytest.approx(float(Fraction(want["agreement"])), abs=1e-12)
        assert v.kappa == pytest.approx(float(Fraction(want["kappa"])), abs=1e-12)
        assert not v.failed and not v.unlabelled
        assert info["judge"]["fake"] and info["prompt"]["id"] == "claims.v1+claim_support.v1"
    assert sorted(i for i, _, _ in v.disagreements) == sorted(
        [
            claim_key("c08", "Children aged 2 and over need their own seat.", "reference"),
            claim_key("c08", "A seat is required from age 2.", "answer"),
            claim_key("c09", "Same-day changes cost $30 per passenger.", "reference"),
            claim_key("c10", "Seat selection costs $18 on Flex fares.", "context"),
        ]
    )


def test_the_cli_validates_claim_labels(tmp_path: Path) -> None:
    human_file, judged_file = write(tmp_path)
    out = CliRunner().invoke(
        app,
        [
            *("judge", "validate", "--human", str(human_file), "--judge", str(judged_file)),
            *("--no-store", "--format", "json"),
        ],
    )
    assert out.exit_code == 0, out.output
    report = json.loads(out.output[out.output.index("{") :])
    assert report["n"] == 90 and report["kappa"] == pytest.approx(307 / 337)


def test_claims_match_by_text_with_spaces_and_case_ignored(tmp_path: Path) -> None:
    _, judged_file = write(tmp_path)
    human = tmp_path / "h.jsonl"
    rows = [
        {"id": "c01", "claim": "the change FEE on Standard  fares is $75 per passenger.",
         "against": "context", "supported": True},
        {"id": "c01", "claim": "A claim the judge never made.", "against": "context",
         "supported": False},
    ]  # fmt: skip
    human.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    labels, info = load_judge_labels(judged_file)
    v = validate_judge(load_human_labels(human), labels, judge=info)
    assert v.n == 1 and v.agreement == 1.0
    assert v.unlabelled == (claim_key("c01", "A claim the judge never made.", "context"),)


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        (
            {"id": "c01", "claim": "x", "against": "evidence", "supported": True},
            "against",
            "one of",
        ),
        (
            {"id": "c01", "claim": "x", "against": "context", "supported": "yes"},
            "supported",
            "true",
        ),
        ({"id": "c01", "claim": " ", "against": "context", "supported": True}, "claim", "text"),
        ({"id": "", "claim": "x", "against": "context", "supported": True}, "id", "non-empty"),
        ({"id": "c01", "label": "pass"}, "claim", "keep one kind per file"),
    ],
)
def test_bad_claim_labels_name_file_line_and_field(
    tmp_path: Path, row: dict[str, Any], field: str, message: str
) -> None:
    human = tmp_path / "h.jsonl"
    first = {"id": "c01", "claim": "ok", "against": "answer", "supported": True}
    human.write_text(json.dumps(first) + "\n" + json.dumps(row) + "\n", "utf-8")
    with pytest.raises(ValidationError) as err:
        load_human_labels(human)
    text = str(err.value)
    assert "h.jsonl" in text and ":2" in text and field in text and message in text


def test_a_duplicate_claim_label_is_refused(tmp_path: Path) -> None:
    human = tmp_path / "h.jsonl"
    row = {"id": "c01", "claim": "The fee is $75.", "against": "answer", "supported": True}
    dup = {**row, "claim": "the fee is  $75."}
    human.write_text(json.dumps(row) + "\n" + json.dumps(dup) + "\n", "utf-8")
    with pytest.raises(ValidationError, match="second label"):
        load_human_labels(human)


def test_a_report_without_claim_metrics_is_refused_for_claims(tmp_path: Path) -> None:
    doc = {
        "summary": {"variant": "v"},
        "answers": [{"id": "q", "judged": {"correctness": {"ok": True, "label": "correct"}}}],
    }
    path = tmp_path / "j.json"
    path.write_text(json.dumps(doc), "utf-8")
    with pytest.raises(UsageError, match="no claim-level judgements"):
        load_judge_labels(path, metric="claims")


def test_the_examples_claim_labels_read_as_docs_judges_md_says(tmp_path: Path) -> None:
    """docs/judges.md section 6: the dry run's 522 requests, and the fake judge agreeing with 7
    of the 8 claim labels the example ships (kappa 3/4: rows human fail/pass, columns judge
    fail/pass [[3, 0], [1, 4]], chance agreement (3 x 4 + 5 x 4) / 64 = 1/2). The claim naming
    "Business fares" is supported by the reference "no change fee" read with its question, "Is
    there a change fee on Business fares?"."""
    ex = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"
    common = [
        *("answers", "check", str(ex / "answers" / "baseline.jsonl")),
        *("--golden", str(ex / "golden.jsonl"), "--corpus", str(ex / "corpus.jsonl")),
        *("--chunks", str(ex / "runs" / "chunks-300.jsonl")),
        *("--run", str(ex / "runs" / "baseline" / "run.trec"), "--k", "4"),
        *("--judge", "fake", "--judge-metrics", "claims", "--no-store"),
    ]
    runner = CliRunner()
    plan = runner.invoke(app, [*common, "--dry-run", "--format", "json"])
    assert plan.exit_code == 0, plan.output
    counted = json.loads(plan.stdout)
    assert counted["requests"] == 522
    assert counted["per_metric"] == {"claims": 224, "claim_support": 298}
    out = runner.invoke(app, [*common, "--format", "json"])
    assert out.exit_code == 0, out.output
    # the five means docs/judges.md gives for the fake judge on the baseline
    means = {m: round(v["mean"], 3) for m, v in json.loads(out.stdout)["summary"]["judged"].items()}
    assert means == {
        "claim_faithfulness": 0.697,
        "hallucination": 0.270,
        "claim_precision": 0.047,
        "claim_recall": 0.716,
        "context_utilisation": 0.428,
    }
    judged = tmp_path / "claims.json"
    judged.write_text(out.stdout, "utf-8")
    labels, info = load_judge_labels(judged)
    v = validate_judge(load_human_labels(ex / "judge" / "human-claims.jsonl"), labels, judge=info)
    assert (v.n, v.agreement) == (8, 0.875) and v.kappa == pytest.approx(3 / 4)
    assert v.confusion.tolist() == [[3, 0], [1, 4]]
    assert len(v.disagreements) == 1 and not v.unlabelled
    assert v.disagreements[0][0].startswith("change-fee-standard | context | the fee schedule")
