"""check_answers end to end on the synthetic fare-rules world, and `ragmeter answers check`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _answers_fixture import answers, corpus, golden, write_jsonl, write_world
from typer.testing import CliRunner

from ragmeter import UsageError, ValidationError
from ragmeter.answers import answers_from_records, load_answers
from ragmeter.answers.paired import compare_answers
from ragmeter.answers.report import check_answers
from ragmeter.cli import app


def _report():
    return check_answers(
        answers_from_records(answers(), variant="baseline"), golden(), corpus=corpus()
    )


def test_per_answer_verdicts() -> None:
    r = _report().by_id
    assert r["change-fee"].correct is False and r["change-fee"].supported is True
    assert r["refund-window"].correct is True and r["refund-window"].supported is True
    # correct amount, but the quote is not in the cited passage: correct, not supported
    assert r["first-bag"].correct is True and r["first-bag"].supported is False
    assert r["first-bag"].ok is False
    assert r["first-bag"].faithfulness.failed_quotes[0].found_elsewhere == ("doc:baggage",)
    assert r["name-change"].correct is True and r["name-change"].supported is None
    # nothing contradicts it, nothing supports it: unknown, never counted as supported
    assert r["name-change"].ok is None and r["name-change"].support_unknown
    assert r["pet-fee"].abstained and r["pet-fee"].abstained_from == "text"
    assert r["pet-fee"].correct is True


def test_stale_policy_is_flagged_faithful_but_wrong() -> None:
    rep = _report()
    (f,) = rep.faithful_but_wrong
    assert f.id == "change-fee" and f.stale
    assert f.cited == (
        {
            "doc": "fees-2024",
            "effective_date": "2024-01-01",
            "version": "2024.2",
            "superseded_by": "fees-2026",
        },
    )
    assert f.evidence == (
        {"doc": "fees-2026", "effective_date": "2026-03-01", "version": "2026.1"},
    )
    s = rep.summary()
    assert s["faithful_but_wrong"] == 1 and s["correct"] == 4 and s["n_scored"] == 5
    assert s["ok"] == 2 and s["ok_known"] == 4 and s["correct_support_unknown"] == 1
    assert s["quotes_checked"] == 3 and s["quotes_failed"] == 1
    assert s["abstention"]["abstention_rate"] == 1.0
    sl = rep.by_slice()
    assert sl["unanswerable"] == {"n": 1, "correct_rate": 1.0, "ok_rate": 1.0, "support_unknown": 0}
    assert sl["fees"]["correct_rate"] == 0.5
    assert rep.answer_ok() == {
        "change-fee": False,
        "refund-window": True,
        "first-bag": False,
        "name-change": None,
    }


def test_answering_the_unanswerable_and_false_abstention() -> None:
    recs = answers()
    recs[4] = {"id": "pet-fee", "answer": "Pets cost $125.", "abstained": False}
    recs[1] = {"id": "refund-window", "answer": "", "abstained": True}
    r = check_answers(answers_from_records(recs), golden(), corpus=corpus()).by_id
    assert (
        r["pet-fee"].correct is False and r["pet-fee"].reason == "answered an unanswerable question"
    )
    assert r["refund-window"].correct is False
    assert r["refund-window"].reason == "abstained on an answerable question"


def test_bad_answers_are_refused_with_file_line_field(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_text(
        '{"id": "change-fee", "answer": "x"}\n\n{"id": "change-fee", "answer": "y"}\n'
        '{"id": "nope", "answer": "z"}\n{"id": 3}\n',
        encoding="utf-8",
    )
    with pytest.raises(ValidationError) as exc:
        load_answers(p, golden=golden())
    text = str(exc.value)
    assert (
        "a.jsonl:3: field 'id': duplicate answer for question 'change-fee' (first on line 1)"
        in text
    )
    assert "a.jsonl:4: field 'id': 'nope' is not a question of the golden set" in text
    assert "a.jsonl:5: field 'id'" in text and "a.jsonl:5: field 'answer'" in text


def test_variants_compared_question_by_question() -> None:
    base = _report()
    recs = answers()
    recs[0] = {"id": "change-fee", "answer": "It is $75.", "citations": [{"doc": "fees-2026"}]}
    cand = check_answers(answers_from_records(recs, variant="fixed"), golden(), corpus=corpus())
    ac = compare_answers(base, cand)
    c = ac.comparison
    # name-change (correct, support unknown) is not a paired outcome: 4 questions, not 5
    assert (c.fixed, c.broken, c.n) == (1, 0, 4)
    assert c.mean_delta == pytest.approx(0.25)
    with pytest.raises(UsageError):
        compare_answers(base, cand, split="heldout")


def test_cli_answers_check(tmp_path: Path) -> None:
    paths = write_world(tmp_path)
    args = [
        "answers",
        "check",
        str(paths["answers"]),
        "--golden",
        str(paths["golden"]),
        "--corpus",
        str(paths["corpus"]),
    ]
    r = CliRunner().invoke(app, [*args, "--format", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["summary"]["faithful_but_wrong"] == 1
    assert out["faithful_but_wrong"][0]["cited"][0]["effective_date"] == "2024-01-01"
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0 and "faithful but wrong" in r.stdout and "fees-2024" in r.stdout
    # with the fake judge: every report says FAKE JUDGE
    r = CliRunner().invoke(
        app, [*args, "--judge", "fake", "--judge-metrics", "answer_relevance,correctness"]
    )
    assert r.exit_code == 0, r.output
    assert "FAKE JUDGE" in r.stdout
    r = CliRunner().invoke(app, [*args, "--judge", "fake", "--judge-metrics", "faithfulness"])
    assert r.exit_code == 2 and "context" in r.output  # no context ids: refused, not guessed
    r = CliRunner().invoke(app, [*args, "--format", "csv"])
    assert r.exit_code == 0 and r.stdout.splitlines()[0].startswith("variant,id,answerable")
    bad = write_jsonl(
        tmp_path / "bad.jsonl",
        [{"id": "change-fee", "answer": "x", "citations": [{"doc": "ghost"}]}],
    )
    r = CliRunner().invoke(
        app,
        [
            "answers",
            "check",
            str(bad),
            "--golden",
            str(paths["golden"]),
            "--corpus",
            str(paths["corpus"]),
        ],
    )
    assert r.exit_code == 2 and "cites unknown document 'ghost'" in " ".join(r.output.split())
    assert "Traceback" not in r.output


def test_cli_answers_compare(tmp_path: Path) -> None:
    paths = write_world(tmp_path)
    recs = answers()
    recs[0] = {"id": "change-fee", "answer": "It is $75.", "citations": [{"doc": "fees-2026"}]}
    cand = write_jsonl(tmp_path / "fixed.jsonl", recs)
    args = [
        "answers",
        "compare",
        str(paths["answers"]),
        str(cand),
        "--golden",
        str(paths["golden"]),
        "--corpus",
        str(paths["corpus"]),
    ]
    r = CliRunner().invoke(app, [*args, "--format", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert (out["fixed"], out["broken"]) == (1, 0) and out["candidate_variant"] == "fixed"
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0 and "fixed 1, broken 0" in r.stdout
