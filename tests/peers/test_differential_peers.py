"""Differential tests: ragmeter against pytrec_eval (pytrec-eval-terrier), ranx and ir_measures.

Seeded random data with graded labels 0-3, unjudged items in the run, queries missing from the
run, queries with no relevant item, an empty judgement set, run-only queries, and (in the tied
run) exact score ties plus scores that are equal only after rounding to float32. Where the
definitions agree, per-query values and means are equal to 1e-12. Every known definitional
difference has its own ``test_difference_*`` that asserts the difference exists:

- pytrec_eval scores only queries present in the run (ragmeter ``missing="skip"``); ragmeter's
  default counts them as 0 (trec_eval ``-c``), as ranx (``make_comparable``) and ir_measures do.
- every peer averages queries without a relevant item in as 0; ragmeter excludes and reports them.
- ranx compares scores as float64 and leaves exact ties in its sort's order; trec_eval (and so
  pytrec_eval and ragmeter) compare as float32 and break ties by item id descending. ranx is
  compared on a tie-free run.
- ir_measures computes ``RR@k`` with its MS MARCO provider, which breaks ties by item id ascending.
- ranx ``ndcg`` is trec_eval's linear gain (ragmeter ``nDCG``); ``ndcg_burges`` is 2^g - 1
  (ragmeter ``nDCG(gain=exp)``). ranx ``ndcg@k-l2`` drops grade 1's gain (ragmeter
  ``nDCG(gains=1:0)@k``); trec_eval and ragmeter keep it (``nDCG`` takes no ``rel``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from typing import Any

import numpy as np
import pytest

from ragmeter.metrics import Metric, parse

# justified: the peers are test dependencies (the [test] extra `make test` installs); a suite
# run without them skips with the package to install instead of failing on an import
pytrec_eval = pytest.importorskip("pytrec_eval", reason="pip install 'ragmeter[test]'")
# justified: ir_measures is a peer of the [test] extra
ir_measures = pytest.importorskip("ir_measures", reason="pip install 'ragmeter[test]'")

TOL = 1e-12
KS = (1, 3, 5, 10, 20, 50)  # 50 exceeds every list length (40): P@k keeps k as denominator

Qrels = dict[str, dict[str, int]]
RunDict = dict[str, dict[str, float]]


# -- seeded data -------------------------------------------------------------------------------
@cache
def make_data(seed: int = 7, tie_free: bool = False) -> tuple[Qrels, RunDict]:
    """Labels and a run exercising every edge the engine handles; identical for every call."""
    rng = np.random.default_rng(seed)
    qrels: Qrels = {}
    run: RunDict = {}
    for i in range(60):
        qid = f"q{i:03d}"
        pool = [f"d{i:03d}-{j:02d}" for j in range(50)]
        judged = rng.choice(50, size=int(rng.integers(1, 16)), replace=False)
        if i % 10 == 3:  # judged, none relevant
            grades = np.zeros(len(judged), dtype=int)
        elif i % 10 == 6:  # only grade 1 (no relevant item at rel=2)
            grades = np.ones(len(judged), dtype=int)
        else:
            grades = rng.choice(4, size=len(judged), p=[0.4, 0.3, 0.2, 0.1])
            grades[0] = max(grades[0], 1)
        qrels[qid] = {pool[j]: int(g) for j, g in zip(judged, grades, strict=True)}
        if i % 10 == 8:  # in the labels, absent from the run
            continue
        n = int(rng.integers(0, 41)) if i % 10 != 9 else 40
        docs = [pool[j] for j in rng.choice(50, size=n, replace=False)]
        if tie_free:
            scores = (rng.permutation(n) + 1) * 0.125  # distinct, exact in float32
        else:
            scores = rng.integers(0, 6, size=n) * 0.5  # exact ties
            nudge = rng.random(n) < 0.3
            scores = scores + np.where(nudge, 1e-9, 0.0)  # equal to the base only in float32
        run[qid] = {d: float(s) for d, s in zip(docs, scores, strict=True)}
    qrels["q_empty"] = {}  # a query with an empty judgement set
    for i in range(3):  # run-only queries: ignored by everyone
        run[f"r{i}"] = {f"x{j}": float(j) for j in range(5)}
    return qrels, run


def ragmeter_eval(qrels: Qrels, run: RunDict, metrics: list[Metric], **kw: Any):  # -> Evaluation
    from ragmeter.metrics import evaluate

    return evaluate(qrels, run, metrics, **kw)


def relevant_qids(qrels: Qrels) -> set[str]:
    return {q for q, docs in qrels.items() if any(g >= 1 for g in docs.values())}


def exp_gain_qrels(qrels: Qrels) -> Qrels:
    return {q: {d: 2**g - 1 for d, g in docs.items()} for q, docs in qrels.items()}


# -- pytrec_eval -------------------------------------------------------------------------------
def _pytrec_pairs() -> list[tuple[str, str, int, bool]]:
    """(ragmeter metric, pytrec_eval measure, relevance level, exp-gain qrels)."""
    pairs: list[tuple[str, str, int, bool]] = []
    for rel in (1, 2):
        opt = "" if rel == 1 else f"(rel={rel})"
        pairs += [
            (f"RR{opt}", "recip_rank", rel, False),
            (f"AP{opt}", "map", rel, False),
            (f"Rprec{opt}", "Rprec", rel, False),
        ]
        for k in KS:
            pairs += [
                (f"P{opt}@{k}", f"P_{k}", rel, False),
                (f"R{opt}@{k}", f"recall_{k}", rel, False),
                (f"Hit{opt}@{k}", f"success_{k}", rel, False),
                (f"AP{opt}@{k}", f"map_cut_{k}", rel, False),
            ]
    pairs += [("nDCG", "ndcg", 1, False), ("nDCG(gain=exp)", "ndcg", 1, True)]
    for k in KS:
        pairs += [
            (f"nDCG@{k}", f"ndcg_cut_{k}", 1, False),
            (f"nDCG(gain=exp)@{k}", f"ndcg_cut_{k}", 1, True),
        ]
    return pairs


PYTREC_PAIRS = _pytrec_pairs()


@cache
def pytrec_results(rel: int, exp: bool, tie_free: bool = False) -> dict[str, dict[str, float]]:
    qrels, run = make_data(tie_free=tie_free)
    measures = {
        ".".join(m.rsplit("_", 1)) if m[-1].isdigit() else m
        for _, m, r, e in PYTREC_PAIRS
        if r == rel and e == exp
    }
    labels = exp_gain_qrels(qrels) if exp else qrels
    return pytrec_eval.RelevanceEvaluator(labels, measures, relevance_level=rel).evaluate(run)


@cache
def ragmeter_tied(missing: str):  # -> Evaluation
    qrels, run = make_data()
    metrics = [parse(m) for m, *_ in PYTREC_PAIRS] + [parse(f"RR@{k}") for k in KS]
    return ragmeter_eval(qrels, run, metrics, missing=missing)


@pytest.mark.parametrize(
    ("metric", "measure", "rel", "exp"), PYTREC_PAIRS, ids=[p[0] for p in PYTREC_PAIRS]
)
def test_pytrec_eval_agrees(metric: str, measure: str, rel: int, exp: bool) -> None:
    """Per query and mean, on the run with exact and float32-only ties."""
    qrels, _ = make_data()
    theirs = pytrec_results(rel, exp)
    ev = ragmeter_tied("skip")
    ours = ev.column(metric)
    assert set(ours) == set(theirs) & relevant_qids(qrels)
    bad = {q: (v, theirs[q][measure]) for q, v in ours.items() if abs(v - theirs[q][measure]) > TOL}
    assert not bad, f"{metric} vs pytrec_eval {measure} (ours, theirs): {bad}"
    mean = np.mean([theirs[q][measure] for q in ours])
    assert abs(ev.aggregate[str(parse(metric))] - mean) <= TOL


def test_difference_pytrec_eval_drops_queries_absent_from_the_run() -> None:
    """pytrec_eval = ragmeter ``missing="skip"``; ragmeter's default counts them as 0."""
    qrels, run = make_data()
    theirs = pytrec_results(1, False)
    absent = relevant_qids(qrels) - set(run)
    assert absent and absent.isdisjoint(theirs)
    skip, zero = ragmeter_tied("skip"), ragmeter_tied("zero")
    assert set(skip.missing_ids) == absent == set(zero.missing_ids)
    assert set(zero.query_ids) == set(skip.query_ids) | absent
    mean = np.mean([theirs[q]["map"] for q in skip.query_ids])
    assert abs(skip.aggregate["AP"] - mean) <= TOL
    assert abs(zero.aggregate["AP"] - mean * skip.n_queries / zero.n_queries) <= TOL
    assert zero.aggregate["AP"] < mean


