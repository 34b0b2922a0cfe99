"""Repeats of one comparison (:mod:`ragmeter.paired._stable`) and ``gate(..., stable=...)``: a
question counts fixed (broken) only when it is so in every repeat; flaky questions are exactly
those whose verdict changes across repeats."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter import UsageError
from ragmeter.paired import GateRule, compare, flaky_questions, gate, stable_changes

IDS = [f"q{i}" for i in range(12)]


@st.composite
def repeated(draw: st.DrawFn) -> tuple[list[dict[str, float]], list[dict[str, float]], set[str]]:
    """Baseline and candidate verdicts over 2-5 repeats: every question's verdict fixed on both
    sides, except the chosen ones, whose candidate verdict flips in at least one repeat."""
    n = draw(st.integers(2, 5))
    base0 = {q: float(draw(st.booleans())) for q in IDS}
    cand0 = {q: float(draw(st.booleans())) for q in IDS}
    chosen = set(draw(st.sets(st.sampled_from(IDS))))
    flip_at = {q: draw(st.integers(1, n - 1)) for q in chosen}
    base = [dict(base0) for _ in range(n)]
    cand = [
        {q: (1.0 - v if q in chosen and r == flip_at[q] else v) for q, v in cand0.items()}
        for r in range(n)
    ]
    return base, cand, chosen


@settings(max_examples=200, deadline=None)
@given(repeated())
def test_the_flaky_questions_are_exactly_the_flipped_ones(case) -> None:
    base, cand, chosen = case
    assert flaky_questions(base) == ()
    assert set(flaky_questions(cand)) == chosen
    s = stable_changes(base, cand)
    assert s.n_repeats == len(base)
    assert set(s.flaky) == chosen
    assert list(s.flaky) == [q for q in IDS if q in chosen]  # question order
    # stable = fixed (broken) in repeat 0 and never flipped
    fixed0 = {q for q in IDS if cand[0][q] > base[0][q]}
    broken0 = {q for q in IDS if cand[0][q] < base[0][q]}
    assert set(s.fixed) == fixed0 - chosen
    assert set(s.broken) == broken0 - chosen


@settings(max_examples=100, deadline=None)
@given(repeated())
def test_gate_stable_counts_only_what_breaks_in_every_repeat(case) -> None:
    base, cand, _ = case
    c = compare(base[0], cand[0], outcome="answer correct", n_resamples=200)
    s = stable_changes(base, cand)
    rule = GateRule(max_broken=0)
    plain, steady = gate(c, rule), gate(c, rule, s)
    assert plain.checks[0].observed == c.broken
    assert steady.checks[0].observed == len(s.broken) <= c.broken
    assert steady.passed == (not s.broken)
    assert steady.to_dict()["stable"]["stable_broken_ids"] == list(s.broken)
    assert "every one of" in steady.statement and "every one of" not in plain.statement
    assert "stable" not in plain.to_dict()
    assert "Stable over" in steady.to_markdown() and "Stable over" not in plain.to_markdown()


def test_a_question_broken_in_one_repeat_only_is_not_counted() -> None:
    base = [{"a": 1.0, "b": 1.0, "c": 0.0}] * 3
    cand = [
        {"a": 0.0, "b": 0.0, "c": 1.0},
        {"a": 0.0, "b": 1.0, "c": 1.0},
        {"a": 0.0, "b": 1.0, "c": 0.0},
    ]
    s = stable_changes(base, cand)
    assert s.broken == ("a",) and s.fixed == () and s.flaky == ("b", "c")
    c = compare(base[0], cand[0], outcome="answer correct", n_resamples=200)
    assert c.broken == 2
    assert gate(c, GateRule(max_broken=1), s).passed
    assert not gate(c, GateRule(max_broken=1)).passed


def test_a_question_missing_from_a_repeat_is_never_stable() -> None:
    base = [{"a": 1.0}, {"a": None}]
    cand = [{"a": 0.0}, {"a": 0.0}]
    assert stable_changes(base, cand).broken == ()
    assert flaky_questions(base) == ()


def test_repeats_must_pair() -> None:
    with pytest.raises(UsageError, match="same repeat"):
        stable_changes([{"a": 1.0}] * 2, [{"a": 1.0}] * 3)
    with pytest.raises(UsageError, match="no repeat"):
        stable_changes([], [])
