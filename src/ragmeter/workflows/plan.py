"""Plan a golden set's size (``ragmeter plan``): how many questions a paired comparison needs
for a given interval width, from rates, a saved comparison, or two evaluations compared here.

The command line parses its options into :class:`PlanInputs`, calls :func:`plan_sizes` and
renders the :class:`Planned` it gets back (the :class:`~ragmeter.paired.SizePlan` and the
note on each row).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence

    from ..paired import Comparison, SizePlan
    from .evaluate import Status

__all__ = ["PlanInputs", "Planned", "parse_sizes", "plan_sizes"]


def parse_sizes(text: str) -> list[int]:
    """``"50,100,200,500"`` -> golden-set sizes (positive whole numbers)."""
    out = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            continue
        try:
            n = int(piece)
        except ValueError:
            raise UsageError(
                f"--n takes question counts such as 50,100,200,500; cannot read '{piece}'"
            ) from None
        if n < 1:
            raise UsageError(f"--n: a golden set needs at least 1 question, got {n}")
        out.append(n)
    if not out:
        raise UsageError("--n: give at least one question count, e.g. 50,100,200,500")
    return out


@dataclass(frozen=True)
class PlanInputs:
    """Where the spread of the per-question differences comes from: exactly one of rates
    (``baseline_rate``, ``discordance``, ``difference``), a saved comparison (``source``), or
    two evaluations ``base`` and ``cand`` (run references, compared on ``metric``)."""

    base: str | None = None
    cand: str | None = None
    metric: str | None = None
    source: Path | None = None
    baseline_rate: float | None = None
    discordance: float | None = None
    difference: float | None = None
    intersect: bool = False


@dataclass(frozen=True)
class _Spread:
    """What ``plan_size`` is given: a past comparison (a :class:`~ragmeter.paired.Comparison`,
    or the spread ``read_comparison`` reads from a saved one), or rates."""

    comparison: object = None
    baseline_rate: float | None = None
    discordance: float | None = None
    difference: float = 0.0


@dataclass(frozen=True)
class Planned:
    """A size plan and the note on its rows (``target``, ``rough``), by golden-set size."""

    plan: SizePlan
    notes: dict[int, str]

    def to_dict(self) -> dict[str, Any]:
        """The plan's JSON with the notes keyed by size (``plan --format json``)."""
        return {**self.plan.to_dict(), "notes": {str(k): v for k, v in self.notes.items()}}

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        """The header and one row per golden-set size (``plan --format csv``): half-widths to
        six decimals, empty where there is none."""

        def num(x: float | None) -> str:
            return "" if x is None else f"{x:.6f}"

        header = [
            *("n", "expected_changed", "paired_half_width", "one_rate_half_width"),
            *("two_averages_half_width", "rough", "note"),
        ]
        rows: list[list[object]] = [
            [
                *(r.n, num(r.expected_changed), num(r.paired), num(r.one_rate)),
                *(num(r.two_averages), str(r.rough).lower(), self.notes.get(r.n, "")),
            ]
            for r in self.plan.rows
        ]
        return header, rows


def plan_sizes(
    inputs: PlanInputs,
    sizes: Sequence[int],
    *,
    confidence: float | None = None,
    target: float | None = None,
    status: Status | None = None,
) -> Planned:
    """The expected interval half-width at each of ``sizes`` (plus the size ``target`` needs,
    noted ``target``); rows where under 5 questions are expected to change are noted ``rough``.
    ``status(text)`` is shown while two evaluations are compared."""
    from ..paired import plan_size

    spread = _spread(inputs, confidence, status)

    def planned(ns: Sequence[int], conf: float | None, tgt: float | None) -> SizePlan:
        return plan_size(
            spread.baseline_rate,
            spread.discordance,
            difference=spread.difference,
            comparison=spread.comparison,
            sizes=ns,
            confidence=conf,
            target=tgt,
        )

    plan = planned(sizes, confidence, target)
    notes: dict[int, str] = {}
    if plan.target is not None:
        need = plan.n_for(plan.target)
        which = "paired" if need["paired"] is not None else "one_rate"
        n_t = need[which]
        assert n_t is not None
        notes[n_t] = "target"
        if n_t not in plan.sizes:
            plan = planned([*sizes, n_t], plan.confidence, plan.target)
    for r in plan.rows:
        if r.rough:
            notes[r.n] = "; ".join(x for x in (notes.get(r.n), "rough") if x)
    return Planned(plan, notes)


def _spread(inputs: PlanInputs, confidence: float | None, status: Status | None) -> _Spread:
    """The one input mode ``inputs`` names, read."""
    given_rates = any(
        v is not None for v in (inputs.baseline_rate, inputs.discordance, inputs.difference)
    )
    modes = [
        m
        for m, on in (
            ("two evaluations", inputs.base is not None),
            ("--from", inputs.source is not None),
            ("rates", given_rates),
        )
        if on
    ]
    if len(modes) > 1:
        raise UsageError(
            f"give one input: rates (--baseline-rate, --discordance), --from "
            f"COMPARISON.json, or two evaluations; got {' and '.join(modes)}"
        )
    if inputs.metric is not None and inputs.base is None:
        raise UsageError("--metric picks the column of two evaluations BASE CAND; give them too")
    if inputs.base is not None:
        if inputs.cand is None:
            raise UsageError("give two evaluations: BASE and CAND")
        return _Spread(comparison=_compare_evaluations(inputs, confidence, status))
    if inputs.source is not None:
        from ..paired import read_comparison

        return _Spread(comparison=read_comparison(inputs.source))
    if inputs.baseline_rate is None:
        raise UsageError(
            "give --baseline-rate and --discordance (the share of questions "
            "expected to change outcome), --from COMPARISON.json, or two "
            "evaluations BASE CAND with --metric"
        )
    return _Spread(
        baseline_rate=inputs.baseline_rate,
        discordance=inputs.discordance,
        difference=0.0 if inputs.difference is None else inputs.difference,
    )


def _compare_evaluations(
    inputs: PlanInputs, confidence: float | None, status: Status | None
) -> Comparison:
    """The two evaluations compared as 'ragmeter compare' would (5,000 resamples, seed 0), with
    no ledger; the comparison's warnings are not shown (the plan needs only the spread)."""
    from .compare import CompareOptions, compare_pair
    from .refs import load_pair

    assert inputs.base is not None and inputs.cand is not None
    pair = load_pair(inputs.base, inputs.cand, store=None)
    options = CompareOptions(
        intersect=inputs.intersect, confidence=0.95 if confidence is None else confidence
    )
    with (status or (lambda _text: contextlib.nullcontext()))("resampling questions..."):
        return compare_pair(pair, inputs.metric, options=options).comparison
