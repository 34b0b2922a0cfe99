"""The seed's toy table, reproduced exactly by the engine (Must show 1 of the core issue)."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter import evaluate
from ragmeter.cli._demo.toy import TOY, toy_qrels, toy_run


def seed_at_k(gold: list[int], run: list[int], k: int) -> tuple[float, float, float, float]:
    """The seed's own reference code (application block), copied verbatim in spirit."""
    g = run[:k]
    hits = sum(x > 0 for x in g)
    rr = next((1 / (i + 1) for i, x in enumerate(g) if x > 0), 0.0)

    def dcg(xs: list[int]) -> float:
        return sum((2**x - 1) / np.log2(i + 2) for i, x in enumerate(xs))

    return hits / len(gold), hits / k, rr, dcg(g) / dcg(sorted(gold, reverse=True)[:k])


METRICS = "R@{k},P@{k},RR@{k},nDCG(gain=exp)@{k}"


@pytest.mark.parametrize(
    "run_name, expected",
    [("baseline", (0.67, 0.33, 0.47, 0.48)), ("reranked", (0.83, 0.39, 0.64, 0.69))],
)
def test_toy_table_at_k3(run_name: str, expected: tuple[float, ...]) -> None:
    e = evaluate(toy_qrels(), toy_run(run_name), METRICS.format(k=3))
    got = tuple(round(v, 2) for v in e.aggregate.values())
    assert got == expected
    assert list(e.aggregate) == ["R@3", "P@3", "RR@3", "nDCG(gain=exp)@3"]


def test_recall_at_8_is_one_for_both_runs() -> None:
    for run_name in ("baseline", "reranked"):
        e = evaluate(toy_qrels(), toy_run(run_name), "R@8")
        assert e.aggregate["R@8"] == 1.0


def test_per_query_ndcg3_deltas_and_wins() -> None:
    m = "nDCG(gain=exp)@3"
    base = evaluate(toy_qrels(), toy_run("baseline"), m).column(m)
    rer = evaluate(toy_qrels(), toy_run("reranked"), m).column(m)
    delta = {q: round(rer[q] - base[q], 2) for q in base}
    assert delta == {
        "name change": 0.63,
        "seat selection": 0.5,
        "change fee": 0.41,
        "infant fare": 0.2,
        "refund window": 0.0,
        "rule 16 code": -0.5,
    }
    raw = [rer[q] - base[q] for q in base]
    assert (sum(d > 0 for d in raw), sum(d < 0 for d in raw), sum(d == 0 for d in raw)) == (4, 1, 1)


@pytest.mark.parametrize("k", range(1, 9))
@pytest.mark.parametrize("col, run_name", [(1, "baseline"), (2, "reranked")])
def test_engine_equals_seed_code_at_every_k(k: int, col: int, run_name: str) -> None:
    e = evaluate(toy_qrels(), toy_run(run_name), METRICS.format(k=k))
    for q, row in TOY.items():
        want = seed_at_k(row[0], row[col], k)
        got = tuple(e.per_query[q].values())
        assert got == pytest.approx(want, abs=1e-12)


def test_card_dispute_deadline_by_hand() -> None:
    # Labels: grades 2 and 1 (R = 2); run ranks 1-5: grades 0, 2, 0, 1, 0.
    qrels = {"card dispute deadline": {"answer": 2, "helpful": 1}}
    run = {
        "card dispute deadline": {"x1": 5.0, "answer": 4.0, "x3": 3.0, "helpful": 2.0, "x5": 1.0}
    }
    e = evaluate(qrels, run, "R@3,P@3,RR@3,nDCG(gain=exp)@3,R@5,nDCG(gain=exp)@5")
    a = e.aggregate
    assert round(a["R@3"], 2) == 0.50
    assert round(a["P@3"], 2) == 0.33
    assert round(a["RR@3"], 2) == 0.50
    assert round(a["nDCG(gain=exp)@3"], 3) == 0.521
    assert a["nDCG(gain=exp)@3"] == pytest.approx(
        (3 / np.log2(3)) / (3 + 1 / np.log2(3)), abs=1e-15
    )
    assert a["R@5"] == 1.0
    assert round(a["nDCG(gain=exp)@5"], 2) == 0.64


def test_infant_fare_worked_example() -> None:
    m = "nDCG(gain=exp)@3"
    base = evaluate(toy_qrels(), toy_run("baseline"), m).column(m)
    rer = evaluate(toy_qrels(), toy_run("reranked"), m).column(m)
    assert round(base["infant fare"], 3) == 0.797
    assert rer["infant fare"] == 1.0
