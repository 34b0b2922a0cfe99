"""Per-question outcome files: one value per question, as a notebook or another tool hands them.

Two forms, told apart by the suffix:

- ``.csv``: a header row, then one row per question. The id column is ``id`` (or
  ``question_id``, ``qid``); the value column is the one other column, or ``value`` /
  ``outcome`` / ``correct`` / ``score`` when there are several.
- ``.jsonl``: one object per line with the id (``id``, ``question_id`` or ``qid``) and the value
  (``value``, ``outcome``, ``correct`` or ``score``).

A value is a number: ``0`` / ``1`` (or ``true`` / ``false``) for a binary outcome, any finite
number otherwise. Every bad row is an :class:`~ragmeter.InputError` naming the file, the line and
the field: a missing or empty id, a repeated id, a value that is not a finite number. Nothing is
guessed: a file with neither form's columns says which names it looked for.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from .._errors import InputError

#: the suffixes of outcome files
OUTCOME_SUFFIXES = (".csv", ".jsonl")
ID_NAMES = ("id", "question_id", "qid")
VALUE_NAMES = ("value", "outcome", "correct", "score")


@dataclass(frozen=True)
class Outcomes:
    """The values of one outcome file: ``{question id: value}``, the value column's name and
    whether every value is 0 or 1."""

    path: str
    column: str
    values: dict[str, float]

    @property
    def binary(self) -> bool:
        return all(v in (0.0, 1.0) for v in self.values.values())


def is_outcome_file(text: str | PathLike[str]) -> bool:
    """Whether ``text`` names an outcome file by its suffix (``.csv`` or ``.jsonl``)."""
    return Path(text).suffix.lower() in OUTCOME_SUFFIXES


def read_outcomes(path: str | PathLike[str]) -> Outcomes:
    """The outcomes of a ``.csv`` or ``.jsonl`` file (see the module docstring)."""
    p = Path(path)
    if not p.is_file():
        raise InputError("no such outcome file", path=p)
    text = p.read_text(encoding="utf-8-sig")
    if p.suffix.lower() == ".csv":
        column, rows = _csv_rows(p, text)
    else:
        column, rows = _jsonl_rows(p, text)
    values: dict[str, float] = {}
    first: dict[str, int] = {}
    for line, qid, raw in rows:
        if qid in values:
            raise InputError(
                f"question '{qid}' appears twice (first on line {first[qid]})",
                path=p,
                line=line,
                field="id",
            )
        values[qid] = _number(raw, p, line, column)
        first[qid] = line
    if not values:
        raise InputError("no outcome rows", path=p)
    return Outcomes(str(p), column, values)


def _pick(names: list[str], wanted: tuple[str, ...]) -> str | None:
    return next((n for n in wanted if n in names), None)


def _csv_rows(p: Path, text: str) -> tuple[str, list[tuple[int, str, Any]]]:
    reader = csv.reader(text.splitlines())
    header = [h.strip() for h in next(reader, [])]
    id_col = _pick(header, ID_NAMES)
    if id_col is None:
        raise InputError(
            f"the header has no id column ({', '.join(ID_NAMES)}); found {', '.join(header)}",
            path=p,
            line=1,
        )
    others = [h for h in header if h != id_col]
    value_col = _pick(others, VALUE_NAMES) or (others[0] if len(others) == 1 else None)
    if value_col is None:
        raise InputError(
            f"the header has no value column: one column besides '{id_col}', or one named "
            f"{', '.join(VALUE_NAMES)}; found {', '.join(header)}",
            path=p,
            line=1,
        )
    i, j = header.index(id_col), header.index(value_col)
    rows: list[tuple[int, str, Any]] = []
    for line, row in enumerate(reader, 2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise InputError(
                f"{len(row)} fields where the header has {len(header)}", path=p, line=line
            )
        qid = row[i].strip()
        if not qid:
            raise InputError("empty question id", path=p, line=line, field=id_col)
        rows.append((line, qid, row[j].strip()))
    return value_col, rows


def _jsonl_rows(p: Path, text: str) -> tuple[str, list[tuple[int, str, Any]]]:
    rows: list[tuple[int, str, Any]] = []
    column: str | None = None
    for line, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON: {exc.msg}", path=p, line=line) from None
        if not isinstance(obj, dict):
            raise InputError("each line must be a JSON object", path=p, line=line)
        id_key = _pick(list(obj), ID_NAMES)
        value_key = _pick(list(obj), VALUE_NAMES)
        if id_key is None or value_key is None:
            missing = "id" if id_key is None else "value"
            names = ID_NAMES if id_key is None else VALUE_NAMES
            raise InputError(f"no {missing} field (one of {', '.join(names)})", path=p, line=line)
        if column is not None and value_key != column:
            raise InputError(
                f"the value is '{value_key}' here but '{column}' above: one column per file",
                path=p,
                line=line,
                field=value_key,
            )
        column = value_key
        qid = obj[id_key]
        if not isinstance(qid, (str, int)) or isinstance(qid, bool) or not str(qid).strip():
            raise InputError("the question id must be a non-empty string", path=p, line=line,
                             field=id_key)  # fmt: skip
        rows.append((line, str(qid).strip(), obj[value_key]))
    return column or "value", rows


def _number(raw: Any, p: Path, line: int, field: str) -> float:
    if isinstance(raw, bool):
        return float(raw)
    if isinstance(raw, str):
        low = raw.strip().lower()
        if low in ("true", "false"):
            return 1.0 if low == "true" else 0.0
        try:
            raw = float(low)
        except ValueError:
            raise InputError(
                f"'{raw}' is not a number (0/1, true/false or a finite number)",
                path=p,
                line=line,
                field=field,
            ) from None
    if not isinstance(raw, (int, float)) or not math.isfinite(float(raw)):
        raise InputError(
            f"{raw!r} is not a finite number (0/1, true/false or a finite number)",
            path=p,
            line=line,
            field=field,
        )
    return float(raw)
