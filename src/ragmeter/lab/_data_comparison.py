"""The comparison view's model: a :class:`~ragmeter.paired.Comparison` (stored, or computed now
with :func:`ragmeter.compare` on the stored evaluations, the numbers ``ragmeter compare``
prints) laid out for the page, with the bootstrap distribution its interval came from."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote

import numpy as np

from .._errors import UsageError
from .._pvalue import format_p, p_is

#: the bootstrap histogram: at most this many bars (pre-binned here, not in the browser)
MAX_BINS = 40


def _fmt_ci(ci: tuple[float, float]) -> str:
    return f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"


def question_url(golden: str | None, qid: str) -> str | None:
    """The question view's URL; None without a golden-set version (nothing to look it up in)."""
    if not golden:
        return None
    return f"/question?golden={quote(golden, safe='')}&qid={quote(qid, safe='')}"


# -- which metric a pair of stored runs is compared on ------------------------------------------
@dataclass(frozen=True)
class PairChoice:
    """What two stored runs can be compared on. ``metric``: the default (None when there is
    none); ``note``: ``ragmeter run``'s words when the runs share no k or budget (the same rule,
    :func:`ragmeter.experiments._table.shared_metric`), with each run's cutoff; ``shared``: the
    metrics both evaluations carry (any of them can be asked for), ``headroom`` among them."""

    base: int
    cand: int
    base_name: str
    cand_name: str
    metric: str | None
    note: str | None = None
    #: the note is ``ragmeter run``'s: the runs' recorded cutoffs share no k or budget
    no_shared_cutoff: bool = False
    shared: tuple[str, ...] = ()
    headroom: frozenset[str] = field(default_factory=frozenset)

    def possible(self) -> list[dict[str, Any]]:
        """The comparisons that can still be made: metric, whether it is headroom (not
        quality), the lab's URL and the command line."""
        return [
            {
                "metric": m,
                "headroom": m in self.headroom,
                "url": f"/compare?base={self.base}&cand={self.cand}&metric={quote(m, safe='@')}",
                "command": f'ragmeter compare {self.base} {self.cand} -m "{m}"',
            }
            for m in self.shared
        ]

    def to_context(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "cand": self.cand,
            "base_name": self.base_name,
            "cand_name": self.cand_name,
            "note": self.note,
            "no_shared_cutoff": self.no_shared_cutoff,
            "possible": self.possible(),
        }


class NoSharedMetric(UsageError):
    """Two stored runs have no metric to compare on by default; ``choice`` says why and what
    can be compared instead (the lab and the report show it as a note, not as a failure)."""

    def __init__(self, choice: PairChoice) -> None:
        self.choice = choice
        shared = ", ".join(choice.shared) or "none"
        super().__init__(
            f"run {choice.cand} ('{choice.cand_name}') against run {choice.base} "
            f"('{choice.base_name}'): {choice.note}; metrics both runs carry: {shared}"
        )


@dataclass(frozen=True)
class _StoredCutoffs:
    k: int | None
    budget: int | None


def _cutoffs(run: Any) -> _StoredCutoffs | None:
    """A stored run's prompt cutoffs as ``ragmeter run`` recorded them; None for a run that
    names neither (not an experiment's variant: the rule does not apply)."""
    from ._context import settings_of

    settings = settings_of(run)

    def whole(key: str) -> int | None:
        value = settings.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    k, budget = whole("k"), whole("budget")
    return None if k is None and budget is None else _StoredCutoffs(k, budget)


def cutoff_text(cut: _StoredCutoffs) -> str:
    parts = ([f"k = {cut.k}"] if cut.k is not None else []) + (
        [f"budget = {cut.budget:,} tokens"] if cut.budget is not None else []
    )
    return ", ".join(parts)


