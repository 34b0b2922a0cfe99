"""Every Vega-Lite chart the lab and the report draw, built in one place: data in, spec out.

A spec is plain JSON (a ``dict``) that a page embeds with ``tojson`` and ``lab.js`` hands to
vega-embed; nothing here knows about requests, the store or templates. The pieces several
charts share (the container width, the palette, the dashed rule, the legend on top) are
defined once below, so a new chart is one function here and one call in its view model.

- :func:`rank_curve_spec`: the slider (``/slider``), R@k, RR@k and nDCG@k against the rank of
  one labelled passage;
- :func:`bootstrap_histogram_spec`: the comparison's paired bootstrap distribution
  (``/compare`` and the report);
- :func:`sweep_spec`: a metric at every cutoff for several runs, with the prompt's cutoff and
  the crossovers (``/sweeps`` and the report);
- :func:`change_bars_spec`: each question's change against the baseline as sorted bars, fixed
  and broken marked (``/lab``; a click on a bar shows its row).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

#: a Vega-Lite spec (JSON)
Spec: TypeAlias = dict[str, Any]

# -- the shared pieces -----------------------------------------------------------------------
#: zero, the cutoff k, a crossover: where the reading changes
RED = "#cf222e"
#: the observed value, the slider's current rank
INK = "#1f2328"
#: an interval (shaded, its ends as rules)
BLUE = "#0b5cad"
#: the bars of a distribution
GREY = "#6e7781"
#: the headroom past the prompt (shade, then its label)
AMBER = "#d4a72c"
AMBER_TEXT = "#8a6d1d"
#: the dash of a reference rule
DASH = (4, 3)


def _chart(height: int, layers: list[Spec], **top: Any) -> Spec:
    """A layered chart as wide as its container."""
    return {"width": "container", "height": height, **top, "layer": layers}


def _x(field: str, **more: Any) -> Spec:
    """A quantitative x (or y) channel on ``field``."""
    return {"field": field, "type": "quantitative", **more}


def _legend_top() -> Spec:
    return {"orient": "top", "title": None}


def _unit_scale() -> Spec:
    """A metric's axis: 0 to 1."""
    return {"domain": [0, 1]}


# -- the slider ------------------------------------------------------------------------------
def rank_curve_spec(
    rows: Sequence[Mapping[str, Any]], metrics: Sequence[str], *, k: int, depth: int
) -> Spec:
    """One line per metric (its value at k for each rank of the labelled passage, from
    :func:`ragmeter.explain.rank_curve`'s rows), the cutoff k as a red dashed rule and the
    slider's rank (the Vega parameter ``rank``, moved by ``lab.js``) as a black rule."""
    long = [{"rank": row["rank"], "metric": m, "value": row[m]} for row in rows for m in metrics]
    return _chart(
        240,
        [
            {
                "mark": {"type": "line", "point": True},
                "encoding": {
                    "x": _x(
                        "rank",
                        title="rank of the labelled passage",
                        scale={"domain": [1, depth]},
                        axis={"tickMinStep": 1},
                    ),
                    "y": _x("value", title="metric value", scale=_unit_scale()),
                    "color": {
                        "field": "metric",
                        "type": "nominal",
                        "sort": list(metrics),
                        "legend": _legend_top(),
                    },
                },
            },
            {
                "mark": {"type": "rule", "strokeDash": [*DASH], "color": RED},
                "encoding": {"x": {"datum": k + 0.5}},
            },
            {
                "data": {"values": [{}]},
                "transform": [{"calculate": "rank", "as": "at"}],
                "mark": {"type": "rule", "color": INK, "strokeWidth": 2},
                "encoding": {"x": _x("at")},
            },
        ],
        data={"values": long},
        params=[{"name": "rank", "value": 1}],
    )


