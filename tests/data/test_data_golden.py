"""Golden sets: loading, views, and one validation test per bad-label case (line and field)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragmeter import InputError, Problem, UsageError, ValidationError
from ragmeter.data import (
    GoldenSet,
    Question,
    assign_split,
    load_corpus,
    load_golden,
    validate_golden,
    write_golden,
)

FIX = Path(__file__).parents[1] / "fixtures" / "data"
CORPUS = load_corpus(FIX / "corpus.jsonl")
FEES = CORPUS["fees"].text


def _q(qid: str = "q", **kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": qid,
        "question": "?",
        "answerable": True,
        "evidence": [{"doc": "fees", "start": 0, "end": 11, "grade": 2}],
    }
    base.update(kw)
    return base


def _span(doc: str, start: int, end: int, **kw: Any) -> dict[str, Any]:
    return {"doc": doc, "start": start, "end": end, "grade": 2, **kw}


def _problems(tmp_path: Path, records: list[Any]) -> list[Problem]:
    path = tmp_path / "g.jsonl"
    path.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n",
        encoding="utf-8",
    )
    return validate_golden(path, CORPUS)


def _only(problems: list[Problem]) -> Problem:
    assert len(problems) == 1, problems
    return problems[0]


# --- loading and views -----------------------------------------------------------------------


def test_fixture_loads_and_validates_clean() -> None:
    golden = load_golden(FIX / "golden.jsonl", CORPUS)
    assert golden.ids == ["q1", "q2", "q3", "q4", "q5"]
    assert len(golden) == 5 and "q3" in golden and golden["q3"].answer
    assert [q.id for q in golden] == golden.ids
    assert golden.by_id["q5"].answerable is False
    assert validate_golden(golden) == []
    assert validate_golden(FIX / "golden.jsonl", FIX / "corpus.jsonl") == []


def test_slices_splits_and_select() -> None:
    golden = load_golden(FIX / "golden.jsonl")
    assert golden.slices["q3"] == ("fees", "multi-passage")
    assert golden.splits == {
        "q1": "tune",
        "q2": "heldout",
        "q3": "tune",
        "q4": "tune",
        "q5": "heldout",
    }
    assert golden.slice_sizes() == {
        "fees": 2,
        "identifier-lookup": 1,
        "infants": 1,
        "multi-passage": 1,
        "unanswerable": 1,
    }
    held = golden.select(split="heldout")
    assert held.ids == ["q2", "q5"] and held.lines == (2, 5)
    assert golden.select(slice="fees", split="tune").ids == ["q1", "q3"]
    with pytest.raises(UsageError, match="tune"):
        golden.select(split="test")
    assert golden.doc_ids == ["fees", "infants", "refunds"]


def test_doc_qrels_keep_the_best_grade_per_document() -> None:
    qrels = load_golden(FIX / "golden.jsonl").doc_qrels()
    rows = sorted(
        zip(qrels.qid.to_pylist(), qrels.doc.to_pylist(), qrels.rel.tolist(), strict=True)
    )
    assert rows == [
        ("q1", "fees", 2),
        ("q2", "fees", 2),
        ("q3", "fees", 2),
        ("q3", "refunds", 2),
        ("q4", "infants", 2),
    ]


def test_write_golden_round_trip(tmp_path: Path) -> None:
    golden = load_golden(FIX / "golden.jsonl")
    out = write_golden(golden, tmp_path / "g.jsonl")
    again = load_golden(out, CORPUS)
    assert again.questions == golden.questions
    assert "null" not in out.read_text(encoding="utf-8")


def test_stats() -> None:
    stats = load_golden(FIX / "golden.jsonl", CORPUS).stats()
    assert stats["questions"] == 5 and stats["answerable"] == 4 and stats["unanswerable"] == 1
    assert stats["spans"] == 6
    assert stats["spans_per_question"] == {"min": 1, "median": 1.0, "mean": 1.5, "max": 3}
    assert stats["grades"] == {"1": 1, "2": 5}
    assert stats["required_spans"] == 5  # q3 marks 2 of its 3; the others default to top grade
    assert stats["splits"] == {"tune": 3, "heldout": 2}
    assert stats["small_slices"] == list(stats["slices"])  # every slice is under 10
    assert stats["documents_referenced"] == 3
    assert stats["version"].startswith("g-")


def test_load_golden_raises_every_problem_at_once(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    path.write_text(
        json.dumps(_q("a", split="test"))
        + "\n"
        + json.dumps(_q("a"))
        + "\n"
        + json.dumps(_q("b", evidence=[_span("nope", 0, 3)]))
        + "\n"
    )
    with pytest.raises(ValidationError) as info:
        load_golden(path, CORPUS)
    assert [(p.line, p.field) for p in info.value.problems] == [
        (1, "split"),
        (3, "evidence[0].doc"),
    ]  # line 2 is the first valid 'a'
    with pytest.raises(InputError, match="no questions"):
        (tmp_path / "empty.jsonl").write_text("\n")
        load_golden(tmp_path / "empty.jsonl")


def test_duplicate_ids_refused_in_memory() -> None:
    q = Question(id="x", question="?", answerable=False)
    with pytest.raises(InputError, match="duplicate question id 'x'"):
        GoldenSet([q, q])


# --- one test per validation case ------------------------------------------------------------


def test_schema_errors_name_line_and_field_path(tmp_path: Path) -> None:
    problems = _problems(
        tmp_path,
        [
            _q("a"),
            {"id": "b", "evidence": []},  # question missing
            _q("c", evidence=[_span("fees", -1, 4)]),  # negative start
            _q("d", evidence=[{"doc": "fees", "start": 0, "end": 4, "grade": 0}]),  # grade 0
            _q("e", split="test"),  # bad split
            _q("f", evidence=[_span("fees", 0, 4, colour="red")]),  # unknown field
            '{"id": "g", ',  # broken JSON
        ],
    )
    got = [(p.line, p.field) for p in problems]
    assert got == [
        (2, "question"),
        (3, "evidence[0].start"),
        (4, "evidence[0].grade"),
        (5, "split"),
        (6, "evidence[0].colour"),
        (7, None),
    ]
    assert "greater than or equal to 0 (got -1)" in problems[1].message
    assert all(p.path and p.path.endswith("g.jsonl") for p in problems)


def test_duplicate_question_id(tmp_path: Path) -> None:
    p = _only(_problems(tmp_path, [_q("a"), _q("b"), _q("a")]))
    assert (p.line, p.field) == (3, "id")
    assert "duplicate question id 'a' (first on line 1)" in p.message


def test_unknown_document_suggests_the_near_miss(tmp_path: Path) -> None:
    p = _only(_problems(tmp_path, [_q(evidence=[_span("refund", 0, 5)])]))
    assert (p.line, p.field) == (1, "evidence[0].doc")
    assert "unknown document 'refund'" in p.message and "did you mean 'refunds'?" in p.message


def test_span_out_of_bounds(tmp_path: Path) -> None:
    n = len(CORPUS["infants"].text)
    p = _only(_problems(tmp_path, [_q(evidence=[_span("infants", 5, n + 1)])]))
    assert (p.line, p.field) == (1, "evidence[0].end")
    assert f"out of bounds: document 'infants' has {n} characters" in p.message


@pytest.mark.parametrize("start,end", [(7, 7), (9, 3)])
def test_empty_span(tmp_path: Path, start: int, end: int) -> None:
    p = _only(_problems(tmp_path, [_q(evidence=[_span("fees", start, end)])]))
    assert (p.line, p.field) == (1, "evidence[0].end")
    assert "empty span" in p.message


def test_identical_and_overlapping_spans(tmp_path: Path) -> None:
    problems = _problems(
        tmp_path,
        [
            _q("a", evidence=[_span("fees", 0, 10), _span("fees", 0, 10)]),
            _q(
                "b", evidence=[_span("fees", 20, 40), _span("refunds", 0, 30), _span("fees", 5, 25)]
            ),
            _q("c", evidence=[_span("fees", 0, 10), _span("fees", 10, 20)]),  # touching is fine
            _q("d", evidence=[_span("fees", 0, 50), _span("fees", 10, 20), _span("fees", 30, 40)]),
        ],
    )
    got = [(p.line, p.field) for p in problems]
    assert got == [(1, "evidence[1]"), (2, "evidence[0]"), (4, "evidence[1]"), (4, "evidence[2]")]
    assert "duplicates evidence[0]" in problems[0].message
    assert "span 20-40 overlaps evidence[2] (5-25) on document 'fees'" in problems[1].message


def test_text_mismatch_suggests_relocate(tmp_path: Path) -> None:
    start = FEES.index("Rule 16")
    problems = _problems(
        tmp_path,
        [
            _q("ok", evidence=[_span("fees", start, start + 7, text="Rule 16")]),
            _q("bad", evidence=[_span("fees", start, start + 7, text="Rule 61")]),
        ],
    )
    p = _only(problems)
    assert (p.line, p.field) == (2, "evidence[0].text")
    assert "'Rule 61' does not match" in p.message and "reads 'Rule 16'" in p.message
    assert "ragmeter golden relocate" in p.message


def test_answerable_without_evidence(tmp_path: Path) -> None:
    p = _only(_problems(tmp_path, [_q(evidence=[])]))
    assert (p.line, p.field) == (1, "evidence")
    assert "answerable question has no evidence" in p.message


def test_unanswerable_with_evidence(tmp_path: Path) -> None:
    p = _only(_problems(tmp_path, [_q(answerable=False)]))
    assert (p.line, p.field) == (1, "evidence")
    assert "unanswerable" in p.message


def test_all_problems_reported_together_in_line_order(tmp_path: Path) -> None:
    problems = _problems(
        tmp_path,
        [
            _q("a", evidence=[_span("nope", 0, 1)]),
            _q("b", split="later"),
            _q("c", evidence=[]),
            _q("a"),
        ],
    )
    assert [p.line for p in problems] == [1, 2, 3, 4]


def test_without_a_corpus_only_corpus_free_checks_run(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps(_q(evidence=[_span("nope", 0, 10**6, text="zz")])) + "\n")
    assert validate_golden(path) == []
    assert [p.field for p in validate_golden(path, CORPUS)] == ["evidence[0].doc"]


# --- split assignment ------------------------------------------------------------------------


def test_assign_split_is_deterministic_and_about_a_fifth() -> None:
    ids = [f"question-{i}" for i in range(20_000)]
    splits = [assign_split(i) for i in ids]
    assert splits == [assign_split(i) for i in ids]
    share = splits.count("heldout") / len(ids)
    assert 0.19 < share < 0.21
    assert all(assign_split(i, 0.0) == "tune" for i in ids[:100])
    assert all(assign_split(i, 1.0) == "heldout" for i in ids[:100])
