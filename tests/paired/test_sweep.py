"""k-sweeps: two simulated retrievers whose recall winner changes with k, and pool headroom."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter import UsageError
from ragmeter.paired import sweep, sweep_values
from ragmeter.paired._sweep import HEADROOM_NOTE, parse_cutoffs

#: The simulation of the RAG evaluation lesson, with parameters chosen to match its description:
#: 300 queries with one relevant passage each, a pool of 100 ranked passages per query.
#: A: "precise top, misses about a quarter": finds the passage with chance 0.75, at a rank drawn
#:    from Geometric(0.5) (rank 1 half the time).
#: B: "finds almost everything, ranks it lower": rank drawn from Geometric(0.125).
#: A rank beyond the pool means not retrieved. Expected recall@k: A 0.75 (1 - 0.5^k), B
#: 1 - 0.875^k, which cross between k = 10 (0.7493 vs 0.7369) and k = 11 (0.7496 vs 0.7698): the
#: analytic crossover is k = 11. docs/compare.md (sweep section) gives the interval a 300-query
#: sample's crossover falls in, and why.
N_QUERIES, DEPTH, P_FOUND_A, P_A, P_B = 300, 100, 0.75, 0.5, 0.125
KS = range(1, 21)
#: Every change of recall leader of a 300-query sample lies in this interval (docs/compare.md):
#: outside it the expected gap exceeds four standard errors of the sample difference.
CROSSOVER_INTERVAL = (7, 16)


def expected_recall(k: int) -> tuple[float, float]:
    """E[recall@k] of A and of B, from the geometric parameters."""
    return P_FOUND_A * (1 - (1 - P_A) ** k), 1 - (1 - P_B) ** k


def analytic_crossover() -> int:
    """The first k at which B's expected recall exceeds A's."""
    return next(k for k in range(1, 1000) if expected_recall(k)[1] > expected_recall(k)[0])


def draw_ranks(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rank of the relevant passage under A and under B (DEPTH + 1 = not retrieved)."""
    rng = np.random.default_rng(seed)
    found = rng.random(N_QUERIES) < P_FOUND_A
    return np.where(found, rng.geometric(P_A, N_QUERIES), DEPTH + 1), rng.geometric(P_B, N_QUERIES)


def simulate(seed: int, depth: int = DEPTH) -> tuple[dict, dict[str, dict]]:
    """Qrels and the two runs (``depth`` passages per query) as dict-of-dicts."""
    qrels = {f"q{i:03d}": {f"q{i:03d}-rel": 1} for i in range(N_QUERIES)}
    runs: dict[str, dict] = {"A": {}, "B": {}}
    for name, ranks in zip(("A", "B"), draw_ranks(seed), strict=True):
        for i, r in enumerate(ranks.tolist()):
            q = f"q{i:03d}"
            docs = [f"{q}-{name}{j}" for j in range(depth)]
            if r <= depth:
                docs[r - 1] = f"{q}-rel"
            runs[name][q] = {d: float(depth - j) for j, d in enumerate(docs)}
    return qrels, runs


def sample_leaders(seed: int) -> list[str | None]:
    """The recall leader at each k, computed by hand from the drawn ranks (not by the engine)."""
    rank_a, rank_b = draw_ranks(seed)
    out: list[str | None] = []
    for k in KS:
        a, b = float(np.mean(rank_a <= k)), float(np.mean(rank_b <= k))
        out.append("A" if a > b + 1e-12 else "B" if b > a + 1e-12 else None)
    return out


@pytest.fixture(scope="module")
def simulated():
    return simulate(seed=1)


def test_the_analytic_crossover_is_eleven() -> None:
    assert analytic_crossover() == 11
    a10, b10 = expected_recall(10)
    a11, b11 = expected_recall(11)
    assert (round(a10, 4), round(b10, 4), round(a11, 4), round(b11, 4)) == (
        0.7493,
        0.7369,
        0.7496,
        0.7698,
    )


