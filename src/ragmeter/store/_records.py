"""What the store hands back: run records, and evaluations to and from their blobs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..metrics import Evaluation, parse


@dataclass(frozen=True)
class RunRecord:
    """One stored run: what was run, on which golden version, how it ended and its means."""

    id: int
    experiment: str
    name: str
    label: str | None
    kind: str
    status: str
    is_baseline: bool
    golden_version: str | None
    config: Mapping[str, Any]
    config_hash: str
    changes: tuple[str, ...]
    ragmeter_version: str
    git_commit: str | None
    git_dirty: bool | None
    host: str
    pid: int
    started_at: dt.datetime
    finished_at: dt.datetime | None
    seconds: float | None
    timings: Mapping[str, float]
    metrics: Mapping[str, float | None]
    n_queries: int | None
    context_tokens: float | None
    source: str | None
    notes: tuple[str, ...]
    message: str | None
    invocation: str
    levels: tuple[str, ...]
    has_ranked: bool

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["started_at"] = self.started_at.isoformat(timespec="seconds")
        d["finished_at"] = (
            None if self.finished_at is None else self.finished_at.isoformat(timespec="seconds")
        )
        d["changes"] = list(self.changes)
        d["notes"] = list(self.notes)
        d["levels"] = list(self.levels)
        d["config"] = dict(self.config)
        return d


def evaluation_tables(e: Evaluation) -> tuple[Any, dict[str, Any]]:
    """(values table: qid + one float64 column per metric, the rest as a JSON-ready dict)."""
    import pyarrow as pa

    cols: dict[str, Any] = {"qid": pa.array(list(e.query_ids), pa.string())}
    for j, m in enumerate(e.metrics):
        cols[str(m)] = pa.array(np.ascontiguousarray(e.values[:, j]), pa.float64())
    extras = {
        "missing_ids": list(e.missing_ids),
        "no_relevant_ids": list(e.no_relevant_ids),
        "slices": {q: list(s) for q, s in e.slices.items()},
        "splits": dict(e.splits),
        "details": {q: dict(v) for q, v in e.details.items()},
    }
    return pa.table(cols), extras


def evaluation_from(row: Any, values: Any, extras: Any) -> Evaluation:
    """The :class:`Evaluation` an ``evaluations`` row and its two blobs hold; a row or blob
    that does not read back as one (wrong types, missing columns, values of another shape) is a
    :class:`~ragmeter.store._damage.Damage` naming what is wrong."""
    import pyarrow as pa

    from .._errors import RagmeterError
    from ._damage import Damage, Row, first_line

    v = Row(row)
    names = v.strings("metrics")
    config = v.mapping("config")
    if not isinstance(extras, Mapping):
        raise Damage("its extras are not a JSON object")
    try:
        col = values.column("qid")
        if col.null_count or not (
            pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
        ):
            raise Damage("its question ids are not text")  # (checked on the column: no loop)
        qids = tuple(col.to_pylist())
        if names:
            arr = np.column_stack([values.column(n).to_numpy() for n in names])
        else:
            arr = np.zeros((len(qids), 0))
        return Evaluation(
            run=v.text("run_name"),
            metrics=tuple(parse(n) for n in names),
            query_ids=qids,
            values=arr.astype(np.float64, copy=False),
            missing_ids=tuple(extras.get("missing_ids", ())),
            no_relevant_ids=tuple(extras.get("no_relevant_ids", ())),
            golden_version=v.text("golden_version", null=True),
            config=config,
            slices={q: tuple(s) for q, s in (extras.get("slices") or {}).items()},
            splits=dict(extras.get("splits") or {}),
            details={q: dict(x) for q, x in (extras.get("details") or {}).items()},
        )
    except Damage:
        raise
    except (
        KeyError,
        ValueError,
        TypeError,
        AttributeError,
        pa.ArrowException,
        RagmeterError,
    ) as exc:
        why = first_line(exc)
        raise Damage(f"its values do not read back as an evaluation: {why}") from None
