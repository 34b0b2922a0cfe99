"""Comparisons, the selection ledger, answer sets and judge validations in the store."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..paired import UNVERSIONED, Ledger
from . import _models as m
from ._engine import insert_row, reading, writing

if TYPE_CHECKING:  # pragma: no cover
    import sqlalchemy as sa

    from ..paired import Comparison
    from ._store import Store


def _values_table(c: Comparison) -> Any:
    import pyarrow as pa

    return pa.table(
        {
            "qid": pa.array(list(c.query_ids), pa.string()),
            "baseline": pa.array(c.baseline_values, pa.float64()),
            "candidate": pa.array(c.candidate_values, pa.float64()),
        }
    )


def record_comparison(
    store: Store, c: Comparison, baseline_run: int | None, candidate_run: int | None
) -> int:
    from ._blobs import table_bytes
    from ._values import json_ready, now

    record = json_ready(c.to_dict())
    record.pop("per_query", None)
    data = table_bytes(_values_table(c))
    lo, hi = c.ci
    with writing(store.engine) as conn:
        row = {
            "created_at": now(),
            "baseline_run_id": baseline_run,
            "candidate_run_id": candidate_run,
            "baseline": c.baseline,
            "candidate": c.candidate,
            "metric": c.label,
            "golden_version": c.golden_version,
            "n": c.n,
            "mean_delta": json_ready(c.mean_delta),
            "ci_low": json_ready(lo),
            "ci_high": json_ready(hi),
            "wins": c.wins,
            "losses": c.losses,
            "ties": c.ties,
            "fixed_ids": None if c.fixed_ids is None else list(c.fixed_ids),
            "broken_ids": None if c.broken_ids is None else list(c.broken_ids),
            "sign_test_p": json_ready(c.sign_test_p),
            "n_resamples": c.n_resamples,
            "seed": None if c.seed is None else str(c.seed),
            "slices": record.get("slices", {}),
            "record": record,
            "values_blob": store.blobs.put(conn, data, "parquet"),
        }
        return insert_row(conn, m.comparisons.insert().values(**row))


def load_comparison(store: Store, comparison_id: int) -> Comparison:
    """A stored comparison; NotFoundError when absent, DamagedRowError naming what is wrong
    when its row or its values do not read back."""
    import sqlalchemy as sa

    from ..paired import Comparison
    from ._damage import Damage, DamagedRowError, Row, fetch, first_line, part_of

    cid = store._id(comparison_id, "comparison")
    t = m.comparisons
    with reading(store.engine) as conn:
        rows, damaged = fetch(
            conn, sa.select(t.c.record, t.c.values_blob).where(t.c.id == cid), t.c.id, "comparisons"
        )
        if damaged:
            raise damaged[0]
        if not rows:
            raise store._missing(comparison_id, "comparison")
        row = rows[0]
        with part_of("comparisons", cid, "its per-question values"):
            values = store.blobs.get_table(conn, row.values_blob)
    with part_of("comparisons", cid, "its record"):
        d = Row(row).mapping("record")
        try:
            a = values.column("baseline").to_pylist()
            b = values.column("candidate").to_pylist()
            d["per_query"] = {
                q: {"baseline": x, "candidate": y, "delta": y - x}
                for q, x, y in zip(values.column("qid").to_pylist(), a, b, strict=True)
            }
            return Comparison.from_dict(d)
        except DamagedRowError:
            raise
        except Exception as exc:  # any shape from_dict cannot take: the row is damaged
            why = first_line(exc)
            raise Damage(f"it does not read back as a comparison: {why}") from None


class StoreLedger(Ledger):
    """The selection ledger kept in the store: the same ``record``/``entries``/``summary`` as
    the JSONL :class:`~ragmeter.paired.Ledger`, so ``compare`` counts variants the same way."""

    def __init__(self, store: Store) -> None:
        super().__init__(None)
        self.store = store
        self.path = None  # type: ignore[assignment]

    def append(self, entry: Mapping[str, Any]) -> None:
        from ._values import json_ready

        e = json_ready(dict(entry))
        with writing(self.store.engine) as conn:
            conn.execute(
                m.ledger.insert().values(
                    time=str(e.get("time", "")),
                    golden_version=str(e.get("golden_version") or UNVERSIONED),
                    metric=str(e.get("metric", "")),
                    baseline=str(e.get("baseline", "")),
                    candidate=str(e.get("candidate", "")),
                    entry=e,
                )
            )

    def entries(self) -> list[dict[str, Any]]:
        """Every entry, oldest first; a damaged one (not a JSON object with a golden version
        and a candidate) is left out with a warning naming it, never counted."""
        import sqlalchemy as sa

        from ._damage import DamagedRowError, fetch, skipped

        t = m.ledger
        with reading(self.store.engine) as conn:
            rows, damaged = fetch(
                conn, sa.select(t.c.id, t.c.entry).order_by(t.c.id), t.c.id, "ledger"
            )
        out = []
        for r in rows:
            e = r.entry
            if not isinstance(e, Mapping):
                damaged.append(DamagedRowError("ledger", r.id, "entry is not a JSON object"))
            elif not all(isinstance(e.get(k), str) for k in ("golden_version", "candidate")):
                damaged.append(
                    DamagedRowError("ledger", r.id, "entry lacks its golden version or candidate")
                )
            else:
                out.append(dict(e))
        for d in damaged:
            skipped(d)
        return out


def _table(rows: Sequence[Mapping[str, Any]]) -> Any:
    """A list of JSON records as a one-column Parquet table (``record``: JSON text)."""
    import json

    import pyarrow as pa

    return pa.table(
        {
            "record": pa.array(
                [json.dumps(r, sort_keys=True, ensure_ascii=False, default=str) for r in rows],
                pa.string(),
            )
        }
    )


def record_answers(
    store: Store,
    *,
    name: str,
    answers: Sequence[Mapping[str, Any]],
    report: Mapping[str, Any],
    golden_version: str | None = None,
    source: str | None = None,
    run_id: int | None = None,
) -> int:
    """An answer set (each answer with its context, as the answers file holds it) and the
    report ``answers check`` made of it."""
    return _record_set(
        store,
        m.answer_sets,
        answers,
        report,
        "answers",
        run_id=run_id,
        name=name,
        golden_version=golden_version,
        source=source,
    )


def record_judge_validation(
    store: Store,
    *,
    judge: str,
    labels: Sequence[Mapping[str, Any]],
    report: Mapping[str, Any],
    prompt: str | None = None,
    source: str | None = None,
) -> int:
    """Judge labels with the prompt and model that made them, and the validation report."""
    return _record_set(
        store,
        m.judge_labels,
        labels,
        report,
        "labels",
        judge=judge,
        prompt=prompt,
        prompt_hash=None if prompt is None else hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
        source=source,
    )


def _record_set(
    store: Store,
    table: sa.Table,
    records: Sequence[Mapping[str, Any]],
    report: Mapping[str, Any],
    what: str,
    **columns: Any,
) -> int:
    """One row of ``table`` (answer sets, judge labels): its JSON ``records`` as a blob
    (``{what}_blob``) with their count (``n_{what}``), the ``report`` and the other
    ``columns``; its id. :func:`._listings.stored_records` reads the records back."""
    from ._values import json_ready, now

    with writing(store.engine) as conn:
        blob = store.blobs.put_table(conn, _table([json_ready(dict(r)) for r in records]))
        return insert_row(
            conn,
            table.insert().values(
                created_at=now(),
                **columns,
                **{f"n_{what}": len(records), f"{what}_blob": blob},
                report=json_ready(dict(report)),
            ),
        )
