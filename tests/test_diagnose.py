"""The retrieval-by-answer table and the diagnosis, on the seed's lab sample and variations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _answers_fixture import answers, corpus, golden, write_jsonl, write_world
from typer.testing import CliRunner

from ragmeter._errors import UsageError
from ragmeter.answers._schema import answers_from_records
from ragmeter.answers.diagnose import RecallAt, Thresholds, diagnose
from ragmeter.answers.report import check_answers
from ragmeter.answers.table import build_table, table_from_counts
from ragmeter.cli._app import app


def _lab_pairs() -> list[tuple[int, int]]:
    # the seed's hands-on lab, second block, verbatim
    return [(1, 1)] * 41 + [(1, 0)] * 9 + [(0, 1)] * 6 + [(0, 0)] * 14


def test_lab_sample_table_reproduces_exactly() -> None:
    pairs = _lab_pairs()
    t = build_table({f"q{i}": bool(e) for i, (e, _) in enumerate(pairs)},
                    {f"q{i}": bool(a) for i, (_, a) in enumerate(pairs)})
    assert t.n == 70
    assert [t.count(k) for k in ("working", "generation_failure", "from_memory",
                                 "retrieval_failure")] == [41, 9, 6, 14]
    assert t.largest_bad is not None and t.largest_bad.key == "retrieval_failure"
    assert t.largest_bad.title == "retrieval failure"
    assert "a bigger model cannot help" in t.largest_bad.reading
    assert t.to_dict()["largest_bad_cell"] == "retrieval_failure"
    from_counts = table_from_counts(41, 9, 6, 14)
    assert [from_counts.count(c) for c in ("working", "generation_failure", "from_memory",
                                           "retrieval_failure")] == [41, 9, 6, 14]


def test_lab_sample_diagnosis_names_retrieval() -> None:
    d = diagnose(table=table_from_counts(41, 9, 6, 14), golden_version="v3")
    steps = {s.key: s for s in d.steps}
    assert steps["prompt_k"].status == "fail"
    assert steps["prompt_k"].value == pytest.approx(50 / 70)
    assert steps["generation"].status == "pass"
    assert steps["generation"].value == pytest.approx(41 / 50)
    assert d.failing_link == "retrieval (ranking)"
    assert any("largest bad cell: retrieval failure (14 of 70)" in n for n in d.notes)
    e = d.experiment
    assert "reranker" in e.change and "golden v3 tune split" in e.comparison
    assert "fixed - broken <= 0" in e.refutation and "includes 0" in e.refutation
    assert e.assumption is not None  # headroom not measured: said so


def test_headroom_decides_candidates_vs_ranking() -> None:
    t = table_from_counts(41, 9, 6, 14)
    low = diagnose(table=t, prompt_recall=RecallAt("AllR@3", 0.71, 70),
                   headroom_recall=RecallAt("AllR@50", 0.80, 70), golden_version="v3")
    assert low.failing_link == "retrieval (candidates)"
    assert "hybrid" in low.experiment.change and "AllR@50" in low.experiment.metric
    high = diagnose(table=t, prompt_recall=RecallAt("AllR@3", 0.71, 70),
                    headroom_recall=RecallAt("AllR@50", 0.97, 70), golden_version="v3")
    assert high.failing_link == "retrieval (ranking)" and high.experiment.assumption is None
    assert high.experiment.metric == "nDCG(gain=exp)@3 and AllR@3"
    assert "AllR@3 paired per question on golden v3 tune split" in high.experiment.comparison


def test_generation_failure_and_tie_break_by_largest_bad_cell() -> None:
    d = diagnose(table=table_from_counts(40, 20, 2, 3))
    assert d.failing_link == "generation"
    assert "answer correct and supported" in d.experiment.metric
    # both retrieval and generation fail: the largest bad cell decides
    both = diagnose(table=table_from_counts(20, 25, 5, 20))
    assert both.failing_link == "generation"
    assert any("largest bad cell" in n and "decides" in n for n in both.notes)
    both = diagnose(table=table_from_counts(20, 10, 5, 35))
    assert both.failing_link.startswith("retrieval")


def test_stale_slice_diagnosed_after_the_chain_passes() -> None:
    rep = check_answers(answers_from_records(answers()), golden(), corpus=corpus())
    t = build_table({q: True for q in rep.answer_ok()}, rep.answer_ok())
    d = diagnose(table=t, report=rep)
    # 2 of 4 answers ok with evidence in context -> generation fails first
    assert d.failing_link == "generation"
    passing = diagnose(report=rep, prompt_recall=RecallAt("AllR@3", 0.95, 4),
                       headroom_recall=RecallAt("AllR@50", 1.0, 4),
                       thresholds=Thresholds(answer_ok=0.5))
    assert passing.failing_link == "stale sources"
    assert "fees-2024" in passing.experiment.change


def test_nothing_given_is_refused() -> None:
    with pytest.raises(UsageError):
        diagnose()
    with pytest.raises(UsageError):
        build_table({"a": None}, {"a": True})


def test_cli_diagnose(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["diagnose", "--counts", "41,9,6,14", "--format", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["table"]["largest_bad_cell"] == "retrieval_failure"
    assert out["failing_link"] == "retrieval (ranking)"
    assert [c["count"] for c in out["table"]["cells"]] == [41, 9, 6, 14]
    pairs = _lab_pairs()
    tab = write_jsonl(tmp_path / "t.jsonl", [{"id": f"q{i}", "evidence_in_context": bool(e),
                                             "answer_ok": bool(a)} for i, (e, a) in enumerate(pairs)])
    r = CliRunner().invoke(app, ["diagnose", "--table", str(tab)])
    assert r.exit_code == 0 and "retrieval failure (14 of 70)" in r.stdout
    assert "refute" in r.stdout
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "a", "evidence_in_context": "yes",
                                               "answer_ok": True}])
    r = CliRunner().invoke(app, ["diagnose", "--table", str(bad)])
    assert r.exit_code == 2 and "bad.jsonl:1: field 'evidence_in_context'" in " ".join(r.output.split())
    paths = write_world(tmp_path)
    r = CliRunner().invoke(app, ["diagnose", "--golden", str(paths["golden"]), "--corpus",
                                 str(paths["corpus"]), "--answers", str(paths["answers"]),
                                 "--format", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    # no retrieval numbers: generation cannot be told from retrieval, the stale slice can
    assert out["answers"]["faithful_but_wrong"] == 1 and out["failing_link"] == "stale sources"
    assert {s["key"]: s["status"] for s in out["steps"]}["generation"] == "unknown"


def test_without_retrieval_numbers_the_advice_is_to_measure_first() -> None:
    recs = answers()
    recs[0] = {"id": "change-fee", "answer": "It is $90.", "citations": [{"doc": "fees-2026"}]}
    recs[1] = {"id": "refund-window", "answer": "Within 30 days.", "citations": []}
    rep = check_answers(answers_from_records(recs), golden(), corpus=corpus())
    assert not rep.faithful_but_wrong
    d = diagnose(report=rep)
    assert d.failing_link is None and d.experiment.link == "unknown"
    assert "AllR@k" in d.experiment.change
