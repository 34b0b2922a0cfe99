"""A run's life in the store: started (``running``), then ``finished`` with every row in one
transaction, or ended ``failed`` / ``interrupted``; and the queries that list runs."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .._about import __version__
from .._errors import UsageError
from . import _models as m
from ._damage import Damage, DamagedRowError, check_columns, fetch, finite_json, number, utc
from ._engine import insert_row, reading, writing
from ._process import host, start_token
from ._records import RunRecord, evaluation_tables
from ._values import LEVELS

if TYPE_CHECKING:  # pragma: no cover
    from sqlalchemy import Select
    from sqlalchemy.engine import Connection

    from ._store import Store

#: RunRecord fields a caller may set when finishing a run
FINISH_FIELDS = (
    "metrics",
    "timings",
    "seconds",
    "n_queries",
    "context_tokens",
    "notes",
    "source",
    "golden_version",
    "label",
    "config",
    "changes",
)


def _experiment_id(conn: Any, name: str, file: str | None) -> int:
    import sqlalchemy as sa

    from ._blobs import _insert_ignore
    from ._values import now

    conn.execute(_insert_ignore(conn, m.experiments).values(name=name, file=file, created_at=now()))
    return int(
        conn.execute(sa.select(m.experiments.c.id).where(m.experiments.c.name == name)).scalar_one()
    )


def run_row(
    conn: Any,
    s: Mapping[str, Any],
    *,
    invocation: str,
    provenance: Mapping[str, Any],
    pid: int,
    token: str | None,
) -> dict[str, Any]:
    """The ``runs`` row of spec ``s`` as :func:`start_runs` inserts it (status ``running``);
    its experiment row is made on ``conn`` when missing."""
    from ._values import config_hash, json_ready, now

    exp_id = _experiment_id(
        conn, str(s["experiment"]), None if s.get("file") is None else str(s["file"])
    )
    config = json_ready(dict(s.get("config") or {}))
    return {
        "experiment_id": exp_id,
        "invocation": invocation,
        "name": str(s["name"]),
        "label": s.get("label"),
        "kind": s.get("kind", "experiment"),
        "status": "running",
        "is_baseline": bool(s.get("is_baseline", False)),
        "golden_version": s.get("golden_version"),
        "config": config,
        "config_hash": config_hash(config),
        "changes": list(s.get("changes") or ()),
        "ragmeter_version": str(provenance.get("ragmeter") or __version__),
        "git_commit": provenance.get("git_commit"),
        "git_dirty": provenance.get("git_dirty"),
        "host": host(),
        "pid": pid,
        "process_start": token,
        "started_at": now(),
        "timings": {},
        "metrics": {},
        "notes": [],
        "source": None if s.get("file") is None else str(s["file"]),
    }


def insert_run(conn: Connection, row: Mapping[str, Any]) -> int:
    return insert_row(conn, m.runs.insert().values(**row))


def start_runs(
    store: Store,
    specs: Sequence[Mapping[str, Any]],
    *,
    invocation: str | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> list[int]:
    """Insert runs as ``running`` (one transaction); returns their ids in order."""
    from ._values import new_invocation

    prov = dict(provenance or {})
    inv = invocation or new_invocation()
    pid = os.getpid()
    token = start_token(pid)
    with writing(store.engine) as conn:
        return [
            insert_run(
                conn, run_row(conn, s, invocation=inv, provenance=prov, pid=pid, token=token)
            )
            for s in specs
        ]


@dataclass(frozen=True)
class Results:
    """A run's results made ready before the write transaction (the Parquet bytes of every
    evaluation and of the ranked lists), so the write lock is held only for the inserts."""

    #: (level, evaluation, values blob, extras blob) in the order the levels are stored
    evaluations: tuple[tuple[str, Any, Any, bytes], ...]
    ranked: Any  # bytes | Stored | None
    #: the run row's columns the caller set (JSON-ready)
    update: Mapping[str, Any]


def prepare_results(
    store: Store,
    evaluations: Mapping[str, Any],
    ranked: Any = None,
    fields: Mapping[str, Any] | None = None,
) -> Results:
    """Check what finishes a run and make its blobs' bytes (outside any transaction)."""
    from ._blobs import json_bytes
    from ._values import LEVELS, json_ready

    fields = dict(fields or {})
    unknown = set(fields) - set(FINISH_FIELDS)
    if unknown:
        raise UsageError(f"finish_run: unknown field(s) {', '.join(sorted(unknown))}")
    bad = set(evaluations) - set(LEVELS)
    if bad:
        raise UsageError(f"finish_run: levels must be among {', '.join(LEVELS)}; got {bad}")
    prepared = []
    for level, ev in evaluations.items():
        if ev is None:
            continue
        values, extras = evaluation_tables(ev)
        prepared.append(
            (level, ev, store.blobs.prepare_table(values), json_bytes(json_ready(extras)))
        )
    ranked_bytes = None if ranked is None else store.blobs.prepare_table(ranked)
    update = {k: json_ready(v) for k, v in fields.items()}
    if "changes" in update:
        update["changes"] = list(update["changes"] or ())
    if "notes" in update:
        update["notes"] = list(dict.fromkeys(update["notes"] or ()))
    return Results(tuple(prepared), ranked_bytes, update)


