"""What a judge cost, per answer set: one reading of its usage counters, the gain between two
readings, and whether the token counts say anything at all.

Both ``ragmeter answers check --judge`` and ``ragmeter run``'s ``[judge]`` report the judge's
usage per answer set (variant) with these helpers, so the two agree on the figures and on the
rule for token counts a server did not send:

- a reply without token counts adds nothing to the token sums and is counted in
  ``unknown_usage``: the sums (and the cost) are then a floor;
- when some replies had no counts and the sums are 0 (:func:`tokens_unknown`), the sums say
  nothing: :func:`usage_between` makes them (and the cost) None, written as null in JSON and
  shown as unknown ("-"), never as a measured 0 or "0+0" (the generation usage's rule too).

One judge object serves every answer set and its counters only grow, so an answer set's figures
are what the counters gained while its answers were judged (:func:`usage_between`). A re-run
served from the judge cache therefore reports its cache hits and 0 requests and tokens (a
measured 0: nothing was sent), never the first run's tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["COST_DIGITS", "UNMEASURED", "tokens_unknown", "usage_between", "usage_reading"]

#: decimals a cost difference keeps (two readings of a float sum differ by rounding noise)
COST_DIGITS = 10
#: the figures that say nothing when no reply had token counts (None then, never 0)
UNMEASURED = ("prompt_tokens", "completion_tokens", "cost")


def usage_reading(judge: Any) -> dict[str, Any] | None:
    """The judge's usage counters now (the keys ``answers check --format json`` writes as
    ``judge_usage``), or None for a judge that counts no usage (the fake judge: nothing sent,
    so no token count to report)."""
    usage = getattr(judge, "usage", None)  # an engine's wrapper reads it from the judge
    if usage is None or not hasattr(usage, "to_dict"):
        return None
    return dict(usage.to_dict())


def usage_between(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """What the judge's counters gained from ``before`` to ``after`` (two :func:`usage_reading`
    results), every key kept; a counter the judge does not keep (a cost without prices: None)
    stays None. When no reply of the span had token counts (:func:`tokens_unknown`), the token
    sums and the cost are None: nothing was measured, and a 0 would read as a measurement.
    None when the judge counts no usage."""
    if before is None or after is None:
        return None
    out: dict[str, Any] = {}
    for key, value in after.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            out[key] = value
            continue
        start = before.get(key)
        delta = value - (start if isinstance(start, (int, float)) else 0)
        out[key] = round(delta, COST_DIGITS) if isinstance(delta, float) else delta
    if tokens_unknown(out):
        out.update({key: None for key in UNMEASURED if key in out})
    return out


def tokens_unknown(usage: Mapping[str, Any]) -> bool:
    """True when the token sums (and the cost) of ``usage`` say nothing: some replies came
    without token counts and the others, if any, counted none. Their 0 is then not a
    measurement, and is shown as unknown. A usage without unknown replies is never unknown:
    a re-run served from the cache sent nothing and truly spent 0 tokens."""
    return bool(usage.get("unknown_usage")) and not (
        usage.get("prompt_tokens") or usage.get("completion_tokens")
    )
