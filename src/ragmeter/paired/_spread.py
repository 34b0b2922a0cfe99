"""What a size plan knows about two variants: the spread of their per-question values.

A :class:`Spread` comes from rates (binary outcomes) or from two lists of per-question values;
``_plan_io`` builds one from a saved comparison and ``_plan`` turns it into half-widths. It sits
below both, so that neither imports the other in a circle.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .._errors import UsageError

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Spread:
    """What a plan needs to know about the two variants, from rates or from a past comparison.

    ``var_diff`` is ``Var(d)``, None when the share of changing questions is not known (then only
    the one-rate and two-average widths can be given). ``fixed`` / ``broken`` are shares
    (binary outcomes only); ``changed`` is the share of questions whose value changes.
    """

    binary: bool
    baseline_mean: float
    difference: float
    var_baseline: float
    var_candidate: float
    var_diff: float | None
    changed: float | None
    fixed: float | None = None
    broken: float | None = None
    source: str = "rates"
    observed_n: int | None = None
    observed_ci: tuple[float, float] | None = None
    observed_confidence: float | None = None

    @property
    def candidate_mean(self) -> float:
        return self.baseline_mean + self.difference

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "binary": self.binary,
            "baseline_mean": self.baseline_mean,
            "candidate_mean": self.candidate_mean,
            "difference": self.difference,
            "changed_share": self.changed,
            "fixed_share": self.fixed,
            "broken_share": self.broken,
            "var_diff": self.var_diff,
            "var_baseline": self.var_baseline,
            "var_candidate": self.var_candidate,
            "observed_n": self.observed_n,
        }


def check_number(name: str, value: float) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise UsageError(f"{name} must be a finite number, got {value}")
    return v


def _check_share(name: str, value: float) -> float:
    v = check_number(name, value)
    if not 0.0 <= v <= 1.0:
        raise UsageError(f"{name} is a share of questions and must lie in [0, 1], got {value}")
    return v


def spread_from_rates(
    baseline_rate: float, discordance: float | None = None, difference: float = 0.0
) -> Spread:
    """Binary outcomes: the baseline's rate, the share of questions expected to change outcome
    (fixed plus broken) and the expected difference (fixed minus broken)."""
    p = _check_share("the baseline rate", baseline_rate)
    d = check_number("the expected difference", difference)
    if not -1.0 <= d <= 1.0:
        raise UsageError(f"the expected difference must lie in [-1, 1], got {difference}")
    if not 0.0 <= p + d <= 1.0:
        raise UsageError(
            f"a baseline rate of {p:g} and a difference of {d:+g} give a candidate "
            f"rate of {p + d:g}, outside [0, 1]"
        )
    if discordance is None:
        return Spread(True, p, d, p * (1 - p), (p + d) * (1 - p - d), None, None)
    q = _check_share("the discordance", discordance)
    if q < abs(d) - 1e-12:
        raise UsageError(
            f"a difference of {d:+g} needs at least {abs(d):g} of the questions to "
            f"change outcome, but the discordance is {q:g} (fixed plus broken "
            "is at least |fixed minus broken|)"
        )
    fixed, broken = (q + d) / 2.0, max(0.0, (q - d) / 2.0)
    if broken > p + 1e-12:
        raise UsageError(
            f"{broken:g} of the questions broken is more than the baseline gets "
            f"right ({p:g}); lower the discordance or raise the difference"
        )
    if fixed > 1.0 - p + 1e-12:
        raise UsageError(
            f"{fixed:g} of the questions fixed is more than the baseline gets wrong "
            f"({1 - p:g}); lower the discordance or the difference"
        )
    return Spread(
        True,
        p,
        d,
        p * (1 - p),
        (p + d) * (1 - p - d),
        max(0.0, q - d * d),
        q,
        fixed=fixed,
        broken=broken,
    )


def spread_from_values(
    baseline: Sequence[float] | np.ndarray,
    candidate: Sequence[float] | np.ndarray,
    *,
    binary: bool,
    source: str = "values",
) -> Spread:
    """Per-question values of two variants on the same questions (plug-in variances)."""
    import numpy as np

    a = np.asarray(baseline, dtype=np.float64)
    b = np.asarray(candidate, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise UsageError("baseline and candidate values must be two lists of the same length")
    if len(a) == 0:
        raise UsageError("a plan needs at least one compared question")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise UsageError("per-question values must be finite numbers")
    d = b - a
    changed = float(np.mean(np.abs(d) > 1e-12))
    fixed = broken = None
    if binary:
        fixed = float(np.mean((a == 0) & (b == 1)))
        broken = float(np.mean((a == 1) & (b == 0)))
    return Spread(
        binary,
        float(a.mean()),
        float(d.mean()),
        float(a.var()),
        float(b.var()),
        float(d.var()),
        changed,
        fixed=fixed,
        broken=broken,
        source=source,
        observed_n=len(a),
    )


def with_observed(s: Spread, ci: Sequence[float] | None, confidence: float | None) -> Spread:
    """``s`` with the past comparison's own interval, shown beside the predicted width."""
    ci_t = None if ci is None else (float(ci[0]), float(ci[1]))
    return replace(s, observed_ci=ci_t, observed_confidence=confidence)
