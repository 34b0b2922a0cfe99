"""How many questions a paired comparison needs: the expected interval half-width at a golden-set
size, and the size needed for a target half-width.

The interval ``ragmeter compare`` reports is a paired percentile bootstrap over questions
(``_bootstrap``). For a mean of n per-question differences ``d_i`` with variance ``Var(d)`` its
half-width is, to a normal approximation,

    half_width(n) = z * sqrt(Var(d) / n),        z = the normal quantile at (1 + confidence) / 2

and the n needed for a target half-width h is the smallest n with half_width(n) <= h, i.e.
``ceil(z^2 * Var(d) / h^2)``.

Binary outcomes (answer correct or not, Hit, AllR): with p01 the share of questions the candidate
fixes and p10 the share it breaks, ``d`` is +1, -1 or 0, so

    Var(d) = p01 + p10 - (p01 - p10)^2 = discordance - difference^2

with discordance = p01 + p10 (the share of questions that change outcome) and difference =
p01 - p10 (the expected headline). Only the questions that change move a resampled mean, which
is why the width tracks the fixed-plus-broken count, not n and not the baseline rate.
Graded outcomes (nDCG, recall): ``Var(d)`` is the variance of a past comparison's per-question
differences (the plug-in variance, as the bootstrap itself uses).

Beside the paired width two reference widths are given for the same n:

- one rate: ``z * sqrt(p (1 - p) / n)`` for one variant's rate p alone (for a graded metric,
  ``z * sd / sqrt(n)`` of the baseline's values): how precisely one score is known, the normal
  approximation for one rate (0.8 at 50 questions: +-0.111; at 200: +-0.055);
- two averages: ``z * sqrt((Var(a) + Var(b)) / n)``: the difference of two averages treated as
  independent samples. Throwing the pairing away overstates the noise.

Accuracy. Over many simulated golden sets the bootstrap's mean half-width is within a few per
cent of the formula (a little narrower: the bootstrap uses the plug-in variance, and the number of
changed questions varies from set to set). When fewer than :data:`FEW_CHANGED` questions are
expected to change, the interval is lumpy (it moves in steps of one question) and on average
clearly narrower than predicted; such rows are marked ``rough``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

from .._errors import UsageError
from ._plan_io import spread_from_comparison
from ._spread import Spread, check_number, spread_from_rates

#: The default golden-set sizes of a plan.
DEFAULT_SIZES = (50, 100, 200, 500)
#: Rows expecting fewer changed questions than this are marked rough.
FEW_CHANGED = 5.0


def z_value(confidence: float) -> float:
    """The two-sided normal quantile for ``confidence`` (1.96 at 0.95)."""
    check_number("confidence", confidence)
    if not 0.0 < confidence < 1.0:
        raise UsageError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    return NormalDist().inv_cdf((1.0 + confidence) / 2.0)


def half_width(variance: float, n: int, z: float) -> float:
    """``z * sqrt(variance / n)``: the normal-approximation half-width of a mean of n values."""
    return z * math.sqrt(variance / n)


def n_needed(variance: float, target: float, z: float) -> int:
    """The smallest n with ``half_width(variance, n, z) <= target`` (1 when nothing varies)."""
    exact = z * z * variance / (target * target)
    # Relative slack so that an exact integer (up to float rounding) is not rounded up.
    return max(1, math.ceil(exact * (1.0 - 1e-12)))


@dataclass(frozen=True)
class PlanRow:
    """Expected 95% (or other) half-widths at one golden-set size."""

    n: int
    paired: float | None
    one_rate: float
    two_averages: float
    expected_changed: float | None

    @property
    def rough(self) -> bool:
        return self.expected_changed is not None and self.expected_changed < FEW_CHANGED

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "expected_changed": self.expected_changed,
            "paired_half_width": self.paired,
            "one_rate_half_width": self.one_rate,
            "two_averages_half_width": self.two_averages,
            "rough": self.rough,
        }


@dataclass(frozen=True)
class SizePlan:
    """Expected interval half-widths by golden-set size, and the size for a target half-width."""

    spread: Spread
    confidence: float
    sizes: tuple[int, ...]
    target: float | None = None
    rows: tuple[PlanRow, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rows", tuple(self.row(n) for n in self.sizes))

    @property
    def z(self) -> float:
        return z_value(self.confidence)

    def row(self, n: int) -> PlanRow:
        s, z = self.spread, self.z
        paired = None if s.var_diff is None else half_width(s.var_diff, n, z)
        return PlanRow(
            n=n,
            paired=paired,
            one_rate=half_width(s.var_baseline, n, z),
            two_averages=half_width(s.var_baseline + s.var_candidate, n, z),
            expected_changed=None if s.changed is None else s.changed * n,
        )

    def n_for(self, target: float) -> dict[str, int | None]:
        """Questions needed for ``target`` half-width: paired, one rate, two averages."""
        t = _check_target(target)
        s, z = self.spread, self.z
        return {
            "paired": None if s.var_diff is None else n_needed(s.var_diff, t, z),
            "one_rate": n_needed(s.var_baseline, t, z),
            "two_averages": n_needed(s.var_baseline + s.var_candidate, t, z),
        }

    @property
    def observed(self) -> dict[str, Any] | None:
        """The past comparison's own interval beside the width predicted at its n."""
        s = self.spread
        if s.observed_n is None or s.observed_ci is None or s.var_diff is None:
            return None
        conf = s.observed_confidence
        if conf is not None and abs(conf - self.confidence) > 1e-12:
            return None
        lo, hi = s.observed_ci
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return None
        return {
            "n": s.observed_n,
            "ci": [lo, hi],
            "half_width": (hi - lo) / 2.0,
            "predicted_half_width": half_width(s.var_diff, s.observed_n, self.z),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "confidence": self.confidence,
            "z": self.z,
            **self.spread.to_dict(),
            "rows": [r.to_dict() for r in self.rows],
            "target": self.target,
            "n_for_target": None if self.target is None else self.n_for(self.target),
            "observed": self.observed,
        }


