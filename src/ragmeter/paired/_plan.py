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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

from .._errors import UsageError

#: The default golden-set sizes of a plan.
DEFAULT_SIZES = (50, 100, 200, 500)
#: Rows expecting fewer changed questions than this are marked rough.
FEW_CHANGED = 5.0


def z_value(confidence: float) -> float:
    """The two-sided normal quantile for ``confidence`` (1.96 at 0.95)."""
    _check_number("confidence", confidence)
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
        return {"source": self.source, "binary": self.binary,
                "baseline_mean": self.baseline_mean, "candidate_mean": self.candidate_mean,
                "difference": self.difference, "changed_share": self.changed,
                "fixed_share": self.fixed, "broken_share": self.broken,
                "var_diff": self.var_diff, "var_baseline": self.var_baseline,
                "var_candidate": self.var_candidate, "observed_n": self.observed_n}


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
        return {"n": self.n, "expected_changed": self.expected_changed,
                "paired_half_width": self.paired, "one_rate_half_width": self.one_rate,
                "two_averages_half_width": self.two_averages, "rough": self.rough}


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
        return PlanRow(n=n, paired=paired, one_rate=half_width(s.var_baseline, n, z),
                       two_averages=half_width(s.var_baseline + s.var_candidate, n, z),
                       expected_changed=None if s.changed is None else s.changed * n)

    def n_for(self, target: float) -> dict[str, int | None]:
        """Questions needed for ``target`` half-width: paired, one rate, two averages."""
        t = _check_target(target)
        s, z = self.spread, self.z
        return {"paired": None if s.var_diff is None else n_needed(s.var_diff, t, z),
                "one_rate": n_needed(s.var_baseline, t, z),
                "two_averages": n_needed(s.var_baseline + s.var_candidate, t, z)}

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
        return {"n": s.observed_n, "ci": [lo, hi], "half_width": (hi - lo) / 2.0,
                "predicted_half_width": half_width(s.var_diff, s.observed_n, self.z)}

    def to_dict(self) -> dict[str, Any]:
        return {"confidence": self.confidence, "z": self.z, **self.spread.to_dict(),
                "rows": [r.to_dict() for r in self.rows], "target": self.target,
                "n_for_target": None if self.target is None else self.n_for(self.target),
                "observed": self.observed}


# -- inputs ----------------------------------------------------------------------------------------
def _check_number(name: str, value: float) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise UsageError(f"{name} must be a finite number, got {value}")
    return v


def _check_share(name: str, value: float) -> float:
    v = _check_number(name, value)
    if not 0.0 <= v <= 1.0:
        raise UsageError(f"{name} is a share of questions and must lie in [0, 1], got {value}")
    return v


def _check_target(target: float) -> float:
    t = _check_number("the target half-width", target)
    if t <= 0.0:
        raise UsageError(f"the target half-width must be positive, got {target}")
    return t


def check_sizes(sizes: Iterable[int]) -> tuple[int, ...]:
    """Sorted distinct golden-set sizes; each a positive whole number."""
    out: set[int] = set()
    for n in sizes:
        try:
            whole = operator.index(n)  # ints and numpy ints; not floats or strings
        except TypeError:
            raise UsageError(f"a golden-set size must be a whole number of questions, "
                             f"got {n!r}") from None
        if isinstance(n, bool):
            raise UsageError(f"a golden-set size must be a whole number of questions, got {n!r}")
        if whole < 1:
            raise UsageError(f"a golden-set size must be at least 1 question, got {whole}")
        out.add(whole)
    if not out:
        raise UsageError("give at least one golden-set size")
    return tuple(sorted(out))


def spread_from_rates(baseline_rate: float, discordance: float | None = None,
                      difference: float = 0.0) -> Spread:
    """Binary outcomes: the baseline's rate, the share of questions expected to change outcome
    (fixed plus broken) and the expected difference (fixed minus broken)."""
    p = _check_share("the baseline rate", baseline_rate)
    d = _check_number("the expected difference", difference)
    if not -1.0 <= d <= 1.0:
        raise UsageError(f"the expected difference must lie in [-1, 1], got {difference}")
    if not 0.0 <= p + d <= 1.0:
        raise UsageError(f"a baseline rate of {p:g} and a difference of {d:+g} give a candidate "
                         f"rate of {p + d:g}, outside [0, 1]")
    if discordance is None:
        return Spread(True, p, d, p * (1 - p), (p + d) * (1 - p - d), None, None)
    q = _check_share("the discordance", discordance)
    if q < abs(d) - 1e-12:
        raise UsageError(f"a difference of {d:+g} needs at least {abs(d):g} of the questions to "
                         f"change outcome, but the discordance is {q:g} (fixed plus broken "
                         "is at least |fixed minus broken|)")
    fixed, broken = (q + d) / 2.0, max(0.0, (q - d) / 2.0)
    if broken > p + 1e-12:
        raise UsageError(f"{broken:g} of the questions broken is more than the baseline gets "
                         f"right ({p:g}); lower the discordance or raise the difference")
    if fixed > 1.0 - p + 1e-12:
        raise UsageError(f"{fixed:g} of the questions fixed is more than the baseline gets wrong "
                         f"({1 - p:g}); lower the discordance or the difference")
    return Spread(True, p, d, p * (1 - p), (p + d) * (1 - p - d), max(0.0, q - d * d), q,
                  fixed=fixed, broken=broken)


def spread_from_values(baseline: Sequence[float], candidate: Sequence[float], *, binary: bool,
                       source: str = "values") -> Spread:
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
    return Spread(binary, float(a.mean()), float(d.mean()), float(a.var()), float(b.var()),
                  float(d.var()), changed, fixed=fixed, broken=broken, source=source,
                  observed_n=len(a))


def spread_from_comparison(comparison: Any) -> Spread:
    """A :class:`~ragmeter.paired.Comparison`, or the JSON ``ragmeter compare --format json``
    writes (read with :func:`ragmeter.paired._plan_io.read_comparison`)."""
    from ._comparison import Comparison

    if isinstance(comparison, Spread):
        return comparison
    if isinstance(comparison, Comparison):
        s = spread_from_values(comparison.baseline_values, comparison.candidate_values,
                               binary=comparison.binary, source="comparison")
        return _with_observed(s, comparison.ci, comparison.confidence)
    if isinstance(comparison, Mapping):
        from ._plan_io import spread_from_record

        return spread_from_record(comparison)
    raise UsageError(f"expected a Comparison or its to_dict() record, got "
                     f"{type(comparison).__name__}")


def _with_observed(s: Spread, ci: Sequence[float] | None, confidence: float | None) -> Spread:
    from dataclasses import replace

    ci_t = None if ci is None else (float(ci[0]), float(ci[1]))
    return replace(s, observed_ci=ci_t, observed_confidence=confidence)


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
            raise UsageError("give rates (baseline rate, discordance, difference) or a past "
                             "comparison, not both")
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
    return SizePlan(spread=spread, confidence=float(conf), sizes=check_sizes(sizes),
                    target=target)
