"""Reading a ``to_dict`` record back, field by field, with errors that name the field.

The paired records (:class:`~ragmeter.paired.Comparison` and what it holds) are written as plain
JSON-ready dicts and read back by their ``from_dict`` classmethods, e.g. from the experiment
store. A record that is not one raises :class:`~ragmeter._errors.InputError` naming the dotted
path of the bad field (``slices.short.wins``, ``movers.improved[2].rank_before``) and, when
given, where the record came from (``source``).

Types are checked, not coerced: a count is an int (not a bool, not 3.0), a flag a bool, a
number an int or float (not a bool, not text), text a str. Numbers come back as Python floats.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NoReturn

from .._errors import InputError

_MISSING = object()


class Record:
    """One mapping being read back; ``at`` is its dotted path inside the outer record."""

    def __init__(
        self, d: Any, *, what: str, at: str | None = None, source: str | None = None
    ) -> None:
        self.at = at
        self.source = source
        if not isinstance(d, Mapping):
            self.fail(None, f"{what} record must be a JSON object, got {type(d).__name__}")
        self.d: Mapping[str, Any] = d

    # -- paths and errors ----------------------------------------------------------------------
    def name(self, key: str | None) -> str | None:
        """The dotted path of ``key`` (the record itself when None)."""
        if key is None:
            return self.at
        return f"{self.at}.{key}" if self.at else key

    def fail(self, key: str | None, message: str) -> NoReturn:
        raise InputError(message, path=self.source, field=self.name(key))

    # -- raw access ----------------------------------------------------------------------------
    def has(self, key: str) -> bool:
        return key in self.d

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        """The value of ``key``; a missing key is an error unless ``default`` is given."""
        if key in self.d:
            return self.d[key]
        if default is _MISSING:
            self.fail(key, "missing")
        return default

    def sub(self, key: str, *, what: str) -> Record:
        """The mapping under ``key`` as a record of its own."""
        return Record(self.raw(key), what=what, at=self.name(key), source=self.source)

    def child(self, value: Any, at: str, *, what: str) -> Record:
        """A record for a value read from this one (a list item), at path ``at``."""
        return Record(value, what=what, at=at, source=self.source)

    # -- typed fields --------------------------------------------------------------------------
    def text(self, key: str, default: Any = _MISSING) -> str:
        v = self.raw(key, default)
        if not isinstance(v, str):
            self.fail(key, f"must be text, got {_kind(v)}")
        return v

    def optional_text(self, key: str) -> str | None:
        v = self.raw(key, None)
        return None if v is None else self.text(key)

    def integer(self, key: str, *, low: int | None = 0) -> int:
        v = self.raw(key)
        if isinstance(v, bool) or not isinstance(v, int):
            self.fail(key, f"must be a whole number, got {_kind(v)}")
        if low is not None and v < low:
            self.fail(key, f"must be at least {low}, got {v}")
        return int(v)

    def optional_integer(self, key: str, *, low: int | None = 0) -> int | None:
        """An int or None; a missing key reads as None."""
        return None if self.raw(key, None) is None else self.integer(key, low=low)

    def nullable_integer(self, key: str, *, low: int | None = 0) -> int | None:
        """An int or None; the key must be present (``to_dict`` always writes it)."""
        return None if self.raw(key) is None else self.integer(key, low=low)

    def number(self, key: str, *, finite: bool = False) -> float:
        return self.as_number(self.raw(key), key, finite=finite)

    def as_number(self, v: Any, key: str, *, finite: bool = False) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.fail(key, f"must be a number, got {_kind(v)}")
        f = float(v)
        if finite and not math.isfinite(f):
            self.fail(key, f"must be a finite number, got {v!r}")
        return f

    def flag(self, key: str, default: Any = _MISSING) -> bool:
        v = self.raw(key, default)
        if not isinstance(v, bool):
            self.fail(key, f"must be true or false, got {_kind(v)}")
        return v

    def items(self, key: str, default: Any = _MISSING) -> list[Any]:
        v = self.raw(key, default)
        if not isinstance(v, (list, tuple)):
            self.fail(key, f"must be a list, got {_kind(v)}")
        return list(v)

    def texts(self, key: str, default: Any = _MISSING) -> tuple[str, ...]:
        out = self.items(key, default)
        for i, v in enumerate(out):
            if not isinstance(v, str):
                self.fail(f"{key}[{i}]", f"must be text, got {_kind(v)}")
        return tuple(out)

    def optional_texts(self, key: str) -> tuple[str, ...] | None:
        return None if self.raw(key, None) is None else self.texts(key)

    def mapping(self, key: str, default: Any = _MISSING) -> Mapping[str, Any]:
        v = self.raw(key, default)
        if not isinstance(v, Mapping):
            self.fail(key, f"must be a JSON object, got {_kind(v)}")
        return v


def _kind(v: Any) -> str:
    """A value's JSON kind for messages (``text 'x'``, ``true``, ``a list``)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        shown = v if len(v) <= 40 else v[:37] + "..."
        return f"text {shown!r}"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, Mapping):
        return "an object"
    if isinstance(v, (list, tuple)):
        return "a list"
    return type(v).__name__
