"""Apply a diagnosis's refutation rule, as written, to the variants an experiment measured.

The diagnosis fixes the rule before any comparison is run ("abandon if fixed - broken <= 0 on
AllR@k or the 95% paired bootstrap interval of the difference includes 0", on the tune split).
Once an experiment file has measured the change (and perhaps the alternative fix, each its own
run), this module applies that rule to every variant measured at the rule's metric: the
variant's per-question values paired against the baseline's by :func:`ragmeter.compare`, read on
the split the rule names. The other split (held out) is left alone: it is where the survivor is
confirmed, and a split that helped choose cannot confirm the choice.

Call::

    verdicts = apply_rule(result, "AllR@4")        # result: ragmeter.retrieval.run_experiment(...)
    verdicts.checks                                # one RuleCheck per variant measured at AllR@4
    verdicts.sentences()                           # what the demo and the example README print

Nothing here is typed in: fixed, broken, the interval and the sign test are computed from the
evaluations every time.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from .._errors import UsageError
from .._interval import interval_text
from ..metrics import Metric, parse
from ..paired import PairedStats, compare


@dataclass(frozen=True)
class RuleCheck:
    """One variant against the baseline under the rule."""

    variant: str
    changes: tuple[str, ...]
    metric: Metric
    split: str | None  # None: every question (the evaluations carry no split)
    stats: PairedStats

    def __post_init__(self) -> None:
        object.__setattr__(self, "metric", parse(self.metric))  # a metric string is accepted

    @property
    def net(self) -> int:
        """fixed - broken (wins - losses for a metric that is not binary)."""
        s = self.stats
        return (
            (s.fixed - s.broken)
            if s.fixed is not None and s.broken is not None
            else s.wins - s.losses
        )

    @property
    def refuted(self) -> bool:
        """The rule as written: net <= 0, or the interval includes 0."""
        lo, hi = self.stats.ci
        return self.net <= 0 or lo <= 0 <= hi

    @property
    def reason(self) -> str:
        if self.net <= 0:
            return f"fixed - broken = {self.net} <= 0"
        if self.refuted:
            return f"the interval {self.interval} includes 0"
        return f"fixed - broken = {self.net:+d} > 0 and the interval {self.interval} excludes 0"

    @property
    def interval(self) -> str:
        lo, hi = self.stats.ci
        return interval_text(lo, hi)

    def counts(self) -> str:
        s = self.stats
        if s.fixed is None:
            return f"wins {s.wins}, losses {s.losses}"
        return f"fixed {s.fixed}, broken {s.broken}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "changes": list(self.changes),
            "metric": str(self.metric),
            "split": self.split,
            **self.stats.to_dict(),
            "refuted": self.refuted,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Verdicts:
    """The rule applied to every variant measured at its metric."""

    metric: Metric
    split: str | None
    checks: tuple[RuleCheck, ...]
    #: (variant, why the rule does not apply to it)
    skipped: tuple[tuple[str, str], ...]
    #: the other splits and their question counts: kept for confirming the survivor
    held_out: tuple[tuple[str, int], ...]
    golden_version: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "metric", parse(self.metric))  # a metric string is accepted

    @property
    def survivors(self) -> tuple[RuleCheck, ...]:
        return tuple(c for c in self.checks if not c.refuted)

    @property
    def refuted(self) -> tuple[RuleCheck, ...]:
        return tuple(c for c in self.checks if c.refuted)

    def where(self) -> str:
        """'the tune split (57 questions)' or 'all 80 questions'."""
        n = self.checks[0].stats.n if self.checks else 0
        return f"the {self.split} split ({n} questions)" if self.split else f"all {n} questions"

    def sentences(self) -> list[str]:
        """The verdict and the next step, in plain words (one sentence each)."""
        if not self.checks:
            return [
                (
                    f"No variant of the experiment was measured at {self.metric}: the rule "
                    "cannot be applied yet."
                )
            ]
        ref = [f"{c.variant} ({c.counts()}; {c.reason})" for c in self.refuted]
        sur = [
            f"{c.variant} survives it ({c.counts()}, interval {c.interval})" for c in self.survivors
        ]
        if ref and sur:
            verdict = f"The rule as written refutes {_and(ref)}; {_and(sur)}."
        elif ref:
            verdict = f"The rule as written refutes every measured variant: {_and(ref)}."
        else:
            verdict = f"Every measured variant survives the rule as written: {_and(sur)}."
        confirm = "once on fresh questions that played no part in the choice"
        if self.held_out:
            held = _and([f"{k} split ({n} questions)" for k, n in self.held_out])
            confirm = f"once on the {held}, which played no part in the choice"
        if len(self.survivors) == 1:
            s = self.survivors[0].variant
            step = (
                f"Next: confirm {s} {confirm}; then regenerate the answers with {s}'s prompt "
                "contexts and check and diagnose them again."
            )
        elif self.survivors:
            best = max(self.survivors, key=lambda c: c.stats.ci[0])
            step = (
                f"Next: several survive, and the best of several is flattered by the luck "
                f"that picked it: take {best.variant} (the highest lower bound) and confirm "
                f"it {confirm}; then regenerate the answers with its prompt contexts."
            )
        else:
            step = (
                "Next: ship none of them; run the alternative fix the diagnosis names, as its "
                "own run under the same rule."
            )
        return [verdict, step]


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def apply_rule(
    result: Any,
    metric: Metric | str,
    *,
    split: str | None = "tune",
    seed: int = 0,
    n_resamples: int = 5000,
) -> Verdicts:
    """Apply the rule on ``metric`` to every non-baseline variant of ``result`` (an
    :class:`~ragmeter.experiments._runner.ExperimentResult`) that measured it.

    ``split``: the split the rule names; when the evaluations carry no such split, every
    question is used and :attr:`Verdicts.split` is None.
    """
    metric = parse(metric)
    base = result.baseline
    if metric not in base.evaluation.metrics:
        raise UsageError(f"the baseline was not scored at {metric}: the rule cannot be applied")
    checks: list[RuleCheck] = []
    skipped: list[tuple[str, str]] = []
    held: tuple[tuple[str, int], ...] = ()
    used: str | None = None
    version = None
    for v in result.variants:
        if v.is_baseline:
            continue
        if metric not in v.evaluation.metrics:
            why = (
                f"changes {', '.join(v.changes) or 'nothing'} and is measured at "
                f"k = {v.settings.k}, not at {metric}"
            )
            skipped.append((v.name, why))
            continue
        with warnings.catch_warnings():
            # small-slice and fairness notes stay in Comparison.warnings; the rule reads a split
            warnings.simplefilter("ignore")
            c = compare(base.evaluation, v.evaluation, metric, seed=seed, n_resamples=n_resamples)
        version = c.golden_version
        if split is not None and split in c.splits:
            stats, used = c.splits[split].stats, split
            held = tuple((k, r.stats.n) for k, r in c.splits.items() if k != split)
        else:
            stats, used = c.overall, None
        checks.append(RuleCheck(v.name, tuple(v.changes), metric, used, stats))
    return Verdicts(metric, used, tuple(checks), tuple(skipped), held, version)
