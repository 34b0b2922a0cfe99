"""The paired prediction-powered interval (ragmeter.paired._ppi): a hand computation, the
coverage by simulation (a judge biased by a known amount), the fall-back to human-only when the
judge is noise, the refusals, and the record's round trip."""

from __future__ import annotations

import json
import math
import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter._errors import UsageError
from ragmeter.paired import Comparison, PPIInterval, compare, ppi_compare
from ragmeter.paired._ppi import MIN_LABELLED, ppi_kernel

Z95 = 1.959963984540054


# -- a hand computation --------------------------------------------------------------------------
def tiny() -> tuple[dict[str, float], ...]:
    """12 questions judged, the first 10 labelled by humans."""
    ids = [f"q{i:02d}" for i in range(12)]
    jb = [0, 1, 1, 0, 1, 0, 1, 1, 0, 0, 1, 0]
    jc = [1, 1, 1, 1, 1, 0, 1, 0, 1, 1, 1, 1]
    hb = [0, 1, 1, 0, 1, 0, 1, 1, 0, 1]
    hc = [1, 1, 0, 0, 1, 0, 1, 0, 1, 1]
    return (
        dict(zip(ids, map(float, jb), strict=True)),
        dict(zip(ids, map(float, jc), strict=True)),
        dict(zip(ids[:10], map(float, hb), strict=True)),
        dict(zip(ids[:10], map(float, hc), strict=True)),
    )


def test_hand_computation_on_a_tiny_example() -> None:
    jb, jc, hb, hc = tiny()
    r = ppi_compare(jb, jc, hb, hc)
    j = [jc[q] - jb[q] for q in jb]  # 1,0,0,1,0,0,0,-1,1,1,0,1
    h = [hc[q] - hb[q] for q in hb]  # 1,0,-1,0,0,0,0,-1,1,0
    jl = j[:10]
    big_n, n = 12, 10
    var_j = statistics.variance(j)
    var_h = statistics.variance(h)
    cov = statistics.covariance(h, jl)
    lam = min(1.0, max(0.0, cov / var_j))
    theta = lam * statistics.fmean(j) + statistics.fmean(
        x - lam * y for x, y in zip(h, jl, strict=True)
    )
    var = var_h / n + (1 / n - 1 / big_n) * (lam**2 * var_j - 2 * lam * cov)
    se = math.sqrt(var)
    assert r.lam == pytest.approx(lam)
    assert r.ppi.estimate == pytest.approx(theta)
    assert r.se == pytest.approx(se)
    assert (r.ppi.lo, r.ppi.hi) == pytest.approx((theta - Z95 * se, theta + Z95 * se))
    assert r.judge.estimate == pytest.approx(1 / 3) and r.judge.n == 12
    assert r.human.estimate == pytest.approx(0.0) and r.human.n == 10
    assert r.judge_bias == pytest.approx(0.3)
    assert r.n == 12 and r.n_labelled == 10
    assert r.ppi.width == pytest.approx(2 * Z95 * se)
    # the judge-only interval is the comparison's own paired bootstrap on the same values
    c = compare(jb, jc, outcome="judge")
    assert (r.judge.lo, r.judge.hi) == pytest.approx(c.ci)


def test_hand_values_of_the_tiny_example() -> None:
    # J = 1,0,0,1,0,0,0,-1,1,1,0,1: sum 4, sum of squares 6 -> Var = (6 - 16/12)/11
    jb, jc, hb, hc = tiny()
    r = ppi_compare(jb, jc, hb, hc)
    var_j = (6 - 16 / 12) / 11
    # H = 1,0,-1,0,0,0,0,-1,1,0 (mean 0), J_L = 1,0,0,1,0,0,0,-1,1,1 (mean 0.3)
    # sum (H - 0)(J_L - 0.3) = sum H*J_L - 0.3 * sum H = (1 + 0 + 1 + 1) - 0 = 3
    cov = 3 / 9
    lam = cov / var_j
    assert r.lam == pytest.approx(lam)
    theta = lam * (4 / 12) + (0 - lam * 0.3)
    assert r.ppi.estimate == pytest.approx(theta)
    var_h = 4 / 9
    var = var_h / 10 + (1 / 10 - 1 / 12) * (lam**2 * var_j - 2 * lam * cov)
    assert r.se == pytest.approx(math.sqrt(var))


