"""Paired comparison: the seed's lab and toy numbers exactly, and the rules compare() enforces."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragmeter
from ragmeter import (
    Evaluation,
    InputError,
    RagmeterWarning,
    UsageError,
    VersionMismatchError,
    evaluate,
)
from ragmeter.cli._demo.toy import toy_qrels, toy_run
from ragmeter.metrics import parse
from ragmeter.paired import Comparison, compare


def lab(fixed: int = 6, broken: int = 4) -> tuple[dict[str, int], dict[str, int]]:
    """The seed's hands-on lab: 80 questions, A correct on the first 60; B fixes questions
    60.. and breaks questions 0.. (the seed's own construction)."""
    a = np.zeros(80, dtype=int)
    a[:60] = 1
    b = a.copy()
    b[60 : 60 + fixed] = 1
    b[:broken] = 0
    return (
        {f"q{i:02d}": int(x) for i, x in enumerate(a)},
        {f"q{i:02d}": int(x) for i, x in enumerate(b)},
    )


def quiet_compare(*args, **kwargs) -> Comparison:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the clean cases below must not warn
        return compare(*args, **kwargs)


# -- Must show 1: the hands-on lab ---------------------------------------------------------------
def test_lab_six_fixed_four_broken_reproduces_the_seed_exactly() -> None:
    a, b = lab(6, 4)
    c = quiet_compare(a, b, "answer correct", names=("A", "B"))
    assert c.n == 80
    assert c.overall.baseline_mean == 0.75 and c.overall.candidate_mean == 0.775
    assert c.mean_delta == pytest.approx(0.025)
    assert (c.fixed, c.broken) == (6, 4)
    assert (c.wins, c.losses, c.ties) == (6, 4, 70)
    assert c.bootstrap_method == "index"
    assert (round(c.ci[0], 3), round(c.ci[1], 3)) == (-0.050, 0.100)
    assert round(c.sign_test_p, 2) == 0.75
    assert c.binary
    assert c.verdict == "interval includes zero: consistent with no difference"


def test_lab_interval_equals_the_seeds_python_loop() -> None:
    """The seed's own code, run here, gives the very same floats as the vectorised bootstrap."""
    a, b = lab(6, 4)
    diffs = np.array(list(b.values())) - np.array(list(a.values()))
    rng = np.random.default_rng(0)
    boot = [diffs[rng.integers(0, 80, 80)].mean() for _ in range(5000)]
    lo, hi = np.percentile(boot, [2.5, 97.5])
    c = compare(a, b, "answer correct")
    assert c.ci == (lo, hi)


def test_lab_fourteen_fixed_four_broken_excludes_zero() -> None:
    a, b = lab(14, 4)
    c = quiet_compare(a, b, "answer correct", names=("A", "B"))
    assert (c.fixed, c.broken) == (14, 4)
    assert c.mean_delta == pytest.approx(0.125)
    assert c.ci[0] > 0
    assert c.verdict == "B better on this golden set (interval excludes zero)"


def test_five_question_table_by_hand_seed_42() -> None:
    """diffs +1, 0, 0, -1, +1 from outcomes A = 0,0,0,1,0 and B = 1,0,0,0,1."""
    a = dict(zip("12345", [0, 0, 0, 1, 0], strict=True))
    b = dict(zip("12345", [1, 0, 0, 0, 1], strict=True))
    c = quiet_compare(a, b, seed=42)
    assert c.mean_delta == pytest.approx(0.2)
    assert (round(c.ci[0], 2), round(c.ci[1], 2)) == (-0.40, 0.80)


def test_worse_candidate_verdict() -> None:
    a, b = lab(14, 4)
    c = quiet_compare(b, a, "answer correct", names=("B", "A"))
    assert c.ci[1] < 0
    assert c.verdict == "A worse on this golden set (interval excludes zero)"


# -- Must show 2: the toy comparison through the real engine ---------------------------------------
@pytest.fixture(scope="module")
def toy_pair() -> tuple[Evaluation, Evaluation]:
    m = "nDCG(gain=exp)@3,Hit@3"
    return (
        evaluate(toy_qrels(), toy_run("baseline"), m, run_name="baseline"),
        evaluate(toy_qrels(), toy_run("reranked"), m, run_name="reranked"),
    )


def test_toy_ndcg3_reranked_vs_baseline(toy_pair: tuple[Evaluation, Evaluation]) -> None:
    base, rer = toy_pair
    c = quiet_compare(base, rer, "nDCG(gain=exp)@3")
    assert (c.wins, c.losses, c.ties) == (4, 1, 1)
    assert c.metric == "nDCG(gain=exp)@3"
    assert not c.binary and c.fixed is None and c.broken is None and c.fixed_ids is None
    assert [m.qid for m in c.worsened] == ["rule 16 code"]
    loss = c.worsened[0]
    assert round(loss.delta, 2) == -0.5
    # ranks of the first relevant passage before and after, from Evaluation.details
    assert (loss.rank_before, loss.rank_after) == (1, 3)
    assert [m.qid for m in c.improved] == [
        "name change",
        "seat selection",
        "change fee",
        "infant fare",
    ]
    assert [round(m.delta, 2) for m in c.improved] == [0.63, 0.5, 0.41, 0.2]
    # "name change" had its passage at rank 4, beyond the depth scored for @3 metrics: unknown
    assert (c.improved[0].rank_before, c.improved[0].rank_after) == (None, 2)


def test_toy_binary_metric_counts_fixed_and_broken(toy_pair) -> None:
    base, rer = toy_pair
    c = quiet_compare(base, rer, "Hit@3")
    # Hit@3: name change fixed (rank 4 -> 2); nothing broken (rule 16 code stays at rank 3)
    assert c.binary and (c.fixed, c.broken) == (1, 0)
    assert c.fixed_ids == ("name change",) and c.broken_ids == ()


def test_public_name_is_the_function(toy_pair) -> None:
    base, rer = toy_pair
    c = ragmeter.compare(base, rer, "nDCG(gain=exp)@3")
    assert isinstance(c, ragmeter.Comparison)


# -- inputs and rules ---------------------------------------------------------------------------
def ev(values: dict[str, float], *, run: str = "r", metric: str = "Hit@5", **kw) -> Evaluation:
    qids = tuple(values)
    return Evaluation(
        run=run,
        metrics=(parse(metric),),
        query_ids=qids,
        values=np.array([[values[q]] for q in qids]),
        **kw,
    )


def test_metric_defaults_to_the_single_one_and_is_required_otherwise(toy_pair) -> None:
    c = quiet_compare(ev({"a": 0, "b": 1}), ev({"a": 1, "b": 1}))
    assert c.metric == "Hit@5"
    with pytest.raises(UsageError, match="name the metric"):
        compare(*toy_pair)
    with pytest.raises(InputError, match="was not computed"):
        compare(*toy_pair, "R@5")


def test_different_golden_versions_are_refused() -> None:
    with pytest.raises(VersionMismatchError, match=r"v1.*v2"):
        compare(ev({"a": 1}, golden_version="v1"), ev({"a": 0}, golden_version="v2"))


def test_one_missing_version_warns() -> None:
    with pytest.warns(RagmeterWarning, match="carries no golden-set version"):
        c = compare(ev({"a": 1}, run="x", golden_version="v1"), ev({"a": 0}, run="y"))
    assert c.golden_version == "v1"


def test_questions_in_one_run_only_are_an_error_listing_them() -> None:
    a = {"q1": 1, "q2": 0, "q3": 1}
    b = {"q1": 1, "q2": 1, "q4": 0}
    with pytest.raises(InputError, match=r"1 only in baseline \(q3\); 1 only in candidate \(q4\)"):
        compare(a, b)
    with pytest.warns(RagmeterWarning, match="dropped"):
        c = compare(a, b, intersect=True)
    assert c.query_ids == ("q1", "q2") and c.fixed == 1


def test_bad_values_are_reported_by_question() -> None:
    with pytest.raises(UsageError, match="q2"):
        compare({"q1": 1, "q2": float("nan")}, {"q1": 1, "q2": 1})
    with pytest.raises(InputError, match=r"binary metric.*q1"):
        compare({"q1": 0.5}, {"q1": 1}, "Hit@3")
    with pytest.raises(UsageError, match="Evaluation or a"):
        compare([1, 0], {"q": 1})  # type: ignore[arg-type]


def test_binary_rule() -> None:
    # a free label with 0/1 values is binary; a registry metric that is not binary never is
    assert compare({"a": 0, "b": 1}, {"a": 1, "b": 1}, "correct").binary
    assert not compare({"a": 0, "b": 1}, {"a": 0.5, "b": 1}, "score").binary
    c = compare({"a": 0, "b": 1}, {"a": 1, "b": 1}, "R@5")
    assert not c.binary and c.fixed is None and c.wins == 1


def test_config_differences_are_listed_and_several_warn() -> None:
    a = ev(
        {"a": 1, "b": 0},
        run="base",
        config={"retriever": {"name": "bm25", "k1": 1.2}, "reranker": None, "created_at": "x"},
    )
    b = ev(
        {"a": 1, "b": 1},
        run="cand",
        config={"retriever": {"name": "bm25", "k1": 0.9}, "reranker": "minilm", "created_at": "y"},
    )
    with pytest.warns(RagmeterWarning, match=r"2 changes \(reranker, retriever\)"):
        c = compare(a, b)
    assert [d.key for d in c.config_diff] == ["reranker", "retriever.k1"]
    assert [ch.name for ch in c.changes] == ["reranker", "retriever"]
    one = ev(
        {"a": 1, "b": 1},
        run="cand",
        config={"retriever": {"name": "bm25", "k1": 1.2}, "reranker": "minilm"},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c1 = compare(a, one)
    assert [str(d) for d in c1.config_diff] == ["reranker: null -> minilm"]
    # a nested "name" is a setting; measurements such as the span evaluator's effective k are not
    x = ev(
        {"a": 1},
        config={
            "retriever": {"name": "bm25"},
            "chunks": "a.jsonl",
            "effective_k": {"1200": {"median": 4}},
        },
    )
    y = ev(
        {"a": 1},
        config={
            "retriever": {"name": "dense"},
            "chunks": "b.jsonl",
            "effective_k": {"1200": {"median": 12}},
        },
    )
    assert [d.key for d in compare(x, y).config_diff] == ["retriever.name"]


def test_unfair_budget_or_k_warns_and_strict_refuses() -> None:
    a = ev({"a": 1, "b": 0}, config={"budget": 1200})
    b = ev({"a": 1, "b": 1}, config={"budget": 3600})
    with pytest.warns(RagmeterWarning, match="different context budgets"):
        c = compare(a, b)
    assert c.fairness
    with pytest.raises(UsageError, match="not a fair test"):
        compare(a, b, strict=True)
    k5, k8 = ev({"a": 1}, config={"k": 5}), ev({"a": 1}, config={"k": 8})
    with pytest.raises(UsageError, match="effective k"):
        compare(k5, k8, strict=True)


def test_chunkings_at_a_rank_cutoff_are_unfair_but_fine_at_a_budget() -> None:
    a = ev({"a": 1}, metric="R@4", config={"chunking": "tokens:300:0"})
    b = ev({"a": 1}, metric="R@4", config={"chunking": "tokens:900:0"})
    with pytest.raises(UsageError, match=r"compare at a token budget, e.g. R@budget=1200"):
        compare(a, b, strict=True)
    a2 = ev({"a": 1}, metric="R@budget=1200", config={"chunking": "tokens:300:0", "k": 4})
    b2 = ev({"a": 1}, metric="R@budget=1200", config={"chunking": "tokens:900:0", "k": 1})
    # 1 x 900 is 25% below 4 x 300, so k is a second change (at a budget it is no unfair test)
    with pytest.warns(RagmeterWarning, match=r"2 changes \(chunking, k\)"):
        c = compare(a2, b2, strict=True)
    assert c.fairness == ()


def test_slices_and_heldout_split_reported_apart() -> None:
    rng = np.random.default_rng(3)
    qids = [f"q{i}" for i in range(40)]
    a = dict(zip(qids, rng.integers(0, 2, 40).astype(float), strict=True))
    b = dict(zip(qids, rng.integers(0, 2, 40).astype(float), strict=True))
    slices = {
        q: ("rule codes",) if i < 6 else ("fees", "all-fees") if i < 30 else ()
        for i, q in enumerate(qids)
    }
    splits = {q: "heldout" if i % 4 == 0 else "tune" for i, q in enumerate(qids)}
    with pytest.warns(RagmeterWarning, match="direction, not proof: rule codes"):
        c = compare(ev(a, slices=slices, splits=splits), ev(b, run="s", slices=slices))
    assert list(c.slices) == ["all-fees", "fees", "rule codes"]
    assert c.slices["rule codes"].small and c.slices["rule codes"].stats.n == 6
    assert c.slices["fees"].stats.n == 24 and not c.slices["fees"].small
    assert list(c.splits) == ["tune", "heldout"]
    assert c.splits["heldout"].stats.n == 10
    # a slice's statistics are the overall statistics of its questions alone
    sub = [q for q in qids if "fees" in slices[q]]
    alone = compare({q: a[q] for q in sub}, {q: b[q] for q in sub})
    assert c.slices["fees"].stats == alone.overall
    d = c.to_dict()
    assert d["slices"]["rule codes"]["note"] == "a direction, not proof"
    assert d["splits"]["heldout"]["n"] == 10


def test_to_dict_carries_the_interface_fields() -> None:
    a, b = lab(6, 4)
    c = compare(a, b, "answer correct", randomisation=True)
    d = c.to_dict()
    for key in (
        "n",
        "mean_delta",
        "ci",
        "wins",
        "losses",
        "ties",
        "sign_test_p",
        "fixed",
        "broken",
        "slices",
        "verdict",
        "per_query",
        "randomisation",
        "movers",
    ):
        assert key in d
    assert d["ci"] == [c.ci[0], c.ci[1]]
    assert d["per_query"]["q00"] == {"baseline": 1.0, "candidate": 0.0, "delta": -1.0}
    assert sorted(d["broken_ids"]) == ["q00", "q01", "q02", "q03"]
    assert d["randomisation"]["exact"] is True
    import json

    json.dumps(d, allow_nan=False)


def test_movers_are_limited_and_ordered() -> None:
    a = {f"q{i}": 0.0 for i in range(30)}
    b = {f"q{i}": i / 100 for i in range(30)}
    c = compare(a, b, "score", max_movers=3)
    assert [m.qid for m in c.improved] == ["q29", "q28", "q27"]
    assert c.worsened == ()


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 1.0]), st.sampled_from([0.0, 1.0])), min_size=1, max_size=60
    )
)
def test_swapping_the_runs_mirrors_every_number(pairs: list[tuple[float, float]]) -> None:
    a = {f"q{i}": x for i, (x, _) in enumerate(pairs)}
    b = {f"q{i}": y for i, (_, y) in enumerate(pairs)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RagmeterWarning)
        ab, ba = compare(a, b, n_resamples=300), compare(b, a, n_resamples=300)
    assert ab.mean_delta == pytest.approx(-ba.mean_delta)
    assert (ab.wins, ab.losses, ab.ties) == (ba.losses, ba.wins, ba.ties)
    assert (ab.fixed, ab.broken) == (ba.broken, ba.fixed)
    assert ab.sign_test_p == pytest.approx(ba.sign_test_p)
    assert ab.ci[0] == pytest.approx(-ba.ci[1]) and ab.ci[1] == pytest.approx(-ba.ci[0])
    assert min(ab.deltas) <= ab.ci[0] <= ab.ci[1] <= max(ab.deltas)
