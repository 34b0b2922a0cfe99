"""Correctness: SQuAD normalisation, token F1, number/money/date-aware matching, the combined rule
and abstention."""

from __future__ import annotations

import pytest

from ragmeter.answers._values import extract_values
from ragmeter.answers.abstention import abstention_verdict, summarize_abstention
from ragmeter.answers.correctness import (
    contains_reference,
    exact_match,
    normalize_answer,
    score_correctness,
    token_f1,
    value_match,
)


def test_squad_normalisation_and_exact_match() -> None:
    assert normalize_answer("The  Change-fee, is $75!") == "change fee is 75"
    assert exact_match("the Basic fare", "Basic fare.")
    assert not exact_match("Basic fare", "Standard fare")


def test_token_f1_by_hand() -> None:
    # answer tokens: change fee is 75 dollars (5); reference: change fee 75 (3); common 3
    # P = 3/5, R = 3/3, F1 = 2 * 0.6 * 1 / 1.6 = 0.75
    assert token_f1("The change fee is 75 dollars", "change fee 75") == pytest.approx(0.75)
    assert token_f1("", "") == 1.0 and token_f1("x", "") == 0.0
    assert token_f1("fee fee", "fee") == pytest.approx(2 * 0.5 * 1 / 1.5)  # multiset overlap


@pytest.mark.parametrize(
    "a,b",
    [
        ("$75", "75 USD"),
        ("$75", "USD 75.00"),
        ("75 dollars", "$75.0"),
        ("$1,250.50", "1250.5 USD"),
        ("90 days", "ninety days"),
        ("2 weeks", "14 days"),
        ("24 hours", "1440 minutes"),
        ("March 1, 2026", "2026-03-01"),
        ("1st March 2026", "2026-03-01"),
        ("10%", "10 percent"),
        ("Mar. 1 2026", "1 March 2026"),
    ],
)
def test_value_forms_that_match(a: str, b: str) -> None:
    assert extract_values(a) == extract_values(b), (a, b)


@pytest.mark.parametrize(
    "a,b",
    [
        ("$75", "75 EUR"),
        ("$75", "$57"),
        ("90 days", "90 hours"),
        ("2026-03-01", "2026-01-03"),
        ("75", "$75"),
        # hours and calendar days are kept apart on purpose
        ("24 hours", "1 day"),
    ],
)
def test_value_forms_that_differ(a: str, b: str) -> None:
    assert extract_values(a) != extract_values(b)


def test_value_match_rules() -> None:
    assert value_match("The fee is $75 per passenger.", "75 USD").matched  # type: ignore[union-attr]
    vm = value_match("It is $50, or $75 on Flex fares.", "$75")
    assert vm is not None and not vm.matched and "states 50 USD" in vm.explain()
    vm = value_match("It is $50.", "$75")
    assert vm is not None and "missing 75 USD" in vm.explain()
    # plain numbers are required but never conflict ("Rule 16, section 2" still matches 16)
    assert value_match("See Rule 16, section 2.", "Rule 16").matched  # type: ignore[union-attr]
    assert value_match("No fee.", "not permitted") is None


def test_combined_rule() -> None:
    assert score_correctness("The change fee is 75 USD per passenger.", "$75").correct
    assert not score_correctness("The change fee is $50.", "$75").correct
    c = score_correctness(
        "No, name changes are not permitted on Basic fares.",
        "Name changes are not permitted on Basic fares",
    )
    assert c.correct and c.contains and c.value_match is None
    c = score_correctness("Names cannot be changed.", "Name changes are not permitted")
    assert not c.correct and "token F1" in c.reason
    assert contains_reference("you get a refund within the window", "within the window")


def test_abstention_rule() -> None:
    assert abstention_verdict(False, True) == (True, "abstained on an unanswerable question")
    assert abstention_verdict(False, False)[0] is False
    assert abstention_verdict(True, True)[0] is False
    assert abstention_verdict(True, False)[0] is None
    s = summarize_abstention(
        [(False, True), (False, False), (True, True), (True, False), (True, False), (True, False)]
    )
    assert (s.n_unanswerable, s.abstained_unanswerable) == (2, 1)
    assert s.abstention_rate == 0.5 and s.false_abstention_rate == 0.25
