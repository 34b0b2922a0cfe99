"""An experiment's runs over time (the lab's trend): one query for every finished run of an
experiment, oldest first, with what its headline needs (its means, the headline metric its
configuration declares, the prompt k and token budget), never its blobs.

The same SQL on SQLite and PostgreSQL: JSON columns are read as JSON by SQLAlchemy and picked
apart here, not with a dialect's JSON operators. A damaged row is left out with a warning naming
it, as every listing does (:mod:`._damage`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import _models as m
from ._damage import Row

if TYPE_CHECKING:  # pragma: no cover
    from ._store import Store


@dataclass(frozen=True, eq=True)
class TrendPoint:
    """One finished run of an experiment, as its trend shows it."""

    run_id: int
    experiment: str
    name: str
    is_baseline: bool
    golden_version: str | None
    #: when it finished (its start when the store has no finish time)
    at: dt.datetime
    #: its means, metric string -> mean (None: no mean)
    metrics: Mapping[str, float | None]
    #: the headline metric its experiment file declared (``headline = "..."``), if any
    headline: str | None
    #: the prompt's k and token budget it was run at (None when not recorded)
    k: int | None
    budget: int | None


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _declared(config: Mapping[str, Any]) -> str | None:
    """The headline metric a run's configuration declares: ``headline`` at its top, in its
    settings or in what the run resolved (wherever the experiment file's value is kept)."""
    for where in (config, config.get("settings"), config.get("resolved")):
        if isinstance(where, Mapping):
            found = where.get("headline")
            if isinstance(found, str) and found:
                return found
    return None


def trend_points(store: Store, experiment: str | None = None) -> list[TrendPoint]:
    """Every finished run (of ``experiment``, else of every experiment), oldest first."""
    import sqlalchemy as sa

    from ._listings import _listing

    r = m.runs
    finished = sa.func.coalesce(r.c.finished_at, r.c.started_at)
    q = (
        sa.select(
            r.c.id,
            m.experiments.c.name.label("experiment_name"),
            r.c.name,
            sa.type_coerce(r.c.is_baseline, sa.Integer).label("is_baseline_raw"),
            r.c.golden_version,
            finished.label("at"),
            r.c.metrics,
            r.c.config,
        )
        .join(m.experiments, m.experiments.c.id == r.c.experiment_id)
        .where(r.c.status == "finished")
        .order_by(finished, r.c.id)
    )
    if experiment is not None:
        q = q.where(m.experiments.c.name == experiment)

    def make(v: Row) -> TrendPoint:
        config = v.mapping("config")
        settings = config.get("settings")
        settings = settings if isinstance(settings, Mapping) else {}
        return TrendPoint(
            run_id=v.whole("id"),
            experiment=v.text("experiment_name"),
            name=v.text("name"),
            is_baseline=v.flag("is_baseline", raw="is_baseline_raw"),
            golden_version=v.text("golden_version", null=True),
            at=v.when("at"),
            metrics=v.numbers("metrics", null_values=True),
            headline=_declared(config),
            k=_whole(settings.get("k")),
            budget=_whole(settings.get("budget")),
        )

    return _listing(store, q, r.c.id, "runs", make)
