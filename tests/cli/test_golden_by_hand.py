"""Every number pinned by the snapshot files tests/golden/*.json, computed by hand.

The snapshots were written by ragmeter itself, so they catch a change but cannot show a number
is right. Here each number they pin is derived from the toy table of the RAG evaluation lesson
(six fare-rules queries, grades 2 = answers it, 1 = helpful; a baseline run and the same
candidates after a reranker) with the formulas written out per query; the tests check that the
fixture files hold that table, that the snapshots hold the hand values, and that ragmeter
computes them from the files.
"""

from __future__ import annotations

import json
import math
from itertools import product
from pathlib import Path

import pytest

import ragmeter

FIX = Path(__file__).parents[1] / "fixtures" / "toy"
GOLDEN = Path(__file__).parents[1] / "golden"
L2 = math.log2

#: The lesson's table: relevant grades of each query, then the grade at ranks 1..8 per run.
TABLE = {
    "change_fee": ([2, 1], [0, 1, 2, 0, 0, 0, 0, 0], [2, 1, 0, 0, 0, 0, 0, 0]),
    "name_change": ([2], [0, 0, 0, 2, 0, 0, 0, 0], [0, 2, 0, 0, 0, 0, 0, 0]),
    "infant_fare": ([2, 1], [1, 2, 0, 0, 0, 0, 0, 0], [2, 1, 0, 0, 0, 0, 0, 0]),
    "rule_16_code": ([2], [2, 0, 0, 0, 0, 0, 0, 0], [0, 0, 2, 0, 0, 0, 0, 0]),
    "refund_window": ([2, 1], [0, 0, 0, 0, 0, 1, 2, 0], [0, 0, 0, 0, 0, 1, 2, 0]),
    "seat_selection": ([2], [0, 0, 2, 0, 0, 0, 0, 0], [2, 0, 0, 0, 0, 0, 0, 0]),
}

#: Baseline, by hand. nDCG(gain=exp)@3: gain 2^g - 1 (3 for grade 2, 1 for grade 1) over
#: log2(rank + 1), divided by the ideal order of ALL labelled passages; nDCG@10: gain g
#: (trec_eval's); AP: mean over the R relevant passages of the precision at each one's rank.
IDEAL_EXP_21 = 3 + 1 / L2(3)  # ideal exp-gain DCG@3 with grades 2 and 1
IDEAL_LIN_21 = 2 + 1 / L2(3)  # ideal linear-gain DCG with grades 2 and 1
BASELINE = {
    "change_fee": {
        "R@3": 2 / 2,
        "P@3": 2 / 3,
        "RR@3": 1 / 2,
        "nDCG(gain=exp)@3": (1 / L2(3) + 3 / L2(4)) / IDEAL_EXP_21,
        "nDCG@10": (1 / L2(3) + 2 / L2(4)) / IDEAL_LIN_21,
        "AP": (1 / 2 + 2 / 3) / 2,
    },
    "name_change": {
        "R@3": 0.0,
        "P@3": 0.0,
        "RR@3": 0.0,
        "nDCG(gain=exp)@3": 0.0,
        "nDCG@10": (2 / L2(5)) / 2,
        "AP": (1 / 4) / 1,
    },
    "infant_fare": {
        "R@3": 2 / 2,
        "P@3": 2 / 3,
        "RR@3": 1.0,
        "nDCG(gain=exp)@3": (1 / L2(2) + 3 / L2(3)) / IDEAL_EXP_21,
        "nDCG@10": (1 / L2(2) + 2 / L2(3)) / IDEAL_LIN_21,
        "AP": (1 / 1 + 2 / 2) / 2,
    },
    "rule_16_code": {
        "R@3": 1.0,
        "P@3": 1 / 3,
        "RR@3": 1.0,
        "nDCG(gain=exp)@3": 1.0,
        "nDCG@10": 1.0,
        "AP": 1.0,
    },
    "refund_window": {
        "R@3": 0.0,
        "P@3": 0.0,
        "RR@3": 0.0,
        "nDCG(gain=exp)@3": 0.0,
        "nDCG@10": (1 / L2(7) + 2 / L2(8)) / IDEAL_LIN_21,
        "AP": (1 / 6 + 2 / 7) / 2,
    },
    "seat_selection": {
        "R@3": 1.0,
        "P@3": 1 / 3,
        "RR@3": 1 / 3,
        "nDCG(gain=exp)@3": (3 / L2(4)) / 3,
        "nDCG@10": (2 / L2(4)) / 2,
        "AP": 1 / 3,
    },
}
FIRST_RANK = {
    "change_fee": 2,
    "name_change": 4,
    "infant_fare": 1,
    "rule_16_code": 1,
    "refund_window": 6,
    "seat_selection": 3,
}
#: Reranked nDCG(gain=exp)@3 by hand (the compare snapshot's candidate side).
RERANKED_NDCG3 = {
    "change_fee": 1.0,
    "name_change": (3 / L2(3)) / 3,
    "infant_fare": 1.0,
    "rule_16_code": (3 / L2(4)) / 3,
    "refund_window": 0.0,
    "seat_selection": 1.0,
}
#: First relevant rank within the top 3 the comparison was scored to (None: not in the top 3).
RANKS_AT_3 = {
    "name_change": (None, 2),
    "seat_selection": (3, 1),
    "change_fee": (2, 1),
    "infant_fare": (1, 1),
    "rule_16_code": (1, 3),
}
M = "nDCG(gain=exp)@3"


