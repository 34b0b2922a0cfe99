"""Read what ``answers check`` and ``judge validate`` recorded (the store has no listing call
for them): headline rows for the lists, and one set with its rows and report."""

from __future__ import annotations

import json
from typing import Any

from .._errors import NotFoundError


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def answer_sets(store: Any, golden_version: str | None = None) -> list[dict[str, Any]]:
    """Stored answer sets, newest first: id, name, golden version, answers, source, when."""
    import sqlalchemy as sa

    from ..store import _models as m
    from ..store._engine import reading

    t = m.answer_sets
    q = sa.select(
        t.c.id,
        t.c.created_at,
        t.c.name,
        t.c.golden_version,
        t.c.source,
        t.c.n_answers,
        t.c.run_id,
    ).order_by(t.c.id.desc())
    if golden_version is not None:
        q = q.where(t.c.golden_version == golden_version)
    with reading(store.engine) as conn:
        return [dict(r._mapping) for r in conn.execute(q)]


def _stored(store: Any, table: str, blob: str, row_id: int, what: str, rows: str) -> dict[str, Any]:
    """One stored answer set or judge validation: its headline row (without the blob id), its
    report and its JSON records under ``rows`` (NotFoundError naming ``what`` when absent)."""
    import sqlalchemy as sa

    from ..store import _models as m
    from ..store._engine import reading
    from ..store._results import stored_rows

    t = m.metadata.tables[table]
    with reading(store.engine) as conn:
        row = conn.execute(sa.select(t).where(t.c.id == int(row_id))).first()
    if row is None:
        raise NotFoundError(f"the store has no {what} {row_id}")
    out = {k: v for k, v in row._mapping.items() if k != blob}
    out["report"] = _json(row.report)
    out[rows] = stored_rows(store, table, blob, int(row_id))
    return out


def answer_set(store: Any, set_id: int) -> dict[str, Any]:
    """One answer set: its headline row, the answers as stored and the report it was given."""
    return _stored(store, "answer_sets", "answers_blob", set_id, "answer set", "answers")


def judge_validations(store: Any) -> list[dict[str, Any]]:
    """Stored judge validations, newest first, with kappa and agreement from their report."""
    import sqlalchemy as sa

    from ..store import _models as m
    from ..store._engine import reading

    t = m.judge_labels
    q = sa.select(t.c.id, t.c.created_at, t.c.judge, t.c.source, t.c.n_labels, t.c.report).order_by(
        t.c.id.desc()
    )
    with reading(store.engine) as conn:
        rows = [dict(r._mapping) for r in conn.execute(q)]
    for r in rows:
        rep = _json(r.pop("report")) or {}
        r["kappa"] = rep.get("kappa")
        r["agreement"] = rep.get("agreement")
        r["n"] = rep.get("n")
    return rows


def judge_validation(store: Any, vid: int) -> dict[str, Any]:
    """One judge validation: judge, prompt, the labels (with the human label) and the report."""
    return _stored(store, "judge_labels", "labels_blob", vid, "judge validation", "labels")
