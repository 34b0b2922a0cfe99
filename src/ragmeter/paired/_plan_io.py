"""Reading a past comparison for a size plan: the JSON ``ragmeter compare --format json`` writes.

The record carries every question's two values under ``per_query`` (``{qid: {"baseline": a,
"candidate": b, "delta": b - a}}``); those give ``Var(d)`` for binary and graded metrics alike.
A record without them (trimmed by hand) still plans a binary metric from its counts ``n``,
``fixed``, ``broken`` and ``baseline_mean``. The record's own interval (``ci``, ``confidence``)
is kept so the plan can show it beside the width it predicts at that n.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._errors import InputError, UsageError
from .._numbers import MAX_QUESTIONS
from ..io import read_json
from ._spread import Spread, spread_from_values, with_observed

_WHAT = "the output of 'ragmeter compare --format json'"


def read_comparison(path: str | Path) -> Spread:
    """The spread of the comparison saved at ``path``."""
    p = Path(path)
    return spread_from_record(read_json(p, hint=f"give {_WHAT}"), path=p)


def spread_from_comparison(comparison: Any) -> Spread:
    """A :class:`~ragmeter.paired.Comparison`, or the JSON ``ragmeter compare --format json``
    writes (as a dict; :func:`read_comparison` reads it from a file)."""
    from ._comparison import Comparison

    if isinstance(comparison, Spread):
        return comparison
    if isinstance(comparison, Comparison):
        s = spread_from_values(
            comparison.baseline_values,
            comparison.candidate_values,
            binary=comparison.binary,
            source="comparison",
        )
        return with_observed(s, comparison.ci, comparison.confidence)
    if isinstance(comparison, Mapping):
        return spread_from_record(comparison)
    raise UsageError(
        f"expected a Comparison or its to_dict() record, got {type(comparison).__name__}"
    )


def _number(value: Any, field: str, path: Path | None) -> float:
    bad = isinstance(value, bool) or not isinstance(value, (int, float))
    if not bad:
        try:
            bad = not math.isfinite(value)
        except OverflowError:  # an integer too large for a float
            bad = True
    if bad:
        raise InputError(
            f"expected a finite number, got {json.dumps(value)[:40]}", path=path, field=field
        )
    return float(value)


def _count(value: Any, field: str, path: Path | None) -> int:
    """A count of questions: a whole number from 0 to :data:`MAX_QUESTIONS` (a larger one is no
    real golden set, and would lose digits as a float)."""
    v = _number(value, field, path)
    if v < 0 or v != int(v) or v > MAX_QUESTIONS:
        raise InputError(
            f"expected a count of questions from 0 to {MAX_QUESTIONS:,}, "
            f"got {json.dumps(value)[:40]}",
            path=path,
            field=field,
        )
    return int(v)


def _looks_like_evaluation(rec: Mapping[str, Any]) -> bool:
    return "aggregate" in rec and "per_query" in rec and "baseline" not in rec


def spread_from_record(rec: Any, path: Path | None = None) -> Spread:
    """The spread of a comparison record (the dict of ``Comparison.to_dict()``)."""
    if not isinstance(rec, Mapping):
        raise InputError(f"expected a JSON object: {_WHAT}", path=path)
    if _looks_like_evaluation(rec):
        raise InputError(
            "this is one run's evaluation, not a comparison: give two evaluations "
            f"(BASE CAND with --metric), or {_WHAT}",
            path=path,
        )
    binary = rec.get("binary")
    if binary is not None and not isinstance(binary, bool):
        raise InputError("expected true or false", path=path, field="binary")
    per_query = rec.get("per_query")
    if isinstance(per_query, Mapping) and per_query:
        a, b = [], []
        for qid, row in per_query.items():
            where = f"per_query.{qid}"
            if not isinstance(row, Mapping):
                raise InputError(
                    "expected an object with 'baseline' and 'candidate'", path=path, field=where
                )
            a.append(_number(row.get("baseline"), f"{where}.baseline", path))
            b.append(_number(row.get("candidate"), f"{where}.candidate", path))
        if binary is None:
            binary = all(v in (0.0, 1.0) for v in (*a, *b))
        spread = spread_from_values(a, b, binary=binary, source="comparison")
    elif binary and all(k in rec for k in ("n", "fixed", "broken", "baseline_mean")):
        spread = _from_counts(rec, path)
    else:
        raise InputError(
            f"no per-question values ('per_query') and no fixed/broken counts: give {_WHAT}",
            path=path,
        )
    ci = rec.get("ci")
    confidence = rec.get("confidence")
    if ci is not None:
        if not isinstance(ci, list) or len(ci) != 2:
            raise InputError("expected [lower, upper]", path=path, field="ci")
        ci = [_number(v, "ci", path) for v in ci]
    if confidence is not None:
        confidence = _number(confidence, "confidence", path)
    return with_observed(spread, ci, confidence)


def _from_counts(rec: Mapping[str, Any], path: Path | None) -> Spread:
    n = _count(rec["n"], "n", path)
    fixed = _count(rec["fixed"], "fixed", path)
    broken = _count(rec["broken"], "broken", path)
    p = _number(rec["baseline_mean"], "baseline_mean", path)
    if n == 0 or fixed + broken > n:
        raise InputError(
            f"{fixed} fixed and {broken} broken do not fit in {n} questions", path=path, field="n"
        )
    if not 0.0 <= p <= 1.0:
        raise InputError(
            "a binary metric's baseline mean lies in [0, 1]", path=path, field="baseline_mean"
        )
    f, k = fixed / n, broken / n
    q, d = f + k, f - k
    if not 0.0 <= p + d <= 1.0:
        raise InputError(
            f"a baseline mean of {p:g} with {fixed} fixed and {broken} broken of {n} "
            "gives a candidate mean outside [0, 1]",
            path=path,
            field="baseline_mean",
        )
    return Spread(
        True,
        p,
        d,
        p * (1 - p),
        (p + d) * (1 - p - d),
        q - d * d,
        q,
        fixed=f,
        broken=k,
        source="comparison",
        observed_n=n,
    )
