"""Damaged rows: read one at a time, named with their table and id, never a traceback.

A store is a trust boundary (a shared PostgreSQL database, a SQLite file copied around or edited
by hand). A value SQLAlchemy or the driver cannot decode (a config that is not JSON, a timestamp
that is not one) makes the whole fetch fail, not just its row; a value of the wrong shape (NaN or
text where a mean belongs) fails later, wherever it is used. So listings fetch all rows at once
and, only when that fails, again one row at a time: one bad row is skipped with a warning naming
it ("run 7 is damaged (config is not JSON); skipped") and the rest stay readable. Reading that
one row by its id refuses it with :class:`DamagedRowError`. Every value is checked as it becomes
a record (:class:`Row`), so what leaves the store has the types the writer gave it.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import json
import math
import warnings
from collections.abc import Iterator
from typing import Any

from .._errors import InputError, RagmeterWarning

#: what a row of each table is called in messages
LABEL = {
    "runs": "run",
    "evaluations": "evaluation",
    "comparisons": "comparison",
    "golden_versions": "golden-set version",
    "answer_sets": "answer set",
    "judge_labels": "judge validation",
    "ledger": "ledger entry",
    "blobs": "blob",
}


class DamagedRowError(InputError):
    """A stored row that cannot be read back as ragmeter wrote it; names its table, its id and
    what is wrong (``run 7 is damaged (config is not JSON)``)."""

    def __init__(self, table: str, key: Any, what: str) -> None:
        self.table = table
        self.key = key
        self.what = what
        super().__init__(f"{LABEL.get(table, table)} {key} is damaged ({what})")


class DamagedRowWarning(RagmeterWarning):
    """A damaged row was left out of a listing (the rest of the store is readable)."""


#: the rows :func:`skipped` left out, for a caller that shows them itself (the lab puts them on
#: the page it renders: one list per request, which a process-wide warning filter cannot give)
SKIPPED: contextvars.ContextVar[list[DamagedRowError] | None] = contextvars.ContextVar(
    "ragmeter_skipped_rows", default=None
)


def skipped(damaged: DamagedRowError) -> None:
    """Say that a listing left out ``damaged``."""
    found = SKIPPED.get()
    if found is not None:
        found.append(damaged)
    warnings.warn(f"{damaged}; skipped", DamagedRowWarning, stacklevel=3)


@contextlib.contextmanager
def collect_skipped() -> Iterator[list[DamagedRowError]]:
    """Collect the damaged rows listings leave out inside the block (and in the threads it
    starts with its context: the lab collects one list per request); each is still warned
    about."""
    found: list[DamagedRowError] = []
    token = SKIPPED.set(found)
    try:
        yield found
    finally:
        SKIPPED.reset(token)


def skipped_so_far() -> list[DamagedRowError]:
    """The damaged rows left out so far inside the innermost :func:`collect_skipped` block
    (none outside one)."""
    return list(SKIPPED.get() or ())


def row_label(table: str) -> str:
    """What a row of ``table`` is called in messages (``run``, ``answer set``, ...)."""
    return LABEL.get(table, table)


class Damage(Exception):
    """One wrong value of a row (internal: becomes a :class:`DamagedRowError`)."""


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (its type's name when that is empty): what a
    damaged row's message quotes of the error that reading it raised."""
    return (str(exc).splitlines() or [""])[0] or type(exc).__name__


def decode_errors() -> tuple[type[BaseException], ...]:
    """What a value that cannot be decoded raises while rows are fetched: a JSON or timestamp
    parse error in SQLAlchemy's result processing, or the driver's own (psycopg's DataError
    for a timestamp of ``infinity``)."""
    import sqlalchemy.exc as sa_exc

    return (ValueError, TypeError, OverflowError, ArithmeticError, sa_exc.DataError)


def fetch(conn: Any, query: Any, key: Any, table: str) -> tuple[list[Any], list[DamagedRowError]]:
    """The rows of ``query`` and the damaged ones left out. All at once when every value
    decodes (the usual case, no extra cost); otherwise once more one row at a time, by ``key``
    (the table's id column, always readable), naming the column each bad row fails on."""
    errors = decode_errors()
    try:
        return list(conn.execute(query).all()), []
    except errors:
        pass
    rows: list[Any] = []
    damaged: list[DamagedRowError] = []
    for (k,) in conn.execute(query.with_only_columns(key)).all():
        try:
            rows.extend(conn.execute(query.where(key == k)).all())
        except errors:
            damaged.append(DamagedRowError(table, k, _unreadable(conn, query, key, k)))
    return rows, damaged


def _unreadable(conn: Any, query: Any, key: Any, k: Any) -> str:
    """Which columns of row ``k`` cannot be decoded, in words."""
    import sqlalchemy as sa

    errors = decode_errors()
    bad: list[str] = []
    for col in query.selected_columns:
        try:
            conn.execute(query.with_only_columns(col).where(key == k)).all()
        except errors:
            if isinstance(col.type, sa.JSON):
                bad.append(f"{col.name} is not JSON")
            elif isinstance(col.type, sa.DateTime):
                bad.append(f"{col.name} is not a timestamp")
            else:
                bad.append(f"{col.name} cannot be read")
    return ", ".join(bad) or "a value cannot be read"


@contextlib.contextmanager
def checked(table: str, key: Any) -> Iterator[None]:
    """Turn a :class:`Damage` (or a value SQLAlchemy decodes only when it is used) raised while
    a row becomes a record into a :class:`DamagedRowError` naming the row."""
    try:
        yield
    except DamagedRowError:
        raise
    except Damage as exc:
        raise DamagedRowError(table, key, str(exc)) from None
    except decode_errors() as exc:
        raise DamagedRowError(table, key, f"a value cannot be read: {exc}") from None


