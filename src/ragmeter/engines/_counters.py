"""The counters an object keeps on itself (calls, errors, HTTP requests, tokens, cost, texts
encoded), read and added by name, so that work done on a copy of the object can be counted on
the original.

Why: an engine ships a *copy* of a generator, judge or encoder to each worker (:mod:`._ray`).
Whatever that copy counts would stay in the worker, and the caller's object, the one every
report reads, would say nothing happened. Each worker therefore returns, with each batch's
result, what the batch added to the copy's counters (:func:`difference` of two :func:`counters`
readings), and the driver adds it to the caller's object (:func:`add`). The object itself stays
the one source of truth; the engine never counts on its behalf.

Which attributes are counters is the class's to say: ``COUNTERS``, a tuple of attribute names.
Each names a number that only ever grows by addition (int, or float such as a cost; ``None``
means "not counted" and is left alone), or an object that has ``COUNTERS`` of its own (a usage
record, a client), read through. A class that says nothing is read as an encoder of the
retrieval protocol: ``calls`` and ``texts_encoded``, those it has.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: what an object without ``COUNTERS`` counts (the encoder protocol's two counters)
DEFAULT = ("calls", "texts_encoded")
#: how deep counter holders are read through (a client's usage record is 2 deep)
MAX_DEPTH = 4

Number = int | float


def counters(obj: Any) -> dict[str, Number]:
    """Every counter of ``obj`` by dotted path (``"client.usage.prompt_tokens"``)."""
    out: dict[str, Number] = {}
    _read(obj, "", out, 0)
    return out


def _read(obj: Any, prefix: str, out: dict[str, Number], depth: int) -> None:
    names = getattr(type(obj), "COUNTERS", DEFAULT)
    for name in names:
        value: Any = getattr(obj, name, None)
        if _number(value):
            out[prefix + name] = value
        elif value is not None and depth < MAX_DEPTH and hasattr(type(value), "COUNTERS"):
            _read(value, f"{prefix}{name}.", out, depth + 1)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def difference(after: Mapping[str, Number], before: Mapping[str, Number]) -> dict[str, Number]:
    """What was added between two readings (only the counters that moved)."""
    out: dict[str, Number] = {}
    for path, value in after.items():
        delta = value - before.get(path, 0)
        if delta:
            out[path] = delta
    return out


def add(obj: Any, delta: Mapping[str, Number]) -> None:
    """Add ``delta`` (a :func:`difference`) to ``obj``'s counters. A path ``obj`` does not
    count (a counter it keeps as ``None``, one it does not have) is skipped: the object decides
    what it counts."""
    for path, value in delta.items():
        *holders, name = path.split(".")
        target = obj
        for holder in holders:
            target = getattr(target, holder, None)
            if target is None:
                break
        if target is None:
            continue
        current: Any = getattr(target, name, None)
        if _number(current):
            setattr(target, name, current + value)


def counted_call(
    obj: Any, method: str, batch: Any, kwargs: Mapping[str, Any]
) -> tuple[Any, dict[str, Number]]:
    """``obj.method(batch, **kwargs)`` and what the call added to ``obj``'s counters (what a
    worker returns with each batch)."""
    before = counters(obj)
    result = getattr(obj, method)(batch, **kwargs)
    return result, difference(counters(obj), before)