def insert_evaluations(conn: Any, store: Store, run_id: int, results: Results) -> None:
    from ._values import json_ready

    for level, ev, vb, xb in results.evaluations:
        conn.execute(
            m.evaluations.insert().values(
                run_id=int(run_id),
                level=level,
                run_name=ev.run,
                metrics=[str(x) for x in ev.metrics],
                aggregate=json_ready(ev.aggregate),
                n_queries=ev.n_queries,
                n_missing=ev.n_missing,
                n_no_relevant=ev.n_no_relevant,
                golden_version=ev.golden_version,
                config=json_ready(dict(ev.config)),
                values_blob=store.blobs.put(conn, vb, "parquet"),
                extras_blob=store.blobs.put(conn, xb, "json.gz"),
            )
        )


def finished_columns(
    conn: Any,
    store: Store,
    results: Results,
    *,
    chunking: Mapping[str, Any] | None = None,
    corpus: tuple[str, int, str | None] | None = None,
) -> dict[str, Any]:
    """The run row's columns of a finished run with ``results`` (its ranked lists' blob, the
    chunking and corpus rows made on ``conn``, status ``finished``)."""
    from ._values import now

    update = dict(results.update)
    if results.ranked is not None:
        update["ranked_blob"] = store.blobs.put(conn, results.ranked, "parquet")
    if chunking:
        update["chunking_id"] = _chunking_id(conn, chunking)
    if corpus is not None:
        update["corpus"] = corpus_row(conn, *corpus)
    if "n_queries" not in update and results.evaluations:
        update["n_queries"] = results.evaluations[0][1].n_queries
    if "config" in update:
        from ._values import config_hash

        update["config_hash"] = config_hash(update["config"])
    update.update(status="finished", finished_at=now())
    return update


def finish_run(
    store: Store,
    run_id: int,
    *,
    evaluations: Mapping[str, Any],
    ranked: Any = None,
    golden: Any = None,
    chunking: Mapping[str, Any] | None = None,
    corpus: tuple[str, int, str | None] | None = None,
    **fields: Any,
) -> None:
    import sqlalchemy as sa

    results = prepare_results(store, evaluations, ranked, fields)
    if golden is not None:
        store.put_golden(golden)
    with writing(store.engine) as conn:
        status = conn.execute(
            sa.select(m.runs.c.status).where(m.runs.c.id == int(run_id))
        ).scalar_one_or_none()
        if status is None:
            raise UsageError(f"no run {run_id} to finish")
        if status != "running":
            raise UsageError(f"run {run_id} is {status}; only a running run can be finished")
        insert_evaluations(conn, store, run_id, results)
        update = finished_columns(conn, store, results, chunking=chunking, corpus=corpus)
        conn.execute(sa.update(m.runs).where(m.runs.c.id == int(run_id)).values(**update))