@contextlib.contextmanager
def part_of(table: str, key: Any, part: str) -> Iterator[None]:
    """A damaged blob (or one whose table is not what the row needs) reported as damage of the
    row that uses it: ``run 7 is damaged (its span-level values: blob 3f2a... is damaged
    (...))``."""
    try:
        yield
    except DamagedRowError as exc:
        if exc.table == table and exc.key == key:
            raise
        raise DamagedRowError(table, key, f"{part}: {exc}") from None
    except Damage as exc:
        raise DamagedRowError(table, key, f"{part}: {exc}") from None


class Row:
    """Typed access to one fetched row: each getter returns the value or raises :class:`Damage`
    naming the column and what is wrong with it. (Plain type checks: ``runs list`` reads a
    thousand rows this way, within a few milliseconds of reading them unchecked.)"""

    __slots__ = ("_m",)

    def __init__(self, row: Any) -> None:
        self._m = dict(row._mapping)

    def get(self, name: str) -> Any:
        """The value as fetched, unchecked (the caller checks it)."""
        return self._m[name]

    def text(self, name: str, *, null: bool = False) -> Any:
        v = self._m[name]
        if type(v) is str or (v is None and null):
            return v
        raise Damage(f"{name} is not text")

    def whole(self, name: str, *, null: bool = False) -> Any:
        v = self._m[name]
        if type(v) is int or (v is None and null):
            return v
        raise Damage(f"{name} is not a whole number")

    def flag(self, name: str, *, null: bool = False, raw: str | None = None) -> Any:
        """A boolean; ``raw``: the column selected again without SQLAlchemy's conversion (on
        SQLite it turns any text, ``'false'`` included, into True)."""
        v = self._m[raw or name]
        if v is None and null:
            return None
        if type(v) not in (bool, int) or v not in (0, 1):
            raise Damage(f"{name} is not true or false")
        return bool(v)

    def number(self, name: str, *, null: bool = True) -> Any:
        v = self._m[name]
        if v is None and null:
            return None
        return number(v, name)

    def when(self, name: str, *, null: bool = False) -> Any:
        v = self._m[name]
        if v is None and null:
            return None
        if not isinstance(v, dt.datetime):
            raise Damage(f"{name} is not a timestamp")
        return utc(v)

    def mapping(self, name: str) -> dict[str, Any]:
        v = self._m[name]
        if not isinstance(v, dict):
            raise Damage(f"{name} is not a JSON object")
        finite_json(v, name)
        return v

    def strings(self, name: str, *, null: bool = False) -> Any:
        v = self._m[name]
        if v is None and null:
            return None
        if type(v) is not list or not all(type(x) is str for x in v):
            raise Damage(f"{name} is not a list of strings")
        return v

    def numbers(self, name: str, *, null_values: bool = False) -> dict[str, Any]:
        """A JSON object of names to finite numbers (or null, where a value may be missing)."""
        v = self._m[name]
        if not isinstance(v, dict):
            raise Damage(f"{name} is not a JSON object")
        for k, x in v.items():
            if not (x is None and null_values):
                number(x, f"{name}[{k!r}]")
        return v


def number(v: Any, name: str) -> Any:
    """A finite number (a stored mean, a timing) as stored, else :class:`Damage`."""
    if type(v) is float:
        if math.isfinite(v):
            return v
        raise Damage(f"{name} is {v}, not a finite number")
    if type(v) is int:
        return v
    raise Damage(f"{name} is not a number")


def finite_json(v: Any, name: str) -> None:
    """``v`` holds only JSON values ragmeter writes: no NaN or infinity anywhere (they are
    refused by every JSON output, so one in a stored config would end ``runs list --format
    json`` with a traceback). The C encoder checks it fastest."""
    try:
        json.dumps(v, allow_nan=False)
    except ValueError:
        raise Damage(f"{name} holds NaN or infinity") from None
    except TypeError:  # (JSON gives no other types; a driver might)
        raise Damage(f"{name} holds a value that is not JSON") from None


def check_columns(d: dict[str, Any], kinds: dict[str, tuple[str, ...]]) -> None:
    """Check many columns of one row (a dict) at once, by kind: ``text``, ``text?`` (text or
    null), ``whole``, ``whole?``, ``number?``, ``strings``, ``when``, ``when?``. A loop over
    names with plain type checks: a thousand rows in a few milliseconds."""
    for k in kinds.get("text", ()):
        if type(d[k]) is not str:
            raise Damage(f"{k} is not text")
    for k in kinds.get("text?", ()):
        if d[k] is not None and type(d[k]) is not str:
            raise Damage(f"{k} is not text")
    for k in kinds.get("whole", ()):
        if type(d[k]) is not int:
            raise Damage(f"{k} is not a whole number")
    for k in kinds.get("whole?", ()):
        if d[k] is not None and type(d[k]) is not int:
            raise Damage(f"{k} is not a whole number")
    for k in kinds.get("number?", ()):
        if d[k] is not None:
            number(d[k], k)
    for k in kinds.get("strings", ()):
        x = d[k]
        if type(x) is not list or not all(type(s) is str for s in x):
            raise Damage(f"{k} is not a list of strings")
    for k in kinds.get("when", ()):
        if not isinstance(d[k], dt.datetime):
            raise Damage(f"{k} is not a timestamp")
    for k in kinds.get("when?", ()):
        if d[k] is not None and not isinstance(d[k], dt.datetime):
            raise Damage(f"{k} is not a timestamp")


def utc(value: Any) -> Any:
    """A checked timestamp (or None) in UTC (SQLite gives back naive ones: every stored time
    is UTC)."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=dt.UTC)
