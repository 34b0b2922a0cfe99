"""Rich renderings of what the diagnosis package computes: the retrieval-by-answer table and
the diagnosis ("where to look first" and the next experiment). Shared by the commands and the
demo; the numbers come from :mod:`ragmeter.diagnosis`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from .._literal import CAPTION, TITLE, line, lit
from ._common import columns_table

if TYPE_CHECKING:  # pragma: no cover
    from ..diagnosis import CausalTable, Diagnosis, RetrievalAnswerTable
    from ..workflows.diagnose import Ablations


def print_answer_table(
    console: Console, table: RetrievalAnswerTable, title: str | None = None
) -> None:
    """The 2x2 of evidence in context by answer correct and supported, and what each cell means."""
    from ..workflows.diagnose import categories, largest_bad_line

    t = Table(title=lit(title or "retrieval-by-answer table", TITLE))
    t.add_column(lit(table.evidence_label))
    t.add_column("answer correct and supported", justify="right")
    t.add_column("not", justify="right")
    t.add_column("correct, support unknown", justify="right")
    t.add_row(
        "in context",
        str(table.count("working")),
        str(table.count("generation_failure")),
        str(table.count("support_unknown")),
    )
    t.add_row(
        "not in context (split on correct)",
        str(table.count("from_memory")),
        str(table.count("retrieval_failure")),
        "-",
    )
    t.add_row(
        "cites a passage outside its context", "-", str(table.count("cites_outside_context")), "-"
    )
    lines = [f"{c.title} ({table.count(c.key)}): {c.reading}" for c in categories()]
    lines.append(largest_bad_line(table))
    if table.excluded:
        lines.append(
            f"{len(table.excluded)} question(s) not in the table (unanswerable or unscored)"
        )
    t.caption = lit("\n".join(lines), CAPTION)
    console.print(t)


def print_causal(console: Console, causal: CausalTable, ablations: Ablations | None) -> None:
    """The causal table: each proven cause and what is reported apart, what each inferred cell
    of the retrieval-by-answer table proved to be, and the oracle ceiling."""
    from ..workflows.diagnose import cause_rows, ceiling_line, cross_lines, ran_line

    t = Table(
        title=lit(f"causal table (context sources: {ran_line(causal, ablations)})", TITLE),
        title_justify="left",
        caption=lit(
            "proven: the context was the only change between the answers compared; apart: not "
            "counted in any cause",
            CAPTION,
        ),
        caption_justify="left",
    )
    t.add_column("cause")
    t.add_column("basis")
    t.add_column("questions", justify="right")
    t.add_column("rule", ratio=1)
    for r in cause_rows(causal, ablations):
        t.add_row(lit(r.title), r.basis, str(r.count), lit(r.rule))
    console.print(t)
    cross = cross_lines(causal)
    if cross:
        c = Table(
            title=lit("inferred cell -> proven causes", TITLE),
            title_justify="left",
            caption=lit(
                "inferred: read from whether the evidence reached the prompt (the table above); "
                "proven: read from the ablations",
                CAPTION,
            ),
            caption_justify="left",
        )
        c.add_column("inferred cell")
        c.add_column("proven", ratio=1)
        for _, cell, _, proven in cross:
            c.add_row(lit(cell), lit(proven))
        console.print(c)
    ceiling = ceiling_line(causal)
    console.print(line(("oracle ceiling:", "bold"), f" {ceiling or 'no oracle run'}"))
    if ablations is not None:
        for why in ablations.left_out:
            console.print(lit(f"note: not read: {why}"))


def print_diagnosis(console: Console, d: Diagnosis) -> None:
    """The steps checked, the failing link (with what named it when ablations were run) and
    the one-change experiment to run next."""
    from ..workflows.diagnose import basis_line

    t = columns_table("where to look first", ("step", "status", "detail"))
    colour = {"pass": "green", "fail": "red", "unknown": "yellow"}
    for s in d.steps:
        t.add_row(lit(s.question), lit(s.status, colour[s.status]), lit(s.detail))
    console.print(t)
    for n in d.notes:
        console.print(lit(f"note: {n}"))
    e = d.experiment
    console.print(line(("failing link:", "bold"), f" {d.failing_link or 'none'}"))
    if d.causal is not None or d.basis == "proven":
        console.print(lit(f"  basis:      {basis_line(d)}"))
    console.print("[bold]next experiment (one change):[/bold]")
    console.print(lit(f"  change:     {e.change}"))
    console.print(lit(f"  metric:     {e.metric}"))
    console.print(lit(f"  comparison: {e.comparison}"))
    console.print(lit(f"  refute:     {e.refutation}"))
    if e.alternative:
        console.print(lit(f"  or instead: {e.alternative}"))
    if e.assumption:
        console.print(lit(f"  assumption: {e.assumption}"))
