"""The CI gate: compare two runs (:mod:`.compare`) and check the comparison against a rule
stated before the numbers (:class:`ragmeter.paired.GateRule`), as ``ragmeter gate`` does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .compare import CompareOptions, CompareOutcome, LedgerUse, compare_runs

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from ..paired import GateResult, GateRule
    from ..store import Store
    from .refs import RunRef, Scoring

__all__ = ["GateOutcome", "report_run_ids", "rule_statement", "run_gate", "write_reports"]


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


def rule_statement(rule: GateRule, metric: str) -> str:
    """The rule as stated before any number is computed, on ``metric`` in its canonical form
    (as typed when it does not parse: the comparison says why)."""
    from .._errors import UsageError
    from ..metrics import parse

    try:
        shown = str(parse(metric))
    except UsageError:
        shown = metric
    return rule.statement(shown)


def report_run_ids(runs: Sequence[str], store: Store | None, *, scored: bool) -> list[str]:
    """The stored run ids ``--report`` renders (baseline first); refuses, before any work, a
    report it could not make: the HTML report reads both runs' ranked lists from the store, so
    neither ``--no-store`` nor run files scored here (``scored``) will do."""
    from .._errors import UsageError
    from .refs import RunRef

    if store is None:
        raise UsageError("--report reads the two runs from the store; drop --no-store")
    ids = [RunRef.parse(r).stored_id for r in runs]
    if any(i is None for i in ids) or scored:
        raise UsageError(
            "--report needs BASE and CAND as stored runs (12, run:12): the HTML report shows "
            "their ranked lists from the store"
        )
    return [str(i) for i in ids]
