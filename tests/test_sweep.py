"""k-sweeps: the seed's simulated retrievers, where the winner changes, and pool headroom."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter._errors import UsageError
from ragmeter.paired import sweep, sweep_values
from ragmeter.paired._sweep import HEADROOM_NOTE, parse_cutoffs

#: The seed's simulation, with parameters chosen to match its description: 300 queries with one
#: relevant passage each, a pool of 100 ranked passages per query.
#: A: "precise top, misses about a quarter": finds the passage with chance 0.75, at a rank drawn
#:    from Geometric(0.5) (rank 1 half the time).
#: B: "finds almost everything, ranks it lower": rank drawn from Geometric(0.125).
#: A rank beyond 100 means not retrieved. Expected recall: A 0.75 (1 - 0.5^k), B 1 - 0.875^k,
#: which cross between k = 10 (0.749 vs 0.737) and k = 11 (0.750 vs 0.770).
N_QUERIES, DEPTH = 300, 100
SEED = 1  # across seeds 0..7 the sample crossover falls at k = 9..11 (checked below)


def simulate(seed: int = SEED) -> tuple[dict, dict[str, dict]]:
    """Qrels and the two runs as dict-of-dicts."""
    rng = np.random.default_rng(seed)
    found = rng.random(N_QUERIES) < 0.75
    rank_a = np.where(found, rng.geometric(0.5, N_QUERIES), DEPTH + 1)
    rank_b = rng.geometric(0.125, N_QUERIES)
    qrels = {f"q{i:03d}": {f"q{i:03d}-rel": 1} for i in range(N_QUERIES)}
    runs: dict[str, dict] = {"A": {}, "B": {}}
    for name, ranks in (("A", rank_a), ("B", rank_b)):
        for i, r in enumerate(ranks.tolist()):
            q = f"q{i:03d}"
            docs = [f"{q}-{name}{j}" for j in range(DEPTH)]
            if r <= DEPTH:
                docs[r - 1] = f"{q}-rel"
            runs[name][q] = {d: float(DEPTH - j) for j, d in enumerate(docs)}
    return qrels, runs


@pytest.fixture(scope="module")
def simulated():
    return simulate()


def test_recall_crossover_of_the_seeds_simulated_retrievers(simulated) -> None:
    qrels, runs = simulated
    s = sweep(qrels, runs, "R", range(1, 21))
    assert s.label == "R@k" and s.n_queries == 300
    assert s.crossovers == [(11, "A", "B")]
    assert s.summary() == "A leads R@k for k < 11, B from k = 11"
    assert s.at("A", 1) > s.at("B", 1)
    # pool headroom: B has nearly everything in its pool, A about three quarters
    assert s.headroom_k == 100
    assert s.headroom["B"] == 1.0 and 0.7 < s.headroom["A"] < 0.8
    d = s.to_dict()
    assert d["headroom"]["note"] == HEADROOM_NOTE and d["headroom"]["metric"] == "R@100"
    assert d["crossovers"] == [{"at": 11, "from": "A", "to": "B"}]


def test_a_leads_mrr_at_every_k(simulated) -> None:
    qrels, runs = simulated
    s = sweep(qrels, runs, "MRR", range(1, 21), headroom_k=None)
    assert s.label == "RR@k"
    assert s.crossovers == [] and set(s.leaders) == {"A"}
    assert s.summary() == "A leads RR@k at every k from 1 to 20"
    assert s.headroom == {}


def test_crossover_is_about_eleven_for_other_seeds() -> None:
    for seed in range(8):
        qrels, runs = simulate(seed)
        s = sweep(qrels, runs, "R", range(1, 21), headroom_k=None)
        assert s.leaders[0] == "A" and s.leaders[-1] == "B"
        assert 9 <= s.crossovers[-1][0] <= 12


def test_summary_wording_for_several_segments_and_ties() -> None:
    s = sweep_values({"A": [3, 3, 1, 1, 2], "B": [1, 2, 2, 2, 1]}, [1, 2, 5, 10, 20], "R")
    assert s.summary() == "A leads R@k for k < 5, B for 5 <= k < 20, A from k = 20"
    t = sweep_values({"A": [1, 1, 2], "B": [1, 0, 3]}, [1, 2, 3], "nDCG(gain=exp)")
    assert t.leaders == [None, "A", "B"]
    assert t.summary() == ("no run (tie) leads nDCG(gain=exp)@k for k < 2, A for 2 <= k < 3, "
                           "B from k = 3")
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
    from ragmeter.data._schema import Document, Evidence, Question

    doc = Document(id="d", text="x" * 3000)
    small = from_ranges([doc], [("d", 100 * j, 100 * j + 100) for j in range(30)], name="S",
                        tokenizer="regex-words")
    large = from_ranges([doc], [("d", 300 * j, 300 * j + 300) for j in range(10)], name="L",
                        tokenizer="regex-words")
    from ragmeter.chunking import Chunking

    def tokens(c, n):  # every chunk counts n tokens
        return Chunking(name=c.name, tokenizer=c.tokenizer, ids=c.ids, doc=c.doc, start=c.start,
                        end=c.end, text=c.text, n_tokens=[n] * len(c.ids))

    small, large = tokens(small, 100), tokens(large, 300)
    golden, run_s, run_l = [], {}, {}
    for i in range(12):
        start = 250 * i + 10
        q = f"q{i:02d}"
        golden.append(Question(id=q, question="?",
                               evidence=[Evidence(doc="d", start=start, end=start + 30)]))
        ev_s, ev_l = small.ids[start // 100], large.ids[start // 300]
        others = [c for c in small.ids if c != ev_s][:9]
        ranked = others[: 2 + i % 6] + [ev_s] + others[2 + i % 6:]
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
    assert s.summary() == ("no run (tie) leads R@budget for budget < 300, L for 300 <= budget "
                           "< 900, S from budget = 900")
    assert s.headroom == {"S": 1.0, "L": 0.75}
    # at equal k the bigger chunks look better, though they put three times the text in
    by_k = sweep_spans(golden, runs, "R", [1, 2, 3], kind="k", headroom_k=None)
    assert by_k.label == "R@k" and set(by_k.leaders) == {"L"}