def _experiment_metrics(names: list[str], cut: _StoredCutoffs, documents: bool) -> list[Any]:
    """The experiment's metrics as ``ragmeter run`` lists them, from what a run recorded (its
    prompt metrics, see ``Experiment.prompt_metrics``): a metric at the run's own k or budget
    is that metric without its cutoff when the run has it at each of its cutoffs; any other
    (the headroom, an explicit cutoff such as ``RR@3`` beside a budget) keeps its own, which the
    rule skips."""
    from ..metrics import parse

    parsed = []
    for name in names:
        try:
            parsed.append(parse(name))
        except UsageError:
            continue
    have = set(parsed)
    out: list[Any] = []
    for m in parsed:
        if (m.k is not None and m.k == cut.k) or (m.budget is not None and m.budget == cut.budget):
            bare = m.at()
            wanted = [bare.at(cut.k)] if cut.k is not None else []
            if cut.budget is not None and "span" in bare.info.levels and not documents:
                wanted.append(bare.at(budget=cut.budget))
            if all(w in have for w in wanted):
                m = bare
        if m not in out:
            out.append(m)
    return out


def _resolved(run: Any) -> Mapping[str, Any]:
    """``config["resolved"]`` of a run ``ragmeter run`` recorded (empty for any other)."""
    config = run.config if isinstance(run.config, Mapping) else {}
    found = config.get("resolved")
    return found if isinstance(found, Mapping) else {}


def _cutoff_of(name: str | None) -> tuple[int | None, int | None] | None:
    from ..metrics import parse

    try:
        m = parse(name) if name else None
    except UsageError:
        return None
    return None if m is None else (m.k, m.budget)


def pair_choice(store: Any, base: int, cand: int, a: Any, b: Any, level: str | None) -> PairChoice:
    """The default metric for stored runs ``base`` and ``cand`` (evaluations ``a`` and ``b``).

    Runs ``ragmeter run`` recorded follow its rule: the first span metric at the budget, else
    the k, both share; none is "no shared k or budget with the baseline" (the comparison
    table's words). Where run compares at the budget, the lab keeps its preference for AllR
    there (:func:`compare_metric`). Runs without recorded cutoffs are compared on
    :func:`compare_metric`'s choice when both carry it."""
    from ..experiments._table import NO_SHARED_CUTOFF, shared_metric
    from ._data_experiments import compare_metric

    rb, rc = store.run(int(base)), store.run(int(cand))
    names_a = [str(m) for m in a.metrics]
    names_b = {str(m) for m in b.metrics}
    shared = tuple(n for n in names_a if n in names_b)
    resolved = [_resolved(r) for r in (rb, rc)]
    headroom = frozenset(x["headroom"] for x in resolved if isinstance(x.get("headroom"), str))
    choice = PairChoice(int(base), int(cand), rb.name, rc.name, None, shared=shared,
                        headroom=headroom)  # fmt: skip
    preferred = compare_metric(dict.fromkeys(names_a)) if names_a else None
    cb, cc = _cutoffs(rb), _cutoffs(rc)
    if cb is not None and cc is not None:
        # the experiment's metrics in its own order: the baseline's recorded prompt metrics
        # (``run`` writes them), else its evaluation's columns
        listed = resolved[0].get("metrics")
        if not (isinstance(listed, list) and all(isinstance(x, str) for x in listed)):
            listed = names_a
        documents = (level or (rb.config or {}).get("level")) == "document"
        m = shared_metric(_experiment_metrics(listed, cb, documents), cb, cc, documents=documents)
        if m is None:
            note = (
                f"{NO_SHARED_CUTOFF} ({rb.name} at {cutoff_text(cb)}, {rc.name} at "
                f"{cutoff_text(cc)})"
            )
            return replace(choice, note=note, no_shared_cutoff=True)
        # run's metric; the lab's one preference (AllR at the budget) where run compares
        allr = (
            preferred is not None
            and preferred.startswith("AllR@budget=")
            and preferred in shared
            and _cutoff_of(preferred) == (m.k, m.budget)
        )
        preferred = preferred if allr else str(m)
    if preferred is None or preferred not in shared:
        what = f"{preferred} was not computed for run '{rc.name}'" if preferred else "no metric"
        return replace(choice, note=f"no default metric to compare on: {what}")
    return replace(choice, metric=preferred)


