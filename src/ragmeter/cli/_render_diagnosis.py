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
    from ..diagnosis import Diagnosis, RetrievalAnswerTable


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


def print_diagnosis(console: Console, d: Diagnosis) -> None:
    """The steps checked, the failing link and the one-change experiment to run next."""
    t = columns_table("where to look first", ("step", "status", "detail"))
    colour = {"pass": "green", "fail": "red", "unknown": "yellow"}
    for s in d.steps:
        t.add_row(lit(s.question), lit(s.status, colour[s.status]), lit(s.detail))
    console.print(t)
    for n in d.notes:
        console.print(lit(f"note: {n}"))
    e = d.experiment
    console.print(line(("failing link:", "bold"), f" {d.failing_link or 'none'}"))
    console.print("[bold]next experiment (one change):[/bold]")
    console.print(lit(f"  change:     {e.change}"))
    console.print(lit(f"  metric:     {e.metric}"))
    console.print(lit(f"  comparison: {e.comparison}"))
    console.print(lit(f"  refute:     {e.refutation}"))
    if e.alternative:
        console.print(lit(f"  or instead: {e.alternative}"))
    if e.assumption:
        console.print(lit(f"  assumption: {e.assumption}"))
