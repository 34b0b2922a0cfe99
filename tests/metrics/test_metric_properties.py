"""Hypothesis properties of the metric engine and the metric grammar.

Derandomized (a fixed seed per test), modest ``max_examples``: the same examples on every run.

- every metric lies in [0, 1];
- R@k and Hit@k never decrease in k;
- nDCG is 1 for the ideal order (items sorted by grade), for linear, exponential and mapped gains;
- RR@k > 0 exactly when Hit@k = 1;
- P@k * k = R@k * |rel| (both count the relevant items in the top k);
- results do not depend on query order or on the container (dict, Qrels/Run, DataFrame, TREC file);
- canonical metric strings round-trip: ``parse(str(m)) == m``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ragmeter.io import Qrels, Run
from ragmeter.metrics import REGISTRY, Metric, parse

PROPS = settings(
    max_examples=30, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

QrelsDict = dict[str, dict[str, int]]
RunDict = dict[str, dict[str, float]]
RANK_METRICS = sorted(n for n, i in REGISTRY.items() if "rank" in i.levels)
KS = (1, 2, 3, 5, 8, 13, 30)
# exact ties, and 1.0 + 1e-9 which ties with 1.0 only in float32 (trec_eval's comparison)
SCORES = (0.0, 0.25, 0.5, 1.0, 1.0 + 1e-9, 2.0, -1.5)


def evaluate(qrels: Any, run: Any, metrics: list[Metric], **kw: Any):  # -> Evaluation
    from ragmeter.metrics import evaluate as _evaluate

    return _evaluate(qrels, run, metrics, **kw)


@st.composite
def labelled_runs(draw: st.DrawFn, max_grade: int = 3) -> tuple[QrelsDict, RunDict]:
    """1-5 queries over a 12-item pool: graded judgements, unjudged retrieved items, ties,
    queries absent from the run; at least one query has a relevant item and a non-empty list."""
    pool = [f"d{j:02d}" for j in range(12)]
    qrels: QrelsDict = {}
    run: RunDict = {}
    for i in range(draw(st.integers(1, 5))):
        qid = f"q{i}"
        qrels[qid] = draw(
            st.dictionaries(
                st.sampled_from(pool), st.integers(0, max_grade), min_size=1, max_size=8
            )
        )
        docs = draw(st.lists(st.sampled_from(pool), unique=True, max_size=12))
        if docs:
            run[qid] = {d: draw(st.sampled_from(SCORES)) for d in docs}
    assume(any(q in run and max(g.values()) >= 1 for q, g in qrels.items()))
    return qrels, run


@st.composite
def metrics(draw: st.DrawFn, *, rank_only: bool = True) -> Metric:
    """A valid metric with random cutoff and options, built from the registry."""
    names = RANK_METRICS if rank_only else sorted(REGISTRY)
    name = draw(st.sampled_from(names))
    info = REGISTRY[name]
    k: int | None = None
    budget: int | None = None
    if info.cutoff == "required" or (info.cutoff == "optional" and draw(st.booleans())):
        if not rank_only and "span" in info.levels and draw(st.booleans()):
            budget = draw(st.integers(1, 5000))
        else:
            k = draw(st.integers(1, 40))
    kw: dict[str, Any] = {}
    if "rel" in info.options:
        kw["rel"] = draw(st.integers(1, 3))
    if "gain" in info.options:
        kind = draw(st.sampled_from(["linear", "exp", "map"]))
        if kind == "exp":
            kw["gain"] = "exp"
        elif kind == "map":
            gains = draw(
                st.dictionaries(
                    st.integers(1, 4),
                    st.floats(0, 1e6, allow_nan=False, allow_infinity=False)
                    | st.integers(0, 20).map(float),
                    min_size=1,
                    max_size=4,
                )
            )
            kw["gains"] = tuple(sorted(gains.items()))
    return Metric(name, k, budget, **kw)


def _all_metrics(rels: tuple[int, ...] = (1, 2)) -> list[Metric]:
    out: list[Metric] = [parse("nDCG"), parse("nDCG(gain=exp)"), parse("nDCG(gains=1:3,2:0.5,3:9)")]
    for rel in rels:
        opt = "" if rel == 1 else f"(rel={rel})"
        out += [
            parse(f"RR{opt}"),
            parse(f"AP{opt}"),
            parse(f"Rprec{opt}"),
            parse(f"R{opt}"),
            parse(f"Hit{opt}"),
        ]
        for k in KS:
            out += [parse(f"{n}{opt}@{k}") for n in ("P", "R", "Hit", "RR", "AP")]
    for k in KS:
        out += [parse(f"nDCG@{k}"), parse(f"nDCG(gain=exp)@{k}")]
    return out


ALL = _all_metrics()


@PROPS
@given(labelled_runs())
def test_every_metric_is_within_0_and_1(data: tuple[QrelsDict, RunDict]) -> None:
    ev = evaluate(*data, ALL)
    assert ev.values.shape == (ev.n_queries, len(ALL))
    assert np.all((ev.values >= 0.0) & (ev.values <= 1.0 + 1e-12))


# a drawn run may retrieve no judged item: the id-space warning, not a failure
@pytest.mark.filterwarnings(
    "ignore:.*the run retrieves is judged in the qrels:ragmeter.RagmeterWarning"
)
@PROPS
@given(labelled_runs(), st.sampled_from([1, 2, 3]))
def test_recall_and_hit_never_decrease_in_k(data: tuple[QrelsDict, RunDict], rel: int) -> None:
    ks = list(range(1, 14))
    for name in ("R", "Hit"):
        ms = [Metric(name, k, rel=rel) for k in ks] + [Metric(name, rel=rel)]  # no k = whole list
        v = evaluate(*data, ms).values
        assert np.all(np.diff(v, axis=1) >= -1e-15), name


@PROPS
@given(
    labelled_runs(),
    st.sampled_from(["nDCG", "nDCG(gain=exp)", "nDCG(gains=1:2,2:7,3:7.5)"]),
    st.sampled_from([None, 1, 3, 10]),
    st.booleans(),
)
def test_ndcg_is_one_for_the_ideal_order(
    data: tuple[QrelsDict, RunDict], gain: str, k: int | None, with_unjudged: bool
) -> None:
    qrels, _ = data
    # Every judged item scored by its grade (equal grades tie: any order among them is ideal),
    # unjudged items below.
    run = {q: {d: float(g) for d, g in docs.items()} for q, docs in qrels.items()}
    if with_unjudged:
        for docs in run.values():
            docs.update({f"u{j}": -1.0 - j for j in range(3)})
    metric = parse(gain if k is None else f"{gain}@{k}")
    ev = evaluate(qrels, run, [metric])
    assert ev.n_queries > 0
    assert np.allclose(ev.values, 1.0, rtol=0, atol=1e-12)


# a drawn run may retrieve no judged item: the id-space warning, not a failure
@pytest.mark.filterwarnings(
    "ignore:.*the run retrieves is judged in the qrels:ragmeter.RagmeterWarning"
)
@PROPS
@given(labelled_runs(), st.sampled_from([1, 2]))
def test_rr_is_positive_exactly_when_hit(data: tuple[QrelsDict, RunDict], rel: int) -> None:
    ms: list[Metric] = []
    for k in (*KS, None):
        ms += [Metric("RR", k, rel=rel), Metric("Hit", k, rel=rel)]
    v = evaluate(*data, ms).values
    rr, hit = v[:, 0::2], v[:, 1::2]
    assert np.array_equal(rr > 0, hit == 1.0)
    assert np.all((hit == 0.0) | (hit == 1.0))


@PROPS
@given(labelled_runs(max_grade=1))
def test_precision_times_k_equals_recall_times_relevant(data: tuple[QrelsDict, RunDict]) -> None:
    qrels, run = data
    ms = [m for k in KS for m in (Metric("P", k), Metric("R", k))]
    ev = evaluate(qrels, run, ms)
    n_rel = np.array([sum(g >= 1 for g in qrels[q].values()) for q in ev.query_ids])
    for j, k in enumerate(KS):
        p, r = ev.values[:, 2 * j], ev.values[:, 2 * j + 1]
        assert np.allclose(p * k, r * n_rel, rtol=0, atol=1e-9), k


# -- invariance to query order and input container ----------------------------------------------
def _as_tables(qrels: QrelsDict, run: RunDict, rng: np.random.Generator) -> tuple[Qrels, Run]:
    """Columnar Qrels/Run with rows in a random order."""
    q_rows = [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    r_rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    q_rows = [q_rows[i] for i in rng.permutation(len(q_rows))]
    r_rows = [r_rows[i] for i in rng.permutation(len(r_rows))]
    qt = Qrels(
        pa.array([r[0] for r in q_rows], pa.string()),
        pa.array([r[1] for r in q_rows], pa.string()),
        np.array([r[2] for r in q_rows], dtype=np.int64),
    )
    rt = Run(
        pa.array([r[0] for r in r_rows], pa.string()),
        pa.array([r[1] for r in r_rows], pa.string()),
        np.array([r[2] for r in r_rows], dtype=np.float64),
    )
    return qt, rt


def _write_trec(qrels: QrelsDict, run: RunDict, folder: Path) -> tuple[Path, Path]:
    qpath, rpath = folder / "qrels.txt", folder / "run.txt"
    qpath.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items())
    )
    lines = []
    for q, docs in run.items():
        for rank, (d, s) in enumerate(sorted(docs.items(), key=lambda x: -x[1]), start=1):
            lines.append(f"{q} Q0 {d} {rank} {s!r} prop\n")
    rpath.write_text("".join(lines))
    return qpath, rpath


def _reordered(
    qrels: QrelsDict, run: RunDict, rng: np.random.Generator
) -> tuple[QrelsDict, RunDict]:
    def shuffle(d: dict[str, Any]) -> dict[str, Any]:
        keys = list(d)
        return {keys[i]: d[keys[i]] for i in rng.permutation(len(keys))}

    return (
        {q: shuffle(v) for q, v in shuffle(qrels).items()},
        {q: shuffle(v) for q, v in shuffle(run).items()},
    )


@settings(
    max_examples=15, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(labelled_runs(), st.integers(0, 2**32 - 1), st.sampled_from(["zero", "skip"]))
def test_results_do_not_depend_on_query_order_or_container(
    data: tuple[QrelsDict, RunDict], seed: int, missing: str
) -> None:
    # justified: pandas is the optional [pandas] extra (make test installs it)
    pd = pytest.importorskip("pandas", reason="pip install 'ragmeter[pandas]'")
    qrels, run = data
    rng = np.random.default_rng(seed)
    base = evaluate(qrels, run, ALL, missing=missing)
    inputs: dict[str, tuple[Any, Any]] = {
        "dict, shuffled": _reordered(qrels, run, rng),
        "Qrels/Run": _as_tables(qrels, run, rng),
    }
    qt, rt = _as_tables(qrels, run, rng)
    inputs["DataFrame"] = (
        pd.DataFrame({"qid": qt.qid.to_pylist(), "doc": qt.doc.to_pylist(), "rel": qt.rel}),
        pd.DataFrame({"qid": rt.qid.to_pylist(), "doc": rt.doc.to_pylist(), "score": rt.score}),
    )
    with tempfile.TemporaryDirectory() as tmp:
        inputs["TREC files"] = _write_trec(qrels, run, Path(tmp))
        for label, (q, r) in inputs.items():
            ev = evaluate(q, r, ALL, missing=missing)
            assert ev.per_query == base.per_query, label
            assert (ev.missing_ids, ev.no_relevant_ids) == (base.missing_ids, base.no_relevant_ids)
            assert ev.aggregate == pytest.approx(base.aggregate, abs=1e-12), label


# -- the grammar ------------------------------------------------------------------------------
@settings(max_examples=300, derandomize=True, deadline=None)
@given(metrics(rank_only=False))
def test_canonical_string_round_trips(m: Metric) -> None:
    s = str(m)
    assert parse(s) == m
    assert str(parse(s)) == s