def test_difference_peers_average_in_queries_without_relevant_items() -> None:
    """pytrec_eval scores a query with no relevant item as 0 and averages it in; ragmeter
    excludes it and reports it in ``no_relevant_ids``."""
    qrels, _ = make_data()
    theirs = pytrec_results(1, False)
    no_rel = {q for q in qrels if q not in relevant_qids(qrels)}
    scored_by_them = no_rel & set(theirs)
    assert scored_by_them and all(theirs[q]["map"] == 0.0 for q in scored_by_them)
    ev = ragmeter_tied("skip")
    assert scored_by_them <= set(ev.no_relevant_ids)
    assert set(ev.no_relevant_ids).isdisjoint(ev.query_ids)
    their_mean = np.mean([v["map"] for v in theirs.values()])
    assert abs(their_mean * len(theirs) - ev.aggregate["AP"] * ev.n_queries) <= 1e-9
    assert their_mean < ev.aggregate["AP"]


def test_empty_judgement_set_and_run_only_queries_are_not_scored() -> None:
    ev = ragmeter_tied("zero")
    assert "q_empty" not in ev.query_ids and "q_empty" not in ev.missing_ids
    assert not {"r0", "r1", "r2"} & set(ev.query_ids)


def test_float32_ties_are_exercised() -> None:
    """The tied run has pairs equal only in float32 whose float64 order is not trec_eval's, and
    they change at least one pytrec_eval value (so the agreement above covers the rule)."""
    qrels, run = make_data()
    fixed = {q: {d: float(np.float32(s)) for d, s in docs.items()} for q, docs in run.items()}
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "P.5"})
    exact = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "P.5"}).evaluate(fixed)
    assert ev.evaluate(run) == exact  # trec_eval already rounded to float32
    # a float64 ranking (score desc, then id desc) would give other numbers on this data
    f64 = {
        q: {d: float(r) for r, d in enumerate(sorted(docs, key=lambda d: (docs[d], d)), start=1)}
        for q, docs in run.items()
    }
    assert pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "P.5"}).evaluate(f64) != exact


