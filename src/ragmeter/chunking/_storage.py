"""Reading chunk tables from disk (the format and the writer are in ``_format``).

Loading checks every row and reports every problem with file, line (row) and field.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InputError, Problem, ValidationError
from ._chunking import COLUMNS, Chunking, documents_of
from ._format import META_KEY, suffix_of

#: problems listed in one error before the rest are summarised.
_MAX_PROBLEMS = 50
#: offsets and token counts are stored as 64-bit integers; a larger one is refused by name.
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
UNKNOWN_TOKENIZER = "unknown"


def load_chunking(
    path: str | os.PathLike[str], *, corpus: Any = None, name: str | None = None
) -> Chunking:
    """Read a chunk file written by :meth:`Chunking.save` (or by any tool, with the same columns).

    ``name`` is used when the file records none (default: the file name without suffix). With
    ``corpus``, every chunk's text is also checked against its document. Raises InputError /
    ValidationError naming file, line (row) and field.
    """
    path = Path(path)
    suffix = suffix_of(path)
    if not path.is_file():
        raise InputError("file not found", path=path)
    problems: list[Problem] = []
    if suffix == ".parquet":
        cols, lines, meta = _read_parquet(path)
    else:
        cols, lines, meta = _read_jsonl(path, problems)
    where = str(path)
    problems += _check_rows(cols, lines, where)
    problems.sort(key=lambda p: p.line or 0)
    if corpus is not None:
        problems += _check_texts(cols, lines, where, corpus)
    _raise(problems, where)
    return Chunking(
        name=meta.get("name") or name or path.stem,
        tokenizer=meta.get("tokenizer") or UNKNOWN_TOKENIZER,
        ids=cols["id"],
        doc=cols["doc"],
        start=cols["start"],
        end=cols["end"],
        text=cols["text"],
        n_tokens=cols["n_tokens"],
        source=where,
    )


def _raise(problems: list[Problem], where: str) -> None:
    if not problems:
        return
    if len(problems) > _MAX_PROBLEMS:
        rest = len(problems) - _MAX_PROBLEMS
        problems = [*problems[:_MAX_PROBLEMS], Problem(f"... and {rest} more problem(s)", where)]
    raise ValidationError(problems, what=f"chunk file {where}")


def _read_parquet(path: Path) -> tuple[dict[str, list[Any]], list[int], dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"not a readable Parquet file ({exc})", path=path) from None
    missing = [c for c in COLUMNS if c not in table.column_names]
    if missing:
        raise InputError(
            f"missing column(s) {', '.join(missing)}; a chunk table has columns "
            f"{', '.join(COLUMNS)}",
            path=path,
            field=missing[0],
        )
    cols: dict[str, list[Any]] = {}
    for col, kind in zip(COLUMNS, ("string", "string", "int", "int", "string", "int"), strict=True):
        arr = table.column(col)
        ok = pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)
        if kind == "int":
            ok = pa.types.is_integer(arr.type)
        if not ok:
            raise InputError(f"column has type {arr.type}, expected {kind}", path=path, field=col)
        if arr.null_count:
            row = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0]) + 1
            raise InputError(
                f"{arr.null_count} empty value(s), first in row {row}", path=path, field=col
            )
        if kind == "int" and arr.type == pa.uint64() and len(arr):
            top = pc.max(arr).as_py()
            if top is not None and top > _INT64_MAX:
                raise InputError(f"integer {top} is out of range (64-bit)", path=path, field=col)
        cols[col] = arr.to_pylist() if kind == "string" else arr.to_numpy().astype(np.int64)
    meta: dict[str, Any] = {}
    raw = (table.schema.metadata or {}).get(META_KEY)
    if raw:
        try:
            meta = dict(json.loads(raw))
        except (ValueError, TypeError):
            raise InputError("unreadable ragmeter.chunking metadata", path=path) from None
    return cols, list(range(1, table.num_rows + 1)), meta


def _read_jsonl(
    path: Path, problems: list[Problem]
) -> tuple[dict[str, list[Any]], list[int], dict[str, Any]]:
    """The well-formed rows of a JSONL chunk file; problems with the others go to ``problems``."""
    from ..io import iter_jsonl

    cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    lines: list[int] = []
    names: set[str] = set()
    toks: set[str] = set()
    where = str(path)
    for number, obj in iter_jsonl(path, problems, what="chunks"):
        row_ok = True
        for col in COLUMNS:
            value = obj.get(col)
            want_int = col in ("start", "end", "n_tokens")
            if value is None:
                problems.append(Problem("missing", where, number, col))
                row_ok = False
            elif want_int and (not isinstance(value, int) or isinstance(value, bool)):
                problems.append(Problem(f"expected an integer, got {value!r}", where, number, col))
                row_ok = False
            elif want_int and not _INT64_MIN <= value <= _INT64_MAX:
                problems.append(
                    Problem(f"integer {value} is out of range (64-bit)", where, number, col)
                )
                row_ok = False
            elif not want_int and not isinstance(value, str):
                problems.append(Problem(f"expected a string, got {value!r}", where, number, col))
                row_ok = False
        if row_ok:
            for col in COLUMNS:
                cols[col].append(obj[col])
            lines.append(number)
        if isinstance(obj.get("chunking"), str):
            names.add(obj["chunking"])
        if isinstance(obj.get("tokenizer"), str):
            toks.add(obj["tokenizer"])
    for key, seen in (("chunking", names), ("tokenizer", toks)):
        if len(seen) > 1:
            problems.append(Problem(f"rows disagree: {', '.join(sorted(seen))}", where, None, key))
    meta = {"name": next(iter(names), None), "tokenizer": next(iter(toks), None)}
    return cols, lines, meta


def _check_rows(cols: dict[str, Any], lines: list[int], where: str) -> list[Problem]:
    problems: list[Problem] = []
    start = np.asarray(cols["start"], dtype=np.int64)
    end = np.asarray(cols["end"], dtype=np.int64)
    ntok = np.asarray(cols["n_tokens"], dtype=np.int64)
    tlen = np.fromiter((len(t) for t in cols["text"]), dtype=np.int64, count=len(cols["text"]))
    checks = (
        (start < 0, "start", lambda i: f"must be >= 0, got {start[i]}"),
        (end <= start, "end", lambda i: f"must be greater than start ({start[i]}), got {end[i]}"),
        (
            (end > start) & (tlen != end - start),
            "text",
            lambda i: f"has {tlen[i]} characters but end - start = {end[i] - start[i]}",
        ),
        (ntok < 0, "n_tokens", lambda i: f"must be >= 0, got {ntok[i]}"),
    )
    for bad, field, msg in checks:
        for i in np.flatnonzero(bad).tolist():
            problems.append(Problem(msg(i), where, lines[i], field))
    first: dict[str, int] = {}
    for i, cid in enumerate(cols["id"]):
        if cid in first:
            problems.append(
                Problem(
                    f"duplicate chunk id {cid!r} (first at line {lines[first[cid]]})",
                    where,
                    lines[i],
                    "id",
                )
            )
        else:
            first[cid] = i
    return problems


def _check_texts(cols: dict[str, Any], lines: list[int], where: str, corpus: Any) -> list[Problem]:
    texts = dict(documents_of(corpus))
    problems: list[Problem] = []
    for i, (doc, a, b, text) in enumerate(
        zip(cols["doc"], cols["start"], cols["end"], cols["text"], strict=True)
    ):
        src = texts.get(doc)
        if src is None:
            problems.append(Problem(f"unknown document {doc!r}", where, lines[i], "doc"))
        elif b > len(src):
            problems.append(
                Problem(f"end {b} is past the document's end ({len(src)})", where, lines[i], "end")
            )
        elif src[a:b] != text:
            problems.append(
                Problem(
                    "text differs from the document's characters start:end "
                    "(was the corpus edited after chunking?)",
                    where,
                    lines[i],
                    "text",
                )
            )
    return problems
