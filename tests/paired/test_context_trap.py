"""The "changing k" trap: :func:`ragmeter.paired.context_trap` compares the context tokens the
generators *receive* (measured by ``ragmeter run``), not the budget the settings claim.

The configs are those ``ragmeter run`` writes into ``runs/<variant>/evaluation.json`` (the
run's ``settings`` plus the measured ``context_tokens``); the figures are the fare-rules
example's: BM25 over 300-token chunks at k = 4 gives the generator 1,087 tokens on average, at
k = 8 2,159, while both variants claim ``budget = 1200``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragmeter import Evaluation, RagmeterWarning, UsageError
from ragmeter.metrics import parse
from ragmeter.paired import compare, context_trap, measured_context

BASE_TOKENS, K8_TOKENS = 1087.0, 2158.5444444444443


def config(
    k: int | None = 4,
    budget: int | None = 1200,
    tokens: float | None = BASE_TOKENS,
    chunker: str = "tokens:300:0",
    **settings: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "chunking": chunker,
        "budgets": [budget] if budget else [],
        "effective_k": {"1200": {"min": 4, "median": 4.0, "max": 6}},
        "settings": {
            "chunker": chunker,
            "retriever": "bm25",
            "reranker": "none",
            "depth": 50,
            "k": k,
            "budget": budget,
            **settings,
        },
    }
    if tokens is not None:
        out["context_tokens"] = tokens
    return out


def evaluation(run: str, cfg: dict[str, Any], metric: str = "R@budget=1200") -> Evaluation:
    values = np.array([[1.0], [0.0], [1.0]])
    return Evaluation(run, (parse(metric),), ("q1", "q2", "q3"), values, config=cfg)


def quietly(*args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RagmeterWarning)
        return compare(*args, **kwargs)


def test_k_raised_under_a_fixed_budget_is_the_trap() -> None:
    got = context_trap(config(), config(k=8, tokens=K8_TOKENS))
    assert got is not None
    assert got.startswith(
        "changing k (4 -> 8): the candidate's generator receives 2,159 tokens of context "
        "against the baseline's 1,087 (+98.6%, more than 10% apart): a larger k is more "
        'text, not better retrieval (the trap "changing k between experiments")'
    )


def test_the_threshold_is_more_than_ten_percent_either_way() -> None:
    base = config(tokens=1000.0)
    for tokens, flagged in (
        (1100.0, False),  # exactly +10%: the same budget, as same_budget says
        (1100.01, True),
        (900.0, False),  # exactly -10%
        (899.99, True),
        (1000.0, False),
    ):
        got = context_trap(base, config(k=8, tokens=tokens))
        assert (got is not None) == flagged, tokens
    smaller = context_trap(base, config(k=2, tokens=500.0))
    assert smaller is not None and smaller.startswith("changing k (4 -> 2)")
    assert "(-50.0%, more than 10% apart): a smaller k is less text, not worse retrieval" in smaller


@given(
    st.floats(min_value=1.0, max_value=1e6),
    st.floats(min_value=0.01, max_value=5.0).filter(lambda r: abs(abs(r - 1) - 0.1) > 1e-6),
)
def test_flagged_exactly_beyond_ten_percent_of_the_baseline(base: float, ratio: float) -> None:
    got = context_trap(config(tokens=base), config(k=8, tokens=base * ratio))
    assert (got is not None) == (abs(ratio - 1) > 0.1)


def test_same_k_same_budget_within_ten_percent_is_no_warning() -> None:
    # the fare-rules variants: smaller chunks at k = 12, hybrid and reranker at k = 4
    assert context_trap(config(), config(k=12, chunker="tokens:100:0", tokens=1133.0)) is None
    assert context_trap(config(), config(tokens=1075.0, retriever="hybrid")) is None
    assert context_trap(config(), config(tokens=1050.0, reranker="e5@20")) is None
    assert context_trap(config(), config()) is None


def test_one_claimed_budget_with_a_different_measured_context_is_flagged() -> None:
    got = context_trap(config(), config(tokens=1400.0, retriever="hybrid"))
    assert got is not None
    assert got.startswith("a different context at one claimed budget (1200 tokens)")
    assert "the generators do not receive the budget both claim: more text" in got
    assert got.endswith(
        "compare at the budget (a metric @budget=N) or set k so that the contexts match"
    )
    # k x chunk size claims one budget too: 300 x 4 = 100 x 12
    claimed = context_trap(
        config(budget=None), config(k=12, budget=None, chunker="tokens:100:0", tokens=1500.0)
    )
    assert claimed is not None and "one claimed budget (1200 tokens)" in claimed


def test_a_changed_budget_is_named() -> None:
    got = context_trap(config(k=None), config(k=None, budget=2400, tokens=2300.0))
    assert got is not None and got.startswith("changing the budget (1200 -> 2400)")
    assert "a larger budget is more text, not better retrieval" in got


def test_no_check_without_the_figure_or_for_an_ablation() -> None:
    # runs recorded before ragmeter kept the figure, or evaluations of run files
    assert context_trap(config(tokens=None), config(k=8, tokens=K8_TOKENS)) is None
    assert context_trap(config(), config(k=8, tokens=None)) is None
    assert measured_context(config(tokens=None)) is None
    assert measured_context(config(tokens=0.0)) is None
    assert measured_context(config()) == BASE_TOKENS
    # an ablation gives the generator another context on purpose
    oracle = config(tokens=300.0, context={"source": "oracle"})
    assert context_trap(config(context={"source": "retrieved"}), oracle) is None
    # claims unknown (no budget, no size in the chunker) and no k or budget change: the
    # measured budgets of fairness_problems speak for it, not the trap
    assert context_trap(config(budget=None, chunker="sentences:3"), config(
        budget=None, chunker="sentences:3", tokens=2000.0)) is None  # fmt: skip


def test_compare_lists_it_as_not_a_fair_test_whatever_the_metric() -> None:
    a, b = config(), config(k=8, tokens=K8_TOKENS)
    for metric in ("R@budget=1200", "R@20"):
        c = quietly(evaluation("A", a, metric), evaluation("B", b, metric))
        traps = [f for f in c.fairness if f.startswith("changing k (4 -> 8)")]
        assert len(traps) == 1, c.fairness
        assert f"not a fair test: {traps[0]}" in c.warnings
        assert c.to_dict()["fairness"] == list(c.fairness)
    with pytest.raises(UsageError, match=r"not a fair test: changing k \(4 -> 8\)"):
        compare(evaluation("A", a), evaluation("B", b), strict=True)
    # within 10%: a fair test, strict or not
    within = compare(evaluation("A", a), evaluation("B", config(k=4, tokens=1150.0)), strict=True)
    assert within.fairness == ()


def test_it_replaces_the_claimed_budget_line_it_measures_better() -> None:
    def fairness(a: dict[str, Any], b: dict[str, Any]) -> tuple[str, ...]:
        return quietly(evaluation("A", a, "R@4"), evaluation("B", b, "R@4")).fairness

    problems = fairness(config(budget=None), config(k=8, budget=None, tokens=K8_TOKENS))
    assert not any("different context budgets" in p for p in problems)
    assert problems[0].startswith("changing k (4 -> 8)")
    # without the figure the claimed budgets (k x chunk size) still say it
    bare = fairness(config(budget=None, tokens=None), config(k=8, budget=None, tokens=None))
    assert any("different context budgets (1200 -> 2400 tokens" in p for p in bare)