# -- simulation ------------------------------------------------------------------------------------
def simulate(seeds: int, big_n: int, n: int, *, noise_judge: bool = False, seed: int = 0):
    """``seeds`` independent golden sets: human verdicts with a true difference of +0.12, a
    judge that errs on 10% of answers and calls half of the candidate's wrong answers right
    (its difference is biased upwards by 0.14), n questions labelled at random."""
    rng = np.random.default_rng(seed)
    hb = rng.random((seeds, big_n)) < 0.6
    hc = rng.random((seeds, big_n)) < np.where(hb, 0.9, 0.45)  # P = 0.72: truth +0.12
    truth = 0.6 * 0.9 + 0.4 * 0.45 - 0.6
    if noise_judge:
        jb = rng.random((seeds, big_n)) < 0.5
        jc = rng.random((seeds, big_n)) < 0.6
    else:
        u = rng.random((seeds, big_n, 2))
        jb = np.where(hb, u[..., 0] >= 0.1, u[..., 0] < 0.1)
        jc = np.where(hc, u[..., 1] >= 0.1, u[..., 1] < 0.5)
    j = jc.astype(float) - jb
    h = hc.astype(float) - hb
    lab = np.argsort(rng.random((seeds, big_n)), axis=1)[:, :n]
    return truth, j, np.take_along_axis(j, lab, 1), np.take_along_axis(h, lab, 1)


def test_coverage_by_simulation_with_a_biased_judge() -> None:
    truth, j, jl, hl = simulate(400, 400, 100)
    # the judge's bias, known by construction: E[J] - E[H] = (0.72*0.9 + 0.28*0.5)
    # - (0.6*0.9 + 0.4*0.1) - 0.12 = 0.788 - 0.58 - 0.12 = +0.088
    assert j.mean() - truth == pytest.approx(0.088, abs=0.005)
    theta, se, lam = ppi_kernel(j, jl, hl)
    ppi_cover = np.mean(np.abs(theta - truth) <= Z95 * se)
    assert 0.93 <= ppi_cover <= 0.97, ppi_cover
    # judge-only: normal interval on J over N; it is centred on the wrong number
    judge_se = j.std(axis=1, ddof=1) / math.sqrt(j.shape[1])
    judge_cover = np.mean(np.abs(j.mean(axis=1) - truth) <= Z95 * judge_se)
    assert judge_cover < 0.5, judge_cover
    # human-only: normal interval on H over the labelled questions; covers, but wider
    human_se = hl.std(axis=1, ddof=1) / math.sqrt(hl.shape[1])
    human_cover = np.mean(np.abs(hl.mean(axis=1) - truth) <= Z95 * human_se)
    assert 0.92 <= human_cover <= 0.98
    assert np.mean(se) < 0.95 * np.mean(human_se)  # narrower than human-only on average
    assert 0.2 < np.mean(lam) < 0.8


def test_judge_only_bootstrap_undercovers_where_ppi_covers() -> None:
    """The same with the intervals ragmeter prints (ppi_compare: judge-only and human-only by
    the paired bootstrap), on fewer seeds (each is a full call)."""
    from ragmeter.paired import paired_bootstrap

    truth, j, jl, hl = simulate(60, 400, 100, seed=1)
    judge_hits = 0
    for s in range(len(j)):
        ci = paired_bootstrap(j[s], n_resamples=1000, seed=s, method="counts")
        judge_hits += ci.lo <= truth <= ci.hi
    assert judge_hits / len(j) < 0.5
    theta, se, _ = ppi_kernel(j, jl, hl)
    assert np.mean(np.abs(theta - truth) <= Z95 * se) >= 0.9


def test_a_judge_that_is_noise_gets_a_weight_near_zero() -> None:
    truth, j, jl, hl = simulate(400, 400, 100, noise_judge=True, seed=2)
    theta, se, lam = ppi_kernel(j, jl, hl)
    assert np.mean(lam) < 0.08
    assert np.median(lam) < 0.02  # clipped at 0 about half the time
    human_se = hl.std(axis=1, ddof=1) / math.sqrt(hl.shape[1])
    assert np.mean(se) / np.mean(human_se) == pytest.approx(1.0, abs=0.03)
    assert 0.92 <= np.mean(np.abs(theta - truth) <= Z95 * se) <= 0.98


def test_ppi_compare_agrees_with_the_kernel() -> None:
    _, j, jl, hl = simulate(1, 60, 20, seed=3)
    ids = [f"q{i}" for i in range(60)]
    lab_ids = ids[:20]
    # build sides whose differences are j (all) and h (labelled, placed on the first 20)
    jb = dict.fromkeys(ids, 0.0)
    jc = dict(zip(ids, j[0], strict=True))
    j0 = j[0].copy()
    j0[:20] = jl[0]
    jc = dict(zip(ids, j0, strict=True))
    hb = dict.fromkeys(lab_ids, 0.0)
    hc = dict(zip(lab_ids, hl[0], strict=True))
    r = ppi_compare(jb, jc, hb, hc, n_resamples=200)
    theta, se, lam = ppi_kernel(j0, j0[:20], hl[0])
    assert (r.ppi.estimate, r.se, r.lam) == pytest.approx((float(theta), float(se), float(lam)))


