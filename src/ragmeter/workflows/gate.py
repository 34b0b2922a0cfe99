"""The CI gate: compare two runs (:mod:`.compare`) and check the comparison against a rule
stated before the numbers (:class:`ragmeter.paired.GateRule`), as ``ragmeter gate`` does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .compare import CompareOptions, CompareOutcome, LedgerUse, compare_runs

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from ..paired import GateResult, GateRule, Traffic
    from ..store import Store
    from .refs import RunRef, Scoring

__all__ = [
    "GateOutcome",
    "report_run_ids",
    "rule_statement",
    "run_gate",
    "stable_gate",
    "write_reports",
]


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
    traffic: Traffic | None = None,
    stable: bool = False,
) -> GateOutcome:
    """Compare ``cand`` against ``base`` at 95% (counting the comparison in ``ledger`` when one
    is named) and check ``rule`` on it. ``traffic``: also weigh the difference to traffic
    (``compared.traffic``); reported only, it never changes the gate's decision. ``stable``:
    see :func:`stable_gate`."""
    from ..paired import gate

    if stable:
        return stable_gate(
            base, cand, metric, rule, scoring=scoring, n_resamples=n_resamples, seed=seed,
            ledger=ledger, traffic=traffic,
        )  # fmt: skip

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
        traffic=traffic,
    )
    return GateOutcome(compared, gate(compared.comparison, rule))


def stable_gate(
    base: str | RunRef,
    cand: str | RunRef,
    metric: str | None,
    rule: GateRule,
    *,
    scoring: Scoring | None = None,
    n_resamples: int = 5000,
    seed: int = 0,
    ledger: Path | None = None,
    traffic: Traffic | None = None,
) -> GateOutcome:
    """``gate --stable``: BASE and CAND are the ``answer_check.json`` of two variants of a
    ``ragmeter run`` with ``repeat`` >= 2. The comparison is repeat 0's ("answer correct and
    supported", the run's headline, on the questions both scored); a question counts as broken
    (or fixed) only when it is so in every repeat, repeat r of CAND paired with repeat r of
    BASE. Anything else (a stored run, an evaluation file, a run answered once) is a
    UsageError that says what --stable reads."""
    import warnings
    from pathlib import Path

    from .._errors import RagmeterWarning, UsageError
    from ..experiments import read_repeat_verdicts
    from ..paired import compare, gate, stable_changes
    from .refs import RunRef

    for name, flag in (("--metric", metric), ("--traffic", traffic)):
        if flag is not None:
            raise UsageError(f"--stable compares answer verdicts: drop {name}")
    if scoring is not None and scoring.given:
        raise UsageError("--stable reads answer_check.json files: drop --qrels/--golden/--chunks")
    texts = [r.text if isinstance(r, RunRef) else r for r in (base, cand)]
    (b_name, b_reps), (c_name, c_reps) = (read_repeat_verdicts(t) for t in texts)
    if len(b_reps) != len(c_reps):
        raise UsageError(
            f"{texts[0]} holds {len(b_reps)} repeats and {texts[1]} {len(c_reps)}: "
            "--stable pairs the repeats of one run"
        )
    b0 = {q: v for q, v in b_reps[0].items() if v is not None}
    c0 = {q: v for q, v in c_reps[0].items() if v is not None}
    common = sorted(q for q in b0 if q in c0)  # as the run compares them: same interval
    if not common:
        raise UsageError(f"{texts[0]} and {texts[1]} share no scored question")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RagmeterWarning)  # kept in Comparison.warnings
        c = compare(
            {q: b0[q] for q in common},
            {q: c0[q] for q in common},
            outcome="answer correct and supported",
            n_resamples=n_resamples,
            seed=seed,
            ledger=ledger,
            names=(b_name, c_name),
        )
    stable = stable_changes(b_reps, c_reps, common)
    compared = CompareOutcome(
        c,
        RunRef(texts[0], "evaluation", path=Path(texts[0])),
        RunRef(texts[1], "evaluation", path=Path(texts[1])),
        None,
    )
    return GateOutcome(compared, gate(c, rule, stable))


def write_reports(
    result: GateResult, *, markdown: Path | None = None, junit: Path | None = None
) -> None:
    """The gate's markdown summary and JUnit XML, each written whole or not at all (a CI job
    never reads half a report)."""
    from ..io import atomic_write

    if markdown is not None:
        weighted = result.comparison.traffic  # reported beside the checks, never gated
        extra = "" if weighted is None else "\n" + weighted.to_markdown()
        atomic_write(markdown, result.to_markdown() + extra)
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
