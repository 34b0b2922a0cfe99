"""A query's value never depends on the other queries scored with it (issue 22, item 2).

One exp-gain grade above 1024 anywhere in the qrels used to set every other query's
``nDCG(gain=exp)`` to 0: the power of two that keeps huge gains finite was chosen from the
largest grade of ALL queries, so the small gains of the other queries underflowed. Each query
now has its own shift (nDCG is a ratio within one query, so the scale is exact).

The property behind it, over generated qrels and runs: every query's value of every rank metric
of the registry (nDCG under linear, exp and mapped gains, R, P, RR, AP, Rprec, Hit, with and
without cutoffs and thresholds) computed in the full evaluation is bit-for-bit the value of the
same query scored alone (qrels and run restricted to it), and so is the value computed in query
chunks. Generated grades mix the usual 0-4, negatives, bands past a float's exponent range
(1000-1100, 2000+) and outliers up to 2^62, so the engine's global choices (grade counts or a
sort for the ideal order, the gain lookup table or the gains matrix, the grade dtype, the
depth) come out differently in the full evaluation and alone.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter import evaluate
from ragmeter._errors import RagmeterWarning
from ragmeter.metrics import REGISTRY, Metric, parse_list

Labels = dict[str, dict[str, int]]
Ranking = dict[str, dict[str, float]]


def _rank_metrics() -> list[Metric]:
    """Every rank metric of the registry: without a cutoff and at 3, a raised threshold where
    it takes one (2, and 1025: past exp gains' float range), and for nDCG every gain rule (a
    map with a gain near the float's limit and a grade past 1024); plain ones also at 50,
    deeper than any list."""
    out: list[str] = []
    for info in REGISTRY.values():
        if info.rank_kernel is None:
            continue
        stems = [info.name]
        if "rel" in info.options:
            stems += [f"{info.name}(rel=2)", f"{info.name}(rel=1025)"]
        if "gain" in info.options:
            stems += [f"{info.name}(gain=exp)", f"{info.name}(gains=1:3,2:1e308,1025:0.5)"]
        for stem in stems:
            if info.cutoff != "required":
                out.append(stem)
            if info.cutoff != "none":
                out.append(f"{stem}@3")
        if info.cutoff != "none":
            out.append(f"{info.name}@50")
    return parse_list(out)  # parsed once: the engine takes Metric values as they are


METRICS = _rank_metrics()

#: grades: the usual ones (0 and negatives are judged non-relevant), bands whose exp gains
#: overflow a float, and outliers
_BANDS = st.sampled_from([0, 0, 0, 1000, 1060, 2000])
_OUTLIER = st.sampled_from([961, 1024, 1025, 1075, 1100, 5000, 2**31, 2**62])
#: scores with exact ties and ties only in float32 (1.0 + 1e-9)
_SCORES = st.sampled_from([-1.0, 0.0, 0.5, 1.0, 1.0 + 1e-9, 2.0])


@st.composite
def _case(draw: Any) -> tuple[Labels, Ranking]:
    """Qrels and a run over a few queries sharing item ids: empty label sets, queries with no
    relevant item, queries absent from the run or given an empty ranking, unjudged items, ties,
    and a query only in the run."""
    n_q = draw(st.integers(1, 5))
    pool = [f"d{j}" for j in range(8)]
    qrels: Labels = {}
    run: Ranking = {}
    for i in range(n_q):
        qid = f"q{i}"
        band = draw(_BANDS)
        judged = draw(st.lists(st.sampled_from(pool), unique=True, max_size=6))
        grades = [
            draw(st.one_of(st.integers(-3, 5).map(lambda g, b=band: g + b), _OUTLIER))
            for _ in judged
        ]
        qrels[qid] = dict(zip(judged, grades, strict=True))
        shape = draw(st.sampled_from(["ranked", "ranked", "ranked", "absent", "empty"]))
        if shape == "absent" and i:  # q0 is always in the run: it shares a query with the qrels
            continue
        docs = [] if shape == "empty" else draw(st.lists(st.sampled_from(pool), unique=True))
        run[qid] = {d: draw(_SCORES) for d in docs}
    if draw(st.booleans()):
        run["only-in-run"] = {pool[0]: 1.0}
    return qrels, run


def _score(qrels: Labels, run: Ranking, **kw: Any) -> Any:
    with warnings.catch_warnings():
        # an id-space warning (nothing the run retrieves is judged) is beside the point here
        warnings.simplefilter("ignore", RagmeterWarning)
        return evaluate(qrels, run, METRICS, **kw)


def _columns(ev: Any) -> dict[str, np.ndarray]:
    return {str(m): ev.values[:, j] for j, m in enumerate(ev.metrics)}


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=_case(),
    ties=st.sampled_from(["trec", "given"]),
    missing=st.sampled_from(["zero", "skip"]),
    chunks=st.integers(1, 4),
)
def test_each_query_scores_as_it_does_alone(
    case: tuple[Labels, Ranking], ties: str, missing: str, chunks: int
) -> None:
    qrels, run = case
    full = _score(qrels, run, ties=ties, missing=missing)
    values = _columns(full)
    for i, qid in enumerate(full.query_ids):
        # a query absent from the run scores as one answered with nothing (both 0)
        alone = _score({qid: qrels[qid]}, {qid: run.get(qid, {})}, ties=ties)
        assert alone.query_ids == (qid,)
        for name, column in _columns(alone).items():
            assert column[0] == values[name][i], (qid, name, column[0], values[name][i])
    # every labelled query is accounted for exactly once
    accounted = set(full.query_ids) | set(full.no_relevant_ids)
    if missing == "skip":
        assert set(full.missing_ids).isdisjoint(full.query_ids)
        accounted |= set(full.missing_ids)
    assert accounted == set(qrels) and set(full.no_relevant_ids).isdisjoint(full.query_ids)
    # and in query chunks: the same ids and values to the bit
    chunked = _score(qrels, run, ties=ties, missing=missing, query_chunks=chunks)
    assert (chunked.query_ids, chunked.missing_ids, chunked.no_relevant_ids) == (
        full.query_ids,
        full.missing_ids,
        full.no_relevant_ids,
    )
    assert np.array_equal(chunked.values, full.values)


# -- the numbers ----------------------------------------------------------------------
#: q1 ranks its grade-1 item above its grade-2 item; q2's only judged item is at rank 2
_NORMAL = {"q1": {"a": 1, "b": 2}}
_NORMAL_RUN = {"q1": {"a": 2.0, "b": 1.0}}
_HUGE_RUN = {"q2": {"y": 2.0, "x": 1.0}}
#: exp gains 1 and 3: DCG = 1 + 3/log2(3), IDCG = 3 + 1/log2(3)
_Q1 = (1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3))  # 0.797
_Q2 = 1 / math.log2(3)  # one judged item at rank 2: 0.631, whatever its grade


@pytest.mark.parametrize("grade", [1025, 1100, 2000, 5000])
def test_a_huge_grade_leaves_other_queries_exp_gain_ndcg_alone(grade: int) -> None:
    """Issue 22: 0.0 instead of 0.797 for the normal query, mean 0.315 instead of 0.714."""
    m = "nDCG(gain=exp)"
    ev = evaluate({**_NORMAL, "q2": {"x": grade}}, {**_NORMAL_RUN, **_HUGE_RUN}, m)
    assert ev.column(m)["q1"] == pytest.approx(_Q1, rel=1e-15)
    assert round(ev.column(m)["q1"], 3) == 0.797
    assert ev.column(m)["q2"] == pytest.approx(_Q2, rel=1e-15)
    assert ev.mean(m) == pytest.approx((_Q1 + _Q2) / 2, rel=1e-15)
    assert round(ev.mean(m), 3) == 0.714
    alone = evaluate(_NORMAL, _NORMAL_RUN, m)
    assert ev.column(m)["q1"] == alone.column(m)["q1"]  # to the bit


def test_a_huge_gain_in_a_map_leaves_other_queries_alone() -> None:
    """The same coupling through a gain map: a gain near 1e308 in one query scaled every other
    query's gains by 2^-1024, and their small gains to 0."""
    m = "nDCG(gains=3:1e308)"
    qrels = {**_NORMAL, "q2": {"x": 3}}
    ev = evaluate(qrels, {**_NORMAL_RUN, **_HUGE_RUN}, m)
    # linear gains 1 and 2: DCG = 1 + 2/log2(3), IDCG = 2 + 1/log2(3)
    want = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    assert ev.column(m)["q1"] == pytest.approx(want, rel=1e-15)
    assert ev.column(m)["q1"] == evaluate(_NORMAL, _NORMAL_RUN, m).column(m)["q1"]


def test_a_query_with_huge_and_small_grades_keeps_its_small_gains_exact() -> None:
    """Within one query the shift is its own largest grade's: a grade-1000 item ranked alone
    above a grade-2000 one scores 2^-1000 / (1 + ...) exactly, not 0 (a normal float)."""
    m = "nDCG(gain=exp)@1"
    ev = evaluate({"q": {"low": 1000, "top": 2000}}, {"q": {"low": 2.0, "top": 1.0}}, m)
    assert ev.column(m)["q"] == 2.0**-1000


# -- the grade type is chosen from the whole qrels: it must hold every grade exactly -----------
def test_grades_past_2_to_the_32_stay_exact_integers() -> None:
    """The grade matrix's type came from ``min_scalar_type``: a grade >= 2^32 made it float64,
    which rounds grades past 2^53 (two items counted relevant at rel=2^53+1 of the one judged
    so: R = 2.0) and cannot index the gain table (IndexError for every other query)."""
    g = 2**53 + 1
    qrels = {"q0": {"d0": 1}, "q1": {"d0": g, "d1": g - 1}}
    run = {"q0": {"d0": 1.0}, "q1": {"d1": 1.0, "d0": 0.5}}
    ev = evaluate(qrels, run, [f"R(rel={g})", "nDCG"])
    assert ev.column(f"R(rel={g})") == {"q0": 0.0, "q1": 1.0}
    # a huge grade in a query the run does not rank: the others' grades are small
    ev = evaluate({"q0": {"d0": 1}, "q1": {"d0": 2**62}}, {"q0": {"d0": -1.0}}, "nDCG")
    assert ev.column("nDCG") == {"q0": 1.0, "q1": 0.0}
