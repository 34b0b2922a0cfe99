"""Interval ends print on the right side of zero (issue 27, item 8): "[+0.000, +0.149] includes
zero" hid the point in the rounding."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter._interval import ZERO, end_text, interval_text


def test_ends_that_round_to_zero_show_their_side() -> None:
    assert interval_text(0.0, 0.149) == "[0, +0.149]"
    assert interval_text(-0.0004, 0.149) == "[-0.0004, +0.149]"
    assert interval_text(0.00003, 0.2) == "[+0.00003, +0.200]"
    assert interval_text(-0.024, 0.093) == "[-0.024, +0.093]"  # ordinary ends: unchanged
    assert interval_text(-1e-17, 0.5) == "[0, +0.500]"  # float noise of a 0/1 mean is zero
    assert interval_text(0.00004, 0.2, digits=4) == "[+0.00004, +0.2000]"


def test_every_interface_that_prints_a_paired_interval_uses_the_rule() -> None:
    from ragmeter.paired import compare

    base = {f"q{i}": 0.0 for i in range(20)}
    cand = {f"q{i}": (1.0 if i < 2 else 0.0) for i in range(20)}
    c = compare(base, cand, seed=0, n_resamples=500)
    lo, hi = c.ci
    assert lo == 0.0 and hi > 0  # two fixed, none broken: a resample with neither is zero
    assert c.overall.ci_text == f"[0, {end_text(hi)}]"


@settings(max_examples=300, deadline=None)
@given(
    x=st.floats(min_value=-1.0, max_value=1.0, allow_nan=False),
    digits=st.integers(min_value=1, max_value=4),
)
def test_the_printed_sign_is_the_side_of_zero(x: float, digits: int) -> None:
    text = end_text(x, digits)
    if abs(x) < ZERO:
        assert text == "0"
        return
    assert text[0] == ("+" if x > 0 else "-")
    shown = float(text)
    assert shown != 0.0 and math.copysign(1.0, shown) == math.copysign(1.0, x)
    places = len(text.split(".")[1])
    assert places >= digits
    assert abs(shown - x) <= 0.5 * 10.0**-places + 1e-15
