"""How a p-value is printed: never as 0.000.

An exact sign test on 80 questions can give p = 3e-5; rounded to three places it reads "0.000",
which says "impossible" where the truth is "very unlikely under no change". Below 0.001 the text
is "< 0.001"; otherwise three significant digits, trailing zeros dropped (0.0312, 0.5, 1).
"""

from __future__ import annotations

#: Below this a p-value prints as "< 0.001".
FLOOR = 0.001


def format_p(p: float) -> str:
    """The printed form of a p-value in [0, 1] (tables, verdict lines, reports, the lab)."""
    if p < FLOOR:
        return f"< {FLOOR:g}"
    return f"{p:.3g}"


def p_is(p: float) -> str:
    """The relation and value for a sentence, two significant digits: "< 0.001", "= 0.0042",
    "= 0.75", "= 1" (so "p < 0.001", never "p = < 0.001" nor "p = 0.00")."""
    return f"< {FLOOR:g}" if p < FLOOR else f"= {p:.2g}"