def read_fixture() -> dict[str, tuple[list[int], list[int], list[int]]]:
    """The fixture files parsed with str.split (no ragmeter code), as the table's shape."""
    qrels: dict[str, dict[str, int]] = {}
    for line in (FIX / "qrels.txt").read_text().splitlines():
        q, _, doc, rel = line.split()
        qrels.setdefault(q, {})[doc] = int(rel)
    cols: dict[str, list[list[int]]] = {}
    for name in ("baseline", "reranked"):
        rows: dict[str, list[tuple[int, str]]] = {}
        for line in (FIX / f"{name}.run").read_text().splitlines():
            q, _, doc, rank, score, _ = line.split()
            rows.setdefault(q, []).append((int(rank), doc))
            assert float(score) == 9 - int(rank)  # scores strictly decrease with rank: no ties
        for q, ranked in rows.items():
            cols.setdefault(q, []).append([qrels[q].get(d, 0) for _, d in sorted(ranked)])
    return {q: (sorted(qrels[q].values(), reverse=True), *cols[q]) for q in qrels}


def test_the_fixture_files_hold_the_lessons_toy_table() -> None:
    assert read_fixture() == TABLE


def test_hand_values_agree_with_the_lessons_rounded_table() -> None:
    """The lesson prints the k = 3 means to two decimals: 0.67 0.33 0.47 0.48 (baseline)."""
    means = {m: sum(BASELINE[q][m] for q in TABLE) / 6 for m in ("R@3", "P@3", "RR@3", M)}
    assert [round(means[m], 2) for m in ("R@3", "P@3", "RR@3", M)] == [0.67, 0.33, 0.47, 0.48]
    assert round(sum(RERANKED_NDCG3.values()) / 6, 2) == 0.69
    deltas = {q: round(RERANKED_NDCG3[q] - BASELINE[q][M], 2) for q in TABLE}
    assert deltas == {
        "name_change": 0.63,
        "seat_selection": 0.5,
        "change_fee": 0.41,
        "infant_fare": 0.2,
        "refund_window": 0.0,
        "rule_16_code": -0.5,
    }


def test_eval_snapshot_holds_the_hand_values() -> None:
    snap = json.loads((GOLDEN / "eval_toy_baseline.json").read_text())
    assert snap["n_queries"] == 6 and snap["n_missing"] == 0 and snap["n_no_relevant"] == 0
    for q, want in BASELINE.items():
        assert snap["per_query"][q] == pytest.approx(want, abs=1e-12), q
        assert snap["details"][q] == {"first_rank": FIRST_RANK[q], "n_retrieved": 8}
    for m in BASELINE["change_fee"]:
        assert snap["aggregate"][m] == pytest.approx(
            sum(BASELINE[q][m] for q in TABLE) / 6, abs=1e-12
        ), m


def test_ragmeter_computes_the_hand_values_from_the_files() -> None:
    e = ragmeter.evaluate(FIX / "qrels.txt", FIX / "baseline.run", list(BASELINE["change_fee"]))
    for q, want in BASELINE.items():
        assert dict(e.per_query[q]) == pytest.approx(want, abs=1e-12), q
        assert e.details[q]["first_rank"] == FIRST_RANK[q]


