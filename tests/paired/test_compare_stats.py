"""The statistics under compare(): bootstrap streams and methods, sign and randomisation tests,
statistical honesty by simulation, and selection optimism (the seed's 30-variant illustration)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter import UsageError
from ragmeter.paired import (
    _bootstrap,
    _fused,
    best_of_n,
    optimism_from_pair,
    paired_bootstrap,
    randomisation_test,
    sign_test,
)
from ragmeter.paired._bootstrap import choose_method, resample_means
from ragmeter.paired._selection import SEED_DIFFICULTY, seed_difficulty_chances


# -- the bootstrap draws the seed's stream -------------------------------------------------------
@pytest.mark.parametrize("n", [5, 7, 80, 1001])
def test_blocks_draw_the_same_stream_as_the_seeds_loop(n: int, monkeypatch) -> None:
    diffs = np.random.default_rng(1).integers(-1, 2, n).astype(float)
    rng = np.random.default_rng(0)
    loop = np.array([diffs[rng.integers(0, n, n)].mean() for _ in range(37)])
    # force several blocks of uneven size: 37 resamples in blocks of 5 rows
    monkeypatch.setattr(_bootstrap, "BLOCK_ELEMENTS", 5 * n)
    blocks = resample_means(diffs, 37, np.random.default_rng(0), "index")
    assert np.array_equal(loop, blocks)


def test_by_hand_resamples_of_the_seed_table() -> None:
    """Resamples 1-3 of the seed's by-hand table (seed 42): means -0.20, +0.40, -0.40."""
    d = np.array([1.0, 0.0, 0.0, -1.0, 1.0])
    means = resample_means(d, 3, np.random.default_rng(42), "index")
    assert np.allclose(means, [-0.2, 0.4, -0.4])


def test_counts_method_is_the_same_distribution() -> None:
    rng = np.random.default_rng(5)
    d = rng.choice([-1.0, 0.0, 0.0, 0.0, 1.0], size=3000)
    a = paired_bootstrap(d, n_resamples=20000, seed=1, method="index")
    b = paired_bootstrap(d, n_resamples=20000, seed=1, method="counts")
    assert a.method == "index" and b.method == "counts"
    se = d.std() / np.sqrt(len(d))
    assert abs(a.lo - b.lo) < 0.1 * se and abs(a.hi - b.hi) < 0.1 * se
    means = resample_means(d, 20000, np.random.default_rng(2), "counts")
    assert means.mean() == pytest.approx(d.mean(), abs=0.05 * se)
    assert means.std() == pytest.approx(d.std() / np.sqrt(len(d)), rel=0.03)


def test_auto_method_keeps_the_seed_stream_for_small_data() -> None:
    assert choose_method(np.zeros(80), 5000) == "index"
    assert choose_method(np.zeros(100_000), 10_000) == "counts"  # 1 distinct value
    spread = np.random.default_rng(0).standard_normal(100_000)
    # every value distinct: the compiled pass where numba is installed, else numpy's indices
    assert choose_method(spread, 10_000) == ("fused" if _fused.available() else "index")
    with pytest.raises(UsageError):
        choose_method(np.zeros(3), 10, "fast")  # type: ignore[arg-type]


def test_bootstrap_input_checks() -> None:
    with pytest.raises(UsageError, match="resamples"):
        paired_bootstrap([1.0], n_resamples=0)
    with pytest.raises(UsageError, match="confidence"):
        paired_bootstrap([1.0], confidence=1.0)
    with pytest.raises(UsageError, match="finite"):
        paired_bootstrap([1.0, float("inf")])
    with pytest.raises(UsageError, match="empty"):
        paired_bootstrap([])


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from([-1.0, -0.5, 0.0, 0.25, 1.0]), min_size=1, max_size=40),
    st.integers(0, 2**32 - 1),
)
def test_interval_brackets_lie_within_the_data(values: list[float], seed: int) -> None:
    ci = paired_bootstrap(values, n_resamples=200, seed=seed)
    assert min(values) - 1e-12 <= ci.lo <= ci.hi <= max(values) + 1e-12
    again = paired_bootstrap(values, n_resamples=200, seed=seed)
    assert (again.lo, again.hi) == (ci.lo, ci.hi)


# -- sign test and randomisation test --------------------------------------------------------------
def test_sign_test() -> None:
    assert round(sign_test(6, 4), 2) == 0.75
    assert sign_test(0, 0) == 1.0
    # exact two-sided binomial: 14 of 18
    from math import comb

    tail = sum(comb(18, k) for k in range(14, 19)) / 2**18
    assert sign_test(14, 4) == pytest.approx(2 * tail)
    with pytest.raises(UsageError, match="non-negative"):
        sign_test(-1, 2)


@pytest.mark.parametrize("seed", range(5))
def test_sign_test_is_scipys_binomtest_to_the_last_bit(seed: int) -> None:
    """sign_test follows scipy.stats.binomtest step for step without importing scipy.stats
    (issue 28): the same float for every split of small n, and for n drawn up to 10^6."""
    from scipy.stats import binomtest

    rng = np.random.default_rng(seed)
    small = [(w, n - w) for n in range(1 + 40 * seed, 41 + 40 * seed) for w in range(n + 1)]
    big = [
        (int(w), int(n - w)) for n in rng.integers(1, 10**6, 200) for w in [rng.integers(0, n + 1)]
    ]
    for wins, losses in small + big:
        assert sign_test(wins, losses) == binomtest(wins, wins + losses, 0.5).pvalue, (wins, losses)


