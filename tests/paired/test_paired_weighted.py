"""The paired difference weighted to traffic (post-stratification): ``weighted_compare``."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter._errors import InputError, UsageError
from ragmeter.data import read_log
from ragmeter.paired import (
    Comparison,
    Traffic,
    TrafficShares,
    WeightedDifference,
    compare,
    weighted_compare,
)
from ragmeter.paired._weighted import parse_shares, shares_from_log

# three slices, 12 questions: a = +1, 0, 0, +1; b = 0, -1, 0; c = +1, +1, 0, 0, 0
DIFFS = {
    "a1": 1.0, "a2": 0.0, "a3": 0.0, "a4": 1.0,
    "b1": 0.0, "b2": -1.0, "b3": 0.0,
    "c1": 1.0, "c2": 1.0, "c3": 0.0, "c4": 0.0, "c5": 0.0,
}  # fmt: skip
SLICES = {q: (q[0],) for q in DIFFS}
SHARES = {"a": 0.5, "b": 0.3, "c": 0.2}


def test_three_slices_by_hand() -> None:
    w = weighted_compare(DIFFS, SLICES, SHARES, n_resamples=2000, seed=3)
    # d_a = 2/4 = 0.5, d_b = -1/3, d_c = 2/5 = 0.4
    # estimate = 0.5*0.5 + 0.3*(-1/3) + 0.2*0.4 = 0.25 - 0.10 + 0.08 = 0.23
    assert w.estimate == pytest.approx(0.23, abs=1e-12)
    # unweighted: (2 - 1 + 2) / 12 = 0.25
    assert w.unweighted == pytest.approx(0.25, abs=1e-12)
    # sample variances (ddof 1): a: mean .5, SS 4*.25 = 1 -> 1/3; b: mean -1/3,
    # SS 1/9 + 4/9 + 1/9 = 2/3 -> 1/3; c: mean .4, SS 2*.36 + 3*.16 = 1.2 -> 0.3
    # var = .25*(1/3)/4 + .09*(1/3)/3 + .04*0.3/5 = 1/48 + 0.01 + 0.0024 = 0.0332333...
    var = 0.25 * (1 / 3) / 4 + 0.09 * (1 / 3) / 3 + 0.04 * 0.3 / 5
    assert var == pytest.approx(0.0332333333, abs=1e-9)
    half = 1.959963984540054 * math.sqrt(var)  # z(0.975) * 0.182300...
    assert w.normal_ci == pytest.approx((0.23 - half, 0.23 + half), abs=1e-9)
    # Kish: 1 / (0.5^2/4 + 0.3^2/3 + 0.2^2/5) = 1 / (0.0625 + 0.03 + 0.008) = 9.9502...
    assert w.effective_n == pytest.approx(1 / 0.1005, abs=1e-9)
    rows = {s.name: s for s in w.slices}
    assert [s.name for s in w.slices] == ["a", "b", "c"]  # largest traffic share first
    assert rows["a"].golden_share == pytest.approx(4 / 12)
    assert rows["a"].ratio == pytest.approx(0.5 / (4 / 12))
    assert rows["b"].contribution == pytest.approx(-0.1)
    assert [s.name for s in w.carried_by] == ["a", "b"]  # 50% + 30% reaches 80%
    assert w.n_weighted == 12 and w.left_out == () and w.several == 0
    # the bootstrap: one generator, strata in name order, each drawn as rng.integers(0, n, (B, n))
    rng = np.random.default_rng(3)
    ref = np.zeros(2000)
    for name in ("a", "b", "c"):
        d = np.array([v for q, v in DIFFS.items() if q[0] == name])
        ref += SHARES[name] * d[rng.integers(0, len(d), size=(2000, len(d)))].mean(axis=1)
    assert w.ci == pytest.approx(tuple(np.percentile(ref, [2.5, 97.5])), abs=1e-12)
    # every number is in the record, and it is plain JSON
    d = json.loads(json.dumps(w.to_dict()))
    assert d["estimate"] == pytest.approx(0.23) and d["carried_by"] == ["a", "b"]
    assert d["interval_method"].startswith("stratified paired bootstrap")


def test_seeded_and_from_a_comparison() -> None:
    base = {q: 0.0 if v >= 0 else 1.0 for q, v in DIFFS.items()}
    cand = {q: base[q] + v for q, v in DIFFS.items()}
    c = compare(base, cand, outcome="correct", n_resamples=700, seed=11)
    w = weighted_compare(c, SLICES, SHARES)
    assert (w.n_resamples, w.seed, w.confidence) == (700, 11, 0.95)
    again = weighted_compare(DIFFS, SLICES, SHARES, n_resamples=700, seed=11)
    assert w.ci == again.ci and w.estimate == pytest.approx(again.estimate)
    assert w.unweighted == pytest.approx(c.mean_delta)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 12), min_size=1, max_size=5),
    data=st.data(),
)
def test_golden_shares_give_the_unweighted_estimate(sizes: list[int], data: st.DataObject) -> None:
    diffs: dict[str, float] = {}
    slices: dict[str, tuple[str, ...]] = {}
    for s, n in enumerate(sizes):
        for i in range(n):
            q = f"s{s}-q{i}"
            diffs[q] = data.draw(st.sampled_from([-1.0, 0.0, 1.0, 0.25, -0.5]))
            slices[q] = (f"s{s}",)
    total = sum(sizes)
    shares = {f"s{s}": n / total for s, n in enumerate(sizes)}
    w = weighted_compare(diffs, slices, shares, n_resamples=50)
    assert w.estimate == pytest.approx(float(np.mean(list(diffs.values()))), abs=1e-12)
    assert w.effective_n == pytest.approx(total)
    assert all(s.ratio == pytest.approx(1.0) for s in w.slices)
    assert w.ci[0] <= w.estimate + 1e-12 or w.ci[1] >= w.estimate - 1e-12


def test_interval_covers_the_true_traffic_difference() -> None:
    """Simulation over many seeds: three strata with different true differences, traffic
    weights far from the golden shares; the 95% stratified bootstrap interval covers the true
    traffic-weighted difference near its nominal rate."""
    sizes = {"x": 40, "y": 60, "z": 100}
    # per stratum, P(d = +1), P(d = -1) (else 0): true mean p_plus - p_minus
    probs = {"x": (0.35, 0.10), "y": (0.20, 0.15), "z": (0.10, 0.12)}
    shares = {"x": 0.6, "y": 0.3, "z": 0.1}
    truth = sum(shares[s] * (p - m) for s, (p, m) in probs.items())  # 0.6*.25+.3*.05-.1*.02
    assert truth == pytest.approx(0.163)
    slices = {f"{s}{i}": (s,) for s, n in sizes.items() for i in range(n)}
    covered = normal_covered = 0
    reps = 400
    for rep in range(reps):
        rng = np.random.default_rng(10_000 + rep)
        diffs = {}
        for s, n in sizes.items():
            p, m = probs[s]
            draw = rng.choice([1.0, -1.0, 0.0], size=n, p=[p, m, 1 - p - m])
            diffs.update({f"{s}{i}": float(v) for i, v in enumerate(draw)})
        w = weighted_compare(diffs, slices, shares, n_resamples=1000, seed=rep)
        covered += w.ci[0] <= truth <= w.ci[1]
        assert w.normal_ci is not None
        normal_covered += w.normal_ci[0] <= truth <= w.normal_ci[1]
    assert 0.92 <= covered / reps <= 0.98, covered / reps
    assert 0.92 <= normal_covered / reps <= 0.98, normal_covered / reps


def test_a_question_in_several_slices_counts_in_its_first_listed() -> None:
    diffs = {"q1": 1.0, "q2": 0.0, "q3": -1.0, "q4": 1.0}
    slices = {"q1": ("fees", "changes"), "q2": ("changes", "fees"), "q3": ("fees",), "q4": ()}
    w = weighted_compare(diffs, slices, {"fees": 0.5, "changes": 0.5}, n_resamples=20)
    rows = {s.name: s for s in w.slices}
    assert rows["fees"].n == 2 and rows["fees"].mean_delta == 0.0  # q1, q3
    assert rows["changes"].n == 1 and rows["changes"].mean_delta == 0.0  # q2
    assert w.several == 2 and w.left_out == ("q4",)
    assert any("several traffic slices" in n for n in w.notes)
    assert any("in no traffic slice" in n for n in w.notes)
    assert w.normal_ci is None  # a weighted stratum of one question has no sample variance


def test_unknown_slice_is_an_error_naming_it_unless_under_the_floor() -> None:
    with pytest.raises(UsageError, match=r"traffic slice 'd' .* no golden question"):
        weighted_compare(DIFFS, SLICES, {"a": 0.5, "b": 0.3, "c": 0.1, "d": 0.1})
    w = weighted_compare(DIFFS, SLICES, {"a": 0.5, "b": 0.3, "c": 0.195, "d": 0.005})
    assert dict(w.dropped) == {"d": 0.005}
    assert sum(s.traffic_share for s in w.slices) == pytest.approx(1.0)
    assert {s.name: s.traffic_share for s in w.slices}["a"] == pytest.approx(0.5 / 0.995)
    assert any("under the 1.0% floor" in n for n in w.notes)
    # a higher floor drops more; floor 0 drops nothing
    w = weighted_compare(
        DIFFS, SLICES, {"a": 0.5, "b": 0.3, "c": 0.15, "d": 0.05}, floor=0.1, n_resamples=10
    )
    assert dict(w.dropped) == {"d": 0.05}
    with pytest.raises(UsageError, match="'d'"):
        weighted_compare(DIFFS, SLICES, {"a": 0.5, "b": 0.3, "c": 0.195, "d": 0.005}, floor=0)


def test_an_empty_slice_is_an_error() -> None:
    # "b" is a golden slice, but its only question counts in "a", listed first
    slices = {"q1": ("a",), "q2": ("a", "b")}
    with pytest.raises(UsageError, match=r"'b'.*counts in a slice listed before it"):
        weighted_compare({"q1": 1.0, "q2": 0.0}, slices, {"a": 0.5, "b": 0.5})
    with pytest.raises(UsageError, match="empty slice name"):
        weighted_compare(DIFFS, SLICES, {"a": 0.5, "": 0.5})
    with pytest.raises(UsageError, match="empty slice name"):
        parse_shares("a=0.5,=0.5")
    with pytest.raises(UsageError, match="no compared question carries a slice"):
        weighted_compare({"q1": 1.0}, {}, {"a": 1.0})


@pytest.mark.parametrize(
    ("shares", "message"),
    [
        ({"a": 0.5, "b": 0.3, "c": 0.1}, "must sum to 1"),
        ({"a": 0.5, "b": 0.6, "c": -0.1}, "'c' is negative"),
        ({"a": float("nan"), "b": 0.5, "c": 0.5}, "not finite"),
        ({"a": "x", "b": 0.5, "c": 0.5}, "not a number"),
    ],
)
def test_bad_shares_are_refused(shares: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        weighted_compare(DIFFS, SLICES, shares)  # type: ignore[arg-type]


def test_parse_shares() -> None:
    assert dict(parse_shares(" a=0.5, b = 0.3,c=0.2").shares) == SHARES
    for text, message in [
        ("a=0.5,b", "not slice=share"),
        ("a=0.5,a=0.5", "given twice"),
        ("a=half", "not a number"),
        ("", "empty"),
    ]:
        with pytest.raises(UsageError, match=message):
            parse_shares(text)
    # rounding within 0.001 is accepted and rescaled
    w = weighted_compare(DIFFS, SLICES, parse_shares("a=0.333,b=0.333,c=0.333"), n_resamples=10)
    assert sum(s.traffic_share for s in w.slices) == pytest.approx(1.0)


def test_shares_from_a_log(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    lines = (
        [{"question": f"a {i}", "slice": "a"} for i in range(5)]
        + [{"question": f"b {i}", "slice": ["b", "a"]} for i in range(3)]
        + [{"question": "c", "slice": "c"}, {"question": "c", "slice": "c"}]
        + [{"question": "none"}]
    )
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    t = shares_from_log(read_log(log))
    assert dict(t.shares) == {"a": 0.5, "b": 0.3, "c": 0.2}  # repeats count, first listed
    assert (t.lines, t.unsliced, t.several) == (11, 1, 3)
    w = weighted_compare(DIFFS, SLICES, Traffic(log=log), n_resamples=2000, seed=3)
    assert w.estimate == pytest.approx(0.23)
    assert w.traffic is not None and w.traffic.source == f"log {log}"
    assert any("1 log line(s) have no slice" in n for n in w.notes)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "x", "slice": "a"}\n{"question": "y", "slice": 3}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:2.*slice"):
        shares_from_log(read_log(bad))
    with pytest.raises(InputError, match="no log line has a slice in field 'kind'"):
        shares_from_log(read_log(log), "kind")


def test_traffic_request_needs_one_source() -> None:
    with pytest.raises(UsageError, match="one of"):
        Traffic().load()
    with pytest.raises(UsageError, match="one of"):
        Traffic(log="x.jsonl", shares="a=1").load()
    assert isinstance(Traffic(shares={"a": 1.0}).load(), TrafficShares)


def test_recorded_with_the_comparison_and_read_back() -> None:
    base = {q: 0.0 if v >= 0 else 1.0 for q, v in DIFFS.items()}
    cand = {q: base[q] + v for q, v in DIFFS.items()}
    c = compare(base, cand, outcome="correct", n_resamples=300)
    w = weighted_compare(c, SLICES, parse_shares("a=0.5,b=0.3,c=0.2"))
    assert WeightedDifference.from_dict(json.loads(json.dumps(w.to_dict()))) == w
    with_traffic = replace(c, traffic=w)
    record = json.loads(json.dumps(with_traffic.to_dict()))
    assert record["traffic"]["estimate"] == pytest.approx(0.23)
    back = Comparison.from_dict(record)
    assert back.traffic == w
    # a record written before the field reads as none
    assert "traffic" not in c.to_dict() and Comparison.from_dict(c.to_dict()).traffic is None
    bad = dict(record, traffic=dict(record["traffic"], ci=[0.1]))
    with pytest.raises(InputError, match=r"traffic\.ci"):
        Comparison.from_dict(bad)
