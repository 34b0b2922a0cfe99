"""Rendering of ``ragmeter compare``, ``gate`` and ``sweep``: the comparison table, the movers,
the verdict lines, the recording note and the sweep tables (rich, on the console)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Table

from .._interval import interval_text
from .._pvalue import format_p, p_is
from ._common import TITLE, console, err_console, line, lit

if TYPE_CHECKING:  # keeps `ragmeter --help` fast
    from rich.console import RenderableType

    from ..paired import Comparison, GateResult, GateRule, PPIInterval, Sweep, WeightedDifference
    from ..store import Store


def comparison_table(c: Comparison, width: int | None = None) -> Table:
    """Overall, split and slice rows; compact headers and no note column so that nothing is
    cut (notes are markers explained in the caption). Under 112 columns the two means are left
    out (the difference carries them) and the labels and intervals wrap."""
    from rich import box

    from ..metrics import metric_label

    narrow = width is not None and width < 112
    t = Table(
        title=lit(f"{c.candidate} vs {c.baseline} on {metric_label(c.label)}", TITLE),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    t.add_column("questions", no_wrap=not narrow, overflow="fold")
    for col in ("n", "diff") if narrow else ("n", "base", "cand", "diff"):
        t.add_column(col, justify="right", no_wrap=True)
    t.add_column(f"{c.confidence:.0%} interval", justify="right", no_wrap=not narrow)
    t.add_column("W/L/T", justify="right", no_wrap=True)
    if c.binary:
        t.add_column("fix/brk" if narrow else "fixed/broken", justify="right", no_wrap=True)
    t.add_column("sign p", justify="right", no_wrap=True)
    if c.slices:
        t.add_column("Holm p", justify="right", no_wrap=True)  # adjusted over the slices

    def row(label: str, s: Any, holm: float | None = None) -> None:
        # label: literal, never markup
        means = [] if narrow else [f"{s.baseline_mean:.3f}", f"{s.candidate_mean:.3f}"]
        cells: list[RenderableType] = [
            lit(label),
            str(s.n),
            *means,
            f"{s.mean_delta:+.3f}",
            lit(s.ci_text),
            f"{s.wins}/{s.losses}/{s.ties}",
        ]
        if c.binary:
            cells.append(f"{s.fixed}/{s.broken}")
        cells.append(format_p(s.sign_test_p))
        if c.slices:
            cells.append("" if holm is None else f"{holm:.3g}")
        t.add_row(*cells)

    row("all", c.overall)
    for name, sr in c.splits.items():
        row(f"split {name}" + (" (held out)" if name == "heldout" else ""), sr.stats)
    for name, sr in c.slices.items():
        row(f"slice {name}" + (" *" if sr.small else ""), sr.stats, sr.p_adjusted)
    t.caption = c.method_line
    return t


def movers_table(c: Comparison) -> Table | None:
    movers = c.movers
    if not movers:
        return None
    ranks = c.movers_have_ranks
    from rich import box

    t = Table(
        title="biggest movers" + (" (fixed and broken)" if c.binary else ""),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    t.add_column("question", overflow="fold")
    t.add_column("change")
    t.add_column("baseline", justify="right")
    t.add_column("candidate", justify="right")
    if ranks:
        t.add_column("first relevant rank")
    t.add_column("slices", overflow="fold")
    for m in movers:
        cells: list[RenderableType] = [
            lit(m.qid),
            m.change_text(c.binary),
            f"{m.baseline:.4f}",
            f"{m.candidate:.4f}",
        ]
        if ranks:
            cells.append(m.ranks_text)
        t.add_row(*cells, lit(", ".join(m.slices)))
    left = c.wins - len(c.improved), c.losses - len(c.worsened)
    if any(n > 0 for n in left):  # a cut list says so, and how to see the rest
        t.caption = (
            f"the {len(c.improved)} largest of {c.wins} improved and {len(c.worsened)} largest "
            f"of {c.losses} worsened questions (--movers N shows more; --format json lists "
            "every question)"
        )
    return t


def print_comparison(c: Comparison) -> None:
    console.print(comparison_table(c, console.width))
    if c.slice_note:
        console.print(lit(f"Slices: {c.slice_note}."))
    if any(sr.small for sr in c.slices.values()):
        from ..paired import SMALL_NOTE, SMALL_SLICE

        console.print(f"* under {SMALL_SLICE} questions: {SMALL_NOTE}.")
    console.print(lit(c.verdict_line))
    if c.randomisation is not None:
        r = c.randomisation
        how = "exact" if r.exact else f"{r.n_resamples} random sign flips"
        console.print(f"Paired randomisation test: p {p_is(r.p_value)} ({how}).")
    mt = movers_table(c)
    if mt is not None:
        console.print(mt)
    if c.changes:
        console.print(lit(f"Changes ({len(c.changes)}): " + "; ".join(map(str, c.changes))))
    if c.selection_line is not None:
        console.print(lit(c.selection_line))


def print_gate(c: Comparison, result: GateResult, rule: GateRule, *, stated: bool) -> None:
    """The gate's comparison, checks and verdict (the rule first, unless ``stated`` before the
    numbers were computed)."""
    if not stated:
        console.print(lit(f"Rule: {result.statement}"))
    print_comparison(c)
    if result.adjustment_line:
        console.print(
            lit(
                f"{result.adjustment_line}: a slice fails only when its change "
                f"is beyond chance (adjusted p < {rule.alpha:g})."
            )
        )
    for ch in result.checks:
        console.print(lit(ch.describe()))
    for skip in result.skip_lines():
        console.print(lit(skip))
    console.print("[green]gate passed[/green]" if result.passed else "[red]gate FAILED[/red]")


def print_traffic(w: WeightedDifference) -> None:
    """The difference weighted to traffic beside the unweighted headline: the slices by traffic
    share (golden share, ratio, mean difference, contribution), then which carry the weight."""
    from rich import box

    t = Table(
        title=lit(f"weighted to traffic: {w.estimate:+.3f} {w.ci_text}", TITLE),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for col in ("slice", "n", "golden", "traffic", "ratio", "diff", "weighted"):
        t.add_column(col, justify="left" if col == "slice" else "right", overflow="fold")
    for s in w.slices:
        t.add_row(
            lit(s.name),
            str(s.n),
            f"{s.golden_share:.1%}",
            f"{s.traffic_share:.1%}",
            f"x{s.ratio:.2f}",
            f"{s.mean_delta:+.3f}",
            f"{s.contribution:+.3f}",
        )
    t.caption = lit(
        f"sum of traffic share x slice diff; {w.confidence:.0%} interval by stratified paired "
        f"bootstrap ({w.n_resamples} resamples, seed {w.seed})"
    )
    console.print(t)
    console.print(lit(w.headline() + "."))
    console.print(lit(w.weight_line()))
    for note in w.notes:
        console.print(lit(f"note: {note}."))


def print_ppi(p: PPIInterval) -> None:
    """The prediction-powered interval beside the judge-only and human-only ones, with widths."""
    from rich import box

    t = Table(title=lit("prediction-powered interval", TITLE), box=box.SIMPLE_HEAD, pad_edge=False)
    t.add_column("estimate")
    for col in ("n", "diff", f"{p.confidence:.0%} interval", "width"):
        t.add_column(col, justify="right", no_wrap=True)
    for name, e in p.rows:
        t.add_row(name, str(e.n), f"{e.estimate:+.3f}", interval_text(e.lo, e.hi),
                  f"{e.width:.3f}")  # fmt: skip
    t.caption = f"{p.ppi.method}; judge only and human only: {p.judge.method}"
    console.print(t)
    console.print(lit(p.line + "."))


def say_not_recorded(store: Store) -> None:
    """The note for a comparison a read-only store could not record (compared all the same:
    the user asked for the numbers)."""
    from ._store_options import shown_url

    err_console.print(
        line(
            ("note:", "yellow"),
            f" not recorded: the experiment store {shown_url(store)} is read-only here "
            "(this comparison is neither stored nor counted in its selection ledger)",
        ),
        soft_wrap=True,
    )


def say_warnings(c: Comparison) -> None:
    """The comparison's warnings, one line each on stderr."""
    for w in c.warnings:
        err_console.print(line(("warning:", "yellow"), f" {w}"))


def print_sweep(s: Sweep) -> None:
    from ..metrics import metric_label

    what = "k" if s.kind == "k" else "budget"
    t = Table(
        title=lit(
            f"{metric_label(s.label)} by {what}"
            + (f" ({s.n_queries} queries)" if s.n_queries else ""),
            TITLE,
        )
    )
    t.add_column(what, justify="right")
    for r in s.runs:
        t.add_column(lit(r), justify="right")
    t.add_column("leader")
    for j, (k, lead) in enumerate(zip(s.cutoffs, s.leaders, strict=True)):
        t.add_row(str(k), *(f"{v:.4f}" for v in s.values[:, j]), lit(lead or "tie"))
    console.print(t)
    for note in s.notes:
        console.print(lit(f"note: {note}."))
    console.print(lit(s.summary() + "."))
    if s.headroom:
        vals = ", ".join(f"{r} {v:.3f}" for r, v in s.headroom.items())
        console.print(
            lit(
                f"Pool headroom, R@{s.headroom_k} (not quality: the evidence is in the "
                f"candidate pool, not in the prompt): {vals}."
            )
        )