# -- the comparison --------------------------------------------------------------------------
def bootstrap_histogram_spec(
    bins: Sequence[Mapping[str, object]],
    *,
    ci: tuple[float, float],
    mean_delta: float,
    label: str,
) -> Spec:
    """The paired bootstrap's resampled mean differences as bars (``bins``: ``x0``, ``x1``,
    ``count``), the interval ``ci`` shaded with its ends as rules, zero and the observed
    difference ``mean_delta`` as dashed rules; ``label`` names the metric on the axis."""
    lo, hi = ci
    marks = [
        {"x": 0.0, "what": "zero"},
        {"x": float(mean_delta), "what": "observed difference"},
    ]
    return _chart(
        220,
        [
            {
                "data": {"values": [{"lo": lo, "hi": hi}]},
                "mark": {"type": "rect", "color": BLUE, "opacity": 0.08},
                "encoding": {"x": _x("lo"), "x2": {"field": "hi"}},
            },
            {
                "data": {"values": list(bins)},
                "mark": {"type": "rect", "color": GREY},
                "encoding": {
                    "x": _x(
                        "x0",
                        title=f"resampled mean difference in {label} (candidate - baseline)",
                        axis={"format": "+.2f", "tickCount": 8, "labelFlush": True},
                    ),
                    "x2": {"field": "x1"},
                    "y": _x("count", title="resamples"),
                    "tooltip": [
                        _x("x0", format="+.3f", title="from"),
                        _x("x1", format="+.3f", title="to"),
                        _x("count", title="resamples"),
                    ],
                },
            },
            {
                "data": {"values": [{"x": lo, "what": "interval"}, {"x": hi, "what": "interval"}]},
                "mark": {"type": "rule", "color": BLUE, "strokeWidth": 2},
                "encoding": {"x": _x("x")},
            },
            {
                "data": {"values": marks},
                "mark": {"type": "rule", "strokeDash": [*DASH], "strokeWidth": 2},
                "encoding": {
                    "x": _x("x"),
                    "color": {
                        "field": "what",
                        "type": "nominal",
                        "scale": {"domain": ["zero", "observed difference"], "range": [RED, INK]},
                        "legend": _legend_top(),
                    },
                },
            },
        ],
    )


# -- the sweep -------------------------------------------------------------------------------
def sweep_spec(
    values: Sequence[Mapping[str, Any]],
    *,
    cutoffs: Sequence[int],
    label: str,
    prompt: int | None,
    kind: str,
    crossovers: Sequence[tuple[int, str | None, str | None]],
) -> Spec:
    """One line per run (``values``: ``run``, ``cutoff``, ``value``) over the ``cutoffs``
    (``kind`` ``"budget"``: token budgets, else k); past the ``prompt``'s cutoff shaded and
    labelled as headroom; a red dashed rule at each crossover ``(cutoff, from, to)`` where a
    run takes the lead. ``label`` names the metric."""
    axis = "token budget" if kind == "budget" else "k (chunks in the prompt)"
    hi = max(cutoffs)
    layers: list[Spec] = []
    if prompt is not None and prompt < hi:
        layers.append(
            {
                "data": {
                    "values": [{"from": prompt, "to": hi, "label": "headroom: beyond the prompt"}]
                },
                "mark": {"type": "rect", "color": AMBER, "opacity": 0.12},
                "encoding": {"x": _x("from"), "x2": {"field": "to"}},
            }
        )
        text = f"prompt {'budget' if kind == 'budget' else 'k'} {prompt}: beyond it, headroom"
        layers.append(
            {
                "data": {"values": [{"x": prompt, "y": 0.02, "text": text}]},
                "mark": {"type": "text", "align": "left", "dx": 4, "color": AMBER_TEXT},
                "encoding": {"x": _x("x"), "y": _x("y"), "text": {"field": "text"}},
            }
        )
    layers.append(
        {
            "data": {"values": list(values)},
            "mark": {"type": "line", "point": True},
            "encoding": {
                "x": _x("cutoff", title=axis),
                "y": _x("value", title=label, scale=_unit_scale()),
                "color": {
                    "field": "run",
                    "type": "nominal",
                    "title": None,
                    "legend": {"orient": "top"},
                },
                "tooltip": [
                    {"field": "run"},
                    {"field": "cutoff", "title": axis},
                    {"field": "value", "format": ".3f", "title": label},
                ],
            },
        }
    )
    leads = [(c, b or "tie") for c, _, b in crossovers if b is not None]
    if leads:
        layers.append(
            {
                "data": {
                    "values": [{"x": c, "text": f"crossover at {c}: {b} leads"} for c, b in leads]
                },
                "mark": {"type": "rule", "strokeDash": [*DASH], "color": RED},
                "encoding": {"x": _x("x"), "tooltip": [{"field": "text"}]},
            }
        )
    return _chart(300, layers)