# -- properties ----------------------------------------------------------------------------------
verdicts = st.lists(st.tuples(*[st.integers(0, 1)] * 4), min_size=12, max_size=40)


@settings(max_examples=60, deadline=None)
@given(verdicts, st.integers(10, 40), st.integers(0, 2**32 - 1))
def test_properties(rows: list[tuple[int, ...]], n: int, seed: int) -> None:
    n = min(n, len(rows))
    ids = [f"q{i}" for i in range(len(rows))]
    jb = {q: float(r[0]) for q, r in zip(ids, rows, strict=True)}
    jc = {q: float(r[1]) for q, r in zip(ids, rows, strict=True)}
    hb = {q: float(r[2]) for q, r in zip(ids[:n], rows, strict=False)}
    hc = {q: float(r[3]) for q, r in zip(ids[:n], rows, strict=False)}
    r = ppi_compare(jb, jc, hb, hc, n_resamples=50, seed=0)
    assert 0.0 <= r.lam <= 1.0
    assert r.ppi.lo <= r.ppi.estimate <= r.ppi.hi
    assert r.se >= 0
    if n == len(rows):  # everything labelled: the estimate is the humans' mean
        assert r.ppi.estimate == pytest.approx(r.human.estimate)
    # the order of the questions changes nothing
    order = np.random.default_rng(seed).permutation(len(ids))
    shuffled = [ids[i] for i in order]
    again = ppi_compare(
        {q: jb[q] for q in shuffled},
        {q: jc[q] for q in shuffled},
        {q: hb[q] for q in shuffled if q in hb},
        {q: hc[q] for q in shuffled if q in hc},
        n_resamples=50,
    )
    assert (again.ppi.estimate, again.se, again.lam) == pytest.approx((r.ppi.estimate, r.se, r.lam))


# -- refusals ------------------------------------------------------------------------------------
def test_too_few_labelled_questions_says_how_many_are_needed() -> None:
    jb, jc, hb, hc = tiny()
    few = [q for q in hb][:7]
    with pytest.raises(UsageError, match=r"at least 10 .* got 7 \(label 3 more"):
        ppi_compare(jb, jc, {q: hb[q] for q in few}, {q: hc[q] for q in few})
    assert MIN_LABELLED == 10


def test_labelled_questions_that_were_not_compared_are_refused() -> None:
    jb, jc, hb, hc = tiny()
    with pytest.raises(UsageError, match=r"1 labelled question\(s\) are not among the 12 .*zz"):
        ppi_compare(jb, jc, hb | {"zz": 1.0}, hc | {"zz": 0.0})


def test_one_side_missing_is_refused_naming_the_side() -> None:
    jb, jc, hb, hc = tiny()
    del hc["q03"]
    with pytest.raises(UsageError, match=r"'q03' has the baseline's but not the candidate's"):
        ppi_compare(jb, jc, hb, hc)


def test_judge_values_on_different_questions_and_bad_values_are_refused() -> None:
    jb, jc, hb, hc = tiny()
    del jc["q11"]
    with pytest.raises(UsageError, match="different questions"):
        ppi_compare(jb, jc, hb, hc)
    jb, jc, hb, hc = tiny()
    with pytest.raises(UsageError, match="finite"):
        ppi_compare(jb, jc, hb | {"q00": float("nan")}, hc)
    with pytest.raises(UsageError, match="must be a number"):
        ppi_compare(jb, jc, hb | {"q00": "1"}, hc)  # type: ignore[dict-item]
    with pytest.raises(UsageError, match="confidence"):
        ppi_compare(jb, jc, hb, hc, confidence=1.5)


# -- the record ----------------------------------------------------------------------------------
def test_record_round_trip_and_old_comparisons_still_read() -> None:
    jb, jc, hb, hc = tiny()
    r = ppi_compare(jb, jc, hb, hc)
    assert PPIInterval.from_dict(json.loads(json.dumps(r.to_dict()))) == r
    c = compare(jb, jc, outcome="judge")
    assert "ppi" not in c.to_dict()  # old records keep their shape
    from dataclasses import replace

    with_ppi = replace(c, ppi=r)
    back = Comparison.from_dict(json.loads(json.dumps(with_ppi.to_dict())))
    assert back.ppi == r
    assert Comparison.from_dict(c.to_dict()).ppi is None
    broken = with_ppi.to_dict()
    broken["ppi"] = dict(broken["ppi"], judge_only={"lo": 0})
    with pytest.raises(Exception, match="judge_only"):
        Comparison.from_dict(broken)
