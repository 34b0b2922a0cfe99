"""The CI gate: the rule stated first, checks overall and per slice, markdown and JUnit XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from ragmeter import Evaluation, UsageError
from ragmeter.metrics import parse
from ragmeter.paired import GateRule, compare, gate


def pair(fixed: int, broken: int, n: int = 100, slices: dict | None = None):
    a = np.zeros(n)
    a[: n * 7 // 10] = 1
    b = a.copy()
    b[n * 7 // 10 : n * 7 // 10 + fixed] = 1
    b[:broken] = 0
    qids = tuple(f"q{i:03d}" for i in range(n))
    m = (parse("AllR@budget=1200"),)
    kw = {"slices": slices or {}, "golden_version": "g1"}
    return (
        Evaluation("base", m, qids, a[:, None], **kw),
        Evaluation("cand", m, qids, b[:, None], **kw),
    )


RULE = GateRule(max_broken=2, min_delta=0.0, require_ci_above=-0.01)


def test_rule_statement_reads_as_a_refutation() -> None:
    assert RULE.statement("AllR@budget=1200") == (
        "The candidate fails on AllR@budget=1200 if more than 2 questions broken, or the mean "
        "paired difference is below +0, or the lower end of the 95% bootstrap interval is below "
        "-0.01 (overall)."
    )
    with pytest.raises(UsageError, match="needs a rule"):
        GateRule()
    with pytest.raises(UsageError, match="max-broken"):
        GateRule(max_broken=-1)


def test_passing_pair() -> None:
    c = compare(*pair(fixed=12, broken=1))
    r = gate(c, RULE)
    assert r.passed and r.exit_code == 0
    assert [(ch.check, ch.passed) for ch in r.checks] == [
        ("broken", True),
        ("mean delta", True),
        ("interval lower end", True),
    ]


def test_failing_pair_fails_each_broken_check() -> None:
    c = compare(*pair(fixed=4, broken=3))
    r = gate(c, RULE)
    assert not r.passed and r.exit_code == 1
    failed = [ch.check for ch in r.checks if ch.failed]
    assert "broken" in failed and "interval lower end" in failed
    assert r.checks[0].observed == 3 and r.checks[0].threshold == 2


def test_boundaries_equal_values_pass() -> None:
    c = compare(*pair(fixed=2, broken=2))
    assert c.mean_delta == 0.0
    r = gate(c, GateRule(max_broken=2, min_delta=0.0, require_ci_above=c.ci[0]))
    assert r.passed


def test_non_binary_metric_counts_losses() -> None:
    a = {"q1": 0.5, "q2": 0.2, "q3": 0.9}
    b = {"q1": 0.4, "q2": 0.3, "q3": 0.9}
    r = gate(compare(a, b, "nDCG@10"), GateRule(max_broken=0))
    assert r.checks[0].check == "losses" and r.checks[0].observed == 1 and not r.passed
    assert "questions whose value fell (losses)" in r.statement


def test_per_slice_checks_skip_small_slices_and_allow_chance() -> None:
    # the "codes" slice (questions 0..29) holds all 3 broken questions
    slices = {f"q{i:03d}": ("codes",) if i < 30 else ("fees",) for i in range(100)}
    slices.update({f"q{i:03d}": ("codes", "tiny") for i in range(5)})
    base, cand = pair(fixed=20, broken=3, slices=slices)
    with pytest.warns(UserWarning, match="direction, not proof: tiny"):
        c = compare(base, cand)
    overall = gate(c, GateRule(max_broken=3))
    assert overall.passed
    per = gate(c, GateRule(max_broken=2, per_slice=True))
    by_scope = {ch.scope: ch for ch in per.checks}
    assert set(by_scope) == {"overall", "slice codes", "slice fees"}
    assert per.skipped == (("tiny", 5),)  # 5 questions: not gated, listed
    # 3 broken and no win in 30 questions: sign test p = 0.25; over 3 slices it is the second
    # smallest (fees: 20 fixed, p = 2 / 2^20), so Holm multiplies it by 2: 0.5, chance
    codes = by_scope["slice codes"]
    assert not codes.passed and codes.chance and not codes.failed
    assert codes.p_value == pytest.approx(0.25) and codes.p_adjusted == pytest.approx(0.5)
    assert [ch.scope for ch in per.checks if ch.failed] == ["overall"]  # 3 broken > 2
    assert "in any slice of 10 or more questions where the change is beyond chance" in per.statement
    assert per.skip_lines() == [
        "slice tiny: skipped, 5 questions (under 10: a direction, not proof)"
    ]


def test_markdown_states_the_rule_before_the_numbers() -> None:
    r = gate(compare(*pair(fixed=4, broken=3)), RULE)
    md = r.to_markdown()
    assert md.startswith("## ragmeter gate FAILED: cand vs base on AllR@budget=1200")
    assert md.index("**Rule, stated before the numbers:**") < md.index("| scope |")
    assert "| overall | broken | 3 | 2 | **FAIL** |" in md
    assert "Broken: q000, q001, q002" in md


@pytest.mark.parametrize("fixed, broken, failures", [(12, 1, 0), (4, 3, 2)])
def test_junit_xml(fixed: int, broken: int, failures: int) -> None:
    r = gate(compare(*pair(fixed, broken)), RULE)
    root = ET.fromstring(r.to_junit_xml())
    assert root.tag == "testsuites"
    suite = root.find("testsuite")
    assert suite is not None
    assert suite.get("tests") == "3" and suite.get("failures") == str(failures)
    cases = suite.findall("testcase")
    assert [c.get("classname") for c in cases] == ["ragmeter.gate.overall"] * 3
    assert len([c for c in cases if c.find("failure") is not None]) == failures
    rule = suite.find("properties/property[@name='rule']")
    assert rule is not None and rule.get("value", "").startswith("The candidate fails on")