def test_recall_sweep_matches_the_hand_computed_sample(simulated) -> None:
    qrels, runs = simulated
    s = sweep(qrels, runs, "R", KS)
    assert s.label == "R@k" and s.n_queries == 300
    rank_a, rank_b = draw_ranks(1)
    for k in KS:
        assert s.at("A", k) == pytest.approx(np.mean(rank_a <= k), abs=1e-12)
        assert s.at("B", k) == pytest.approx(np.mean(rank_b <= k), abs=1e-12)
    assert s.leaders == sample_leaders(1)
    ((at, before, after),) = s.crossovers  # this sample changes leader once
    assert (before, after) == ("A", "B")
    assert s.summary() == f"A leads R@k for k < {at}, B from k = {at}"
    # pool headroom: R@100 is the share of queries whose passage is anywhere in the pool
    assert s.headroom_k == 100
    assert s.headroom["A"] == pytest.approx(np.mean(rank_a <= 100))
    assert s.headroom["B"] == pytest.approx(np.mean(rank_b <= 100))
    d = s.to_dict()
    assert d["headroom"]["note"] == HEADROOM_NOTE and d["headroom"]["metric"] == "R@100"
    assert d["crossovers"] == [{"at": at, "from": "A", "to": "B"}]


def test_recall_crossover_falls_in_the_documented_interval_over_200_seeds() -> None:
    """The sample crossover is random; the claim that holds is an interval around the analytic
    k = 11 (docs/compare.md), checked on 200 seeds, with the median at the analytic value."""
    lo, hi = CROSSOVER_INTERVAL
    firsts = []
    for seed in range(200):
        qrels, runs = simulate(seed, depth=max(KS))  # ranks past 20 never count at k <= 20
        s = sweep(qrels, runs, "R", KS, headroom_k=None)
        assert s.leaders == sample_leaders(seed), seed
        assert s.leaders[0] == "A" and s.leaders[-1] == "B", seed
        assert all(lo <= at <= hi for at, _, _ in s.crossovers), (seed, s.crossovers)
        firsts.append(s.crossovers[0][0])
    assert sorted(firsts)[len(firsts) // 2] == analytic_crossover()
    assert sum(abs(f - 11) <= 2 for f in firsts) >= 0.9 * len(firsts)


def test_a_leads_mrr_at_every_k(simulated) -> None:
    qrels, runs = simulated
    s = sweep(qrels, runs, "MRR", KS, headroom_k=None)
    assert s.label == "RR@k"
    assert s.crossovers == [] and set(s.leaders) == {"A"}
    assert s.summary() == "A leads RR@k at every k from 1 to 20"
    assert s.headroom == {}


def test_summary_wording_for_several_segments_and_ties() -> None:
    s = sweep_values({"A": [3, 3, 1, 1, 2], "B": [1, 2, 2, 2, 1]}, [1, 2, 5, 10, 20], "R")
    assert s.summary() == "A leads R@k for k < 5, B for 5 <= k < 20, A from k = 20"
    t = sweep_values({"A": [1, 1, 2], "B": [1, 0, 3]}, [1, 2, 3], "nDCG(gain=exp)")
    assert t.leaders == [None, "A", "B"]
    assert t.summary() == (
        "no run (tie) leads nDCG(gain=exp)@k for k < 2, A for 2 <= k < 3, B from k = 3"
    )
    b = sweep_values({"x": [0.5, 0.6], "y": [0.4, 0.7]}, [400, 800], "R", kind="budget")
    assert b.summary() == "x leads R@budget for budget < 800, y from budget = 800"
    with pytest.raises(UsageError):
        sweep_values({"A": [1, 2]}, [1, 2, 3], "R")


def test_parse_cutoffs() -> None:
    assert parse_cutoffs("1..5") == [1, 2, 3, 4, 5]
    assert parse_cutoffs("1-3,10, 20") == [1, 2, 3, 10, 20]
    assert parse_cutoffs("5,1..2,5") == [1, 2, 5]
    for bad in ("", "0..3", "5..2", "a"):
        with pytest.raises(UsageError):
            parse_cutoffs(bad)


def test_metric_with_options_and_bad_metric(simulated) -> None:
    qrels, runs = simulated
    s = sweep(qrels, runs, "P@5", [1, 2], headroom_k=None)  # a given cutoff is replaced
    assert s.label == "P@k" and s.cutoffs == (1, 2)
    with pytest.raises(UsageError, match="unknown metric"):
        sweep(qrels, runs, "Recal", [1])


# -- token budgets over span labels ------------------------------------------------------------
def budget_scenario():
    """One 3,000-character document chunked two ways: S = 30 chunks of 100 tokens, L = 10
    chunks of 300 tokens. Twelve questions, each with a 30-character evidence span inside one
    chunk of either chunking. S ranks the evidence chunk at rank 3..8 for every question; L ranks
    it first for 9 questions and misses 3. At a budget B, S fits B // 100 chunks and L B // 300."""
    from ragmeter.chunking import from_ranges
    from ragmeter.data import Document, Evidence, Question

    doc = Document(id="d", text="x" * 3000)
    small = from_ranges(
        [doc], [("d", 100 * j, 100 * j + 100) for j in range(30)], name="S", tokenizer="regex-words"
    )
    large = from_ranges(
        [doc], [("d", 300 * j, 300 * j + 300) for j in range(10)], name="L", tokenizer="regex-words"
    )
    from ragmeter.chunking import Chunking

    def tokens(c, n):  # every chunk counts n tokens
        return Chunking(
            name=c.name,
            tokenizer=c.tokenizer,
            ids=c.ids,
            doc=c.doc,
            start=c.start,
            end=c.end,
            text=c.text,
            n_tokens=[n] * len(c.ids),
        )

    small, large = tokens(small, 100), tokens(large, 300)
    golden, run_s, run_l = [], {}, {}
    for i in range(12):
        start = 250 * i + 10
        q = f"q{i:02d}"
        golden.append(
            Question(id=q, question="?", evidence=[Evidence(doc="d", start=start, end=start + 30)])
        )
        ev_s, ev_l = small.ids[start // 100], large.ids[start // 300]
        others = [c for c in small.ids if c != ev_s][:9]
        ranked = [*others[: 2 + i % 6], ev_s, *others[2 + i % 6 :]]
        run_s[q] = {c: float(20 - r) for r, c in enumerate(ranked)}
        l_others = [c for c in large.ids if c != ev_l][:5]
        ranked_l = ([ev_l] if i < 9 else []) + l_others
        run_l[q] = {c: float(20 - r) for r, c in enumerate(ranked_l)}
    return golden, {"S": (small, run_s), "L": (large, run_l)}


def test_budget_sweep_compares_chunkings_at_equal_budgets() -> None:
    from ragmeter.paired import sweep_spans

    golden, runs = budget_scenario()
    s = sweep_spans(golden, runs, "R", [100, 300, 600, 900, 1200], headroom_k=10)
    assert s.kind == "budget" and s.label == "R@budget" and s.n_queries == 12
    assert s.at("S", 600) == pytest.approx(8 / 12) and s.at("L", 600) == 0.75
    assert s.leaders == [None, "L", "L", "S", "S"]
    assert s.summary() == (
        "no run (tie) leads R@budget for budget < 300, L for 300 <= budget "
        "< 900, S from budget = 900"
    )
    assert s.headroom == {"S": 1.0, "L": 0.75}
    # at equal k the bigger chunks look better, though they put three times the text in
    by_k = sweep_spans(golden, runs, "R", [1, 2, 3], kind="k", headroom_k=None)
    assert by_k.label == "R@k" and set(by_k.leaders) == {"L"}
