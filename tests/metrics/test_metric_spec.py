"""The metric grammar: one canonical string per metric, errors that say what is valid."""

from __future__ import annotations

import pytest

from ragmeter import UsageError
from ragmeter.metrics import REGISTRY, Metric, parse, parse_list


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("nDCG@10", "nDCG@10"),
        ("MRR@10", "RR@10"),
        ("RR", "RR"),
        ("R@100", "R@100"),
        ("Hit@5", "Hit@5"),
        ("P@5", "P@5"),
        ("AP", "AP"),
        ("AP@1000", "AP@1000"),
        ("Rprec", "Rprec"),
        ("nDCG(gain=exp)@10", "nDCG(gain=exp)@10"),
        ("nDCG(gain=linear)@10", "nDCG@10"),
        ("R(rel=2)@100", "R(rel=2)@100"),
        ("R(rel=1)@100", "R@100"),
        ("nDCG(gains=2:9,1:3,4:4.5)@10", "nDCG(gains=1:3,2:9,4:4.5)@10"),
        ("R@budget=1200", "R@budget=1200"),
        ("AllR@3", "AllR@3"),
    ],
)
def test_canonical_form_round_trips(text: str, canonical: str) -> None:
    m = parse(text)
    assert str(m) == canonical
    assert parse(str(m)) == m
    assert hash(parse(canonical)) == hash(m)


def test_gain_of() -> None:
    assert parse("nDCG@3").gain_of(2) == 2.0
    assert parse("nDCG(gain=exp)@3").gain_of(2) == 3.0
    assert parse("nDCG(gains=1:3,2:9)@3").gain_of(2) == 9.0
    assert parse("nDCG(gains=1:3,2:9)@3").gain_of(4) == 4.0  # unmapped grades keep their value
    assert parse("nDCG@3").gain_of(0) == 0.0
    assert parse("nDCG(gain=exp)@3").gain_of(-1) == 0.0


def test_parse_list_keeps_commas_inside_options() -> None:
    ms = parse_list("nDCG@10, RR@10,nDCG(gains=1:3,2:9)@5,RR@10")
    assert [str(m) for m in ms] == ["nDCG@10", "RR@10", "nDCG(gains=1:3,2:9)@5"]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("nDGC@10", "Did you mean 'nDCG'"),
        ("recal@10", "Valid metrics: AP, AllR"),
        ("P", "P needs a cutoff"),
        ("Rprec@5", "takes no cutoff"),
        ("nDCG(rel=2)@5", "nDCG keeps the gain of every grade"),
        ("nDCG(gain=cubic)@5", "gain must be one of linear, exp"),
        ("nDCG(gain=exp,gains=1:2)@5", "not both"),
        ("R@0", "positive"),
        ("R@ten", "cutoff must be an integer"),
        ("R(foo=1)@5", "unknown option 'foo'; R accepts: rel"),
        ("R@5@6", "cannot parse metric"),
        ("nDCG(gains=1-3)@5", "GRADE:GAIN"),
        ("R(rel=0)@5", "rel must be an integer >= 1"),
    ],
)
def test_errors_name_the_problem(text: str, fragment: str) -> None:
    with pytest.raises(UsageError) as exc:
        parse(text)
    assert fragment in str(exc.value)


def test_unknown_metric_lists_every_registered_name() -> None:
    with pytest.raises(UsageError) as exc:
        parse("Foo@3")
    for name in REGISTRY:
        assert name in str(exc.value)


def test_metric_at_changes_only_the_cutoff() -> None:
    m = parse("nDCG(gain=exp)@3")
    assert str(m.at(10)) == "nDCG(gain=exp)@10"
    assert str(m.at(budget=900)) == "nDCG(gain=exp)@budget=900"
    assert Metric("R", 5) == parse("R@5")
