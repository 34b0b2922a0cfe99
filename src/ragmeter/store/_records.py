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


#: the values table's column of each detail kept as a column (``details:first_rank``): metric
#: strings never hold a colon, so a detail column is never read as a metric
DETAIL_PREFIX = "details:"


def evaluation_tables(e: Evaluation) -> tuple[Any, dict[str, Any]]:
    """(values table: qid + one float64 column per metric, the rest as a JSON-ready dict).

    The engine's per-query details (a :class:`~ragmeter.metrics.ColumnDetails` of integer
    columns: ``first_rank``, ``n_retrieved``) go into the values table as the columns the
    engine holds (``details:<name>``, named under ``detail_columns`` in the dict), never as one
    JSON object per query: a 1M-query run is recorded without a pass over its queries. Any
    other details (a golden set's ``effective_k``, an imported file's) stay JSON, as before."""
    import pyarrow as pa

    cols: dict[str, Any] = {"qid": pa.array(list(e.query_ids), pa.string())}
    for j, m in enumerate(e.metrics):
        cols[str(m)] = pa.array(np.ascontiguousarray(e.values[:, j]), pa.float64())
    extras = _listed(e)
    columns = detail_columns(e)
    if columns is None:
        extras["details"] = {q: dict(v) for q, v in e.details.items()}
    else:
        arrays, none_when_zero = columns
        extras["details"] = {}
        extras["detail_columns"] = {"names": list(arrays), "none_when_zero": none_when_zero}
        for name, arr in arrays.items():
            cols[DETAIL_PREFIX + name] = pa.array(arr)
    return pa.table(cols), extras


def evaluation_extras(e: Evaluation) -> dict[str, Any]:
    """What :func:`evaluation_tables` records beside the values, with every detail as JSON
    however it is stored (the content of an evaluation, for comparing two of them)."""
    return {**_listed(e), "details": {q: dict(v) for q, v in e.details.items()}}


def _listed(e: Evaluation) -> dict[str, Any]:
    return {
        "missing_ids": list(e.missing_ids),
        "no_relevant_ids": list(e.no_relevant_ids),
        "slices": {q: list(s) for q, s in e.slices.items()},
        "splits": dict(e.splits),
    }


def detail_columns(e: Evaluation) -> tuple[dict[str, np.ndarray], list[str]] | None:
    """The engine's details of ``e`` as (name -> one integer array over ``e.query_ids``, the
    names whose 0 reads as None), or None when they are not held as such columns (a subclass
    such as the span scorer's, which adds keys; plain dicts; a non-integer column)."""
    from ..metrics import ColumnDetails

    d = e.details
    # ColumnDetails keeps its columns in _arrays (and its None-when-zero names in _none); it
    # has no public accessor yet (ragmeter.metrics is another area's), so read them here
    if type(d) is not ColumnDetails or tuple(d) != tuple(e.query_ids):
        return None
    arrays = {str(k): np.asarray(v) for k, v in d._arrays.items()}
    if not all(a.dtype.kind in "iu" and a.shape == (len(e.query_ids),) for a in arrays.values()):
        return None
    return arrays, sorted(str(k) for k in d._none if k in arrays)


def details_from(values: Any, extras: Mapping[str, Any], qids: tuple[str, ...]) -> Any:
    """The details an evaluation's blobs hold: columns of the values table when the extras
    name them (recorded since the details became columns), else the JSON object (any older
    row, and details that are not the engine's columns)."""
    import pyarrow as pa

    from .._errors import RagmeterError
    from ..metrics import ColumnDetails
    from ._damage import Damage

    spec = extras.get("detail_columns")
    if spec is None:
        return {q: dict(x) for q, x in (extras.get("details") or {}).items()}
    if not isinstance(spec, Mapping):
        raise Damage("its detail_columns are not a JSON object")
    names, none = spec.get("names"), spec.get("none_when_zero")
    if not (
        isinstance(names, list)
        and isinstance(none, list)
        and all(isinstance(n, str) for n in [*names, *none])
    ):
        raise Damage("its detail_columns do not name columns")
    arrays = {}
    for n in names:
        col = values.column(DETAIL_PREFIX + n)
        if col.null_count or not pa.types.is_integer(col.type):
            raise Damage(f"its detail column {n!r} is not whole numbers")
        arrays[n] = col.to_numpy()
    try:
        return ColumnDetails(qids, arrays, none_when_zero=tuple(none))
    except (ValueError, TypeError, RagmeterError) as exc:
        raise Damage(f"its detail columns do not read back: {exc}") from None


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
            details=details_from(values, extras, qids),
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
