"""Engine rules: ties, averaging, missing and unjudged queries, thresholds, containers."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from ragmeter import Evaluation, UsageError, evaluate
from ragmeter.io import Qrels, Run
from ragmeter.metrics import rank_run


def _run(rows: list[tuple[str, str, float]]) -> Run:
    return Run(
        pa.array([r[0] for r in rows], pa.string()),
        pa.array([r[1] for r in rows], pa.string()),
        np.array([r[2] for r in rows], dtype=np.float64),
    )


def test_ties_broken_by_doc_id_descending() -> None:
    ranked = rank_run(_run([("q", "a", 1.0), ("q", "c", 1.0), ("q", "b", 2.0)]))
    assert ranked.docs_of(0) == ["b", "c", "a"]


def test_scores_equal_in_float32_are_a_tie() -> None:
    # 1.0 and 1.0 + 1e-9 differ as float64 but not as float32: trec_eval sees a tie.
    ranked = rank_run(
        _run([("q", "z", 1.0 + 1e-9), ("q", "a", 1.0), ("q", "m", -0.0), ("q", "n", 0.0)])
    )
    assert ranked.docs_of(0) == ["z", "a", "n", "m"]


def test_given_order_keeps_file_order() -> None:
    ranked = rank_run(_run([("q", "a", 1.0), ("q", "c", 5.0), ("q", "b", 2.0)]), ties="given")
    assert ranked.docs_of(0) == ["a", "c", "b"]


def test_ties_option_changes_rr() -> None:
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 1.0, "b": 1.0}}
    assert evaluate(qrels, run, "RR").aggregate["RR"] == 0.5  # "b" > "a": b ranks first
    given = evaluate(qrels, _run([("q", "a", 1.0), ("q", "b", 1.0)]), "RR", ties="given")
    assert given.aggregate["RR"] == 1.0


def test_missing_queries_count_as_zero_or_are_skipped() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 0}}
    run = {"q1": {"a": 1.0}, "q4": {"x": 1.0}}
    zero = evaluate(qrels, run, "RR")
    assert zero.query_ids == ("q1", "q2")
    assert zero.missing_ids == ("q2",)
    assert zero.no_relevant_ids == ("q3",)
    assert zero.aggregate["RR"] == 0.5
    assert zero.per_query["q2"]["RR"] == 0.0
    skip = evaluate(qrels, run, "RR", missing="skip")
    assert skip.query_ids == ("q1",)
    assert skip.aggregate["RR"] == 1.0
    d = zero.to_dict()
    assert (d["n_queries"], d["n_missing"], d["n_no_relevant"]) == (2, 1, 1)


def test_relevance_threshold_for_binary_metrics_but_not_ndcg() -> None:
    qrels = {"q": {"a": 1, "b": 2}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    e = evaluate(qrels, run, "RR,RR(rel=2),R(rel=2)@1,P(rel=2)@2,nDCG@2")
    a = e.aggregate
    assert a["RR"] == 1.0
    assert a["RR(rel=2)"] == 0.5
    assert a["R(rel=2)@1"] == 0.0
    assert a["P(rel=2)@2"] == 0.5
    # linear gain: DCG = 1 + 2/log2(3); ideal = 2 + 1/log2(3)
    assert a["nDCG@2"] == pytest.approx((1 + 2 / np.log2(3)) / (2 + 1 / np.log2(3)), abs=1e-15)


def test_ideal_dcg_uses_all_judged_items_not_only_retrieved() -> None:
    qrels = {"q": {"a": 1, "b": 1, "c": 1}}
    run = {"q": {"a": 1.0}}
    e = evaluate(qrels, run, "nDCG@3")
    assert e.aggregate["nDCG@3"] == pytest.approx(1 / (1 + 1 / np.log2(3) + 0.5), abs=1e-15)


def test_cutoff_beyond_list_and_precision_denominator() -> None:
    e = evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, "P@10,R@10,AP@10,Rprec")
    assert e.aggregate == {"P@10": 0.1, "R@10": 1.0, "AP@10": 1.0, "Rprec": 1.0}


def test_custom_gain_map() -> None:
    qrels = {"q": {"a": 1, "b": 2}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    e = evaluate(qrels, run, "nDCG(gains=1:3,2:9)@2")
    assert e.aggregate["nDCG(gains=1:3,2:9)@2"] == pytest.approx(
        (3 + 9 / np.log2(3)) / (9 + 3 / np.log2(3)), abs=1e-15
    )


def test_containers_give_identical_results() -> None:
    qrels = {"q1": {"a": 1, "b": 2}, "q2": {"c": 1}}
    run = {"q1": {"a": 0.5, "b": 0.25, "x": 0.75}, "q2": {"c": 1.0}}
    q = Qrels(pa.array(["q1", "q1", "q2"]), pa.array(["a", "b", "c"]), np.array([1, 2, 1]))
    r = _run([("q2", "c", 1.0), ("q1", "x", 0.75), ("q1", "b", 0.25), ("q1", "a", 0.5)])
    a = evaluate(qrels, run, "nDCG@3,RR,AP")
    b = evaluate(q, r, "nDCG@3,RR,AP")
    assert a.per_query == b.per_query


def test_span_metrics_are_refused_on_item_labels() -> None:
    with pytest.raises(UsageError, match="span-level"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, "R@budget=100")
    with pytest.raises(UsageError, match="span-level"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, "AllR@3")


def test_evaluation_round_trips_through_json() -> None:
    e = evaluate(
        {"q1": {"a": 1}, "q2": {"b": 1}},
        {"q1": {"a": 1.0, "b": 0.5}},
        "RR,nDCG(gain=exp)@3",
        run_name="r",
        golden_version="g-123",
        slices={"q1": ["fees"]},
    )
    back = Evaluation.from_dict(json.loads(json.dumps(e.to_dict())))
    assert back.per_query == e.per_query
    assert back.metrics == e.metrics
    assert back.golden_version == "g-123"
    assert back.missing_ids == ("q2",)
    assert back.slices == {"q1": ("fees",)}
    assert e.details["q1"]["first_rank"] == 1


def test_values_are_read_only() -> None:
    e = evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, "RR")
    with pytest.raises(ValueError):
        e.values[0, 0] = 0.5


def test_empty_run_gives_zeros_for_every_labelled_query() -> None:
    q = Qrels(pa.array(["q"]), pa.array(["a"]), np.array([1]))
    r = _run([])
    e = evaluate(q, r, "RR,nDCG@5,P@5,R@5,AP,Rprec")
    assert e.query_ids == ("q",)
    assert all(v == 0.0 for v in e.aggregate.values())


def test_sorted_and_shuffled_runs_rank_identically() -> None:
    # Grouped, score-sorted runs skip the sort (fast path); any other layout is sorted. Both must
    # give the same ranking, ties (equal in float32) included.
    rng = np.random.default_rng(7)
    rows = []
    for q in range(40):
        scores = np.round(rng.random(25), 1)  # many ties
        for d, s in enumerate(scores):
            rows.append((f"q{q}", f"d{rng.integers(0, 1000)}-{d}", float(s)))
    grouped = sorted(rows, key=lambda r: (r[0], -np.float32(r[2])))
    shuffled = [rows[i] for i in rng.permutation(len(rows))]
    a, b = rank_run(_run(grouped)), rank_run(_run(shuffled))
    assert a.qids == b.qids
    for i in range(len(a.qids)):
        assert a.docs_of(i) == b.docs_of(i)
        # the trec rule: score desc (float32), then doc id desc
        docs = a.docs_of(i)
        got = [(-np.float32(s), d) for q, d, s in rows if q == a.qids[i]]
        by_doc_desc = sorted(got, key=lambda t: t[1].encode(), reverse=True)
        want = sorted(by_doc_desc, key=lambda t: t[0])  # stable: doc order kept within a score
        assert docs == [d for _, d in want]


def test_query_split_over_two_blocks_is_still_ranked_together() -> None:
    r = _run([("q1", "a", 3.0), ("q2", "x", 1.0), ("q1", "b", 2.0)])
    ranked = rank_run(r)
    assert ranked.docs_of(0) == ["a", "b"] and ranked.docs_of(1) == ["x"]
