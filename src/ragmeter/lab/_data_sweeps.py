"""The sweeps view's model: a metric against k (or the token budget) for several stored runs,
from their stored ranked lists through :func:`ragmeter.workflows.sweep.stored_sweep` (the
numbers ``ragmeter sweep --golden --chunks`` computes on the run files), with the crossovers
and the headroom past the prompt's cutoff marked."""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

from .._errors import UsageError
from ._charts import sweep_spec

if TYPE_CHECKING:  # pragma: no cover
    from ..store import RunRecord, Store


def sweep_metrics() -> tuple[str, ...]:
    """The metrics a sweep of stored runs can draw, in registry order: those computed on span
    labels at a cutoff (the registry's ``budget`` metrics: R, Hit, RR, AllR; nDCG needs chunk
    qrels). Read from the registry here, not at import (it loads numpy)."""
    from ..metrics import REGISTRY

    return tuple(m.name for m in REGISTRY.values() if m.budget)


def parse_ids(text: str | None) -> list[int]:
    if not text:
        return []
    try:
        return [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise UsageError(f"runs must be stored run ids separated by commas, got {text!r}") from None


def sweeps_context(
    store: Store,
    run_ids: Sequence[int],
    *,
    metric: str = "R",
    kind: str | None = None,
    cutoffs: str | None = None,
    cache: MutableMapping[Any, Any] | None = None,
) -> dict[str, Any]:
    """The sweeps page's model: :func:`ragmeter.workflows.sweep.stored_sweep` on the stored
    runs (prepared from their ranked lists, kept in ``cache``), laid out for the page."""
    from ..workflows.sweep import SpanSource, stored_sweep
    from ._context import settings_of
    from ._prepared import prepared_run

    drawable = sweep_metrics()
    if metric not in drawable:
        raise UsageError(f"a sweep draws one of {', '.join(drawable)}, got {metric!r}")

    def prepare(run: RunRecord) -> SpanSource:
        p = prepared_run(store, run.id, cache)
        return SpanSource(
            p.ctx.golden, p.chunking, p.run, p.has_chunking, p.ctx.headroom_k, p.ctx.cover
        )

    found = stored_sweep(
        store,
        run_ids,
        metric=metric,
        settings=settings_of,
        prepare=prepare,
        kind=kind,
        cutoffs=cutoffs,
    )
    s, runs, kind, prompt = found.sweep, found.runs, found.kind, found.prompt
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
        "cutoffs_text": found.cutoffs,
        "label": s.label,
        "summary": s.summary(),
        "crossovers": [{"at": c, "from": a or "tie", "to": b or "tie"} for c, a, b in s.crossovers],
        "headroom_metric": str(s.headroom_metric or ""),
        "headroom": [{"run": n, "value": s.headroom.get(n)} for n in s.runs],
        "prompt": prompt,
        "prompt_cuts": list(found.prompt_cuts),
        "notes": list(s.notes),
        "table": table,
        "spec": sweep_spec(
            values,
            cutoffs=s.cutoffs,
            label=s.label,
            prompt=prompt,
            kind=kind,
            crossovers=s.crossovers,
        ),
        "sweep": s.to_dict(),
    }


def sweep_choices(store: Store) -> dict[str, Any]:
    runs = [r for r in store.runs() if r.status == "finished" and r.has_ranked]
    newest = [r.id for r in runs if runs and r.experiment == runs[0].experiment]
    return {
        "runs_all": [{"id": r.id, "name": r.name, "golden": r.golden_version} for r in runs],
        "metrics": list(sweep_metrics()),
        "suggest": f"/sweeps?runs={','.join(map(str, sorted(newest)))}" if newest else None,
    }