def insert_finished_run(
    conn: Any,
    store: Store,
    spec: Mapping[str, Any],
    results: Results,
    *,
    invocation: str,
    provenance: Mapping[str, Any],
    chunking: Mapping[str, Any] | None = None,
    started_at: Any = None,
    finished_at: Any = None,
) -> int:
    """Insert a run already ``finished``, with its evaluations and ranked lists, on ``conn``
    (the caller's transaction): no ``running`` row is ever written (``runs import``). The
    times default to now; an imported record keeps those it was made at."""
    pid = os.getpid()
    row = run_row(
        conn, spec, invocation=invocation, provenance=provenance, pid=pid, token=start_token(pid)
    )
    row.update(finished_columns(conn, store, results, chunking=chunking))
    if started_at is not None:
        row["started_at"] = started_at
    if finished_at is not None:
        row["finished_at"] = finished_at
    run_id = insert_run(conn, row)
    insert_evaluations(conn, store, run_id, results)
    return run_id


def _chunking_id(conn: Any, stats: Mapping[str, Any]) -> int:
    import hashlib
    import json

    import sqlalchemy as sa

    from ._blobs import _insert_ignore
    from ._values import json_ready, now

    clean = json_ready(dict(stats))
    fp = hashlib.sha256(json.dumps(clean, sort_keys=True).encode()).hexdigest()
    conn.execute(
        _insert_ignore(conn, m.chunkings).values(
            name=str(clean.get("name") or clean.get("chunking") or "chunking"),
            fingerprint=fp,
            stats=clean,
            created_at=now(),
        )
    )
    return int(
        conn.execute(
            sa.select(m.chunkings.c.id).where(m.chunkings.c.fingerprint == fp)
        ).scalar_one()
    )


def corpus_row(conn: Any, fingerprint: str, n_docs: int, source: str | None) -> str:
    from ._blobs import _insert_ignore
    from ._values import now

    conn.execute(
        _insert_ignore(conn, m.corpora).values(
            fingerprint=fingerprint, n_docs=n_docs, source=source, created_at=now()
        )
    )
    return fingerprint


def end_unfinished(store: Store, run_ids: Sequence[int], *, status: str, message: str) -> None:
    """Mark runs that are still ``running`` as ``failed`` or ``interrupted`` (others untouched:
    a finished run stays finished)."""
    import sqlalchemy as sa

    from ._values import now

    if status not in ("failed", "interrupted"):
        raise UsageError(f"a run ends 'failed' or 'interrupted', not {status!r}")
    with writing(store.engine) as conn:
        conn.execute(
            sa.update(m.runs)
            .where(m.runs.c.id.in_([int(i) for i in run_ids]), m.runs.c.status == "running")
            .values(status=status, message=message[:2000], finished_at=now())
        )


Q = TypeVar("Q", bound="Select[Any]")


def run_filters(
    q: Q,
    *,
    experiment: str | None = None,
    golden_version: str | None = None,
    status: str | None = None,
) -> Q:
    """``q`` (runs joined with their experiments) narrowed to the runs of ``experiment``, of
    ``golden_version`` and in ``status`` (None: any): the filters listing and counting share."""
    if experiment is not None:
        q = q.where(m.experiments.c.name == experiment)
    if golden_version is not None:
        q = q.where(m.runs.c.golden_version == golden_version)
    if status is not None:
        q = q.where(m.runs.c.status == status)
    return q


@dataclass(frozen=True)
class Selected:
    """The runs a query found, and the damaged ones left out (each names its id and what is
    wrong)."""

    records: list[RunRecord]
    damaged: list[Any]  # DamagedRowError


