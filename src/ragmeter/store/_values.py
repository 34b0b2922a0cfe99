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
    from ..paired._configdiff import flatten, is_setting

    settings = {k: v for k, v in flatten(config).items() if is_setting(k)}
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
