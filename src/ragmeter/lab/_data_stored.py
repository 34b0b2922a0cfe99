"""Read what ``answers check`` and ``judge validate`` recorded (the store has no listing call
for them): headline rows for the lists, and one set with its rows and report."""

from __future__ import annotations

import json
from typing import Any

from .._errors import NotFoundError


def _report(v: Any) -> dict[str, Any]:
    """A set's report: a JSON object (or, as older rows may hold it, its text)."""
    from ..store._damage import Damage

    value = v._get("report")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise Damage("report is not JSON") from None
        if not isinstance(value, dict):
            raise Damage("report is not a JSON object")
        return value
    return dict(v.mapping("report"))


def _listing(store: Any, query: Any, table: str, check: Any) -> list[dict[str, Any]]:
    """The rows of ``query`` as dicts, each checked by ``check(Row, dict)``; a damaged row is
    left out with a warning naming it (the rest of the list is shown)."""
    from ..store._damage import DamagedRowError, Row, checked, fetch, skipped
    from ..store._engine import reading

    t = query.selected_columns
    with reading(store.engine) as conn:
        rows, damaged = fetch(conn, query, t.id, table)
    out = []
    for r in rows:
        try:
            with checked(table, r.id):
                d = dict(r._mapping)
                check(Row(r), d)
                out.append(d)
        except DamagedRowError as exc:
            damaged.append(exc)
    for bad in damaged:
        skipped(bad)
    return out


def _headline(v: Any, d: dict[str, Any]) -> None:
    """The columns every stored set shares, with the types the writer gives them."""
    d["id"] = v.whole("id")
    d["created_at"] = v.when("created_at")
    d["source"] = v.text("source", null=True)


def answer_sets(store: Any, golden_version: str | None = None) -> list[dict[str, Any]]:
    """Stored answer sets, newest first: id, name, golden version, answers, source, when."""
    import sqlalchemy as sa

    from ..store import _models as m

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

    def check(v: Any, d: dict[str, Any]) -> None:
        _headline(v, d)
        d["name"] = v.text("name")
        d["golden_version"] = v.text("golden_version", null=True)
        d["n_answers"] = v.whole("n_answers")
        d["run_id"] = v.whole("run_id", null=True)

    return _listing(store, q, "answer_sets", check)


def _stored(store: Any, table: str, blob: str, row_id: Any, what: str, rows: str) -> dict[str, Any]:
    """One stored answer set or judge validation: its headline row (without the blob id), its
    report and its JSON records under ``rows`` (NotFoundError naming ``what`` when absent or
    when ``row_id`` cannot be an id; DamagedRowError naming what is wrong when it does not read
    back)."""
    import sqlalchemy as sa

    from ..store import _models as m
    from ..store._damage import Row, checked, fetch
    from ..store._engine import reading
    from ..store._results import stored_rows
    from ..store._values import row_id as as_id

    rid = as_id(row_id, store.engine.dialect.name)
    if rid is None:
        raise NotFoundError(f"the store has no {what} {row_id!r}")
    t = m.metadata.tables[table]
    with reading(store.engine) as conn:
        found, damaged = fetch(conn, sa.select(t).where(t.c.id == rid), t.c.id, table)
    if damaged:
        raise damaged[0]
    if not found:
        raise NotFoundError(f"the store has no {what} {rid}")
    row = found[0]
    v = Row(row)
    out = {k: x for k, x in row._mapping.items() if k != blob}
    with checked(table, rid):
        _headline(v, out)
        out["report"] = _report(v)
    out[rows] = stored_rows(store, table, blob, rid)
    return out


def answer_set(store: Any, set_id: int) -> dict[str, Any]:
    """One answer set: its headline row, the answers as stored and the report it was given."""
    return _stored(store, "answer_sets", "answers_blob", set_id, "answer set", "answers")


def judge_validations(store: Any) -> list[dict[str, Any]]:
    """Stored judge validations, newest first, with kappa and agreement from their report."""
    import sqlalchemy as sa

    from ..store import _models as m
    from ..store._damage import number

    t = m.judge_labels
    q = sa.select(t.c.id, t.c.created_at, t.c.judge, t.c.source, t.c.n_labels, t.c.report).order_by(
        t.c.id.desc()
    )

    def check(v: Any, d: dict[str, Any]) -> None:
        _headline(v, d)
        d["judge"] = v.text("judge")
        d["n_labels"] = v.whole("n_labels")
        rep = _report(v)
        del d["report"]
        for k in ("kappa", "agreement", "n"):
            x = rep.get(k)
            d[k] = None if x is None else number(x, f"report[{k!r}]")

    return _listing(store, q, "judge_labels", check)


def judge_validation(store: Any, vid: int) -> dict[str, Any]:
    """One judge validation: judge, prompt, the labels (with the human label) and the report."""
    return _stored(store, "judge_labels", "labels_blob", vid, "judge validation", "labels")