def select_runs(
    store: Store,
    *,
    ids: Sequence[int] | None = None,
    experiment: str | None = None,
    golden_version: str | None = None,
    status: str | None = None,
    limit: int | None = None,
) -> Selected:
    """Runs, newest first. A row that cannot be read back as a record (a value that does not
    decode, or has the wrong type) is not a record: it is returned under ``damaged``."""
    import sqlalchemy as sa

    q = (
        sa.select(
            m.runs,
            m.experiments.c.name.label("experiment_name"),
            *(sa.type_coerce(m.runs.c[c], sa.Integer).label(f"{c}_raw") for c in _FLAGS),
        )
        .join(m.experiments, m.experiments.c.id == m.runs.c.experiment_id)
        .order_by(m.runs.c.id.desc())
    )
    if ids is not None:
        q = q.where(m.runs.c.id.in_(list(ids)))
    q = run_filters(q, experiment=experiment, golden_version=golden_version, status=status)
    if limit is not None:
        q = q.limit(int(limit))
    with reading(store.engine) as conn:
        rows, damaged = fetch(conn, q, m.runs.c.id, "runs")
        run_ids = [r.id for r in rows]
        lv: dict[int, list[str]] = {}
        if run_ids:
            for rid, level in conn.execute(
                sa.select(m.evaluations.c.run_id, m.evaluations.c.level)
                .where(m.evaluations.c.run_id.in_(run_ids))
                .order_by(m.evaluations.c.id)
            ):
                lv.setdefault(rid, []).append(level)
    records: list[RunRecord] = []
    fields = rows[0]._fields if rows else ()
    for r in rows:
        try:
            records.append(_record(r, tuple(lv.get(r.id, ())), fields))
        except DamagedRowError as exc:
            damaged.append(exc)
    damaged.sort(key=lambda d: -d.key if isinstance(d.key, int) else 0)
    return Selected(records, damaged)


#: the boolean columns, also selected as stored (see :meth:`ragmeter.store._damage.Row.flag`)
_FLAGS = ("is_baseline", "git_dirty")


#: the type of every column a run record reads (see :func:`._damage.check_columns`)
_COLUMNS = {
    "text": ("experiment_name", "name", "kind", "status", "config_hash", "ragmeter_version",
             "host", "invocation"),
    "text?": ("label", "golden_version", "git_commit", "source", "message", "ranked_blob"),
    "whole": ("id", "pid"),
    "whole?": ("n_queries",),
    "number?": ("seconds", "context_tokens"),
    "strings": ("changes", "notes"),
    "when": ("started_at",),
    "when?": ("finished_at",),
}  # fmt: skip


def _record(r: Any, levels: tuple[str, ...], fields: tuple[str, ...]) -> RunRecord:
    """A run's row as a :class:`RunRecord`, every value checked against the type the writer
    gives it (DamagedRowError naming the first that is not). ``runs list`` makes a thousand of
    these: plain checks, no per-field calls."""
    d = dict(zip(fields, r, strict=True))
    try:
        check_columns(d, _COLUMNS)
        for lvl in levels:
            if lvl not in LEVELS:
                raise Damage(f"an evaluation's level {lvl!r} is not one of {', '.join(LEVELS)}")
        flags: dict[str, bool | None] = {}
        for k in _FLAGS:
            x = d[f"{k}_raw"]  # as stored: SQLAlchemy reads any text on SQLite as True
            if x is None and k == "git_dirty":
                flags[k] = None
            elif type(x) not in (bool, int) or x not in (0, 1):
                raise Damage(f"{k} is not true or false")
            else:
                flags[k] = bool(x)
        config = d["config"]
        if type(config) is not dict:
            raise Damage("config is not a JSON object")
        finite_json(config, "config")
        for k in ("timings", "metrics"):
            x = d[k]
            if type(x) is not dict:
                raise Damage(f"{k} is not a JSON object")
            for name, value in x.items():
                if not (value is None and k == "metrics"):
                    number(value, f"{k}[{name!r}]")
    except Damage as exc:
        raise DamagedRowError("runs", d["id"], str(exc)) from None
    return RunRecord(
        id=d["id"],
        experiment=d["experiment_name"],
        name=d["name"],
        label=d["label"],
        kind=d["kind"],
        status=d["status"],
        is_baseline=bool(flags["is_baseline"]),
        golden_version=d["golden_version"],
        config=config,
        config_hash=d["config_hash"],
        changes=tuple(d["changes"]),
        ragmeter_version=d["ragmeter_version"],
        git_commit=d["git_commit"],
        git_dirty=flags["git_dirty"],
        host=d["host"],
        pid=d["pid"],
        started_at=utc(d["started_at"]),
        finished_at=utc(d["finished_at"]),
        seconds=d["seconds"],
        timings=d["timings"],
        metrics=d["metrics"],
        n_queries=d["n_queries"],
        context_tokens=d["context_tokens"],
        source=d["source"],
        notes=tuple(d["notes"]),
        message=d["message"],
        invocation=d["invocation"],
        levels=levels,
        has_ranked=d["ranked_blob"] is not None,
    )
