"""Reading JSON Lines runs and qrels (the formats are described in ``ragmeter.io.jsonl``).

Reading is columnar (``pyarrow.json``) when the file is clean; any problem re-reads it line by
line through the shared reader (``_reading.iter_jsonl``) so the error names the line and the
field. A format is a tuple of ``Field``s, so another record shape (e.g. span-level runs) is one
more tuple and two small wrappers. Kept apart from the writers so that ``convert`` can read
paths without importing the writers that call it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._errors import Problem
from ._duplicates import Table, check_policy, dedupe_qrels, dedupe_run
from ._reading import iter_jsonl
from ._source import Source, open_source
from ._tables import Qrels, Run
from ._trec_format import LineOf, Unclean
from ._trec_lines import Problems

__all__ = [
    "QRELS_FIELDS",
    "RUN_FIELDS",
    "Field",
    "Records",
    "read_qrels_jsonl",
    "read_records",
    "read_run_jsonl",
]

Kind = Literal["id", "number", "int", "rank"]


@dataclass(frozen=True)
class Field:
    """One key of a record: ``id`` (string), ``number`` (finite float64), ``int`` (int64) or
    ``rank`` (optional positive int)."""

    name: str
    kind: Kind
    required: bool = True


RUN_FIELDS = (
    Field("qid", "id"),
    Field("doc", "id"),
    Field("score", "number"),
    Field("rank", "rank", required=False),
)
QRELS_FIELDS = (Field("qid", "id"), Field("doc", "id"), Field("rel", "int"))

_ARROW = {"id": pa.string(), "number": pa.float64(), "int": pa.int64(), "rank": pa.int64()}
_NUMPY = {"number": np.float64, "int": np.int64, "rank": np.int64}


@dataclass
class Records:
    """Columns of a JSONL file: ids as pyarrow strings, numbers as numpy arrays (rank: -1 when
    absent); ``line_of`` maps rows to physical lines (None after the columnar read)."""

    columns: dict[str, Any]
    line_of: LineOf | None


def read_records(
    path: str | os.PathLike[str] | Source, fields: tuple[Field, ...], *, lines: bool = False
) -> Records:
    """Read a JSONL file of ``fields`` records: columnar first, line by line on any problem
    (or always, with ``lines=True``, when line numbers are needed)."""
    src = path if isinstance(path, Source) else open_source(path)
    if not lines:
        try:
            return _read_columnar(src, fields)
        except Unclean:
            pass
    return _read_lines(src, fields)


def _with_lines(src: Source, fields: tuple[Field, ...], finish: Callable[[Records], Any]) -> Any:
    """``finish(records)``; if it needs line numbers the columnar read lacks, re-read by line."""
    rec = read_records(src, fields)
    try:
        return finish(rec)
    except Unclean:
        return finish(read_records(src, fields, lines=True))


def read_run_jsonl(
    path: str | os.PathLike[str], *, duplicates: str = "best", name: str | None = None
) -> Run:
    """A run from JSONL (see module doc); duplicates as ``ragmeter.io.trec.read_run``."""
    check_policy(duplicates)
    src = open_source(path)

    def finish(rec: Records) -> Table:
        t = Table(rec.columns["qid"], rec.columns["doc"], rec.columns["score"])
        return dedupe_run(t, policy=duplicates, source=src.display, line_of=rec.line_of)

    t = _with_lines(src, RUN_FIELDS, finish)
    return Run(t.qid, t.doc, t.value, name=src.display if name is None else name)


def read_qrels_jsonl(path: str | os.PathLike[str]) -> Qrels:
    """Qrels from JSONL (see module doc); repeated judgements as ``read_qrels``."""
    src = open_source(path)

    def finish(rec: Records) -> Table:
        t = Table(rec.columns["qid"], rec.columns["doc"], rec.columns["rel"])
        return dedupe_qrels(t, source=src.display, line_of=rec.line_of)

    t = _with_lines(src, QRELS_FIELDS, finish)
    return Qrels(t.qid, t.doc, t.value, source=src.display)


# -- columnar -----------------------------------------------------------------------------------
def _read_columnar(src: Source, fields: tuple[Field, ...]) -> Records:
    import pyarrow.json as pj

    schema = pa.schema([(f.name, _ARROW[f.kind]) for f in fields])
    try:
        with src.arrow_stream() as stream:
            data = stream.read_buffer()
        _vouch_bytes(data)
        table = pj.read_json(
            pa.BufferReader(data),
            parse_options=pj.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior="ignore"
            ),
        )
    except (pa.ArrowException, OSError, ValueError, EOFError) as exc:
        raise Unclean(str(exc)) from None
    if table.num_rows == 0:
        raise Unclean("no rows")
    columns: dict[str, Any] = {}
    for f in fields:
        col = table.column(f.name).combine_chunks()
        if f.kind == "rank":  # optional: -1 where absent; present ranks must be >= 1
            vals = col.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
            present = ~col.is_null().to_numpy(zero_copy_only=False)
            if (vals[present] < 1).any():
                raise Unclean("bad rank")
            columns[f.name] = vals
            continue
        if col.null_count:
            raise Unclean(f"missing {f.name}")
        if f.kind == "id":
            if pc.min(pc.binary_length(col)).as_py() == 0:
                raise Unclean("empty id")
            columns[f.name] = col
        else:
            vals = col.to_numpy(zero_copy_only=False).astype(_NUMPY[f.kind], copy=False)
            if f.kind == "number" and not np.isfinite(vals).all():
                raise Unclean("non-finite number")
            columns[f.name] = vals
    return Records(columns, None)  # pyarrow skips blank lines: rows are not lines


def _vouch_bytes(data: pa.Buffer) -> None:
    """Raise Unclean unless the whole file is valid UTF-8 and holds no ``NaN``/``Infinity``.

    pyarrow's JSON parser checks neither (it keeps invalid UTF-8 inside strings, skips a bad
    byte or a ``NaN`` in an ignored field), so the shared reader's rules would not hold; the
    line-by-line read then names the byte offset and line (or, for a ``NaN`` that was only
    text inside a string, reads the file as clean)."""
    offsets = pa.py_buffer(np.array([0, data.size], dtype=np.int64))
    whole = pa.LargeStringArray.from_buffers(1, offsets, data)
    try:
        whole.validate(full=True)  # full: checks the UTF-8 of the one string
    except pa.ArrowInvalid:
        raise Unclean("not valid UTF-8") from None
    if pc.any(pc.match_substring_regex(whole, "NaN|Infinity")).as_py():
        raise Unclean("a NaN or Infinity literal")


# -- line by line -------------------------------------------------------------------------------
def _read_lines(src: Source, fields: tuple[Field, ...]) -> Records:
    """Every record through the shared JSON Lines reader (``_reading.iter_jsonl``: encoding,
    BOM, NUL, duplicate keys...), then each field checked; all problems reported at once."""
    found: list[Problem] = []
    cols: dict[str, list[Any]] = {f.name: [] for f in fields}
    lines: list[int] = []
    for lineno, obj in iter_jsonl(src, found, unique_keys={f.name for f in fields}, what="rows"):
        row: dict[str, Any] = {}
        for f in fields:
            value, error = _check(f, obj)
            if error:
                found.append(Problem(error, src.display, lineno, f.name))
                break
            row[f.name] = value
        else:
            for name, value in row.items():
                cols[name].append(value)
            lines.append(lineno)
    problems = Problems(src)
    for p in found:
        problems.add(p.line or 0, p.message, p.field)
    problems.raise_if_any()
    columns: dict[str, Any] = {}
    for f in fields:
        if f.kind == "id":
            columns[f.name] = pa.array(cols[f.name], type=pa.string())
        else:
            columns[f.name] = np.asarray(cols[f.name], dtype=_NUMPY[f.kind])
    line_arr = np.asarray(lines, dtype=np.int64)
    return Records(columns, lambda rows: line_arr[rows])


def _check(f: Field, obj: dict[str, Any]) -> tuple[Any, str | None]:
    """(value, None) or (None, problem) for field ``f`` of one record."""
    if f.name not in obj or obj[f.name] is None:
        if f.required:
            return None, f"'{f.name}' is missing"
        return -1, None
    x = obj[f.name]
    if f.kind == "id":
        if isinstance(x, str):
            return (x, None) if x else (None, f"'{f.name}' is an empty string")
        if isinstance(x, int) and not isinstance(x, bool):
            return str(x), None
        return None, f"'{f.name}' must be a string, got {_json_type(x)} {json.dumps(x)[:40]}"
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None, f"'{f.name}' must be a number, got {_json_type(x)} {json.dumps(x)[:40]}"
    if f.kind == "number":
        v = float(x)
        if isinstance(x, int) and int(v) != x:
            return None, f"'{f.name}' {x} has no exact 64-bit float value"
        if not math.isfinite(v):
            return None, f"'{f.name}' is {x}; it must be a finite number"
        return v, None
    if isinstance(x, float):
        if not x.is_integer():
            return None, f"'{f.name}' {x} is not an integer"
        x = int(x)
    if not -(2**63) <= x < 2**63:
        return None, f"'{f.name}' {x} is out of range for a 64-bit integer"
    if f.kind == "rank" and x < 1:
        return None, f"'rank' {x} must be 1 or more"
    return x, None


def _json_type(x: Any) -> str:
    """The JSON name of a value's type ("string", "array", "object"; Python's for numbers), as
    the run and qrels readers' field messages say it. ``_reading`` names Python types and
    ``metrics``' evaluation files say "a string", "a list": three spellings of three sets of
    messages, kept apart so that no message changes."""
    return {bool: "boolean", str: "string", list: "array", dict: "object", type(None): "null"}.get(
        type(x), type(x).__name__
    )
