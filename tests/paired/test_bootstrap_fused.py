"""The "fused" bootstrap (compiled with the optional numba extra): its random stream checked
against published SplitMix64 values and a plain-Python reference, its distribution against the
"index" method's by simulation over many seeds, and the numpy fallback when numba is missing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats

from ragmeter import UsageError
from ragmeter.paired import _fused, bootstrap_means, compare, paired_bootstrap
from ragmeter.paired._bootstrap import bootstrap_interval, choose_method, resample_means

# justified: numba is the optional [fast] extra; the numpy fallback is tested without it
needs_numba = pytest.mark.skipif(
    not _fused.available(), reason="the fused bootstrap needs numba: pip install 'ragmeter[fast]'"
)
MASK = (1 << 64) - 1


def splitmix(key: int, count: int) -> list[int]:
    """The documented stream in plain Python integers: draw k is mix(key + (k + 1) * GAMMA)."""
    out, s = [], key
    for _ in range(count):
        s = (s + _fused.GAMMA) & MASK
        z = ((s ^ (s >> 30)) * _fused.MIX1) & MASK
        z = ((z ^ (z >> 27)) * _fused.MIX2) & MASK
        out.append(z ^ (z >> 31))
    return out


def reference_means(d: np.ndarray, n_resamples: int, key: int) -> np.ndarray:
    """Resample means by the module docstring's definition: question floor(z * n / 2**64)."""
    n = len(d)
    picks = [(z * n) >> 64 for z in splitmix(key, n_resamples * n)]
    return d[np.array(picks, dtype=np.int64).reshape(n_resamples, n)].mean(axis=1)


def key_of(seed: int) -> int:
    return int(np.random.default_rng(seed).integers(0, 1 << 64, dtype=np.uint64))


# -- the stream -----------------------------------------------------------------------------------
def test_stream_is_splitmix64() -> None:
    """The first outputs of SplitMix64 seeded with 1234567, as published with the generator."""
    assert splitmix(1234567, 5) == [
        6457827717110365317,
        3203168211198807973,
        9817491932198370423,
        4593380528125082431,
        16408922859458223821,
    ]


@needs_numba
@settings(max_examples=100, deadline=None)
@given(z=st.integers(0, MASK), n=st.integers(1, (1 << 32) - 1))
@example(z=MASK, n=(1 << 32) - 1)  # the largest partial products: no 64-bit overflow
@example(z=MASK, n=1)
@example(z=0, n=(1 << 32) - 1)
@example(z=(1 << 32) - 1, n=(1 << 32) - 1)
def test_index_is_the_exact_high_word(z: int, n: int) -> None:
    from ragmeter.paired._fused_kernel import index_kernel

    assert int(index_kernel(np.uint64(z), np.uint64(n))) == (z * n) >> 64


@needs_numba
@pytest.mark.parametrize("n", [1, 2, 5, 8, 31])
def test_kernel_equals_the_reference_stream(n: int, monkeypatch) -> None:
    d = np.random.default_rng(n).standard_normal(n)
    # blocks of 3 resamples (and a last one of 2): each block starts where the last one stopped
    monkeypatch.setattr(_fused, "BLOCK_DRAWS", 3 * n)
    got = _fused.fused_means(d, 11, np.random.default_rng(9))
    want = reference_means(d, 11, key_of(9))
    assert np.allclose(got, want, rtol=0, atol=1e-15)


def test_stream_state_of_a_block_start() -> None:
    # by hand: key 5, draw 3 starts at 5 + 3 * GAMMA (mod 2**64)
    assert _fused.stream_state(5, 3) == (5 + 3 * 0x9E3779B97F4A7C15) % 2**64
    assert _fused.stream_state(MASK, 1) == _fused.GAMMA - 1