# -- ranx --------------------------------------------------------------------------------------
def _ranx_pairs() -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for rel in (1, 2):
        opt, lvl = ("", "") if rel == 1 else (f"(rel={rel})", f"-l{rel}")
        pairs += [
            (f"RR{opt}", f"mrr{lvl}"),
            (f"AP{opt}", f"map{lvl}"),
            (f"Rprec{opt}", f"r-precision{lvl}"),
        ]
        for k in KS:
            pairs += [
                (f"P{opt}@{k}", f"precision@{k}{lvl}"),
                (f"R{opt}@{k}", f"recall@{k}{lvl}"),
                (f"Hit{opt}@{k}", f"hit_rate@{k}{lvl}"),
                (f"RR{opt}@{k}", f"mrr@{k}{lvl}"),
                (f"AP{opt}@{k}", f"map@{k}{lvl}"),
            ]
    pairs += [("nDCG", "ndcg"), ("nDCG(gain=exp)", "ndcg_burges")]
    for k in KS:
        pairs += [
            (f"nDCG@{k}", f"ndcg@{k}"),
            (f"nDCG(gain=exp)@{k}", f"ndcg_burges@{k}"),
            (f"nDCG(gains=1:0)@{k}", f"ndcg@{k}-l2"),
        ]
    return pairs


RANX_PAIRS = _ranx_pairs()