def test_randomisation_test_exact_matches_enumeration() -> None:
    d = np.array([0.5, 0.0, -0.25, 1.0, 0.75, 0.0, -0.5, 0.25])
    nz = d[d != 0]
    obs = abs(nz.sum())
    sums = [
        abs(sum(s * x for s, x in zip(signs, nz, strict=True)))
        for signs in itertools.product((1, -1), repeat=len(nz))
    ]
    expected = np.mean([s >= obs - 1e-12 for s in sums])
    r = randomisation_test(d, n_resamples=10_000)
    assert r.exact and r.n_resamples == 2 ** len(nz)
    assert r.p_value == pytest.approx(expected)
    assert randomisation_test(np.zeros(5)).p_value == 1.0


@pytest.mark.parametrize("d", [[0.5], [0.0, -0.25, 0.0], [1.0, 1e-13]])
def test_randomisation_test_with_one_changed_question(d: list[float]) -> None:
    # one non-zero difference has two sign assignments, +d and -d, and both reach |d|: p = 1
    for n_resamples in (1, 2, 10_000):
        r = randomisation_test(d, n_resamples=n_resamples, seed=None)
        assert (r.p_value, r.exact, r.n_resamples) == (1.0, True, 2)


def test_randomisation_test_monte_carlo_is_seeded() -> None:
    d = np.random.default_rng(0).normal(0.05, 1, 300)
    a = randomisation_test(d, n_resamples=20_000, seed=3)
    b = randomisation_test(d, n_resamples=20_000, seed=3)
    assert not a.exact and a.p_value == b.p_value
    from scipy.stats import ttest_1samp

    # a sign-flip test on near-normal data agrees with the paired t-test to Monte Carlo error
    # (scipy doubles the smaller tail: standard error about 0.007 here)
    assert a.p_value == pytest.approx(ttest_1samp(d, 0).pvalue, abs=0.03)


# -- Must show 3: statistical honesty --------------------------------------------------------------
def test_no_difference_interval_covers_zero_about_95_percent() -> None:
    """400 seeded repetitions of 200 questions where A and B have the same per-question chances
    (the seed's difficulty mix), so the true paired difference is zero. 2,000 resamples per
    repetition (not 5,000) to keep the test fast; the bootstrap seed is the repetition number.
    Measured over 3,000 repetitions the coverage is 0.954."""
    reps, n = 400, 200
    rng = np.random.default_rng(2024)
    p = seed_difficulty_chances(n)
    a = rng.random((reps, n)) < p
    b = rng.random((reps, n)) < p
    covered = rejected = 0
    for r in range(reps):
        d = b[r].astype(float) - a[r]
        ci = paired_bootstrap(d, n_resamples=2000, seed=r)
        covered += ci.lo <= 0.0 <= ci.hi
        rejected += sign_test(int((d > 0).sum()), int((d < 0).sum())) < 0.05
    assert 0.93 <= covered / reps <= 0.97
    assert rejected / reps <= 0.06


# -- selection optimism --------------------------------------------------------------------------
def test_seed_illustration_best_of_30() -> None:
    """150 questions: 75 easy (0.95), 45 medium (0.60), 30 hard (0.20): true rate 0.695.
    30 equally good variants, 300 seeded searches: picked about 0.755, fresh about 0.692,
    optimism about +0.059. Tolerance: 0.01 (the Monte Carlo error is about 0.002)."""
    p = seed_difficulty_chances(150)
    assert len(p) == 150 and sorted(set(p)) == [0.2, 0.6, 0.95]
    assert [int((p == c).sum()) for _, c in SEED_DIFFICULTY.values()] == [75, 45, 30]
    est = best_of_n(p, 30, n_searches=300, seed=0)
    assert est.true_score == pytest.approx(0.695)
    assert est.best_tuning_score == pytest.approx(0.755, abs=0.01)
    assert est.fresh_score == pytest.approx(0.692, abs=0.01)
    assert est.optimism == pytest.approx(0.059, abs=0.01)
    assert not est.approximate


def test_optimism_grows_with_variants_and_vanishes_for_one() -> None:
    p = seed_difficulty_chances(150)
    gains = [best_of_n(p, n, seed=1).optimism for n in (1, 3, 10, 30)]
    assert abs(gains[0]) < 0.005
    assert gains == sorted(gains)


def test_optimism_from_pair_only_moves_on_discordant_questions() -> None:
    a = np.array([1, 1, 0, 0, 1, 0], dtype=float)
    same = optimism_from_pair(a, a, 10)
    assert same.optimism == 0.0 and same.true_score == pytest.approx(0.5)
    b = np.array([0, 1, 1, 0, 1, 1], dtype=float)
    est = optimism_from_pair(a, b, 10, n_searches=2000)
    # 2 questions right in both, 3 discordant: a variant scores (2 + Binomial(3, 1/2)) / 6, and
    # E[max of 10 draws of X] = sum_{k=1..3} P(max >= k) = sum_k 1 - P(X < k)^10
    from scipy.stats import binom

    e_max = sum(1 - binom.cdf(k - 1, 3, 0.5) ** 10 for k in range(1, 4))
    assert est.best_tuning_score == pytest.approx((2 + e_max) / 6, abs=0.01)
    assert est.true_score == pytest.approx((2 + 1.5) / 6)


def test_normal_approximation_for_many_pools(monkeypatch) -> None:
    from ragmeter.paired import _selection

    p = seed_difficulty_chances(150)
    exact = best_of_n(p, 30, seed=0)
    monkeypatch.setattr(_selection, "EXACT_LIMIT", 0)
    approx = best_of_n(p, 30, seed=0)
    assert approx.approximate
    assert approx.optimism == pytest.approx(exact.optimism, abs=0.005)
    with pytest.raises(UsageError):
        best_of_n([1.5], 3)