def compute(
    store: Any,
    base: int,
    cand: int,
    metric: str | None,
    *,
    level: str | None = None,
    n_resamples: int = 5000,
    seed: int = 0,
    intersect: bool = False,
) -> tuple[Any, str | None, PairChoice]:
    """``ragmeter compare BASE CAND -m METRIC`` on stored runs, without counting it in the
    ledger (a page view changes nothing); the ledger's current count gives the selection
    estimate, as ``compare`` attaches it. Without a metric, :func:`pair_choice` picks it and
    raises :class:`NoSharedMetric` when there is none. Returns (comparison, metric used, the
    pair's choice)."""
    from ..paired import compare
    from ..paired._selection import optimism_from_pair

    a = store.evaluation(int(base), level)
    b = store.evaluation(int(cand), level)
    choice = pair_choice(store, base, cand, a, b, level)
    if metric is None:
        if choice.metric is None:
            raise NoSharedMetric(choice)
        metric = choice.metric
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kept in Comparison.warnings and shown on the page
        c = compare(a, b, metric, n_resamples=n_resamples, seed=seed, intersect=intersect)
    n = store.ledger.summary(c.golden_version).n_variants
    if n > 1:
        sel = optimism_from_pair(c.baseline_values, c.candidate_values, n, seed=seed)
        c = replace(c, selection=sel, n_variants_tried=n)
    return c, metric, choice


def histogram(c: Any) -> dict[str, Any]:
    """The resampled means the interval is the percentiles of (same seed, resamples and
    method), binned: a few distinct values become one bar each."""
    from ..paired._bootstrap import bootstrap_means

    if c.n == 0:
        return {"bins": [], "percentile_ci": None}
    means, method = bootstrap_means(
        c.deltas, n_resamples=c.n_resamples, seed=c.seed, method=c.bootstrap_method
    )
    tail = round((1.0 - c.confidence) / 2.0 * 100.0, 10)
    lo, hi = (float(x) for x in np.percentile(means, [tail, 100.0 - tail]))
    values, counts = np.unique(np.round(means, 12), return_counts=True)
    if len(values) <= MAX_BINS:
        step = float(np.min(np.diff(values))) if len(values) > 1 else 0.01
        bins = [
            {"x0": float(v) - step / 2, "x1": float(v) + step / 2, "count": int(n)}
            for v, n in zip(values, counts, strict=True)
        ]
    else:
        cnt, edges = np.histogram(means, bins=MAX_BINS)
        bins = [
            {"x0": float(edges[i]), "x1": float(edges[i + 1]), "count": int(cnt[i])}
            for i in range(len(cnt))
        ]
    return {"bins": bins, "percentile_ci": (lo, hi), "method": method}


def histogram_spec(c: Any, hist: dict[str, Any]) -> dict[str, Any]:
    """Vega-Lite: the bars, the interval (shaded, its ends as rules), zero and the mean."""
    lo, hi = c.ci
    marks = [
        {"x": 0.0, "what": "zero"},
        {"x": float(c.mean_delta), "what": "observed difference"},
    ]
    return {
        "width": "container",
        "height": 220,
        "layer": [
            {
                "data": {"values": [{"lo": lo, "hi": hi}]},
                "mark": {"type": "rect", "color": "#0b5cad", "opacity": 0.08},
                "encoding": {
                    "x": {"field": "lo", "type": "quantitative"},
                    "x2": {"field": "hi"},
                },
            },
            {
                "data": {"values": hist["bins"]},
                "mark": {"type": "rect", "color": "#6e7781"},
                "encoding": {
                    "x": {
                        "field": "x0",
                        "type": "quantitative",
                        "title": f"resampled mean difference in {c.label} (candidate - baseline)",
                        "axis": {"format": "+.2f", "tickCount": 8, "labelFlush": True},
                    },
                    "x2": {"field": "x1"},
                    "y": {"field": "count", "type": "quantitative", "title": "resamples"},
                    "tooltip": [
                        {"field": "x0", "type": "quantitative", "format": "+.3f", "title": "from"},
                        {"field": "x1", "type": "quantitative", "format": "+.3f", "title": "to"},
                        {"field": "count", "type": "quantitative", "title": "resamples"},
                    ],
                },
            },
            {
                "data": {"values": [{"x": lo, "what": "interval"}, {"x": hi, "what": "interval"}]},
                "mark": {"type": "rule", "color": "#0b5cad", "strokeWidth": 2},
                "encoding": {"x": {"field": "x", "type": "quantitative"}},
            },
            {
                "data": {"values": marks},
                "mark": {"type": "rule", "strokeDash": [4, 3], "strokeWidth": 2},
                "encoding": {
                    "x": {"field": "x", "type": "quantitative"},
                    "color": {
                        "field": "what",
                        "type": "nominal",
                        "scale": {
                            "domain": ["zero", "observed difference"],
                            "range": ["#cf222e", "#1f2328"],
                        },
                        "legend": {"orient": "top", "title": None},
                    },
                },
            },
        ],
    }