@needs_numba
def test_seeded_and_reported() -> None:
    d = np.random.default_rng(3).beta(2, 2, 500) - 0.5
    a = paired_bootstrap(d, n_resamples=300, seed=4, method="fused")
    b = paired_bootstrap(d, n_resamples=300, seed=4, method="fused")
    assert a == b and a.method == "fused" and a.to_dict()["method"] == "fused"
    means, used = bootstrap_means(d, n_resamples=300, seed=4, method="fused")
    assert used == "fused"
    assert tuple(np.percentile(means, [2.5, 97.5])) == (a.lo, a.hi)
    other = paired_bootstrap(d, n_resamples=300, seed=5, method="fused")
    assert (other.lo, other.hi) != (a.lo, a.hi)


# -- the distribution, by simulation over many seeds ---------------------------------------------
@needs_numba
def test_counts_of_a_marked_group_are_binomial() -> None:
    """d marks m of n questions, so n x a resample mean counts marked picks: Binomial(n, m/n)
    exactly when every pick is uniform and independent. A chi-square test per seed (3,000
    resamples); over 200 seeds the p-values must look uniform (about 5% below 0.05)."""
    n, m = 40, 10
    d = np.zeros(n)
    d[:m] = 1.0
    k = np.arange(n + 1)
    pmf = stats.binom.pmf(k, n, m / n)
    # pool the tails so that every expected cell holds at least 5 resamples
    lo, hi = 4, 17
    expected_p = np.concatenate([[pmf[:lo].sum()], pmf[lo:hi], [pmf[hi:].sum()]])
    pvalues = []
    for seed in range(200):
        counts = np.rint(_fused.fused_means(d, 3000, np.random.default_rng(seed)) * n)
        c = np.bincount(counts.astype(int), minlength=n + 1)
        observed = np.concatenate([[c[:lo].sum()], c[lo:hi], [c[hi:].sum()]])
        pvalues.append(stats.chisquare(observed, expected_p * 3000).pvalue)
    share = np.mean(np.array(pvalues) < 0.05)
    assert share <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 200)  # 0.096
    assert stats.kstest(pvalues, "uniform").pvalue > 0.001


@needs_numba
def test_same_distribution_as_the_index_method() -> None:
    """Two-sample Kolmogorov-Smirnov test of fused against index resample means on the same
    skewed data, one test per seed; under the same distribution about 5% of 200 seeds reject
    at 0.05 and the p-values are uniform."""
    pvalues = []
    for seed in range(200):
        d = np.random.default_rng(10_000 + seed).exponential(1.0, 60) - 1.0
        fused = resample_means(d, 2000, np.random.default_rng(seed), "fused")
        index = resample_means(d, 2000, np.random.default_rng(seed), "index")
        pvalues.append(stats.ks_2samp(fused, index).pvalue)
    share = np.mean(np.array(pvalues) < 0.05)
    assert share <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 200)
    assert stats.kstest(pvalues, "uniform").pvalue > 0.001


@needs_numba
@pytest.mark.parametrize(
    "draw",
    [
        lambda g, n: g.normal(0.02, 0.3, n),  # true mean 0.02
        lambda g, n: g.beta(2, 5, n) - g.beta(2, 5, n) + 0.02,  # graded-like, true mean 0.02
        lambda g, n: g.exponential(0.3, n) - 0.28,  # skewed, true mean 0.02
    ],
    ids=["normal", "graded", "skewed"],
)
def test_coverage_at_the_nominal_rate(draw) -> None:  # type: ignore[no-untyped-def]
    """400 data sets of 200 questions from a distribution of known mean 0.02: the fused 95%
    interval (500 resamples) covers it at 0.95 within binomial error (sd 0.011), and as often
    as the index method's interval on the same data sets. Measured over 2,000 data sets:
    fused 0.952 / 0.939 / 0.946 and index 0.947 / 0.938 / 0.945 (normal / graded / skewed;
    the percentile interval itself runs a little short on 200 questions)."""
    reps, n = 400, 200
    g = np.random.default_rng(77)
    fused = index = 0
    for r in range(reps):
        d = draw(g, n)
        fi = bootstrap_interval(d, n_resamples=500, seed=r, method="fused")
        ii = bootstrap_interval(d, n_resamples=500, seed=r, method="index")
        fused += fi.lo <= 0.02 <= fi.hi
        index += ii.lo <= 0.02 <= ii.hi
    sd = np.sqrt(0.95 * 0.05 / reps)
    assert abs(fused / reps - 0.95) <= 3 * sd
    assert abs(fused - index) / reps <= 3 * sd


