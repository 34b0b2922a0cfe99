"""``ragmeter plan``: how many questions a paired comparison needs for a given interval width."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from .._interval import interval_text
from ._common import (
    Format,
    columns_table,
    console,
    err_console,
    handle_errors,
    print_json,
    write_csv,
)

if TYPE_CHECKING:  # keeps `ragmeter --help` fast
    from ..paired import SizePlan


def register(app: typer.Typer) -> None:
    app.command("plan")(plan_cmd)


# -- rendering -------------------------------------------------------------------------------------
def _hw(x: float | None) -> str:
    if x is None:
        return "-"
    return f"±{x:.3f}" if x >= 0.0005 else f"±{x:.1e}"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def describe_inputs(plan: SizePlan) -> str:
    s = plan.spread
    what = "rate" if s.binary else "mean"
    if s.source == "rates":
        parts = [f"baseline rate {s.baseline_mean:.3f}"]
    else:
        parts = [
            f"past comparison of {s.observed_n} questions: baseline {what} {s.baseline_mean:.3f}"
        ]
    if s.changed is not None:
        head = f"{_pct(s.changed)} of questions change"
        if s.fixed is not None and s.broken is not None:
            head += f" ({_pct(s.fixed)} fixed, {_pct(s.broken)} broken)"
        parts.append(head)
    if s.source != "rates" or s.changed is not None or s.difference != 0.0:
        parts.append(f"{'expected ' if s.source == 'rates' else ''}difference {s.difference:+.3f}")
    if s.var_diff is not None:
        parts.append(f"Var(d) = {s.var_diff:.4f}")
    return "Inputs: " + "; ".join(parts) + "."


def plan_table(plan: SizePlan, notes: dict[int, str]) -> Table:
    one = "one rate ±" if plan.spread.binary else "one mean ±"
    t = columns_table(
        f"Expected {plan.confidence:.0%} interval half-width by golden-set size",
        ("questions", "changes", "paired ±", one, "two averages ±", "note"),
        text=("note",),
    )
    for r in plan.rows:
        changed = "-" if r.expected_changed is None else f"{r.expected_changed:.1f}"
        t.add_row(
            str(r.n),
            changed,
            _hw(r.paired),
            _hw(r.one_rate),
            _hw(r.two_averages),
            notes.get(r.n, ""),
        )
    return t


def print_plan(plan: SizePlan, notes: dict[int, str]) -> None:
    console.print(describe_inputs(plan))
    console.print(plan_table(plan, notes))
    if plan.spread.var_diff is None:
        console.print(
            "The paired width needs --discordance: the share of questions expected "
            "to change outcome (fixed plus broken)."
        )
    else:
        what = "outcome" if plan.spread.binary else "value"
        one = "one rate" if plan.spread.binary else "one mean"
        console.print(
            f"changes: questions expected to change {what}; the paired width tracks "
            "this count, not n."
        )
        console.print(
            "paired: the interval 'ragmeter compare' reports (paired bootstrap over questions)."
        )
        console.print(
            f"{one}: one variant's score alone. two averages: the same difference "
            "with the pairing thrown away."
        )
    if plan.target is not None:
        need = plan.n_for(plan.target)
        one = "one rate" if plan.spread.binary else "one mean"
        lead = (
            ""
            if need["paired"] is None
            else f"{need['paired']} questions for the paired difference; "
        )
        console.print(
            f"Target ±{plan.target:g}: {lead}{need['one_rate']} for {one} alone, "
            f"{need['two_averages']} for two averages."
        )
    obs = plan.observed
    if obs is not None:
        lo, hi = obs["ci"]
        console.print(
            f"This comparison: {obs['n']} questions, interval {interval_text(lo, hi)} "
            f"({_hw(obs['half_width'])}); predicted at {obs['n']}: "
            f"{_hw(obs['predicted_half_width'])}."
        )
    if any(r.rough for r in plan.rows):
        console.print(
            "rough: under 5 questions are expected to change; the interval moves in "
            "steps of one question and is usually narrower than predicted."
        )


# -- the command -----------------------------------------------------------------------------------
@handle_errors
def plan_cmd(
    base: str | None = typer.Argument(
        None,
        metavar="BASE",
        help="Baseline: 'ragmeter eval --per-query --format json' output (PATH or PATH#RUN).",
    ),
    cand: str | None = typer.Argument(
        None, metavar="CAND", help="Candidate, in the same form as BASE."
    ),
    metric: str | None = typer.Option(
        None, "--metric", "-m", help="Metric of BASE and CAND to plan for, e.g. 'Hit@5'."
    ),
    source: Path | None = typer.Option(
        None, "--from", help="A past comparison: the output of 'ragmeter compare --format json'."
    ),
    baseline_rate: float | None = typer.Option(
        None, "--baseline-rate", help="Share of questions the baseline gets right, e.g. 0.75."
    ),
    discordance: float | None = typer.Option(
        None,
        "--discordance",
        help="Share of questions expected to change outcome (fixed plus broken).",
    ),
    difference: float | None = typer.Option(
        None, "--difference", help="Expected difference, fixed minus broken (default 0)."
    ),
    sizes: str = typer.Option("50,100,200,500", "--n", help="Golden-set sizes, comma-separated."),
    target: float | None = typer.Option(
        None, "--target", help="Half-width wanted, e.g. 0.05: adds the questions needed."
    ),
    confidence: float | None = typer.Option(
        None, "--confidence", help="Interval coverage (default: the comparison's, else 0.95)."
    ),
    intersect: bool = typer.Option(
        False, "--intersect", help="With BASE CAND: use only the questions both runs have."
    ),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json or csv."),
) -> None:
    """How many questions a paired comparison needs: the expected interval half-width at each
    golden-set size, and the size for a target half-width."""
    from ..workflows.plan import PlanInputs, parse_sizes, plan_sizes

    ns = parse_sizes(sizes)  # before any file is read: a bad --n fails at once
    inputs = PlanInputs(
        base, cand, metric, source, baseline_rate, discordance, difference, intersect
    )
    planned = plan_sizes(
        inputs, ns, confidence=confidence, target=target, status=err_console.status
    )
    if fmt == Format.json:
        print_json(planned.to_dict())
    elif fmt == Format.csv:
        write_csv(*planned.csv_rows())
    else:
        print_plan(planned.plan, planned.notes)
