"""The slider's model: the RAG evaluation lesson's figure, one labelled passage moved from rank
1 to 10, with R@k, RR@k and nDCG@k from :func:`ragmeter.explain.rank_curve` (the metric
engine's own numbers, embedded as JSON; the page only looks them up)."""

from __future__ import annotations

from typing import Any

from .._errors import UsageError


def slider_context(k: int = 5, depth: int = 10, gain: str = "exp") -> dict[str, Any]:
    from ..explain import rank_curve

    if not 1 <= depth <= 50:
        raise UsageError("the slider's depth must be 1 to 50")
    curve = rank_curve(k=k, depth=depth, gain=gain)
    d = curve.to_dict()
    names = list(curve.metrics)
    long = [{"rank": row["rank"], "metric": m, "value": row[m]} for row in d["rows"] for m in names]
    spec = {
        "width": "container",
        "height": 240,
        "data": {"values": long},
        "params": [{"name": "rank", "value": 1}],
        "layer": [
            {
                "mark": {"type": "line", "point": True},
                "encoding": {
                    "x": {
                        "field": "rank",
                        "type": "quantitative",
                        "title": "rank of the labelled passage",
                        "scale": {"domain": [1, depth]},
                        "axis": {"tickMinStep": 1},
                    },
                    "y": {
                        "field": "value",
                        "type": "quantitative",
                        "title": "metric value",
                        "scale": {"domain": [0, 1]},
                    },
                    "color": {
                        "field": "metric",
                        "type": "nominal",
                        "sort": names,
                        "legend": {"orient": "top", "title": None},
                    },
                },
            },
            {
                "mark": {"type": "rule", "strokeDash": [4, 3], "color": "#cf222e"},
                "encoding": {"x": {"datum": k + 0.5}},
            },
            {
                "data": {"values": [{}]},
                "transform": [{"calculate": "rank", "as": "at"}],
                "mark": {"type": "rule", "color": "#1f2328", "strokeWidth": 2},
                "encoding": {"x": {"field": "at", "type": "quantitative"}},
            },
        ],
    }
    return {
        "k": k,
        "depth": depth,
        "setup": curve.setup,
        "metrics": names,
        "curve": d,
        "spec": spec,
        "first": d["rows"][0],
    }