def exact_bootstrap_cdf(diffs: list[float]) -> list[tuple[float, float]]:
    """The exact distribution of the resampled mean: every one of the n^n index draws, grouped
    by how often each question is drawn (multinomial weights); [(mean, cumulative chance)]."""
    n = len(diffs)
    chance: dict[float, float] = {}
    for counts in product(range(n + 1), repeat=n):
        if sum(counts) != n:
            continue
        ways = math.factorial(n)
        for c in counts:
            ways //= math.factorial(c)
        mean = round(sum(c * d for c, d in zip(counts, diffs, strict=True)) / n, 12)
        chance[mean] = chance.get(mean, 0.0) + ways / n**n
    out, total = [], 0.0
    for mean in sorted(chance):
        total += chance[mean]
        out.append((mean, total))
    return out


def test_compare_snapshot_holds_the_hand_values() -> None:
    snap = json.loads((GOLDEN / "compare_toy.json").read_text())
    base = sum(BASELINE[q][M] for q in TABLE) / 6
    cand = sum(RERANKED_NDCG3.values()) / 6
    assert snap["metric"] == M and snap["n"] == 6
    assert snap["baseline_mean"] == pytest.approx(base, abs=1e-12)
    assert snap["candidate_mean"] == pytest.approx(cand, abs=1e-12)
    assert snap["mean_delta"] == pytest.approx(cand - base, abs=1e-12)
    for q in TABLE:
        row = snap["per_query"][q]
        assert row["baseline"] == pytest.approx(BASELINE[q][M], abs=1e-12)
        assert row["candidate"] == pytest.approx(RERANKED_NDCG3[q], abs=1e-12)
        assert row["delta"] == pytest.approx(RERANKED_NDCG3[q] - BASELINE[q][M], abs=1e-12)
    assert (snap["wins"], snap["losses"], snap["ties"]) == (4, 1, 1)
    # two-sided exact sign test, 4 wins vs 1 loss: 2 * P(X <= 1), X ~ Binomial(5, 1/2)
    assert snap["sign_test_p"] == pytest.approx(2 * (1 + 5) / 2**5, abs=1e-12)
    movers = [*snap["movers"]["improved"], *snap["movers"]["worsened"]]
    assert [m["qid"] for m in snap["movers"]["improved"]] == [
        "name_change",
        "seat_selection",
        "change_fee",
        "infant_fare",
    ]  # largest gain first
    assert {m["qid"]: (m["rank_before"], m["rank_after"]) for m in movers} == RANKS_AT_3
    # the interval: 5,000 seeded resamples estimate the 2.5% and 97.5% points of the exact
    # bootstrap distribution; each bound must sit where the exact CDF is within 0.01 of its
    # target (the Monte Carlo standard error of a 2.5% point from 5,000 draws is about 0.0022)
    diffs = [RERANKED_NDCG3[q] - BASELINE[q][M] for q in TABLE]
    cdf = exact_bootstrap_cdf(diffs)
    lo, hi = snap["ci"]
    assert snap["confidence"] == 0.95 and snap["n_resamples"] == 5000
    at_lo = max((c for m, c in cdf if m <= lo + 1e-12), default=0.0)
    at_hi = max((c for m, c in cdf if m <= hi + 1e-12), default=0.0)
    assert abs(at_lo - 0.025) <= 0.01 and abs(at_hi - 0.975) <= 0.01, (at_lo, at_hi)
    assert (
        lo < 0 < hi and snap["verdict"] == "interval includes zero: consistent with no difference"
    )


def test_ragmeter_compares_the_files_as_by_hand() -> None:
    base = ragmeter.evaluate(FIX / "qrels.txt", FIX / "baseline.run", M)
    cand = ragmeter.evaluate(FIX / "qrels.txt", FIX / "reranked.run", M)
    c = ragmeter.compare(base, cand, M)
    assert (c.wins, c.losses, c.ties) == (4, 1, 1)
    assert c.sign_test_p == pytest.approx(0.375, abs=1e-12)
    assert c.mean_delta == pytest.approx(
        sum(RERANKED_NDCG3[q] - BASELINE[q][M] for q in TABLE) / 6, abs=1e-12
    )
