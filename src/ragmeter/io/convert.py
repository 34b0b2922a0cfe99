"""Turn what users hold into columnar Qrels and Runs: objects, dicts, DataFrames, tables, paths.

``to_qrels(obj)`` / ``to_run(obj)`` accept

- ``Qrels`` / ``Run``: returned as they are;
- dict-of-dicts: ``{qid: {doc: grade}}`` / ``{qid: {doc: score}}`` (pytrec_eval's shape);
- a pandas DataFrame or pyarrow Table with a query column (``qid``, ``q_id`` as ranx, or
  ``query_id`` as ir_measures), a document column (``doc``, ``doc_id``, ``docno``, ``docid``) and
  a value column (qrels: ``rel``, ``relevance`` or ranx's ``score``; runs: ``score``);
- a path (str or Path): JSONL when it ends in ``.jsonl`` or ``.jsonl.gz``, TREC text otherwise.

Ids are strings; integer ids are accepted and written in decimal (``301`` becomes ``"301"``).
Grades must be integers (``2.0`` is accepted as 2, ``2.5`` is not); scores any finite number,
kept as float64 exactly (a float32 score widens to float64 without change). Values are never
rounded. Problems raise InputError naming the query, document and field; a wrong container
raises UsageError saying which shapes work.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._errors import InputError, UsageError
from ._duplicates import Table, check_policy, dedupe_qrels, dedupe_run
from ._jsonl_read import read_qrels_jsonl, read_run_jsonl
from ._source import is_jsonl_path
from ._tables import Qrels, Run
from ._trec_read import read_qrels, read_run

__all__ = ["refuse_empty", "to_qrels", "to_run"]

QID_COLUMNS = ("qid", "q_id", "query_id")
DOC_COLUMNS = ("doc", "doc_id", "docno", "docid")
REL_COLUMNS = ("rel", "relevance", "score")
SCORE_COLUMNS = ("score",)

_SHAPES = (
    "Qrels/Run, a dict {{qid: {{doc: {value}}}}}, a pandas DataFrame or pyarrow Table with "
    "columns qid/doc/{column} (or q_id/doc_id/score, query_id/doc_id/{irm}), or a path to a "
    "TREC or .jsonl file"
)


def to_qrels(obj: Any) -> Qrels:
    """Relevance labels from any supported container (see module doc)."""
    if isinstance(obj, Qrels):
        return obj
    if isinstance(obj, (str, os.PathLike)):
        if is_jsonl_path(obj):
            return read_qrels_jsonl(obj)
        return read_qrels(obj)
    if isinstance(obj, Mapping):
        t, empty = _from_dicts(obj, "qrels", "grade")
        return Qrels(t.qid, t.doc, t.value, source="<dict>", empty_queries=empty)
    if _is_frame(obj) or isinstance(obj, pa.Table):
        table, source = _as_table(obj)
        t = _from_table(table, source, "qrels", REL_COLUMNS)
        t = dedupe_qrels(t, source=source, line_of=_positions, unit="row")
        return Qrels(t.qid, t.doc, t.value, source=source)
    raise UsageError(
        f"cannot read qrels from {type(obj).__name__}; pass "
        + _SHAPES.format(value="grade", column="rel", irm="relevance")
    )


def to_run(obj: Any, *, duplicates: str = "best") -> Run:
    """A run from any supported container (see module doc).

    ``duplicates`` applies to files and tables (dicts cannot repeat a document): ``"best"`` keeps
    the best-scored row and warns, ``"error"`` raises.
    """
    check_policy(duplicates)
    if isinstance(obj, Run):
        return obj
    if isinstance(obj, (str, os.PathLike)):
        if is_jsonl_path(obj):
            return read_run_jsonl(obj, duplicates=duplicates)
        return read_run(obj, duplicates=duplicates)
    if isinstance(obj, Mapping):
        t, empty = _from_dicts(obj, "run", "score")
        return Run(t.qid, t.doc, t.value, name="<dict>", empty_queries=empty)
    if _is_frame(obj) or isinstance(obj, pa.Table):
        table, source = _as_table(obj)
        t = _from_table(table, source, "run", SCORE_COLUMNS)
        t = dedupe_run(t, policy=duplicates, source=source, line_of=_positions, unit="row")
        return Run(t.qid, t.doc, t.value, name=source)
    raise UsageError(
        f"cannot read a run from {type(obj).__name__}; pass "
        + _SHAPES.format(value="score", column="score", irm="score")
    )


def refuse_empty(given: Any, table: Qrels | Run) -> None:
    """InputError when labels or a run to be SCORED hold no query at all: an empty dict, or a
    DataFrame or Table with no row (``table`` is what ``to_qrels``/``to_run`` made of
    ``given``). An empty file is refused by its reader; scoring nothing would give a mean of
    nothing, or 0 for every query, from what is almost always the wrong file or variable. A
    Qrels or Run built in code (an empty retrieval, say) is scored as it is."""
    if isinstance(given, (Qrels, Run, str, os.PathLike)) or len(table) or table.empty_queries:
        return
    kind = "qrels" if isinstance(table, Qrels) else "run"
    nothing = "no query is labelled" if kind == "qrels" else "no query is ranked"
    if isinstance(given, Mapping):
        hint = " (a query that retrieved nothing is written {qid: {}})" if kind == "run" else ""
        raise InputError(f"the {kind} dict is empty: {nothing}{hint}", path="<dict>")
    where = table.source if isinstance(table, Qrels) else table.name
    raise InputError(f"the {kind} table has no row: {nothing}", path=where)


# -- dict-of-dicts ------------------------------------------------------------------------------
def _from_dicts(
    obj: Mapping[Any, Any], kind: str, value_name: str
) -> tuple[Table, tuple[str, ...]]:
    """The rows of ``{qid: {doc: value}}``, and the queries given with no row (``{qid: {}}``):
    they are kept by name, since a columnar table has no row to hold them."""
    qids: list[Any] = []
    docs: list[Any] = []
    values: list[Any] = []
    counts: list[int] = []
    for qid, inner in obj.items():  # one iteration per query; rows go in as whole lists
        if not isinstance(inner, Mapping):
            raise UsageError(
                f"{kind}[{qid!r}] is a {type(inner).__name__}; expected a dict "
                f"{{doc: {value_name}}} for every query"
            )
        qids.append(qid)
        counts.append(len(inner))
        docs.extend(inner.keys())
        values.extend(inner.values())
    qid_arr = _ids(qids, "qid", kind)
    doc_arr = _ids(docs, "doc", kind, owners=(qids, counts))
    rows = np.repeat(np.arange(len(qids)), counts)
    qid_col = qid_arr.take(pa.array(rows, type=pa.int64()))

    def where(i: int) -> str:
        return f"query {qid_col[i].as_py()!r}, doc {doc_arr[i].as_py()!r}"

    value = _values(values, kind, where)
    empty = [i for i, n in enumerate(counts) if not n]
    empty_ids = tuple(qid_arr.take(pa.array(empty, type=pa.int64())).to_pylist()) if empty else ()
    return Table(qid_col, doc_arr, value), empty_ids


def _ids(
    items: list[Any], field: str, kind: str, owners: tuple[list[Any], list[int]] | None = None
) -> pa.Array:
    """Ids as a string array: str kept, int (not bool) written in decimal, else an error."""
    try:
        arr = pa.array(items, type=pa.string())
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        out: list[str] = []
        for i, x in enumerate(items):
            if isinstance(x, str):
                out.append(x)
            elif isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
                out.append(str(int(x)))
            else:
                raise InputError(
                    f"{kind}: {field} ids must be strings or integers, got "
                    f"{type(x).__name__} {x!r}{_owner(owners, i)}",
                    field=field,
                ) from None
        arr = pa.array(out, type=pa.string())
    if arr.null_count:
        i = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
        raise InputError(f"{kind}: {field} id is None{_owner(owners, i)}", field=field)
    empty = np.flatnonzero(pc.equal(pc.binary_length(arr), 0).to_numpy(zero_copy_only=False))
    if len(empty):
        raise InputError(f"{kind}: empty {field} id{_owner(owners, int(empty[0]))}", field=field)
    return arr


def _owner(owners: tuple[list[Any], list[int]] | None, i: int) -> str:
    if owners is None:
        return ""
    qids, counts = owners
    q = int(np.searchsorted(np.cumsum(counts), i, side="right"))
    return f" (in query {qids[q]!r})"


def _values(values: list[Any] | np.ndarray, kind: str, where: Any) -> np.ndarray:
    """Scores as float64 (finite) or grades as int64 (integral), exactly; else an error."""
    field = "score" if kind == "run" else "rel"
    try:
        arr = pa.array(values)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        arr = None
    if (
        arr is None
        or not (
            pa.types.is_integer(arr.type)
            or pa.types.is_floating(arr.type)
            or pa.types.is_null(arr.type)
        )
        or arr.null_count
    ):
        for i, x in enumerate(values):
            if not _is_number(x):
                raise InputError(
                    f"{kind}: {where(i)}: {field} must be a number, got {type(x).__name__} {x!r}",
                    field=field,
                )
            if isinstance(x, int) and not -(2**63) <= x < 2**63:
                raise InputError(
                    f"{kind}: {where(i)}: {field} {x} does not fit in 64 bits", field=field
                )
        raise InputError(f"{kind}: {field} values must all be numbers", field=field)
    if pa.types.is_floating(arr.type):
        out = arr.to_numpy(zero_copy_only=False).astype(np.float64)
        bad = ~np.isfinite(out)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"{kind}: {where(i)}: {field} is {float(out[i])!r}; it must be finite", field=field
            )
        if kind == "qrels":
            frac = np.flatnonzero(out != np.round(out))
            if len(frac):
                i = int(frac[0])
                raise InputError(
                    f"{kind}: {where(i)}: rel {float(out[i])!r} is not an integer grade",
                    field=field,
                )
            if len(out) and np.abs(out).max() >= 2**63:
                raise InputError(f"{kind}: rel values must fit in a 64-bit integer", field=field)
            return out.astype(np.int64)
        return out
    ints = arr.to_numpy(zero_copy_only=False)
    if pa.types.is_unsigned_integer(arr.type) and len(ints) and ints.max() >= 2**63:
        raise InputError(f"{kind}: {field} values must fit in a 64-bit integer", field=field)
    if kind == "run":
        exact = ints.astype(np.float64)
        with np.errstate(invalid="ignore"):  # 2**63 - 1 rounds up past int64: lossy anyway
            lossy = np.flatnonzero(exact.astype(ints.dtype) != ints)
        if len(lossy):
            i = int(lossy[0])
            raise InputError(
                f"{kind}: {where(i)}: score {int(ints[i])} has no exact float64 value", field=field
            )
        return exact
    return ints.astype(np.int64)


def _is_number(x: Any) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    return isinstance(x, (int, float, np.integer, np.floating))


# -- DataFrames and tables ----------------------------------------------------------------------
def _is_frame(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "pandas" and hasattr(obj, "columns")


def _as_table(obj: Any) -> tuple[pa.Table, str]:
    if isinstance(obj, pa.Table):
        return obj, "<table>"
    if type(obj).__name__ != "DataFrame":
        raise UsageError(f"expected a pandas DataFrame, got {type(obj).__name__}")
    try:
        return pa.Table.from_pandas(obj, preserve_index=False), "<DataFrame>"
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise InputError(f"cannot read the DataFrame: {exc}", path="<DataFrame>") from None


def _pick(names: list[str], choices: tuple[str, ...], what: str, source: str) -> str:
    for c in choices:
        if c in names:
            return c
    raise UsageError(
        f"{source} has no {what} column: expected one of {', '.join(choices)}; "
        f"found {', '.join(map(str, names)) or 'no columns'}"
    )


def _positions(rows: np.ndarray) -> np.ndarray:
    """Table rows are reported by 1-based position."""
    return np.asarray(rows, dtype=np.int64) + 1


def _from_table(table: pa.Table, source: str, kind: str, value_choices: tuple[str, ...]) -> Table:
    names = [str(n) for n in table.column_names]
    qcol = _pick(names, QID_COLUMNS, "query id", source)
    dcol = _pick(names, DOC_COLUMNS, "document id", source)
    vcol = _pick(names, value_choices, "score" if kind == "run" else "relevance", source)
    qid = _id_column(table.column(qcol), qcol, source)
    doc = _id_column(table.column(dcol), dcol, source)
    col = table.column(vcol)
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if col.null_count:
        i = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
        raise InputError(f"row {i + 1}: {vcol} is missing or NaN", path=source, field=vcol)
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        raise InputError(
            f"column '{vcol}' must be numeric, got {col.type}", path=source, field=vcol
        )

    def where(i: int) -> str:
        return f"{source} row {i + 1}"

    value = _values(col.to_numpy(zero_copy_only=False), kind, where)
    return Table(qid, doc, value)


def _id_column(col: Any, name: str, source: str) -> pa.Array:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    if arr.null_count:
        i = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
        raise InputError(f"row {i + 1}: {name} is missing", path=source, field=name)
    if (
        pa.types.is_integer(arr.type)
        or pa.types.is_large_string(arr.type)
        or pa.types.is_string_view(arr.type)
    ):
        arr = arr.cast(pa.string())
    elif not pa.types.is_string(arr.type):
        raise InputError(
            f"column '{name}' must hold string (or integer) ids, got {arr.type}",
            path=source,
            field=name,
        )
    empty = np.flatnonzero(pc.equal(pc.binary_length(arr), 0).to_numpy(zero_copy_only=False))
    if len(empty):
        raise InputError(f"row {int(empty[0]) + 1}: empty {name}", path=source, field=name)
    return arr
