"""``Comparison.from_dict`` is the exact inverse of ``Comparison.to_dict``: every field comes back
with its value and its type (arrays stay float64 arrays, tuples stay tuples, the metric is the
same Metric, None stays None, slice order is kept), also through ``json.dumps``/``json.loads``
(the store keeps the record as JSON). Comparisons are made by the real ``ragmeter.compare``.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter import Evaluation, InputError
from ragmeter.metrics import Metric, parse
from ragmeter.paired import Comparison, Ledger, compare

pytestmark = pytest.mark.filterwarnings("ignore::ragmeter.RagmeterWarning")

FAST = {"n_resamples": 200}


# -- field-by-field equality ---------------------------------------------------------------------
def same(a: Any, b: Any, at: str = "comparison") -> None:
    """``a`` and ``b`` hold the same value with the same types, all the way down."""
    if isinstance(a, Metric):
        assert isinstance(b, Metric) and a == b and str(a) == str(b), at
        return
    assert type(a) is type(b), f"{at}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype == np.float64 and a.shape == b.shape, at
        assert np.array_equal(a, b), at
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            same(getattr(a, f.name), getattr(b, f.name), f"{at}.{f.name}")
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{at}: keys or their order differ"
        for k in a:
            same(a[k], b[k], f"{at}.{k}")
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), at
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{at}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), at
    else:
        assert a == b, f"{at}: {a!r} vs {b!r}"


def round_trips(c: Comparison) -> None:
    """Directly and through JSON text, the record reads back to ``c``."""
    d = c.to_dict()
    back = Comparison.from_dict(d)
    same(c, back)
    text = json.dumps(d, allow_nan=False)
    via_json = Comparison.from_dict(json.loads(text))
    same(c, via_json)
    # and it writes the same record again
    assert json.dumps(via_json.to_dict(), allow_nan=False) == text


# -- runs ----------------------------------------------------------------------------------------
def ev(
    run: str,
    metric: str,
    values: dict[str, float],
    *,
    version: str | None = "g-1",
    config: dict[str, Any] | None = None,
    slices: dict[str, tuple[str, ...]] | None = None,
    splits: dict[str, str] | None = None,
    ranks: dict[str, int] | None = None,
) -> Evaluation:
    qids = tuple(values)
    return Evaluation(
        run=run,
        metrics=(parse(metric),),
        query_ids=qids,
        values=np.array([values[q] for q in qids], dtype=float)[:, None],
        golden_version=version,
        config=config or {},
        slices=slices or {},
        splits=splits or {},
        details={q: {"first_rank": r} for q, r in (ranks or {}).items()},
    )


# question ids deliberately out of sorted order: the order must survive
QIDS = [
    "zeta",
    "alpha",
    "mu",
    "beta",
    "omega",
    "gamma",
    "kappa",
    "delta",
    "eps",
    "iota",
    "nu",
    "pi",
]
SLICES = {q: (("fees",) if i % 2 else ("dates", "fees")) for i, q in enumerate(QIDS[:10])}
SPLITS = {q: ("heldout" if i % 3 == 0 else "tune") for i, q in enumerate(QIDS)}


def test_graded_metric_with_slices_splits_movers_and_randomisation() -> None:
    a = dict(zip(QIDS, [0.2, 0.5, 1.0, 0.0, 0.25, 0.75, 0.5, 0.1, 0.3, 0.9, 0.4, 0.6], strict=True))
    b = dict(zip(QIDS, [0.4, 0.5, 0.5, 1.0, 0.5, 0.75, 0.9, 0.0, 0.6, 1.0, 0.2, 0.6], strict=True))
    ranks_a = {q: i + 1 for i, q in enumerate(QIDS[:8])}
    ranks_b = {q: 12 - i for i, q in enumerate(QIDS[3:])}
    c = compare(
        ev("bm25", "nDCG@10", a, slices=SLICES, splits=SPLITS, ranks=ranks_a),
        ev("hybrid", "nDCG@10", b, slices=SLICES, splits=SPLITS, ranks=ranks_b),
        "nDCG@10",
        randomisation=True,
        max_movers=4,
        **FAST,
    )
    # the record is rich enough to test something
    assert list(c.slices) == ["dates", "fees"] and list(c.splits) == ["tune", "heldout"]
    assert all(s.p_adjusted is not None for s in c.slices.values())
    assert all(s.p_adjusted is None for s in c.splits.values())
    assert c.improved and c.worsened and c.randomisation is not None
    assert any(m.rank_before is None for m in (*c.improved, *c.worsened))
    assert c.fixed_ids is None and c.slice_adjustment == ("holm", 2)
    assert c.query_ids == tuple(QIDS)
    round_trips(c)


def test_binary_metric_keeps_fixed_and_broken_ids() -> None:
    a = dict(zip(QIDS, [1, 0, 0, 1, 1, 0, 1, 0, 0, 1, 1, 0], strict=True))
    b = dict(zip(QIDS, [1, 1, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1], strict=True))
    c = compare(
        ev("a", "Hit@5", a, slices=SLICES, splits=SPLITS),
        ev("b", "Hit@5", b, slices=SLICES, splits=SPLITS),
        "Hit@5",
        randomisation=True,
        seed=None,
        **FAST,
    )
    assert c.binary and c.fixed_ids == ("alpha", "mu", "delta", "pi")
    assert c.broken_ids == ("beta", "nu") and c.seed is None
    round_trips(c)


@pytest.mark.parametrize(
    ("kwargs", "metric", "outcome"),
    [
        ({"outcome": "answer correct"}, None, "answer correct"),
        # text that is no metric names the outcome
        ({"metric": "answer correct and supported"}, None, "answer correct and supported"),
        # an outcome whose name parses as a metric stays an outcome
        ({"outcome": "Hit@5"}, None, "Hit@5"),
        ({}, None, "value"),
        ({"metric": "Hit@5"}, "Hit@5", None),
    ],
)
def test_plain_outcomes_and_metrics_come_back_as_they_were(
    kwargs: dict[str, str], metric: str | None, outcome: str | None
) -> None:
    a = {"q1": 1.0, "q2": 0.0, "q3": 1.0, "q4": 0.0}
    b = {"q1": 1.0, "q2": 1.0, "q3": 0.0, "q4": 1.0}
    c = compare(a, b, names=("v1", "v2"), **kwargs, **FAST)
    assert (c.metric, c.outcome) == (None if metric is None else parse(metric), outcome)
    round_trips(c)


def test_a_comparison_with_neither_metric_nor_outcome() -> None:
    c = dataclasses.replace(compare({"q": 2.5}, {"q": -1.0}, **FAST), outcome=None)
    assert c.to_dict()["metric"] == "value" and not c.binary
    round_trips(c)


def test_config_differences_changes_and_fairness_notes() -> None:
    base = {
        "level": "span",
        "n_spans": 138,
        "settings": {"chunker": "tokens:300:0", "retriever": "bm25", "k": 4, "depth": 50},
        "tags": ["a", "b"],
    }
    cand = {
        "level": "span",
        "n_spans": 120,
        "settings": {"chunker": "tokens:200:0", "retriever": "dense", "k": 4, "depth": None},
        "extra": {"weights": [0.3, 0.7]},
    }
    a = dict(zip(QIDS, [0.5] * 6 + [1.0] * 6, strict=True))
    b = dict(zip(QIDS, [1.0] * 6 + [0.5] * 6, strict=True))
    c = compare(ev("base", "R@5", a, config=base), ev("cand", "R@5", b, config=cand), **FAST)
    assert {d.key for d in c.config_diff} >= {"settings.chunker", "tags", "extra.weights"}
    assert any(d.baseline == "<unset>" for d in c.config_diff)
    assert len(c.changes) >= 2 and c.fairness and c.warnings
    round_trips(c)


def test_the_ledger_count_and_selection_estimate(tmp_path: Path) -> None:
    book = Ledger(tmp_path / "ledger.jsonl")
    a = dict(zip(QIDS, [1, 0, 0, 1, 1, 0, 1, 0, 0, 1, 1, 0], strict=True))
    b = dict(zip(QIDS, [1, 1, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1], strict=True))
    comps = [
        compare(
            ev("base", "Hit@5", a),
            ev(f"cand{i}", "Hit@5", b, config={"k1": 0.5 + i}),
            ledger=book,
            **FAST,
        )
        for i in range(3)
    ]
    assert [c.n_variants_tried for c in comps] == [1, 2, 3]
    assert comps[0].selection is None and comps[2].selection is not None
    for c in comps:
        round_trips(c)


def test_real_runs_of_the_fare_rules_experiment(fare_rules_dir: Path, tmp_path: Path) -> None:
    runs = fare_rules_dir / "runs"
    base = Evaluation.load(runs / "baseline" / "evaluation.json")
    book = Ledger(tmp_path / "ledger.jsonl")
    for variant in ("hybrid", "reranker", "smaller-chunks"):
        cand = Evaluation.load(runs / variant / "evaluation.json")
        for metric in ("R@budget=1200", "AllR@budget=1200", "R@20"):
            c = compare(base, cand, metric, randomisation=True, ledger=book, **FAST)
            assert c.slices and c.splits and c.golden_version == base.golden_version
            round_trips(c)
    assert c.changes and c.fairness and c.selection is not None  # smaller chunks at R@20


# -- a property over random runs -----------------------------------------------------------------
@st.composite
def runs(draw: st.DrawFn) -> tuple[Evaluation, Evaluation, str, dict[str, Any]]:
    n = draw(st.integers(1, 30))
    qids = [f"q{i:02d}" for i in draw(st.permutations(range(n)))]
    binary = draw(st.booleans())
    if binary:
        value = st.sampled_from([0.0, 1.0])
        metric = draw(st.sampled_from(["Hit@5", "AllR@10"]))
    else:
        value = st.floats(0.0, 1.0, allow_nan=False)
        metric = draw(st.sampled_from(["nDCG@10", "R@5", "RR"]))
    a = {q: draw(value) for q in qids}
    b = {q: draw(value) for q in qids}
    names = st.sampled_from(["fees", "dates", "refunds", "x y"])
    slices = {q: tuple(draw(st.sets(names, max_size=2))) for q in qids}
    splits = {q: draw(st.sampled_from(["tune", "heldout", "other"])) for q in qids}
    ranks = {q: draw(st.integers(1, 50)) for q in qids if draw(st.booleans())}
    opts = {
        "seed": draw(st.none() | st.integers(0, 2**32 - 1)),
        "randomisation": draw(st.booleans()),
        "confidence": draw(st.sampled_from([0.9, 0.95, 0.99])),
        "max_movers": draw(st.integers(0, 5)),
        "n_resamples": draw(st.integers(1, 300)),
    }
    kw = {"slices": slices, "splits": splits, "ranks": ranks}
    return ev("a", metric, a, **kw), ev("b", metric, b, config={"k": 3}, **kw), metric, opts


@settings(max_examples=60, deadline=None, derandomize=True)
@given(runs())
def test_any_comparison_round_trips(case: tuple[Evaluation, Evaluation, str, dict]) -> None:
    base, cand, metric, opts = case
    round_trips(compare(base, cand, metric, **opts))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.tuples(st.floats(-1e6, 1e6, allow_nan=False), st.floats(-1e6, 1e6, allow_nan=False)),
        min_size=1,
        max_size=20,
    ),
    st.none() | st.integers(0, 2**32 - 1),
)
def test_any_plain_outcome_round_trips(pairs: dict[str, tuple[float, float]], seed: int | None):
    a = {q: x for q, (x, _) in pairs.items()}
    b = {q: y for q, (_, y) in pairs.items()}
    round_trips(compare(a, b, outcome="latency gain", seed=seed, n_resamples=50))


# -- records that are not one --------------------------------------------------------------------
def _record() -> dict[str, Any]:
    a = dict(zip(QIDS, [1, 0, 0, 1, 1, 0, 1, 0, 0, 1, 1, 0], strict=True))
    b = dict(zip(QIDS, [1, 1, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1], strict=True))
    cfg_b = {"settings": {"chunker": "tokens:200:0"}}
    c = compare(
        ev("a", "Hit@5", a, slices=SLICES, splits=SPLITS, ranks={"alpha": 2}),
        ev("b", "Hit@5", b, slices=SLICES, splits=SPLITS, config=cfg_b),
        randomisation=True,
        **FAST,
    )
    d = json.loads(json.dumps(c.to_dict()))
    d["selection"] = {
        "n_variants": 3,
        "n_questions": 12,
        "n_searches": 300,
        "seed": 0,
        "true_score": 0.5,
        "best_tuning_score": 0.6,
        "fresh_score": 0.5,
        "optimism": 0.1,
        "approximate": False,
    }
    return d


def _set(path: list[str | int], value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(d: dict[str, Any]) -> None:
        for k in path[:-1]:
            d = d[k]  # type: ignore[index]
        d[path[-1]] = value  # type: ignore[index]

    return apply


def _drop(path: list[str | int]) -> Callable[[dict[str, Any]], None]:
    def apply(d: dict[str, Any]) -> None:
        for k in path[:-1]:
            d = d[k]  # type: ignore[index]
        del d[path[-1]]  # type: ignore[arg-type]

    return apply


@pytest.mark.parametrize(
    ("damage", "field"),
    [
        (_drop(["per_query"]), "per_query"),
        (_drop(["baseline"]), "baseline"),
        (_set(["binary"], 1), "binary"),
        (_set(["n"], 11), "n"),
        (_drop(["per_query", "alpha"]), "per_query"),
        (_set(["per_query", "mu", "baseline"], "1"), "per_query.mu.baseline"),
        (_set(["per_query", "mu", "candidate"], None), "per_query.mu.candidate"),
        (_set(["per_query", "mu"], [1, 0]), "per_query.mu"),
        (_set(["ci"], [0.1]), "ci"),
        (_set(["ci"], [0.1, "x"]), "ci[1]"),
        (_set(["wins"], 2.0), "wins"),
        (_set(["seed"], True), "seed"),
        (_drop(["seed"]), "seed"),
        (_set(["n_resamples"], 0), "n_resamples"),
        (_set(["metric"], "Hit@@5"), "metric"),
        (_set(["outcome"], "other"), "metric"),
        (_set(["slices", "fees", "wins"], "3"), "slices.fees.wins"),
        (_drop(["slices", "dates", "name"]), "slices.dates.name"),
        (_set(["slices", "fees", "sign_test_p_holm"], "low"), "slices.fees.sign_test_p_holm"),
        (_set(["splits", "tune"], []), "splits.tune"),
        (_set(["movers", "improved", 0, "rank_before"], 1.5), "movers.improved[0].rank_before"),
        (_set(["movers", "worsened", 0, "slices"], [3]), "movers.worsened[0].slices[0]"),
        (_set(["fixed_ids"], "alpha"), "fixed_ids"),
        (_set(["broken_ids"], ["beta", 7]), "broken_ids[1]"),
        (_set(["randomisation", "exact"], 1), "randomisation.exact"),
        (_set(["config_diff", 0], "chunker"), "config_diff[0]"),
        (_drop(["changes", 0, "diffs", 0, "key"]), "changes[0].diffs[0].key"),
        (_set(["changes", 0, "note"], None), "changes[0].note"),
        (_set(["selection", "n_variants"], True), "selection.n_variants"),
        (_set(["selection", "approximate"], "no"), "selection.approximate"),
        (_set(["slice_p_adjustment", "n_slices"], "2"), "slice_p_adjustment.n_slices"),
        (_set(["warnings"], "one note"), "warnings"),
        (_set(["n_variants_tried"], 0), "n_variants_tried"),
    ],
)
def test_a_bad_record_names_the_field(damage: Callable[[dict], None], field: str) -> None:
    d = _record()
    Comparison.from_dict(copy.deepcopy(d))  # undamaged, it reads
    damage(d)
    with pytest.raises(InputError) as err:
        Comparison.from_dict(d, source="comparison 7")
    assert err.value.field == field
    assert str(err.value).startswith(f"comparison 7: field '{field}': ")


def test_a_record_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(InputError, match="comparison record must be a JSON object, got list"):
        Comparison.from_dict([1, 2])  # type: ignore[arg-type]


# -- records written before ``outcome`` was recorded ----------------------------------------------
def test_an_older_record_reads_its_metric_or_outcome_from_the_label() -> None:
    d = _record()
    del d["outcome"]
    assert Comparison.from_dict(d).metric == parse("Hit@5")
    old = compare({"q": 1.0}, {"q": 0.0}, outcome="answer correct", **FAST).to_dict()
    del old["outcome"]
    c = Comparison.from_dict(old)
    assert c.metric is None and c.outcome == "answer correct"


def test_the_compare_snapshot_reads_back() -> None:
    golden = Path(__file__).parents[1] / "golden" / "compare_toy.json"
    d = json.loads(golden.read_text())
    c = Comparison.from_dict(d, source=str(golden))
    assert str(c.metric) == "nDCG(gain=exp)@3" and (c.wins, c.losses, c.ties) == (4, 1, 1)
    assert c.to_dict() == d
