"""What ``runs import`` already finds in the store: the same run, the same ledger entry.

Importing a folder twice must not store its runs twice, nor count its comparisons twice in the
selection ledger (``n_comparisons``, the variants tried). So an import skips:

* a **run** that is the same run as one already stored (or one earlier in the same import):
  everything the import would record of it is what the store holds, so skipping it loses
  nothing: the experiment and variant names, label, baseline flag, golden-set version, config
  record (``config.json`` as written, timings included, so two executions of one experiment
  stay two runs), changes, timings, seconds, context tokens and notes; level for level the
  same evaluation (question ids, metric names and every value bit for bit, missing and
  no-relevant ids, slices, splits, details, config); and the same ranked lists (question,
  item, rank and score of every row; TREC files hold no more), or none on both sides. Where
  the files came from, when the run ran, and its provenance (commit, ragmeter version) are not
  part of it: a folder imported twice, or an export imported back into the store it came from,
  is the same run again;
* a **ledger entry** equal, key for key, to one already stored (or earlier in the import):
  :class:`ragmeter.paired._ledger_schema.LedgerEntry` holds the time to the second, both variant
  ids, the metric, the golden-set version and the result, so two comparisons that differ in any
  of them are two entries.

A stored run is compared by content (its rows and blobs are read back), not by the hashes of
its blobs, which depend on the Parquet writer's version. Only the runs a cheap query finds
(same name, golden-set version and settings hash, ``finished``, ranked lists or not alike) are
read; a damaged row is not the same run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # pragma: no cover
    from ._import_plan import RunImport
    from ._store import Store

#: the ranked lists' columns every source holds (a TREC file has no chunk spans)
RANKED_KEY = ("qid", "item", "rank", "score")


class Identity(NamedTuple):
    """What makes a run the same run as another (the module docstring)."""

    record: str  # the run row's fields, canonical JSON
    levels: tuple[tuple[str, str], ...]  # (level, evaluation digest), by level
    ranked: str | None  # the ranked lists' digest; None without


def canonical(value: Any) -> str:
    """``value`` as one canonical JSON text: equal data, equal text."""
    from ._values import json_ready

    return json.dumps(
        json_ready(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str
    )


def _sha(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def _record(
    experiment: Any,
    name: Any,
    label: Any,
    is_baseline: Any,
    golden_version: Any,
    config: Any,
    changes: Any,
    timings: Any,
    seconds: Any,
    context_tokens: Any,
    notes: Any,
) -> str:
    return canonical(
        {
            "experiment": experiment,
            "name": name,
            "label": label,
            "is_baseline": bool(is_baseline),
            "golden_version": golden_version,
            "config": config,
            "changes": changes,
            "timings": timings,
            "seconds": seconds,
            "context_tokens": context_tokens,
            "notes": notes,
        }
    )


def evaluation_digest(e: Any) -> str:
    """The content of an :class:`Evaluation` as the store keeps it, as one sha256."""
    import numpy as np

    from ._records import evaluation_extras

    extras = evaluation_extras(e)  # details as JSON, whether stored as columns or not
    h = hashlib.sha256()
    head = [e.run, [str(m) for m in e.metrics], list(e.query_ids), e.golden_version]
    h.update(_sha(canonical([*head, dict(e.config), extras])))
    values = np.array(e.values, dtype=np.float64, order="C", copy=True)
    values[np.isnan(values)] = np.nan  # one NaN, whatever bits a reader gave it
    h.update(str(values.shape).encode())
    h.update(values.tobytes())
    return h.hexdigest()


def ranked_digest(table: Any) -> str:
    """sha256 of the ranked lists' :data:`RANKED_KEY` columns, column by column, from the
    Arrow buffers (10M rows in well under a second; no Python object per row)."""
    import numpy as np
    import pyarrow as pa

    h = hashlib.sha256()
    h.update(str(table.num_rows).encode())
    for name in RANKED_KEY:
        col = table.column(name).combine_chunks()
        if not len(col):
            continue
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            col = col.cast(pa.large_string())
            _, offsets, data = col.buffers()
            at = np.frombuffer(offsets, dtype=np.int64)[col.offset : col.offset + len(col) + 1]
            h.update((at - at[0]).tobytes())
            h.update(memoryview(data)[int(at[0]) : int(at[-1])] if data is not None else b"")
        else:
            kind = np.int64 if name == "rank" else np.float64
            h.update(np.asarray(col.to_numpy(zero_copy_only=False), dtype=kind).tobytes())
        h.update(str(col.null_count).encode())
    return h.hexdigest()


def run_identity(run: RunImport) -> Identity:
    """The identity of a run an import would insert, as :func:`stored_identity` reads one."""
    s, f = run.spec, run.fields
    record = _record(
        s["experiment"],
        s["name"],
        f.get("label", s.get("label")),
        s.get("is_baseline", False),
        s.get("golden_version"),
        s.get("config") or {},
        list(s.get("changes") or ()),
        f.get("timings") or {},
        f.get("seconds"),
        f.get("context_tokens"),
        list(dict.fromkeys(f.get("notes") or ())),  # as the store keeps them: once each
    )
    levels = tuple(sorted((lvl, evaluation_digest(e)) for lvl, e in run.evaluations.items()))
    return Identity(record, levels, None if run.ranked is None else ranked_digest(run.ranked))


def stored_twin(conn: Any, store: Store, run: RunImport, identity: Identity) -> int | None:
    """The id of a finished run in the store that is the same run as ``run``, or None."""
    import sqlalchemy as sa

    from . import _models as m
    from ._values import config_hash, json_ready

    r, spec = m.runs, run.spec
    golden = spec.get("golden_version")
    query = (
        sa.select(r, m.experiments.c.name.label("experiment_name"))
        .join(m.experiments, m.experiments.c.id == r.c.experiment_id)
        .where(
            r.c.name == spec["name"],
            r.c.status == "finished",
            r.c.config_hash == config_hash(json_ready(dict(spec.get("config") or {}))),
            r.c.golden_version.is_(None) if golden is None else r.c.golden_version == golden,
            r.c.ranked_blob.is_(None) if identity.ranked is None else r.c.ranked_blob.is_not(None),
        )
        .order_by(r.c.id)
    )
    for row in _rows(conn, query, r.c.id, "runs"):
        if stored_identity(conn, store, row) == identity:
            return int(row.id)
    return None


def _rows(conn: Any, query: Any, key: Any, table: str) -> list[Any]:
    from ._damage import fetch

    rows, _damaged = fetch(conn, query, key, table)  # a damaged row is not the same run
    return rows


def stored_identity(conn: Any, store: Store, row: Any) -> Identity | None:
    """The identity of a stored run (a ``runs`` row with its ``experiment_name``); None when
    a part of it does not read back."""
    import pyarrow as pa
    import sqlalchemy as sa

    from .._errors import RagmeterError
    from . import _models as m
    from ._damage import Damage, decode_errors
    from ._records import evaluation_from

    t = m.evaluations
    try:
        record = _record(
            row.experiment_name,
            row.name,
            row.label,
            row.is_baseline,
            row.golden_version,
            row.config,
            row.changes,
            row.timings,
            row.seconds,
            row.context_tokens,
            row.notes,
        )
        levels = []
        for e in _rows(conn, sa.select(t).where(t.c.run_id == row.id), t.c.id, "evaluations"):
            values = store.blobs.get_table(conn, e.values_blob)
            extras = store.blobs.get_json(conn, e.extras_blob)
            levels.append((e.level, evaluation_digest(evaluation_from(e, values, extras))))
        ranked = None
        if row.ranked_blob is not None:
            ranked = ranked_digest(store.blobs.get_table(conn, row.ranked_blob))
    except (RagmeterError, Damage, KeyError, AttributeError, pa.ArrowException, *decode_errors()):
        return None
    return Identity(record, tuple(sorted(levels)), ranked)


def entry_key(entry: Mapping[str, Any]) -> str:
    """A ledger entry's identity: the whole entry, canonical."""
    return canonical(dict(entry))


def stored_entries(conn: Any, golden_versions: Iterable[str]) -> set[str]:
    """The identities of the store's ledger entries on these golden-set versions."""
    import sqlalchemy as sa

    from . import _models as m

    t = m.ledger
    versions = sorted(set(golden_versions))
    if not versions:
        return set()
    query = sa.select(t.c.id, t.c.entry).where(t.c.golden_version.in_(versions))
    # a damaged entry is counted by nothing: it matches nothing
    rows = _rows(conn, query.order_by(t.c.id), t.c.id, "ledger")
    return {entry_key(r.entry) for r in rows if isinstance(r.entry, Mapping)}
