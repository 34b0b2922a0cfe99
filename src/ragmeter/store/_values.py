"""Small helpers every store module shares: the clock, JSON-ready values, config hashes."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: evaluation levels a run can hold
LEVELS = ("span", "chunk", "document", "eval")


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def new_invocation() -> str:
    """The id one command's runs share."""
    return uuid.uuid4().hex


def config_hash(config: Mapping[str, Any]) -> str:
    """sha256 of the run's settings (bookkeeping keys removed): equal settings, equal hash."""
    from ..paired import config_settings

    settings = config_settings(config)
    blob = json.dumps(settings, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def json_ready(value: Any) -> Any:
    """``value`` with tuples as lists, paths as strings and non-finite floats as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return json_ready(value.item())
    return value


#: the largest row id each database's id columns hold (``INTEGER``: 64 bits in SQLite, 32 in
#: PostgreSQL); a larger one would reach the driver and fail there instead of being not found
MAX_ID = {"sqlite": 2**63 - 1, "postgresql": 2**31 - 1}
#: digits of the largest id: longer text is not an id (and never reaches ``int()``'s own limit)
_MAX_DIGITS = len(str(MAX_ID["sqlite"]))


def row_id(value: Any, dialect: str) -> int | None:
    """``value`` as the id of a stored row, or None when no row can have it.

    Every store lookup by id goes through here, so an id the database cannot hold (``2**63``,
    ``10**30``, ``2**31`` on PostgreSQL), one it never gives (0, negative) or text that is not
    a whole number (``"abc"``, ``"1e3"``) is simply not found, never a driver error. Ids come
    as ints, numpy integers or their digits (a URL, a command line; surrounding spaces allowed).
    """
    import operator

    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not (text.isascii() and text.isdigit()) or len(text) > _MAX_DIGITS:
            return None
        n = int(text)
    else:
        try:
            n = operator.index(value)  # ints and numpy integers; never a float cut down
        except TypeError:
            return None
    return n if 1 <= n <= MAX_ID.get(dialect, MAX_ID["postgresql"]) else None
