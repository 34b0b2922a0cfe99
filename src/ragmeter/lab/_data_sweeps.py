"""The sweeps view's model: a metric against k (or the token budget) for several stored runs,
from their stored ranked lists through :func:`ragmeter.paired.sweep_spans` (what ``ragmeter
sweep --golden --chunks`` computes on the run files), with the crossovers and the headroom past
the prompt's cutoff marked."""

from __future__ import annotations

import warnings
from collections.abc import MutableMapping, Sequence
from typing import Any

from .._errors import UsageError

#: span-level metrics a sweep can draw (the span labels give these; nDCG needs chunk qrels)
SWEEP_METRICS = ("R", "AllR", "RR", "Hit")


def parse_ids(text: str | None) -> list[int]:
    if not text:
        return []
    try:
        return [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise UsageError(f"runs must be stored run ids separated by commas, got {text!r}") from None


def sweeps_context(
    store: Any,
    run_ids: Sequence[int],
    *,
    metric: str = "R",
    kind: str | None = None,
    cutoffs: str | None = None,
    cache: MutableMapping[Any, Any] | None = None,
) -> dict[str, Any]:
    from ..paired import sweep_spans
    from ._context import settings_of
    from ._prepared import prepared_run

    if metric not in SWEEP_METRICS:
        raise UsageError(f"a sweep draws one of {', '.join(SWEEP_METRICS)}, got {metric!r}")
    if not run_ids:
        raise UsageError("pick at least one run")
    runs = [store.run(int(i)) for i in run_ids]
    versions = {r.golden_version for r in runs}
    if len(versions) > 1:
        raise UsageError(
            "the runs were scored on different golden-set versions "
            f"({', '.join(sorted(str(v) for v in versions))}): sweep runs of one version"
        )
    settings = [settings_of(r) for r in runs]
    chunkers = {str(s.get("chunker") or s.get("chunks")) for s in settings}
    budgets = {int(s["budget"]) for s in settings if s.get("budget")}
    if kind is None:  # chunkings differ: compare at equal context budgets
        kind = "budget" if len(chunkers) > 1 and budgets else "k"
    if kind not in ("k", "budget"):
        raise UsageError(f"sweep over k or budget, got {kind!r}")
    prepared = [prepared_run(store, r.id, cache) for r in runs]
    lacking = [p.run_id for p in prepared if not p.has_chunking]
    if lacking and kind == "budget":
        raise UsageError(f"runs {lacking} have no chunking here: a token budget needs one")
    head = prepared[0].ctx.headroom_k
    if cutoffs is None:
        if kind == "budget":
            b = max(budgets) if budgets else 1200
            step = max(100, round(b / 6 / 100) * 100)
            cutoffs = f"{step}..{2 * b}:{step}"
        else:
            cutoffs = f"1..{head}"
    names = [f"{r.id}: {r.name}" for r in runs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = sweep_spans(
            prepared[0].ctx.golden,
            {n: (p.chunking, p.run) for n, p in zip(names, prepared, strict=True)},
            metric,
            cutoffs,
            kind=kind,  # type: ignore[arg-type]
            headroom_k=head,
            cover=prepared[0].ctx.cover,
        )
    prompt_cuts = sorted(
        {
            int(st["budget"]) if kind == "budget" else int(st.get("k") or 0)
            for st in settings
            if (st.get("budget") if kind == "budget" else st.get("k"))
        }
    )
    prompt = prompt_cuts[0] if prompt_cuts else None
    values = [
        {"run": name, "cutoff": cut, "value": float(v)}
        for name, row in zip(s.runs, s.values, strict=True)
        for cut, v in zip(s.cutoffs, row.tolist(), strict=True)
    ]
    table = [
        {
            "cutoff": cut,
            "values": [float(s.values[i, j]) for i in range(len(s.runs))],
            "leader": lead,
            "beyond": prompt is not None and cut > prompt,
        }
        for j, (cut, lead) in enumerate(zip(s.cutoffs, s.leaders, strict=True))
    ]
    return {
        "runs": [{"id": r.id, "name": r.name} for r in runs],
        "names": list(s.runs),
        "metric": metric,
        "kind": kind,
        "cutoffs_text": cutoffs,
        "label": s.label,
        "summary": s.summary(),
        "crossovers": [{"at": c, "from": a or "tie", "to": b or "tie"} for c, a, b in s.crossovers],
        "headroom_metric": str(s.headroom_metric or ""),
        "headroom": [{"run": n, "value": s.headroom.get(n)} for n in s.runs],
        "prompt": prompt,
        "prompt_cuts": prompt_cuts,
        "notes": list(s.notes),
        "table": table,
        "spec": _spec(s, values, prompt, kind),
        "sweep": s.to_dict(),
    }


def _spec(s: Any, values: list[dict[str, Any]], prompt: int | None, kind: str) -> dict[str, Any]:
    axis = "token budget" if kind == "budget" else "k (chunks in the prompt)"
    hi = max(s.cutoffs)
    layers: list[dict[str, Any]] = []
    if prompt is not None and prompt < hi:
        layers.append(
            {
                "data": {
                    "values": [{"from": prompt, "to": hi, "label": "headroom: beyond the prompt"}]
                },
                "mark": {"type": "rect", "color": "#d4a72c", "opacity": 0.12},
                "encoding": {"x": {"field": "from", "type": "quantitative"}, "x2": {"field": "to"}},
            }
        )
        layers.append(
            {
                "data": {
                    "values": [
                        {
                            "x": prompt,
                            "y": 0.02,
                            "text": f"prompt {'budget' if kind == 'budget' else 'k'} "
                            f"{prompt}: beyond it, headroom",
                        }
                    ]
                },
                "mark": {"type": "text", "align": "left", "dx": 4, "color": "#8a6d1d"},
                "encoding": {
                    "x": {"field": "x", "type": "quantitative"},
                    "y": {"field": "y", "type": "quantitative"},
                    "text": {"field": "text"},
                },
            }
        )
    layers.append(
        {
            "data": {"values": values},
            "mark": {"type": "line", "point": True},
            "encoding": {
                "x": {"field": "cutoff", "type": "quantitative", "title": axis},
                "y": {
                    "field": "value",
                    "type": "quantitative",
                    "title": s.label,
                    "scale": {"domain": [0, 1]},
                },
                "color": {
                    "field": "run",
                    "type": "nominal",
                    "title": None,
                    "legend": {"orient": "top"},
                },
                "tooltip": [
                    {"field": "run"},
                    {"field": "cutoff", "title": axis},
                    {"field": "value", "format": ".3f", "title": s.label},
                ],
            },
        }
    )
    if any(b is not None for _, _, b in s.crossovers):
        layers.append(
            {
                "data": {
                    "values": [
                        {"x": c, "text": f"crossover at {c}: {b or 'tie'} leads"}
                        for c, _, b in s.crossovers
                        if b is not None
                    ]
                },
                "mark": {"type": "rule", "strokeDash": [4, 3], "color": "#cf222e"},
                "encoding": {
                    "x": {"field": "x", "type": "quantitative"},
                    "tooltip": [{"field": "text"}],
                },
            }
        )
    return {
        "width": "container",
        "height": 300,
        "layer": layers,
    }


def sweep_choices(store: Any) -> dict[str, Any]:
    runs = [r for r in store.runs() if r.status == "finished" and r.has_ranked]
    newest = [r.id for r in runs if runs and r.experiment == runs[0].experiment]
    return {
        "runs_all": [{"id": r.id, "name": r.name, "golden": r.golden_version} for r in runs],
        "metrics": list(SWEEP_METRICS),
        "suggest": f"/sweeps?runs={','.join(map(str, sorted(newest)))}" if newest else None,
    }
