"""The CI gate: compare two runs (:mod:`.compare`) and check the comparison against a rule
stated before the numbers (:class:`ragmeter.paired.GateRule`), as ``ragmeter gate`` does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .compare import CompareOptions, CompareOutcome, LedgerUse, compare_runs

if TYPE_CHECKING:
    from pathlib import Path

    from ..paired import GateResult, GateRule
    from ..store import Store
    from .refs import RunRef, Scoring

__all__ = ["GateOutcome", "run_gate", "write_reports"]


@dataclass(frozen=True)
class GateOutcome:
    """The comparison the gate read and the rule's verdict on it."""

    compared: CompareOutcome
    result: GateResult

    @property
    def passed(self) -> bool:
        return self.result.passed


def run_gate(
    base: str | RunRef,
    cand: str | RunRef,
    metric: str | None,
    rule: GateRule,
    *,
    store: Store | None = None,
    scoring: Scoring | None = None,
    n_resamples: int = 5000,
    seed: int = 0,
    strict: bool = False,
    intersect: bool = False,
    ledger: Path | None = None,
) -> GateOutcome:
    """Compare ``cand`` against ``base`` at 95% (counting the comparison in ``ledger`` when one
    is named) and check ``rule`` on it."""
    from ..paired import gate

    compared = compare_runs(
        base,
        cand,
        metric,
        store=store,
        scoring=scoring,
        options=CompareOptions(
            n_resamples=n_resamples, seed=seed, confidence=0.95, strict=strict, intersect=intersect
        ),
        ledger=LedgerUse(count_in=ledger),
    )
    return GateOutcome(compared, gate(compared.comparison, rule))


def write_reports(
    result: GateResult, *, markdown: Path | None = None, junit: Path | None = None
) -> None:
    """The gate's markdown summary and JUnit XML, each written whole or not at all (a CI job
    never reads half a report)."""
    from ..io import atomic_write

    if markdown is not None:
        atomic_write(markdown, result.to_markdown())
    if junit is not None:
        atomic_write(junit, result.to_junit_xml())