# -- choosing the method, and the numpy fallback -----------------------------------------------
def test_auto_keeps_numpy_for_small_work_and_fuses_large_graded(monkeypatch) -> None:
    graded = np.random.default_rng(0).standard_normal(100_000)
    assert choose_method(graded[:90], 5000) == "index"  # a CLI compare: never the compiler
    assert choose_method(graded, 500) == "index"  # B * n = 50,000,000: still the lesson's stream
    assert choose_method(graded, 501) == ("fused" if _fused.available() else "index")
    binary = np.random.default_rng(0).integers(-1, 2, 100_000).astype(float)
    assert choose_method(binary, 10_000) == "counts"
    monkeypatch.setattr(_fused, "available", lambda: False)
    assert choose_method(graded, 10_000) == "index"
    assert choose_method(graded, 10_000, "fused") == "index"


def test_without_numba_fused_falls_back_to_the_index_method(monkeypatch) -> None:
    monkeypatch.setattr(_fused, "available", lambda: False)
    d = np.random.default_rng(1).standard_normal(50)
    asked = paired_bootstrap(d, n_resamples=400, seed=2, method="fused")
    index = paired_bootstrap(d, n_resamples=400, seed=2, method="index")
    assert asked == index and asked.method == "index"
    with pytest.raises(UsageError, match=r"ragmeter\[fast\]"):
        _fused.fused_means(d, 10, np.random.default_rng(0))


def test_disabled_jit_counts_as_missing(monkeypatch) -> None:
    # the loop would run in the interpreter: about a microsecond a draw instead of a nanosecond
    monkeypatch.setenv("NUMBA_DISABLE_JIT", "1")
    assert not _fused.available()
    monkeypatch.setenv("NUMBA_DISABLE_JIT", "0")
    assert _fused.available() == (__import__("importlib").util.find_spec("numba") is not None)


def test_small_compare_never_loads_the_kernel(monkeypatch) -> None:
    def boom():  # type: ignore[no-untyped-def]
        raise AssertionError("the compiled kernel was loaded for a small comparison")

    monkeypatch.setattr(_fused, "_kernel", boom)
    g = np.random.default_rng(5)
    a = {f"q{i}": float(x) for i, x in enumerate(g.random(90))}
    b = {q: min(1.0, v + 0.05) for q, v in a.items()}
    c = compare(a, b, "nDCG@10")
    assert c.bootstrap_method == "index"


def test_movers_are_the_largest_changes_with_ties_by_question_id() -> None:
    """Only the movers shown are sorted; the order is still largest |change| first, ties by
    question id, whatever the number of tied changes around the cut."""
    g = np.random.default_rng(8)
    for trial in range(30):
        n = int(g.integers(1, 200))
        a = g.choice([0.0, 0.25, 0.5, 1.0], n)
        b = g.choice([0.0, 0.25, 0.5, 1.0], n)
        qa = {f"q{int(i):03d}": float(x) for i, x in zip(g.permutation(n), a, strict=True)}
        qb = dict(zip(qa, b.tolist(), strict=True))
        limit = int(g.integers(0, 12))
        c = compare(qa, qb, "nDCG@10", max_movers=limit, n_resamples=10)
        d = {q: qb[q] - qa[q] for q in qa}
        order = sorted(qa, key=lambda q: (-abs(d[q]), q))
        up = [q for q in order if d[q] > 1e-12][:limit]
        down = [q for q in order if d[q] < -1e-12][:limit]
        assert [m.qid for m in c.improved] == up, trial
        assert [m.qid for m in c.worsened] == down, trial