#: ranx in a child process: a list of jobs (labels, run, measures, make_comparable) as JSON on
#: stdin; out comes a list, per job the mean and per-query value of each measure, or the message
#: of ranx's AssertionError
RANX_CHILD = """
import json, sys, warnings
import ranx

def one(qrels, run, measures, comparable):
    r = ranx.Run(run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's unsafe-cast notices
        try:
            means = ranx.evaluate(ranx.Qrels(qrels), r, measures, make_comparable=comparable)
        except AssertionError as exc:
            return {"refused": str(exc)}
    if len(measures) == 1:  # one measure: ranx returns its mean alone
        means = {measures[0]: means}
    return {
        "mean": {m: float(v) for m, v in means.items()},
        "per_query": {m: {q: float(v) for q, v in r.scores[m].items()} for m in measures},
    }

print(json.dumps([one(*job) for job in json.load(sys.stdin)]))
"""

#: the float64 case: two items 1e-9 apart, the relevant one with the higher score and smaller id
FLOAT64_QRELS = {"q": {"d999-00": 1, "d999-01": 0}}
FLOAT64_RUN = {"q": {"d999-00": 0.3 + 1e-9, "d999-01": 0.3}}

Job = tuple[Qrels, RunDict, list[str], bool]


def _judged(qrels: Qrels) -> Qrels:
    return {q: d for q, d in qrels.items() if d}  # ranx cannot hold an empty judgement set


def _known_jobs() -> list[Job]:
    """Every ranx evaluation the tests below ask for: both random runs with every measure, the
    float64 case and the labels ranx refuses without make_comparable."""
    measures = [m for _, m in RANX_PAIRS]
    tie_free, tied = make_data(tie_free=True), make_data(tie_free=False)
    return [
        (_judged(tie_free[0]), tie_free[1], measures, True),
        (_judged(tied[0]), tied[1], measures, True),
        (FLOAT64_QRELS, FLOAT64_RUN, ["mrr"], False),
        (_judged(tie_free[0]), tie_free[1], ["mrr"], False),
    ]


