"""Paired comparison of two answer variants on "answer correct and supported" (1/0 per
question), through :func:`ragmeter.paired.compare`: fixed and broken questions, the paired
bootstrap interval of the difference and the sign test, on the questions both variants scored.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from .._errors import UsageError
from .report import AnswerReport

#: the outcome compared (1/0 per question); not a registry metric, so it travels as text
METRIC_LABEL = "answer correct and supported"


@dataclass(frozen=True)
class AnswerComparison:
    baseline: str
    candidate: str
    split: str | None
    comparison: Any  # ragmeter.paired.Comparison

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline_variant": self.baseline,
            "candidate_variant": self.candidate,
            "split": self.split,
            **self.comparison.to_dict(),
        }


def outcomes(report: AnswerReport, split: str | None = None) -> dict[str, float]:
    """``{qid: 1.0 | 0.0}`` of ``ok`` for every scored question (of ``split`` when given)."""
    return {
        c.id: float(bool(c.ok))
        for c in report.checks
        if c.ok is not None and (split is None or c.split == split)
    }


def compare_answers(
    baseline: AnswerReport,
    candidate: AnswerReport,
    *,
    split: str | None = None,
    questions: Collection[str] | None = None,
    seed: int = 0,
    n_resamples: int = 5000,
) -> AnswerComparison:
    """Compare two checked variants question by question (same golden version required);
    ``questions`` restricts the comparison to those ids (e.g. the questions with labelled
    spans, where a context ablation has an oracle context)."""
    from ..paired import compare

    if baseline.golden_version != candidate.golden_version:
        raise UsageError(
            f"variants were checked on golden versions {baseline.golden_version} and "
            f"{candidate.golden_version}; check both on one frozen version"
        )
    a, b = outcomes(baseline, split), outcomes(candidate, split)
    shared = set(a) & set(b)
    if questions is not None:
        shared &= set(questions)
    common = sorted(shared)
    if not common:
        raise UsageError(
            "the two variants share no scored question" + (f" in split '{split}'" if split else "")
        )
    # a plain outcome, not a registry metric: Comparison.metric is None, .outcome names it
    comp = compare(
        {q: a[q] for q in common},
        {q: b[q] for q in common},
        outcome=METRIC_LABEL,
        seed=seed,
        n_resamples=n_resamples,
    )
    return AnswerComparison(baseline.variant, candidate.variant, split, comp)