def _row(label: str, s: Any, holm: float | None = None, small: bool = False) -> dict[str, Any]:
    return {
        "label": label,
        "n": s.n,
        "base": s.baseline_mean,
        "cand": s.candidate_mean,
        "delta": s.mean_delta,
        "ci": _fmt_ci(s.ci),
        "wlt": f"{s.wins}/{s.losses}/{s.ties}",
        "fixed_broken": None if s.fixed is None else f"{s.fixed}/{s.broken}",
        "p": format_p(s.sign_test_p),
        "holm": None if holm is None else f"{holm:.3g}",
        "small": small,
    }


def comparison_context(
    c: Any,
    *,
    stored_id: int | None = None,
    base_run: int | None = None,
    cand_run: int | None = None,
) -> dict[str, Any]:
    """Everything the comparison page shows, from a Comparison alone."""
    hist = histogram(c)
    lo, hi = c.ci
    rows = [_row("all", c.overall)]
    for name, sr in c.splits.items():
        rows.append(_row(f"split {name}" + (" (held out)" if name == "heldout" else ""), sr.stats))
    for name, sr in c.slices.items():
        rows.append(
            _row(f"slice {name}" + (" *" if sr.small else ""), sr.stats, sr.p_adjusted, sr.small)
        )
    v = c.golden_version

    def links(ids: Any) -> list[dict[str, str | None]]:
        return [{"qid": q, "url": question_url(v, q)} for q in (ids or ())]

    movers = [
        {
            "qid": m.qid,
            "url": question_url(v, m.qid),
            "change": ("fixed" if m.delta > 0 else "broken") if c.binary else f"{m.delta:+.4f}",
            "baseline": f"{m.baseline:.4f}",
            "candidate": f"{m.candidate:.4f}",
            "ranks": f"{'-' if m.rank_before is None else m.rank_before} -> "
            f"{'-' if m.rank_after is None else m.rank_after}",
            "slices": ", ".join(m.slices),
        }
        for m in (*c.improved, *c.worsened)
    ]
    n_changes = len(c.changes)
    return {
        "stored_id": stored_id,
        "base_run": base_run,
        "cand_run": cand_run,
        "baseline": c.baseline,
        "candidate": c.candidate,
        "metric": c.label,
        "binary": c.binary,
        "golden_version": v,
        "n": c.n,
        "mean_delta": c.mean_delta,
        "delta_text": f"{c.mean_delta:+.4f}",
        "ci": (lo, hi),
        "ci_text": _fmt_ci(c.ci),
        "confidence": f"{c.confidence:.0%}",
        "wins": c.wins,
        "losses": c.losses,
        "ties": c.ties,
        "fixed": c.fixed,
        "broken": c.broken,
        "fixed_ids": links(c.fixed_ids),
        "broken_ids": links(c.broken_ids),
        "sign_p": format_p(c.sign_test_p),
        "sign_p_2": format_p(c.sign_test_p),
        "verdict": c.verdict,
        "verdict_line": f"Verdict: {c.verdict}. Difference {c.mean_delta:+.4f}, "
        f"{c.confidence:.0%} interval [{lo:+.3f}, {hi:+.3f}], sign test p "
        f"{p_is(c.sign_test_p)}.",
        "bootstrap": f"paired percentile bootstrap, {c.n_resamples} resamples, seed {c.seed} "
        f"({c.bootstrap_method}); exact two-sided sign test, ties dropped",
        "rows": rows,
        "slice_note": c.slice_note,
        "any_small": any(sr.small for sr in c.slices.values()),
        "movers": movers,
        "has_ranks": any(
            m.rank_before is not None or m.rank_after is not None
            for m in (*c.improved, *c.worsened)
        ),
        "changes": [str(ch) for ch in c.changes],
        "one_change": {
            "ok": n_changes == 1,
            "text": "one change: " + str(c.changes[0])
            if n_changes == 1
            else "no setting differs between the two runs"
            if n_changes == 0
            else f"{n_changes} changes ({', '.join(ch.name for ch in c.changes)}): with more "
            "than one change per run the comparison cannot say which change caused the "
            "difference",
        },
        "fairness": {
            "ok": not c.fairness,
            "problems": list(c.fairness),
        },
        "config_diff": [
            {"key": d.key, "baseline": str(d.baseline), "candidate": str(d.candidate)}
            for d in c.config_diff
        ],
        "warnings": list(c.warnings),
        "selection": None
        if c.n_variants_tried is None
        else f"Selection: {c.n_variants_tried} variant(s) tried on golden set "
        f"{v or '(unversioned)'}" + (f"; {c.selection.describe()}." if c.selection else "."),
        "histogram": hist,
        "histogram_spec": histogram_spec(c, hist) if hist["bins"] else None,
        "histogram_matches": hist["percentile_ci"] is not None
        and np.allclose(hist["percentile_ci"], c.ci, rtol=0, atol=1e-12),
        # set by live_comparison_context for runs that share no k or budget
        "cutoff_note": None,
    }


