"""Field types of the JSON files ragmeter writes and reads back (a variant's ``config.json``,
``summary.json``, an export's ``run.json``, the selection ledger).

The schemas of those files annotate their fields with these types, so a writer's promise is
checked the same way by every reader: numbers are finite (JSON has no NaN, but ``1e999`` parses
as infinity), flags are ``true``/``false`` (never the string ``"false"``, which is truthy),
names fit the store's columns and hold no NUL (PostgreSQL text cannot); metric names are
checked by :mod:`ragmeter.metrics._name_field` (this layer cannot parse them).
Every error reads ``'KEY' must be HINT, got VALUE`` with a long value cut short. Importing this
module imports pydantic: callers import it inside the function that validates.
"""

from __future__ import annotations

import datetime as dt
import reprlib
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic_core import PydanticCustomError

_short = reprlib.Repr()
_short.maxstring = _short.maxother = 60
_short.maxlist = _short.maxdict = 4
_short.maxlevel = 2


def must(hint: str) -> WrapValidator:
    """Any error of the annotated value reads ``'KEY' must be HINT, got VALUE`` (the value's
    repr cut to a few dozen characters: a 10,000-character name must not fill the screen)."""

    def check(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except (ValidationError, PydanticCustomError):
            raise PydanticCustomError(
                "must", "must be {hint}, got {got}", {"hint": hint, "got": _short.repr(value)}
            ) from None

    return WrapValidator(check)


def no_nul(value: str) -> str:
    """PostgreSQL text cannot hold a NUL character."""
    if "\x00" in value:
        raise PydanticCustomError("nul", "holds a NUL character")
    return value


def not_blank(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("blank", "is blank")
    return value


def _timestamp(value: str) -> str:
    try:
        dt.datetime.fromisoformat(value)
    except ValueError:
        raise PydanticCustomError("time", "is not a time") from None
    return value


#: a number JSON can hold and arithmetic can use (no infinity from ``1e999``)
Finite = Annotated[float, Field(allow_inf_nan=False), must("a finite number")]
#: a duration, a count of tokens: finite and not negative
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False), must("a finite number >= 0")]
#: a count of questions
Count = Annotated[int, Field(ge=0, le=2**31 - 1), must("a whole number >= 0")]
#: a true/false flag (strict: the string "false" is not one)
Flag = Annotated[bool, must("true or false")]
#: an ISO 8601 time as ragmeter writes it (``2026-01-02T03:04:05+00:00``)
Timestamp = Annotated[
    str, Field(max_length=40), AfterValidator(_timestamp), must("an ISO 8601 time")
]
#: a list of messages (notes, changes)
Messages = Annotated[list[Annotated[str, AfterValidator(no_nul)]], must("a list of strings")]
#: a run's, variant's or experiment's name (the store's name columns hold 500 characters)
Name = Annotated[
    str,
    Field(max_length=500),
    AfterValidator(no_nul),
    AfterValidator(not_blank),
    must("a non-blank string of at most 500 characters"),
]
#: a golden-set version (``g-4d325c76fa8b``; the store's column holds 64 characters)
Version = Annotated[
    str,
    Field(max_length=64),
    AfterValidator(no_nul),
    AfterValidator(not_blank),
    must("a golden-set version (a non-blank string of at most 64 characters)"),
]
#: a label, a path: free text up to 1,000 characters
LongText = Annotated[
    str,
    Field(max_length=1000),
    AfterValidator(no_nul),
    must("a string of at most 1,000 characters"),
]
#: a JSON object of anything (a config, settings)
Object = Annotated[dict[str, Any], must("a JSON object")]
#: seconds per step, as ``ragmeter run`` times a variant
Timings = Annotated[dict[str, NonNegative], must("an object {step: seconds >= 0}")]
