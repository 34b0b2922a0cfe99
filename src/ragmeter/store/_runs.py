"""A run's life in the store: started (``running``), then ``finished`` with every row in one
transaction, or ended ``failed`` / ``interrupted``; and the queries that list runs."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._about import __version__
from .._errors import UsageError
from . import _models as m
from ._engine import reading, writing
from ._process import host, start_token
from ._records import RunRecord, evaluation_tables, utc

if TYPE_CHECKING:  # pragma: no cover
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


def start_runs(
    store: Store,
    specs: Sequence[Mapping[str, Any]],
    *,
    invocation: str | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> list[int]:
    """Insert runs as ``running`` (one transaction); returns their ids in order."""
    from ._values import config_hash, json_ready, new_invocation, now

    prov = dict(provenance or {})
    inv = invocation or new_invocation()
    pid = os.getpid()
    token = start_token(pid)
    ids: list[int] = []
    with writing(store.engine) as conn:
        for s in specs:
            exp_id = _experiment_id(
                conn, str(s["experiment"]), None if s.get("file") is None else str(s["file"])
            )
            config = json_ready(dict(s.get("config") or {}))
            golden = s.get("golden_version")
            row = {
                "experiment_id": exp_id,
                "invocation": inv,
                "name": str(s["name"]),
                "label": s.get("label"),
                "kind": s.get("kind", "experiment"),
                "status": "running",
                "is_baseline": bool(s.get("is_baseline", False)),
                "golden_version": golden,
                "config": config,
                "config_hash": config_hash(config),
                "changes": list(s.get("changes") or ()),
                "ragmeter_version": str(prov.get("ragmeter") or __version__),
                "git_commit": prov.get("git_commit"),
                "git_dirty": prov.get("git_dirty"),
                "host": host(),
                "pid": pid,
                "process_start": token,
                "started_at": now(),
                "timings": {},
                "metrics": {},
                "notes": [],
                "source": None if s.get("file") is None else str(s["file"]),
            }
            ids.append(int(conn.execute(m.runs.insert().values(**row)).inserted_primary_key[0]))
    return ids


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

    from ._values import LEVELS, json_ready, now

    unknown = set(fields) - set(FINISH_FIELDS)
    if unknown:
        raise UsageError(f"finish_run: unknown field(s) {', '.join(sorted(unknown))}")
    bad = set(evaluations) - set(LEVELS)
    if bad:
        raise UsageError(f"finish_run: levels must be among {', '.join(LEVELS)}; got {bad}")
    if golden is not None:
        store.put_golden(golden)
    # Parquet bytes are made outside the transaction: the write lock is held only for inserts.
    from ._blobs import json_bytes

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
    with writing(store.engine) as conn:
        status = conn.execute(
            sa.select(m.runs.c.status).where(m.runs.c.id == int(run_id))
        ).scalar_one_or_none()
        if status is None:
            raise UsageError(f"no run {run_id} to finish")
        if status != "running":
            raise UsageError(f"run {run_id} is {status}; only a running run can be finished")
        for level, ev, vb, xb in prepared:
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
        if ranked_bytes is not None:
            update["ranked_blob"] = store.blobs.put(conn, ranked_bytes, "parquet")
        if chunking:
            update["chunking_id"] = _chunking_id(conn, chunking)
        if corpus is not None:
            update["corpus"] = corpus_row(conn, *corpus)
        if "n_queries" not in update and prepared:
            update["n_queries"] = prepared[0][1].n_queries
        if "config" in update:
            from ._values import config_hash

            update["config_hash"] = config_hash(update["config"])
        update.update(status="finished", finished_at=now())
        conn.execute(sa.update(m.runs).where(m.runs.c.id == int(run_id)).values(**update))


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


def select_runs(
    store: Store,
    *,
    ids: Sequence[int] | None = None,
    experiment: str | None = None,
    golden_version: str | None = None,
    status: str | None = None,
    limit: int | None = None,
) -> list[RunRecord]:
    import sqlalchemy as sa

    q = (
        sa.select(m.runs, m.experiments.c.name.label("experiment_name"))
        .join(m.experiments, m.experiments.c.id == m.runs.c.experiment_id)
        .order_by(m.runs.c.id.desc())
    )
    if ids is not None:
        q = q.where(m.runs.c.id.in_(list(ids)))
    if experiment is not None:
        q = q.where(m.experiments.c.name == experiment)
    if golden_version is not None:
        q = q.where(m.runs.c.golden_version == golden_version)
    if status is not None:
        q = q.where(m.runs.c.status == status)
    if limit is not None:
        q = q.limit(int(limit))
    with reading(store.engine) as conn:
        rows = conn.execute(q).all()
        run_ids = [r.id for r in rows]
        lv: dict[int, list[str]] = {}
        if run_ids:
            for rid, level in conn.execute(
                sa.select(m.evaluations.c.run_id, m.evaluations.c.level)
                .where(m.evaluations.c.run_id.in_(run_ids))
                .order_by(m.evaluations.c.id)
            ):
                lv.setdefault(rid, []).append(level)
    return [_record(r, tuple(lv.get(r.id, ()))) for r in rows]


def _record(r: Any, levels: tuple[str, ...]) -> RunRecord:
    return RunRecord(
        id=r.id,
        experiment=r.experiment_name,
        name=r.name,
        label=r.label,
        kind=r.kind,
        status=r.status,
        is_baseline=bool(r.is_baseline),
        golden_version=r.golden_version,
        config=r.config or {},
        config_hash=r.config_hash,
        changes=tuple(r.changes or ()),
        ragmeter_version=r.ragmeter_version,
        git_commit=r.git_commit,
        git_dirty=r.git_dirty,
        host=r.host,
        pid=r.pid,
        started_at=utc(r.started_at),  # type: ignore[arg-type]
        finished_at=utc(r.finished_at),
        seconds=r.seconds,
        timings=r.timings or {},
        metrics=r.metrics or {},
        n_queries=r.n_queries,
        context_tokens=r.context_tokens,
        source=r.source,
        notes=tuple(r.notes or ()),
        message=r.message,
        invocation=r.invocation,
        levels=levels,
        has_ranked=r.ranked_blob is not None,
    )
