"""Reading files of :class:`~ragmeter.metrics.Evaluation` records, and checking one record.

One place decides what an evaluation file is, so ``ragmeter compare``, ``ragmeter plan``,
``ragmeter diagnose --eval`` and library users read the same files the same way: a JSON object
as :meth:`Evaluation.to_dict` writes it (``ragmeter run`` writes one per variant as
``runs/<variant>/evaluation.json``), or a list of them (``ragmeter eval --format json`` with
several runs). Every problem is an :class:`InputError` naming the file and the field at fault,
never a ``KeyError`` or ``TypeError`` from deep inside.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from .._errors import InputError, UsageError
from ..io import open_source, read_json
from ._spec import parse

#: how the messages name the files this module reads
WRITERS = (
    "'ragmeter eval --per-query --format json' or 'ragmeter run' (runs/<variant>/evaluation.json)"
)


def read_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of an evaluation file, in file order (one for a single object)."""
    try:
        src = open_source(path, allow_empty=True)
    except InputError as exc:
        raise InputError(f"cannot read the evaluation: {exc.message}", path=exc.path) from None
    display = src.display
    data = read_json(src, hint=f"an evaluation file is what {WRITERS} writes")
    records = data if isinstance(data, list) else [data]
    if not records or not all(isinstance(r, dict) for r in records):
        got = (
            (
                "an empty list"
                if data == []
                else "a list holding "
                + _json_type(next(r for r in records if not isinstance(r, dict)))
            )
            if isinstance(data, list)
            else _json_type(data)
        )
        raise InputError(
            f"expected a JSON object (or a list of them) as {WRITERS} writes, got {got}",
            path=display,
        )
    return records


def pick_record(records: list[dict[str, Any]], run: str | None, display: str) -> dict[str, Any]:
    """The record named ``run``, or the only one; an error names the runs the file holds."""
    have = ", ".join(str(r.get("run")) for r in records)
    if run is not None:
        chosen = [r for r in records if str(r.get("run")) == run]
        if not chosen:
            raise InputError(
                f"no run named '{run}' (runs in the file: {have})", path=display, field="run"
            )
        return chosen[0]
    if len(records) > 1:
        raise InputError(
            f"holds {len(records)} runs ({have}); pick one: {display}#RUN on the "
            "command line, Evaluation.load(path, run=RUN) in Python",
            path=display,
            field="run",
        )
    return records[0]


def check_record(d: Mapping[str, Any], where: str) -> None:
    """Raise an :class:`InputError` naming ``where`` and the field when ``d`` is not a record
    :meth:`Evaluation.from_dict` can rebuild; return silently otherwise."""

    def bad(field: str, message: str) -> InputError:
        return InputError(message, path=where, field=field)

    pq = d.get("per_query")
    if not isinstance(pq, Mapping):
        raise bad(
            "per_query",
            "has no per-query values; produce it with 'ragmeter eval --per-query --format json'"
            if pq is None
            else f"must be an object {{query: {{metric: value}}}}, got {_json_type(pq)}",
        )
    if "run" in d and not isinstance(d["run"], str):
        raise bad("run", f"must be a string, got {_json_type(d['run'])}")
    agg = d.get("aggregate", {})
    if not isinstance(agg, Mapping):
        raise bad("aggregate", f"must be an object {{metric: mean}}, got {_json_type(agg)}")
    # the metric columns: the aggregate's keys, else the first query's (as from_dict reads them)
    first: Any = next(iter(pq.values()), {})
    names = list(agg) or (list(first) if isinstance(first, Mapping) else [])
    seen: dict[Any, str] = {}
    for n in names:
        try:
            m = parse(n)
        except UsageError as exc:
            raise bad("aggregate", f"'{n}' is not a metric ({exc})") from None
        if m in seen:
            raise bad("aggregate", f"'{seen[m]}' and '{n}' are the same metric ({m})")
        seen[m] = n
    for q, row in pq.items():
        if not isinstance(row, Mapping):
            raise bad("per_query", f"query '{q}' must map metric to value, got {_json_type(row)}")
        for n in names:
            v = row.get(n)
            if n not in row:
                raise bad("per_query", f"query '{q}' lacks a value for {n}")
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise bad("per_query", f"query '{q}': {n} must be a finite number, got {v!r}")
            if not 0.0 <= v <= 1.0:
                # every metric ragmeter computes lies in [0, 1]: a value outside was edited in
                raise bad("per_query", f"query '{q}': {n} must lie in [0, 1], got {v!r}")
    for field in ("missing_ids", "no_relevant_ids"):
        ids = d.get(field, [])
        if not isinstance(ids, list) or not all(isinstance(x, str) for x in ids):
            raise bad(field, "must be a list of query ids (strings)")
    if d.get("golden_version") is not None and not isinstance(d["golden_version"], str):
        raise bad(
            "golden_version", f"must be a string or null, got {_json_type(d['golden_version'])}"
        )
    if d.get("config") is not None and not isinstance(d["config"], Mapping):
        raise bad("config", f"must be an object, got {_json_type(d['config'])}")
    slices = d.get("slices") or {}
    if not isinstance(slices, Mapping) or not all(
        isinstance(s, list) and all(isinstance(x, str) for x in s) for s in slices.values()
    ):
        raise bad("slices", "must be an object {query: [slice name, ...]}")
    splits = d.get("splits") or {}
    if not isinstance(splits, Mapping) or not all(isinstance(s, str) for s in splits.values()):
        raise bad("splits", "must be an object {query: split name}")
    notes = d.get("warnings", [])
    if not isinstance(notes, list) or not all(isinstance(x, str) for x in notes):
        raise bad("warnings", "must be a list of messages (strings)")
    details = d.get("details") or {}
    if not isinstance(details, Mapping) or not all(
        isinstance(v, Mapping) for v in details.values()
    ):
        raise bad("details", "must be an object {query: {name: value}}")


def _json_type(x: Any) -> str:
    """The JSON name of a value's type, for messages ("a string", "a list": not the readers'
    spellings in ``ragmeter.io``, whose messages keep theirs; the store's import plan uses this
    one for evaluation files)."""
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "a boolean"
    if isinstance(x, (int, float)):
        return "a number"
    if isinstance(x, str):
        return "a string"
    if isinstance(x, list):
        return "a list"
    return "an object"
