"""The experiments page's trends: the headline metric of every finished run of an experiment
over time, by golden-set version, with the baseline marked (read with one store query,
:meth:`ragmeter.store.Store.trend`, the same on SQLite and PostgreSQL).

The headline is the experiment's headline metric as its newest run recorded it (declared with
``headline = "..."`` in the experiment file, else ``ragmeter run``'s default); runs recorded
before ragmeter kept the headline are drawn on AllR at the prompt's token budget (variants that
change the chunking are compared at an equal budget), else at the prompt k, and the page says
which. A run that has no value for that metric is listed, not drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Store, TrendPoint

#: below this many finished runs an experiment has no trend to draw
MIN_POINTS = 2


@dataclass(frozen=True)
class TrendRow:
    """One finished run on the trend."""

    run_id: int
    name: str
    is_baseline: bool
    golden_version: str
    at: str  # ISO 8601, UTC
    shown_at: str  # to the minute
    value: float | None


@dataclass(frozen=True)
class Trend:
    """One experiment's trend: the metric, why it is that one, the runs and the chart."""

    experiment: str
    metric: str | None
    #: how the metric was chosen, in words
    why: str
    rows: list[TrendRow] = field(default_factory=list)
    #: runs without a value for the metric (listed under the chart)
    missing: list[str] = field(default_factory=list)
    spec: dict[str, Any] | None = None

    @property
    def versions(self) -> list[str]:
        return list(dict.fromkeys(r.golden_version for r in self.rows))


def headline_of(points: Sequence[TrendPoint]) -> tuple[str | None, str]:
    """The metric an experiment's trend is drawn on and why (``points`` oldest first)."""
    for p in reversed(points):
        if p.headline:
            return p.headline, (
                "The experiment's headline metric, as its newest run recorded it (declared in "
                "the experiment file, else the one `ragmeter run` picks by default)"
            )
    ref = next((p for p in reversed(points) if p.is_baseline), points[-1] if points else None)
    if ref is None:
        return None, "No finished run"
    budget = f"AllR@budget={ref.budget}"
    if ref.budget is not None and any(budget in p.metrics for p in points):
        return budget, (
            "AllR at the prompt's token budget: the runs recorded no headline metric (they "
            "were stored before ragmeter kept one)"
        )
    at_k = f"AllR@{ref.k}"
    if ref.k is not None and any(at_k in p.metrics for p in points):
        return at_k, (
            "AllR at the prompt k: the runs recorded no headline metric and have no token budget"
        )
    first = next(iter(ref.metrics), None)
    return (
        first,
        "The baseline's first metric: the runs recorded no headline metric and have no AllR",
    )


def trend_of(experiment: str, points: Sequence[TrendPoint]) -> Trend:
    """The trend of one experiment's finished runs (oldest first)."""
    from ._charts import trend_spec

    metric, why = headline_of(points)
    rows: list[TrendRow] = []
    missing: list[str] = []
    for p in points:
        value = None if metric is None else p.metrics.get(metric)
        rows.append(
            TrendRow(
                run_id=p.run_id,
                name=p.name,
                is_baseline=p.is_baseline,
                golden_version=p.golden_version or "unversioned",
                at=p.at.isoformat(timespec="seconds"),
                shown_at=p.at.strftime("%Y-%m-%d %H:%M UTC"),
                value=value,
            )
        )
        if value is None:
            missing.append(f"run {p.run_id} ({p.name})")
    drawn = [r for r in rows if r.value is not None]
    spec = None
    if metric is not None and len(drawn) >= MIN_POINTS:
        spec = trend_spec(
            [
                {
                    "run": r.run_id,
                    "variant": r.name,
                    "role": "baseline" if r.is_baseline else "variant",
                    "golden": r.golden_version,
                    "at": r.at,
                    "value": r.value,
                }
                for r in drawn
            ],
            label=metric,
        )
    return Trend(experiment, metric, why, rows, missing, spec)


def trends(store: Store, experiments: Sequence[str] | None = None) -> dict[str, Trend]:
    """Each experiment's trend (of ``experiments``, else of every one), from one query."""
    by: dict[str, list[TrendPoint]] = {}
    for p in store.trend():
        if experiments is None or p.experiment in experiments:
            by.setdefault(p.experiment, []).append(p)
    return {name: trend_of(name, points) for name, points in by.items()}