def _ranx_child(jobs: list[Job]) -> list[dict[str, Any]]:
    # justified: ranx is a test dependency, as the peers above
    pytest.importorskip("ranx", reason="pip install 'ragmeter[test]'")
    done = subprocess.run(
        [sys.executable, "-c", RANX_CHILD],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        env={**os.environ, "NUMBA_DISABLE_JIT": "1"},
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out: list[dict[str, Any]] = json.loads(done.stdout)
    assert len(out) == len(jobs)
    return out


@cache
def _known_results() -> dict[str, dict[str, Any]]:
    """ranx's answers to every known job, from one child process (its start and ranx's import
    cost more than the evaluations), keyed by the job as JSON."""
    jobs = _known_jobs()
    return dict(zip((json.dumps(j) for j in jobs), _ranx_child(jobs), strict=True))


def ranx_evaluate(
    qrels: Qrels, run: RunDict, measures: list[str], *, make_comparable: bool = False
) -> dict[str, Any]:
    """ranx's ``evaluate`` on these labels and run, in a child process running ranx's own Python
    source with numba's JIT off (``NUMBA_DISABLE_JIT=1``): the same definitions, in a few seconds
    instead of the minutes numba takes to compile ranx's parallel kernels on a loaded machine.
    The child keeps this process's numba settings apart (ragmeter's compiled kernels stay
    compiled here). The jobs the tests ask for are evaluated together, once per process (an
    unknown job gets a child of its own). Returns ``{"mean": ..., "per_query": ...}`` or
    ``{"refused": message}``."""
    job: Job = (qrels, run, measures, make_comparable)
    known = _known_results()
    key = json.dumps(job)
    return known[key] if key in known else _ranx_child([job])[0]


@cache
def ranx_results(tie_free: bool) -> dict[str, dict[str, float]]:
    """ranx per-query values of every measure in RANX_PAIRS (one child process for all)."""
    qrels, run = make_data(tie_free=tie_free)
    out = ranx_evaluate(_judged(qrels), run, [m for _, m in RANX_PAIRS], make_comparable=True)
    return out["per_query"]


@cache
def ragmeter_tie_free():  # -> Evaluation
    qrels, run = make_data(tie_free=True)
    return ragmeter_eval(qrels, run, [parse(m) for m, _ in RANX_PAIRS], missing="zero")


@pytest.mark.parametrize(("metric", "measure"), RANX_PAIRS, ids=[p[1] for p in RANX_PAIRS])
def test_ranx_agrees(metric: str, measure: str) -> None:
    """Per query on the tie-free run; ranx's make_comparable counts missing queries as 0."""
    theirs = ranx_results(tie_free=True)[measure]
    ev = ragmeter_tie_free()
    ours = ev.column(metric)
    assert set(ours) <= set(theirs)
    bad = {q: (v, theirs[q]) for q, v in ours.items() if abs(v - theirs[q]) > TOL}
    assert not bad, f"{metric} vs ranx {measure} (ours, theirs): {bad}"
    assert abs(ev.aggregate[str(parse(metric))] - np.mean([theirs[q] for q in ours])) <= TOL


def test_difference_ranx_compares_scores_as_float64() -> None:
    """Two items 1e-9 apart: ranx ranks the higher float64 score first, trec_eval's float32
    comparison sees a tie and puts the larger id first."""
    qrels, run = FLOAT64_QRELS, FLOAT64_RUN
    theirs = ranx_evaluate(qrels, run, ["mrr"])["mean"]["mrr"]
    ours = ragmeter_eval(qrels, run, [parse("RR")]).aggregate["RR"]
    trec = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["q"]["recip_rank"]
    assert (theirs, ours, trec) == (1.0, 0.5, 0.5)
    # on the random tied run the rule changes ranx's numbers for some query
    tied = ranx_results(tie_free=False)["mrr@10"]
    ours_tied = ragmeter_tied("zero").column("RR@10")
    assert any(abs(ours_tied[q] - tied[q]) > TOL for q in ours_tied)


def test_difference_ranx_ndcg_rel_level_drops_lower_grades() -> None:
    """ranx ``ndcg@k-l2`` = ragmeter ``nDCG(gains=1:0)@k`` (checked above); trec_eval's nDCG,
    and so ragmeter's, keeps grade 1's gain whatever the threshold."""
    theirs = ranx_results(tie_free=True)
    ev = ragmeter_tie_free()
    assert ev.column("nDCG(gains=1:0)@10") != ev.column("nDCG@10")
    assert any(abs(theirs["ndcg@10-l2"][q] - v) > TOL for q, v in ev.column("nDCG@10").items())
    assert any(
        abs(theirs["ndcg@10"][q] - theirs["ndcg_burges@10"][q]) > TOL for q in ev.query_ids
    )  # linear and exp gains differ on graded data


def test_difference_ranx_refuses_queries_missing_from_the_run() -> None:
    """ranx asserts that the run and the labels have the same queries; with ``make_comparable``
    it scores the missing ones 0, as ragmeter's default ``missing="zero"`` does."""
    qrels, run = make_data(tie_free=True)
    assert "make_comparable" in ranx_evaluate(_judged(qrels), run, ["mrr"])["refused"]
    ev = ragmeter_tie_free()
    theirs = ranx_results(tie_free=True)["mrr"]
    assert ev.missing_ids and all(theirs[q] == 0.0 == ev.column("RR")[q] for q in ev.missing_ids)


def test_difference_ranx_averages_in_queries_without_relevant_items() -> None:
    theirs = ranx_results(tie_free=True)["map"]
    ev = ragmeter_tie_free()
    extra = set(theirs) - set(ev.query_ids)
    assert extra and extra <= set(ev.no_relevant_ids) and all(theirs[q] == 0 for q in extra)
    assert (
        abs(np.mean(list(theirs.values())) * len(theirs) - ev.aggregate["AP"] * ev.n_queries)
        <= 1e-9
    )


# -- ir_measures -------------------------------------------------------------------------------
def _irm_pairs() -> list[tuple[str, str]]:
    pairs = [
        ("RR", "RR"),
        ("AP", "AP"),
        ("Rprec", "Rprec"),
        ("nDCG", "nDCG"),
        ("nDCG(gain=exp)", "nDCG(gains={0:0,1:1,2:3,3:7})"),
        ("AP(rel=2)", "AP(rel=2)"),
    ]
    for k in KS:
        pairs += [
            (f"P@{k}", f"P@{k}"),
            (f"R@{k}", f"R@{k}"),
            (f"Hit@{k}", f"Success@{k}"),
            (f"AP@{k}", f"AP@{k}"),
            (f"nDCG@{k}", f"nDCG@{k}"),
            (f"P(rel=2)@{k}", f"P(rel=2)@{k}"),
            (f"nDCG(gains=1:5,3:2)@{k}", f"nDCG(gains={{0:0,1:5,2:2,3:2}})@{k}"),
        ]
    return pairs


IRM_PAIRS = _irm_pairs()


@cache
def irm_results(measures: tuple[str, ...], tie_free: bool) -> dict[str, dict[str, float]]:
    """ir_measures per-query values, one call per measure: in one call, its pytrec_eval provider
    may compute a plain ``nDCG`` inside the invocation made for ``nDCG(gains=...)`` (it joins
    "any existing invocation"), giving the plain measure the custom gains (ir_measures 0.4.3)."""
    qrels, run = make_data(tie_free=tie_free)
    out: dict[str, dict[str, float]] = {}
    for m in measures:
        rows = ir_measures.iter_calc([ir_measures.parse_measure(m)], qrels, run)
        out[m] = {row.query_id: float(row.value) for row in rows}
    return out


@cache
def ragmeter_irm():  # -> Evaluation
    return ragmeter_eval(*make_data(), [parse(m) for m, _ in IRM_PAIRS], missing="zero")


@pytest.mark.parametrize(("metric", "measure"), IRM_PAIRS, ids=[p[1] for p in IRM_PAIRS])
def test_ir_measures_agrees(metric: str, measure: str) -> None:
    """Per query and mean on the tied run; ir_measures counts missing queries as 0."""
    qrels, _ = make_data()
    theirs = irm_results(tuple(m for _, m in IRM_PAIRS), False)[measure]
    ours = ragmeter_irm().column(metric)
    assert set(ours) == set(theirs) & relevant_qids(qrels)
    bad = {q: (v, theirs[q]) for q, v in ours.items() if abs(v - theirs[q]) > TOL}
    assert not bad, f"{metric} vs ir_measures {measure} (ours, theirs): {bad}"


def test_ir_measures_rr_at_k_agrees_without_ties() -> None:
    measures = tuple(f"RR@{k}" for k in KS)
    theirs = irm_results(measures, True)
    ev = ragmeter_tie_free_rr()
    for m in measures:
        ours = ev.column(m)
        assert all(abs(v - theirs[m][q]) <= TOL for q, v in ours.items()), m


@cache
def ragmeter_tie_free_rr():  # -> Evaluation
    return ragmeter_eval(*make_data(tie_free=True), [parse(f"RR@{k}") for k in KS])


def test_difference_ir_measures_rr_at_k_breaks_ties_by_ascending_id() -> None:
    """ir_measures sends ``RR@k`` to its MS MARCO provider: ties by item id ascending, float64."""
    qrels = {"q": {"a": 1, "b": 0}}
    run = {"q": {"a": 0.5, "b": 0.5}}
    cut, plain = ir_measures.parse_measure("RR@10"), ir_measures.parse_measure("RR")
    theirs = ir_measures.calc_aggregate([cut, plain], qrels, run)
    ours = ragmeter_eval(qrels, run, [parse("RR@10"), parse("RR")]).aggregate
    assert (theirs[cut], theirs[plain]) == (1.0, 0.5)
    assert (ours["RR@10"], ours["RR"]) == (0.5, 0.5)


def test_difference_ir_measures_defaults() -> None:
    """ir_measures' defaults: ``nDCG`` is trec_eval's linear gain (dcg='log2'), ``judged_only``
    is off, and queries missing from the run count as 0 although its pytrec_eval backend drops
    them; queries without a relevant item are averaged in as 0 (ragmeter excludes them)."""
    ndcg = ir_measures.parse_measure("nDCG@10")
    assert ndcg["dcg"] == "log2" and ndcg["judged_only"] is False
    qrels, _ = make_data()
    theirs = irm_results(("AP",), False)["AP"]
    assert set(theirs) == set(qrels)  # every labelled query: in the run or not, empty or not
    ev = ragmeter_tied("zero")
    assert set(ev.query_ids) < set(theirs)
    assert abs(sum(theirs.values()) - ev.aggregate["AP"] * ev.n_queries) <= 1e-9
