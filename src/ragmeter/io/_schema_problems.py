"""pydantic errors of a parsed file (TOML, JSON) as one message per input key path.

The schema models (``extra="forbid"``, strict types) do the checking; this module turns each
error into what a user can act on: the path of the key as written in the file (pydantic's union
member labels and discriminator tags dropped, so the caller can find the key's line) and a
message that says what a valid value is. A field annotated with :func:`must` reads
``'KEY' must be HINT, got VALUE``; a cross-field rule raised with :func:`rule` carries its own
message and may point at a sub-field. Importing this module imports pydantic: callers import
it inside the function that validates, so ``import ragmeter`` stays light.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

from pydantic import Field, ValidationError, ValidatorFunctionWrapHandler, WrapValidator
from pydantic_core import PydanticCustomError

#: a path of keys and list indices in the parsed input: ``("variant", 1, "retriever", "k1")``
Keys = tuple[str | int, ...]
#: the message for an unknown key, given the table that holds it and the key
UnknownKey = Callable[[dict[str, Any], Keys], str]


def must(hint: str) -> WrapValidator:
    """Any error of the annotated value reads ``'KEY' must be HINT, got VALUE``."""

    def check(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError:
            raise PydanticCustomError(
                "must", "must be {hint}, got {got}", {"hint": hint, "got": repr(value)}
            ) from None

    return WrapValidator(check)


#: a positive integer (``k``, ``depth``, ``top``, ...)
Positive = Annotated[int, Field(ge=1), must("a positive integer")]


def rule(message: str, field: str | None = None) -> PydanticCustomError:
    """The error of a rule a type cannot say; ``field`` names the sub-key it is about."""
    return PydanticCustomError("rule", "{message}", {"message": message, "field": field})


def key_path(loc: Sequence[str | int], data: Any, *, missing: bool = False) -> Keys:
    """The keys of ``loc`` that exist in ``data`` (and, for a ``missing`` error, the last key,
    which the input lacks)."""
    out: list[str | int] = []
    node = data
    for i, part in enumerate(loc):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif missing and i == len(loc) - 1 and isinstance(part, str):
            pass  # a missing key: kept so the message can name it
        else:
            continue  # a union member label or a discriminator tag
        out.append(part)
    return tuple(out)


def schema_errors(exc: ValidationError, data: Any, unknown: UnknownKey) -> list[tuple[Keys, str]]:
    """One (key path, message) per key that failed, in pydantic's order (fields, then extras)."""
    out: dict[Keys, str] = {}
    for err in exc.errors(include_url=False):
        keys = key_path(err["loc"], data, missing=err["type"] == "missing")
        key = next((k for k in reversed(keys) if isinstance(k, str)), "value")
        ctx = err.get("ctx") or {}
        if err["type"] == "rule":
            keys += (ctx["field"],) if ctx.get("field") else ()
            message = str(ctx["message"])
        elif err["type"] == "must":
            message = f"'{key}' {err['msg']}"
        elif err["type"] == "extra_forbidden":
            parent = _at(data, keys[:-1])
            message = unknown(parent if isinstance(parent, dict) else {}, keys)
        elif err["type"] == "missing":
            message = f"'{key}' is required"
        else:  # a type without a hint: pydantic's own words and the value
            message = f"'{key}': {err['msg']}, got {err.get('input')!r}"
        out.setdefault(keys, message)
    return list(out.items())


def field_name(prefix: str, keys: Keys) -> str:
    """``baseline`` + ``("retriever", "of", 1, "k1")`` -> ``baseline.retriever.of[1].k1``."""
    out = prefix
    for k in keys:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else k)
    return out


def _at(data: Any, keys: Keys) -> Any:
    for k in keys:
        data = data[k]
    return data
