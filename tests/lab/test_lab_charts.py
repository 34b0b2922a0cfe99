"""lab/_charts.py builds every Vega-Lite spec the lab and the report draw. Each builder's output
equals, for the same data, the spec the lab built by hand before the charts moved here
(``fixtures/lab_charts/today.json``: the slider's, the comparison's bootstrap histogram and the
sweep's, recorded from those modules), so a page's chart is byte for byte what it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragmeter.lab import _charts

TODAY = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "lab_charts" / "today.json").read_text(
        encoding="utf-8"
    )
)


def build(case: dict[str, Any]) -> dict[str, Any]:
    args = dict(case["args"])
    if "ci" in args:
        args["ci"] = tuple(args["ci"])
    if "crossovers" in args:
        args["crossovers"] = [tuple(x) for x in args["crossovers"]]
    if case["builder"] == "rank_curve_spec":
        return _charts.rank_curve_spec(
            args.pop("rows"), args.pop("metrics"), k=args["k"], depth=args["depth"]
        )
    if case["builder"] == "bootstrap_histogram_spec":
        return _charts.bootstrap_histogram_spec(args.pop("bins"), **args)
    return _charts.sweep_spec(args.pop("values"), **args)


@pytest.mark.parametrize("name", sorted(TODAY))
def test_each_builder_draws_the_chart_the_page_drew(name: str) -> None:
    case = TODAY[name]
    spec = build(case)
    assert spec == case["spec"]
    # the page embeds it with tojson: the same JSON text
    assert json.dumps(spec, sort_keys=True) == json.dumps(case["spec"], sort_keys=True)


def test_every_builder_is_covered() -> None:
    builders = {c["builder"] for c in TODAY.values()}
    assert builders == {"rank_curve_spec", "bootstrap_histogram_spec", "sweep_spec"}


def test_specs_share_no_mutable_pieces() -> None:
    """Two charts never share a list or dict: editing one spec leaves the other as built."""
    a = _charts.rank_curve_spec([{"rank": 1, "R@5": 1.0}], ["R@5"], k=5, depth=10)
    b = _charts.rank_curve_spec([{"rank": 1, "R@5": 1.0}], ["R@5"], k=5, depth=10)
    a["layer"][1]["mark"]["strokeDash"].append(9)
    assert b["layer"][1]["mark"]["strokeDash"] == [4, 3]
    assert _charts.DASH == (4, 3)


def test_the_sweep_marks_the_headroom_only_inside_the_cutoffs() -> None:
    values = [{"run": "a", "cutoff": c, "value": 0.5} for c in (1, 2, 4)]
    inside = _charts.sweep_spec(
        values, cutoffs=[1, 2, 4], label="R@k", prompt=2, kind="k", crossovers=[]
    )
    past = _charts.sweep_spec(
        values, cutoffs=[1, 2, 4], label="R@k", prompt=4, kind="k", crossovers=[]
    )
    assert [layer["mark"]["type"] for layer in inside["layer"]] == ["rect", "text", "line"]
    assert [layer["mark"]["type"] for layer in past["layer"]] == ["line"]
