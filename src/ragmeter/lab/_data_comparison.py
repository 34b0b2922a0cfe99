"""The comparison view's model: a :class:`~ragmeter.paired.Comparison` (stored, or computed now
with :func:`ragmeter.compare` on the stored evaluations, the numbers ``ragmeter compare``
prints) laid out for the page, with the bootstrap distribution its interval came from."""

from __future__ import annotations

import warnings
from typing import Any
from urllib.parse import quote

import numpy as np

from .._errors import NotFoundError, UsageError
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


def compute(
    store: Any,
    base: int,
    cand: int,
    metric: str | None,
    *,
    level: str | None = None,
    n_resamples: int = 5000,
    seed: int = 0,
) -> tuple[Any, str | None]:
    """``ragmeter compare BASE CAND -m METRIC`` on stored runs, without counting it in the
    ledger (a page view changes nothing); the ledger's current count gives the selection
    estimate, as ``compare`` attaches it. Returns (comparison, metric used)."""
    from ..paired import compare
    from ..paired._selection import optimism_from_pair

    a = store.evaluation(int(base), level)
    b = store.evaluation(int(cand), level)
    if metric is None:
        from ._data_experiments import compare_metric

        names = [str(m) for m in a.metrics]
        metric = compare_metric(dict.fromkeys(names)) if names else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kept in Comparison.warnings and shown on the page
        c = compare(a, b, metric, n_resamples=n_resamples, seed=seed)
    n = store.ledger.summary(c.golden_version).n_variants
    if n > 1:
        sel = optimism_from_pair(c.baseline_values, c.candidate_values, n, seed=seed)
        from dataclasses import replace

        c = replace(c, selection=sel, n_variants_tried=n)
    return c, metric


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
    store: Any, base: int, cand: int, metric: str | None, level: str | None = None
) -> dict[str, Any]:
    """``/compare?base=&cand=&metric=``: computed now on the stored evaluations."""
    if int(base) == int(cand):
        raise UsageError("pick two different runs to compare")
    try:
        c, _ = compute(store, base, cand, metric, level=level)
    except NotFoundError:
        raise
    return comparison_context(c, base_run=int(base), cand_run=int(cand))


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
