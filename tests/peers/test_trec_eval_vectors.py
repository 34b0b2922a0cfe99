"""ragmeter reproduces trec_eval's own test vectors (usnistgov/trec_eval ``test/``), at 4 decimals.

The vectors live in ``../shared/peer-data/trec_eval`` (``RAGMETER_PEER_DATA`` overrides); see its
README for the exact trec_eval command behind each ``out.*`` file. Every measure ragmeter shares
with trec_eval is checked per query and for the ``all`` row, one test per (file, measure).

trec_eval measure            ragmeter metric               notes
---------------------------  ----------------------------  ------------------------------------
P_k                          P@k                           denominator k, not the number retrieved
recall_k                     R@k
success_k                    Hit@k
recip_rank                   RR                            no cutoff
map                          AP                            no cutoff
map_cut_k                    AP@k
Rprec                        Rprec
ndcg                         nDCG                          linear gain, ideal from all judged items
ndcg_cut_k                   nDCG@k
ndcg_1=3,2=9,4=4.5           nDCG(gains=1:3,2:9,4:4.5)     custom gain map (``-mndcg.1=3,...``)
with ``-l N`` (N > 1)        P(rel=N)@k, R(rel=N)@k, Hit(rel=N)@k, RR(rel=N), AP(rel=N),
                             AP(rel=N)@k, Rprec(rel=N); nDCG and nDCG@k stay plain, because
                             trec_eval keeps the lower grades' gain in nDCG (upstream
                             usnistgov/trec_eval#35)

Not shared, so ignored: runid, num_q, num_ret, num_rel, num_rel_ret, num_nonrel_judged_ret, gm_map,
gm_bpref, bpref, infAP, iprec_at_recall_*, 11pt_avg*, Rprec_mult_*, utility*, binG, G, ndcg_rel,
Rndcg, relative_P_*, set_*, unj_*, rbp, rbp_resid, relstring.

Definitional notes, each asserted below:
- ``out.test.meas_params`` asks for ``ndcg_cut.10,20,23.4``; trec_eval reads cutoffs as integers,
  so 23.4 becomes ``ndcg_cut_23``, checked here as ``nDCG@23``. ragmeter's grammar takes integer
  cutoffs only and rejects ``nDCG@23.4`` instead of truncating it silently.
- ``results.trunc`` has free text after the 6th column ("more junk at end of lines"); trec_eval
  ignores it, and so does ragmeter's reader, with a warning naming the file and line.
- ``qrels.comment.test`` has one topic with no relevant item. trec_eval averages over it as a 0;
  ragmeter excludes such queries from the mean and reports them (``no_relevant_ids``), so the
  ``all`` row equals ragmeter's per-query sum divided by trec_eval's ``num_q``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest
from _peer_data import SKIP_REASON, peer_data_dir, ragmeter_metric, read_trec_eval_output

from ragmeter import UsageError
from ragmeter.metrics import parse

#: half a unit in the 4th decimal: "equal at 4 decimals" (a hair more for the binary rounding of
#: values such as 0.00005 that trec_eval printed with %.4f)
TOL = 0.5e-4 + 1e-9

DATA = peer_data_dir()


@dataclass(frozen=True)
class Case:
    """One trec_eval invocation whose output is in the folder (see its README)."""

    out: str
    qrels: str
    run: str
    rel_level: int = 1  # trec_eval -l
    #: trec_eval averaged a query with no relevant item as 0 (ragmeter excludes and reports it)
    trec_counts_no_relevant: bool = False


CASES: dict[str, Case] = {
    # trec_eval -m all_trec -q qrels.test results.test
    "aq": Case("out.test.aq", "qrels.test", "results.test"),
    # trec_eval -m all_trec -q -c qrels.test results.trunc  (302 absent from the run: 0 with -c)
    "aqc": Case("out.test.aqc", "qrels.test", "results.trunc"),
    # trec_eval -m all_trec -q -l2 qrels.rel_level results.test
    "aql": Case("out.test.aql", "qrels.rel_level", "results.test", rel_level=2),
    # trec_eval -q -m P.5,7,3 -m recall.20,2000 -mndcg.1=3,2=9,4=4.5 -mndcg_cut.10,20,23.4
    #           -msuccess.2,5,20 ... qrels.test results.test
    "meas_params": Case("out.test.meas_params", "qrels.test", "results.test"),
    # trec_eval qrels.test results.test (default measures, summary only)
    "default": Case("out.test", "qrels.test", "results.test"),
    # the same expected output from qrels with '#' comment lines
    "default_with_comments": Case("out.test", "qrels.test.with-comments", "results.test"),
    # ids containing '#' (not comments); graded qrels 0-3; one topic without a relevant item
    "comment": Case(
        "out.comment.test",
        "qrels.comment.test",
        "results.comment.test",
        trec_counts_no_relevant=True,
    ),
}


def _params() -> list[object]:
    if DATA is None:
        # justified: trec_eval's files live in shared/, outside the repo; CI always has them
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=SKIP_REASON), id="absent")]
    out: list[object] = []
    for case_id, case in CASES.items():
        expected = read_trec_eval_output(DATA / case.out)
        for measure in expected.measures:
            if ragmeter_metric(measure, case.rel_level) is not None:
                out.append(pytest.param(case_id, measure, id=f"{case_id}-{measure}"))
    return out


@cache
def _evaluate(case_id: str) -> tuple[Any, tuple[str, ...]]:
    """(Evaluation of every shared measure in the case's out file, warnings raised on reading)."""
    from ragmeter.metrics import evaluate

    assert DATA is not None
    case = CASES[case_id]
    expected = read_trec_eval_output(DATA / case.out)
    metrics = []
    for measure in expected.measures:
        name = ragmeter_metric(measure, case.rel_level)
        if name is not None and parse(name) not in metrics:
            metrics.append(parse(name))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ev = evaluate(DATA / case.qrels, DATA / case.run, metrics, missing="zero", ties="trec")
    return ev, tuple(str(w.message) for w in caught)


@pytest.mark.parametrize(("case_id", "measure"), _params())
def test_measure_equals_trec_eval(case_id: str, measure: str) -> None:
    assert DATA is not None
    case = CASES[case_id]
    expected = read_trec_eval_output(DATA / case.out)
    metric = parse(ragmeter_metric(measure, case.rel_level) or "")
    ev, _ = _evaluate(case_id)
    ours = ev.column(metric)

    bad: list[str] = []
    for qid, want in expected.per_query(measure).items():
        got = ours.get(qid)
        if got is None:
            bad.append(f"query {qid}: trec_eval {want:.4f}, ragmeter has no value")
        elif abs(got - want) > TOL:
            bad.append(f"query {qid}: trec_eval {want:.4f}, ragmeter {got:.6f}")

    if case.trec_counts_no_relevant:
        got_all = sum(ours.values()) / expected.num_q()
    else:
        got_all = ev.aggregate[str(metric)]
    want_all = expected.summary(measure)
    if abs(got_all - want_all) > TOL:
        bad.append(f"all: trec_eval {want_all:.4f}, ragmeter {got_all:.6f}")
    assert not bad, f"{measure} -> {metric} ({case.out}):\n" + "\n".join(bad)


# justified: real datasets are not in the repo (licences); .ci/run points RAGMETER_DATA at them
needs_data = pytest.mark.skipif(DATA is None, reason=SKIP_REASON)


@needs_data
@pytest.mark.parametrize("case_id", list(CASES))
def test_query_counts_match_trec_eval(case_id: str) -> None:
    """ragmeter averages over the same queries as trec_eval (-c: missing ones count as 0)."""
    assert DATA is not None
    case = CASES[case_id]
    expected = read_trec_eval_output(DATA / case.out)
    ev, _ = _evaluate(case_id)
    if case.trec_counts_no_relevant:
        assert ev.n_queries == expected.num_q() - ev.n_no_relevant
    else:
        assert ev.n_queries == expected.num_q()
        assert ev.n_no_relevant == 0


@needs_data
def test_aqc_reports_the_query_missing_from_the_run() -> None:
    ev, _ = _evaluate("aqc")
    assert ev.missing_ids == ("302",)
    assert "302" in ev.query_ids
    assert all(v == 0.0 for v in ev.per_query["302"].values())


@needs_data
def test_extra_fields_after_the_sixth_are_ignored_with_a_warning() -> None:
    _, warned = _evaluate("aqc")
    assert any("results.trunc" in w for w in warned), warned
    _, clean = _evaluate("aq")
    assert not clean


@needs_data
def test_comment_case_no_relevant_query_is_excluded_and_reported() -> None:
    """Definitional difference: trec_eval averages a topic without relevant items as 0."""
    assert DATA is not None
    ev, _ = _evaluate("comment")
    expected = read_trec_eval_output(DATA / "out.comment.test")
    assert ev.n_no_relevant == 1
    assert set(ev.no_relevant_ids).isdisjoint(ev.query_ids)
    # the difference exists: ragmeter's mean over 30 queries is not trec_eval's mean over 31
    assert abs(ev.aggregate["AP"] - expected.summary("map")) > 10 * TOL


@needs_data
def test_every_shared_measure_of_all_trec_is_mapped() -> None:
    """The mapping table covers exactly trec_eval's shared measures (43 in -m all_trec)."""
    assert DATA is not None
    names = read_trec_eval_output(DATA / "out.test.aq").measures
    mapped = {m: ragmeter_metric(m) for m in names if ragmeter_metric(m) is not None}
    families = sorted({str(parse(r)).split("@")[0] for r in mapped.values()})
    assert families == ["AP", "Hit", "P", "R", "RR", "Rprec", "nDCG"]
    assert len(mapped) == 9 + 9 + 3 + 1 + 1 + 9 + 1 + 1 + 9
    assert ragmeter_metric("ndcg_1=3,2=9,4=4.5") == "nDCG(gains=1:3,2:9,4:4.5)"
    assert ragmeter_metric("P_5", rel_level=2) == "P(rel=2)@5"
    assert ragmeter_metric("ndcg_cut_10", rel_level=2) == "nDCG@10"
    assert ragmeter_metric("num_rel_ret") is None and ragmeter_metric("Rprec_mult_0.20") is None


def test_non_integer_cutoff_is_rejected_not_truncated() -> None:
    """trec_eval turns ndcg_cut.23.4 into ndcg_cut_23; ragmeter refuses the ambiguous cutoff."""
    with pytest.raises(UsageError):
        parse("nDCG@23.4")
    assert str(parse("nDCG@23")) == "nDCG@23"