# -- inputs ----------------------------------------------------------------------------------------
#: the smallest target half-width: below it the questions needed overflow any count (and a
#: metric in [0, 1] is not measured to nine decimals)
MIN_TARGET = 1e-9


def _check_target(target: float) -> float:
    t = check_number("the target half-width", target)
    if t <= 0.0:
        raise UsageError(f"the target half-width must be positive, got {target}")
    if not MIN_TARGET <= t <= 1.0:
        raise UsageError(
            f"the target half-width must lie in [{MIN_TARGET:g}, 1] (a difference of two "
            f"means in [0, 1]), got {target}"
        )
    return t


def check_sizes(sizes: Iterable[int]) -> tuple[int, ...]:
    """Sorted distinct golden-set sizes; each a positive whole number."""
    out: set[int] = set()
    for n in sizes:
        try:
            whole = operator.index(n)  # ints and numpy ints; not floats or strings
        except TypeError:
            raise UsageError(
                f"a golden-set size must be a whole number of questions, got {n!r}"
            ) from None
        if isinstance(n, bool):
            raise UsageError(f"a golden-set size must be a whole number of questions, got {n!r}")
        if whole < 1:
            raise UsageError(f"a golden-set size must be at least 1 question, got {whole}")
        out.add(whole)
    if not out:
        raise UsageError("give at least one golden-set size")
    return tuple(sorted(out))


# -- the entry point -------------------------------------------------------------------------------
def plan_size(
    baseline_rate: float | None = None,
    discordance: float | None = None,
    *,
    difference: float = 0.0,
    comparison: Any = None,
    sizes: Iterable[int] = DEFAULT_SIZES,
    target: float | None = None,
    confidence: float | None = None,
) -> SizePlan:
    """Expected paired-interval half-widths at each golden-set size in ``sizes``.

    Give either rates (binary outcomes): ``baseline_rate``, optionally ``discordance`` (the share
    of questions expected to change outcome, fixed plus broken) and ``difference`` (fixed minus
    broken); or ``comparison``: a past :class:`~ragmeter.paired.Comparison` or its JSON record,
    whose per-question differences give ``Var(d)`` for binary and graded metrics alike.
    ``target`` adds the questions needed for that half-width. ``confidence`` defaults to the
    comparison's, else 0.95.
    """
    if comparison is not None:
        if baseline_rate is not None or discordance is not None or difference != 0.0:
            raise UsageError(
                "give rates (baseline rate, discordance, difference) or a past comparison, not both"
            )
        spread = spread_from_comparison(comparison)
        conf = spread.observed_confidence if confidence is None else confidence
    else:
        if baseline_rate is None:
            raise UsageError("give the baseline rate (and the discordance), or a past comparison")
        spread = spread_from_rates(baseline_rate, discordance, difference)
        conf = confidence
    conf = 0.95 if conf is None else conf
    z_value(conf)  # checks it
    if target is not None:
        target = _check_target(target)
    return SizePlan(spread=spread, confidence=float(conf), sizes=check_sizes(sizes), target=target)
