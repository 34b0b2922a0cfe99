"""``ragmeter.workflows.diagnose.diagnose_experiment`` (``ragmeter diagnose --experiment``): the
diagnosis of an experiment's retrieved baseline made causal by its context ablations.

The fare-rules ablation example (retrieved, oracle, none, oracle+distractors; the extractive
stand-in generator, the fake judge) is run once in a copy of its folder, with one more variant
that changes the source *and* the order (it must be left out, said why). Then:

- the causal table read back from the written files equals the one ``ragmeter run`` builds from
  the result in memory, question by question, with the same ceiling;
- every question's cause follows the rule from the answer checks' correctness per source,
  re-derived here by hand;
- each inferred cell of the retrieval-by-answer table splits into proven causes summing to it;
- outputs not written yet, or written by another version of the file, are refused with the
  command to run.

The words every interface shows (:func:`signed`, :func:`ceiling_line`, :func:`cross_lines`,
:func:`cause_rows`) are checked on constructed tables, with properties over many of them.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from _experiment_files import FARE_RULES, fare_rules_experiment
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter import RagmeterWarning, UsageError
from ragmeter.diagnosis import CAUSE_INFO, CAUSES, CAUSES_APART, causal_table
from ragmeter.experiments import run_experiment
from ragmeter.workflows.diagnose import (
    Ablations,
    categories,
    causal_of,
    cause_rows,
    ceiling_line,
    cross_lines,
    diagnose_experiment,
    result_ablations,
    signed,
)

EXAMPLE = FARE_RULES / "ablation.toml"
#: a variant changing the source and the order: two changes, so it proves nothing alone
TWO_CHANGES = """
[[variant]]
name = "oracle reversed"
context = {source = "oracle", order = "reverse"}
"""
SOURCES = ("retrieved", "oracle", "none", "oracle+distractors")


def _experiment(root: Path, extra: str = "") -> Path:
    return fare_rules_experiment(
        root,
        EXAMPLE.read_text(encoding="utf-8") + extra,
        trees=("generators",),
        cache=["chunkings", "runs", "bm25"],
    )


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """The example with the two-change variant, run once: (its path, the result)."""
    path = _experiment(tmp_path_factory.mktemp("diagnose-experiment"), TWO_CHANGES)
    with pytest.warns(RagmeterWarning, match="oracle reversed"):
        result = run_experiment(path)
    return path, result


@pytest.fixture(scope="module")
def diagnosed(ran: tuple[Path, Any]) -> Any:
    return diagnose_experiment(ran[0])


def _expected_cause(o: dict[str, bool | None], no_oracle: bool) -> str:
    """The rule of issue 25, written out again: retrieved right -> memory (right with none) or
    working; wrong -> generation failure (oracle wrong), noise-sensitive (oracle right,
    distractors wrong) or retrieval failure; an outcome it needs unknown -> unknown."""
    if o["retrieved"] is None:
        return "unknown"
    if o["retrieved"]:
        return "memory" if o["none"] is True else "working"
    oracle = None if no_oracle else o["oracle"]
    if oracle is None:
        return "unknown"
    if not oracle:
        return "generation_failure"
    return "noise_sensitive" if o["oracle+distractors"] is False else "retrieval_failure"


# -- the example ------------------------------------------------------------------------------
def test_the_files_and_the_run_give_one_causal_table(ran, diagnosed) -> None:
    _, result = ran
    assert diagnosed.ablations is not None and diagnosed.causal is not None
    assert dict(diagnosed.ablations.variants) == {s: s for s in SOURCES}
    memory = causal_of(result_ablations(result))
    assert [(q.id, q.cause, dict(q.outcomes)) for q in diagnosed.causal.questions] == [
        (q.id, q.cause, dict(q.outcomes)) for q in memory.questions
    ]
    assert diagnosed.causal.ceiling_dict() == memory.ceiling_dict()
    assert diagnosed.causal.ceiling is not None and diagnosed.causal.ceiling.n == 80


def test_the_two_change_variant_is_left_out_and_said_why(diagnosed) -> None:
    (why,) = diagnosed.ablations.left_out
    assert why.startswith("oracle reversed: changes more than the context source")
    assert "oracle" in diagnosed.ablations.variants  # the one-change oracle is read instead


def test_every_question_lands_on_its_rule(ran, diagnosed) -> None:
    _, result = ran
    by_source = {v.settings.source: v for v in result.variants if v.name != "oracle reversed"}
    checks = {s: v.answers.report.by_id for s, v in by_source.items()}
    golden = {q.id: q for q in result.golden.questions}
    no_oracle = set(diagnosed.ablations.no_oracle_passage)
    for q in diagnosed.causal.questions:
        if not golden[q.id].answerable:
            assert q.cause == "unanswerable", q.id
            continue
        outcomes = {s: checks[s][q.id].correct for s in SOURCES}
        assert dict(q.outcomes) == outcomes
        assert q.cause == _expected_cause(outcomes, q.id in no_oracle), q.id
    assert diagnosed.causal.count("unanswerable") == sum(
        not q.answerable for q in result.golden.questions
    )


def test_each_inferred_cell_splits_into_proven_causes(diagnosed) -> None:
    table = diagnosed.table
    cross = diagnosed.causal.cross()
    assert cross, "the baseline's cells are known"
    for cell, causes in cross.items():
        assert sum(causes.values()) == table.count(cell), cell
    titles = {c.key: c.title for c in categories()}
    for cell, label, n, proven in cross_lines(diagnosed.causal):
        assert label == f"{titles[cell]} (inferred, {n})"
        assert sum(int(x) for x in re.findall(r"(\d+) ", proven)) == n


def test_the_proven_cause_names_the_link(diagnosed) -> None:
    d = diagnosed.diagnosis
    worst = diagnosed.causal.largest_proven_bad()
    assert worst is not None  # the stand-in generator fails on most questions, even with oracle
    assert d.basis == "proven"
    link = {"generation_failure": "generation", "retrieval_failure": "retrieval"}.get(worst)
    if link is not None:
        assert d.failing_link.startswith(link)


def test_the_json_holds_the_causal_table_and_what_it_read(diagnosed) -> None:
    out = json.loads(json.dumps(diagnosed.to_dict()))
    assert out["causal"]["counts"] == diagnosed.causal.counts()
    assert out["basis"] == "proven"
    assert out["ablations"]["variants"] == {s: s for s in SOURCES}
    assert out["ablations"]["left_out"] == list(diagnosed.ablations.left_out)


def test_an_experiment_without_ablations_is_diagnosed_as_before(ran) -> None:
    path, _ = ran
    text = path.read_text(encoding="utf-8")
    plain = path.with_name("plain.toml")  # the same baseline, the same outputs, no variant
    plain.write_text(text[: text.index("[[variant]]")], encoding="utf-8")
    got = diagnose_experiment(plain)
    assert got.causal is None and got.ablations is None
    assert got.table is not None and got.diagnosis.basis in ("inferred", None)
    assert "causal" not in got.to_dict() or got.to_dict()["causal"] is None


# -- refusals ---------------------------------------------------------------------------------
def test_an_experiment_not_run_yet_names_the_command(tmp_path: Path) -> None:
    path = _experiment(tmp_path)
    with pytest.raises(UsageError, match=r"variant 'retrieved' has no .* yet: run `ragmeter run"):
        diagnose_experiment(path)


def test_outputs_of_another_version_of_the_file_are_refused(ran, tmp_path: Path) -> None:
    path, _ = ran
    copy = tmp_path / "copy"
    shutil.copytree(path.parent, copy, ignore=shutil.ignore_patterns(".ragmeter-cache"))
    check = copy / "runs" / "ablation" / "oracle" / "answer_check.json"
    data = json.loads(check.read_text(encoding="utf-8"))
    data["context"]["source"] = "none"  # as if the file said "none" when it ran
    check.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(
        UsageError,
        match=r"'oracle' were written with context source 'none', and the file now says 'oracle'",
    ):
        diagnose_experiment(copy / path.name)


# -- the words every interface shows ------------------------------------------------------------
def test_signed_shows_the_side_of_zero() -> None:
    assert [signed(x) for x in (0.21, -0.1, 0.004, -0.0004, 0.0)] == [
        "+0.21",
        "-0.10",
        "+0.004",
        "-0.0004",
        "0.00",
    ]


@given(st.floats(min_value=-1, max_value=1).filter(lambda x: abs(x) >= 1e-6))
def test_signed_never_hides_the_sign(x: float) -> None:
    text = signed(x)
    assert text[0] == ("+" if x > 0 else "-")
    assert float(text) != 0 and (float(text) > 0) == (x > 0)


def test_the_ceiling_line_reads_as_the_issue_writes_it() -> None:
    # 20 answerable questions: 4 right with both, 6 fixed by the oracle, 1 broken, 9 wrong
    retrieved = {f"q{i:02d}": i < 4 or i == 10 for i in range(20)}
    oracle = {f"q{i:02d}": i < 10 for i in range(20)}
    t = causal_table({"retrieved": retrieved, "oracle": oracle})
    c = t.ceiling
    assert c is not None and (c.fixed, c.broken, c.n) == (6, 1, 20)
    lo, hi = c.ci
    assert ceiling_line(t) == (
        f"a perfect retriever at this budget: +0.25 answer-correct rate [{signed(lo)}, "
        f"{signed(hi)}] (fixed 6, broken 1, 20 answerable questions)"
    )
    assert ceiling_line(causal_table({"retrieved": retrieved, "none": oracle})) is None


def test_the_cross_line_of_the_issue() -> None:
    # 14 questions inferred retrieval failures: 10 right with the oracle, 4 still wrong
    ids = [f"q{i:02d}" for i in range(14)]
    t = causal_table(
        {"retrieved": dict.fromkeys(ids, False), "oracle": {q: i < 10 for i, q in enumerate(ids)}},
        observed=dict.fromkeys(ids, "retrieval_failure"),
    )
    assert cross_lines(t) == [
        (
            "retrieval_failure",
            "retrieval failure (inferred, 14)",
            14,
            "10 proven retrieval failures, 4 proven generation failures",
        )
    ]


OUTCOME = st.sampled_from([True, False, None])


@st.composite
def tables(draw: st.DrawFn) -> tuple[Any, Ablations]:
    n = draw(st.integers(1, 30))
    ids = [f"q{i}" for i in range(n)]
    sources = ["retrieved", *draw(st.sets(st.sampled_from(SOURCES[1:]), min_size=1))]
    outcomes = {s: {q: draw(OUTCOME) for q in ids} for s in sources}
    apart = draw(st.sets(st.sampled_from(ids)))
    blank = draw(st.sets(st.sampled_from(ids))) - apart
    cells = [c.key for c in categories()]
    observed = {q: draw(st.sampled_from(cells)) for q in ids if draw(st.booleans())}
    abl = Ablations(
        {s: s for s in sources},
        {s: {q: v for q, v in o.items() if q not in apart} for s, o in outcomes.items()},
        tuple(sorted(apart)),
        tuple(sorted(blank)),
    )
    t = causal_table(
        abl.outcomes, unanswerable=apart, observed=observed, no_oracle_passage=blank, seed=1,
        n_resamples=200,
    )  # fmt: skip
    return t, abl


@settings(max_examples=60, deadline=None)
@given(tables())
def test_the_rows_count_every_question_once(drawn: tuple[Any, Ablations]) -> None:
    t, abl = drawn
    rows = cause_rows(t, abl)
    counted = [r for r in rows if r.key != "no_oracle_passage"]
    bad_first = sorted(CAUSES, key=lambda k: not CAUSE_INFO[k].bad)  # stable: the table's order
    assert [r.key for r in counted] == [*bad_first, *CAUSES_APART]
    assert sum(r.count for r in counted) == t.n
    assert {q for r in counted for q in r.ids} == {q.id for q in t.questions}
    assert [r.basis for r in counted] == ["proven"] * len(CAUSES) + ["apart"] * len(CAUSES_APART)
    blank = [r for r in rows if r.key == "no_oracle_passage"]
    assert sum(r.count for r in blank) == len(abl.no_oracle_passage)
    lines = cross_lines(t)
    assert sum(n for _, _, n, _ in lines) == sum(q.observed is not None for q in t.questions)
    for _, _, n, proven in lines:
        assert sum(int(x) for x in re.findall(r"(\d+) ", proven)) == n
