"""One check for every number a user gives ragmeter: a CLI option or a Python argument.

A parameter that is not a finite number in its range is refused with a :class:`UsageError`
naming it, before anything is read or computed, so NaN or infinity never reaches a result and a
size never allocates without bound. Each bound below is far above any real golden set and is
stated where the option is documented (docs/compare.md, docs/answers.md).
"""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any

from ._errors import UsageError

#: most questions one cell of a retrieval-by-answer table given as counts may hold
MAX_CELL_COUNT = 10_000_000
#: most bootstrap resamples (an interval's digits settle long before)
MAX_RESAMPLES = 1_000_000
#: most cutoffs one sweep may score (a k range is also capped at the runs' depth)
MAX_CUTOFFS = 10_000
#: most questions a saved comparison may count (its n, fixed, broken): far above any golden
#: set, and small enough that every count is exact as a float
MAX_QUESTIONS = 1_000_000_000


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def finite(name: str, value: Any) -> float:
    """``value`` as a float; a :class:`UsageError` naming ``name`` when it is not a finite
    number (NaN, infinity, a string, a boolean)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise UsageError(f"{name} must be a number, got {_show(value)}")
    try:
        v = float(value)
    except OverflowError:
        raise UsageError(f"{name} must be a finite number, got {_show(value)}") from None
    if not math.isfinite(v):
        raise UsageError(f"{name} must be a finite number, got {_show(value)}")
    return v


def number_in(
    name: str,
    value: Any,
    low: float | None = None,
    high: float | None = None,
    *,
    open_low: bool = False,
    open_high: bool = False,
    what: str = "",
) -> float:
    """A finite float within ``[low, high]`` (an end is excluded when ``open_low``/``open_high``;
    None: unbounded); ``what`` says what the number is in the message."""
    v = finite(name, value)
    below = low is not None and (v <= low if open_low else v < low)
    above = high is not None and (v >= high if open_high else v > high)
    if below or above:
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        left = "(" if open_low or low is None else "["
        right = ")" if open_high or high is None else "]"
        span = f"{left}{lo}, {hi}{right}"
        raise UsageError(f"{name}{f' ({what})' if what else ''} must lie in {span}, got {v:g}")
    return v


def rate(name: str, value: Any) -> float:
    """A share or threshold of a rate: a finite number in [0, 1]."""
    return number_in(name, value, 0.0, 1.0, what="a rate")


def whole(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """An integer (not a bool, not a float) within ``[low, high]`` (None: unbounded)."""
    if isinstance(value, bool):
        raise UsageError(f"{name} must be an integer, got {value}")
    try:
        v = operator.index(value)
    except TypeError:
        raise UsageError(f"{name} must be an integer, got {_show(value)}") from None
    if (low is not None and v < low) or (high is not None and v > high):
        if high is None:
            raise UsageError(f"{name} must be an integer of at least {low}, got {v}")
        if low is None:
            raise UsageError(f"{name} must be an integer <= {high:,}, got {v}")
        raise UsageError(f"{name} must be an integer from {low} to {high:,}, got {v}")
    return v


def seed(value: Any, name: str = "seed") -> int | None:
    """A random seed: None, or an integer >= 0 (what ``numpy.random.default_rng`` takes)."""
    return None if value is None else whole(name, value, low=0)