# -- the trend -------------------------------------------------------------------------------
def trend_spec(points: Sequence[Mapping[str, Any]], *, label: str) -> Spec:
    """An experiment's finished runs over time (``points``: ``run``, ``variant``, ``role``
    baseline or variant, ``golden``, ``at`` ISO time, ``value``): one point per run, coloured
    by golden-set version, the baseline's runs as squares joined by a dashed line (the
    reference each variant was compared with). ``label`` names the metric."""
    tooltip = [
        {"field": "run", "title": "run"},
        {"field": "variant"},
        {"field": "role"},
        {"field": "golden", "title": "golden-set version"},
        {"field": "at", "type": "temporal", "format": "%Y-%m-%d %H:%M", "title": "finished"},
        {"field": "value", "format": ".3f", "title": label},
    ]
    x = {
        "field": "at",
        "type": "temporal",
        "title": "finished (UTC)",
        "axis": {"format": "%Y-%m-%d %H:%M", "tickCount": 4, "labelOverlap": True},
        "scale": {"padding": 24},
    }
    y = _x("value", title=label, scale={"zero": False, "nice": True, "padding": 12})
    return _chart(
        220,
        data={"values": [dict(p) for p in points]},
        layers=[
            {
                "transform": [{"filter": {"field": "role", "equal": "baseline"}}],
                "mark": {"type": "line", "strokeDash": [*DASH], "color": GREY},
                "encoding": {"x": x, "y": y},
            },
            *(
                {
                    # the baseline's squares first, larger: a variant's circle drawn over one
                    # at the same value and time stays visible
                    "transform": [{"filter": {"field": "role", "equal": role}}],
                    "mark": {"type": "point", "filled": True, "opacity": 0.9, "size": size},
                    "encoding": {
                        "x": x,
                        "y": y,
                        "color": {
                            "field": "golden",
                            "type": "nominal",
                            "title": "golden-set version",
                            "legend": {"orient": "top"},
                        },
                        "shape": {
                            "field": "role",
                            "type": "nominal",
                            "title": None,
                            "scale": {
                                "domain": ["baseline", "variant"],
                                "range": ["square", "circle"],
                            },
                            "legend": {"orient": "top"},
                        },
                        "tooltip": tooltip,
                    },
                }
                for role, size in (("baseline", 200), ("variant", 60))
            ),
        ],
    )


# -- the lab's per-question change -----------------------------------------------------------
#: a question's movement against the baseline, and its bar's colour (darkest: fixed, broken)
MOVES = {
    "fixed": "#116329",
    "gained": "#4ac26b",
    "lost": "#ff8182",
    "broken": "#a40e26",
}


def change_bars_spec(points: Sequence[Mapping[str, Any]], *, label: str, unchanged: int) -> Spec:
    """One bar per question that moved (``points``: ``qid``, ``question``, ``base``, ``value``,
    ``delta``, ``move`` (a key of :data:`MOVES`), ``url``), in the order given (largest gain
    first), zero as a rule; ``label`` names the metric. The bars carry their question's id for
    ``lab.js``, which shows the question's row when one is clicked."""
    n = len(points)
    moves = [m for m in MOVES if any(p["move"] == m for p in points)]
    return _chart(
        220,
        [
            {
                "mark": {"type": "bar", "cursor": "pointer"},
                "encoding": {
                    "x": {
                        "field": "order",
                        "type": "ordinal",
                        "title": f"the {n} questions that moved, largest gain first "
                        f"({unchanged} unchanged not drawn)",
                        "axis": {"labels": False, "ticks": False},
                    },
                    "y": _x("delta", title=f"change in {label}", axis={"format": "+.2f"}),
                    "color": {
                        "field": "move",
                        "type": "nominal",
                        "scale": {"domain": moves, "range": [MOVES[m] for m in moves]},
                        "legend": _legend_top(),
                    },
                    "tooltip": [
                        {"field": "qid", "title": "question"},
                        {"field": "question", "title": "asked"},
                        _x("base", format=".3f", title="baseline"),
                        _x("value", format=".3f", title="this run"),
                        _x("delta", format="+.3f", title="change"),
                        {"field": "move", "title": "moved"},
                    ],
                },
            },
            {
                "data": {"values": [{"y": 0.0}]},
                "mark": {"type": "rule", "color": INK},
                "encoding": {"y": _x("y")},
            },
        ],
        data={"values": [{"order": i, **p} for i, p in enumerate(points)]},
    )