def stored_comparison_context(store: Any, comparison_id: int) -> dict[str, Any]:
    """A stored comparison (``ragmeter compare`` recorded it) as the page shows it."""
    c = store.comparison(int(comparison_id))
    row = next((r for r in store.comparisons() if r["id"] == int(comparison_id)), None)
    return comparison_context(
        c,
        stored_id=int(comparison_id),
        base_run=None if row is None else row.get("baseline_run_id"),
        cand_run=None if row is None else row.get("candidate_run_id"),
    )


def live_comparison_context(
    store: Any,
    base: int,
    cand: int,
    metric: str | None,
    level: str | None = None,
    **options: Any,
) -> dict[str, Any]:
    """``/compare?base=&cand=&metric=``: computed now on the stored evaluations (``options``:
    ``n_resamples``, ``seed``, ``intersect`` as ``ragmeter compare`` takes them). Without a
    metric and with none to default to, raises :class:`NoSharedMetric`. A comparison of runs
    that share no k or budget (on a metric asked for) carries ``ragmeter run``'s note."""
    if int(base) == int(cand):
        raise UsageError("pick two different runs to compare")
    c, _, choice = compute(store, base, cand, metric, level=level, **options)
    out = comparison_context(c, base_run=int(base), cand_run=int(cand))
    out["cutoff_note"] = choice.note if choice.no_shared_cutoff else None
    return out


def choices(store: Any) -> dict[str, Any]:
    """What the comparison form offers: finished runs and their metrics."""
    runs = [r for r in store.runs() if r.status == "finished"]
    metrics = list(dict.fromkeys(m for r in runs for m in r.metrics))
    return {
        "runs": [
            {"id": r.id, "name": r.name, "experiment": r.experiment, "base": r.is_baseline}
            for r in runs
        ],
        "metrics": metrics,
    }
