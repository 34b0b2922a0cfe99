"""How an interval's ends are printed: always on the right side of zero.

A paired interval's verdict turns on the signs of its ends ("includes zero" when ``lo <= 0 <=
hi``). Rounded to three places, an end of -0.0004 reads "+0.000" or "-0.000", and an interval
printed "[+0.000, +0.149]" beside "includes zero" hides the point in the rounding. Every
interface (the demo, ``compare``, ``run``, ``confirm``, the lab and the report) prints interval
ends with :func:`end_text` / :func:`interval_text`:

- an end exactly zero prints as ``0`` (no sign: it sits on zero, which is what "includes zero"
  means);
- any other end prints with ``digits`` decimals and its sign, and with more decimals when
  ``digits`` would round it to zero, until its first significant digit shows (``-0.0004``,
  ``+0.00003``), so the printed sign is always the side of zero the end is on;
- an end within :data:`ZERO` of zero (float noise in a mean of 0/1 differences) is zero.
"""

from __future__ import annotations

import math

#: below this an interval end is zero (sums of 0/1 differences carry float noise of ~1e-17)
ZERO = 1e-12


def end_text(x: float, digits: int = 3) -> str:
    """One interval end: ``0`` for zero, else signed with ``digits`` decimals, or with as many
    more as its first significant digit needs (``+0.149``, ``-0.0004``)."""
    if not math.isfinite(x):
        return f"{x:+}"
    if abs(x) < ZERO:
        return "0"
    places = digits
    if round(abs(x), digits) == 0:
        places = max(digits, -math.floor(math.log10(abs(x))))
        # rounding up at the first significant digit can add a place (0.00096 -> 0.0010): keep it
        places = min(places, 12)
    return f"{x:+.{places}f}"


def interval_text(lo: float, hi: float, digits: int = 3) -> str:
    """``[lo, hi]`` with each end on the right side of zero (see the module docstring)."""
    return f"[{end_text(lo, digits)}, {end_text(hi, digits)}]"
