"""``ragmeter answers position``: answer outcomes by where the evidence sits in the context.

Registers itself on the ``answers`` group of :mod:`ragmeter.cli._answers` (listed after it in
``COMMAND_MODULES``); kept in its own module so the answers commands stay small. The import
goes one way only: this module reads ``_answers``, never the reverse.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ._common import Format, columns_table, console, handle_errors, print_json, write_csv

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence

    from ..diagnosis import PositionGroup, PositionReport


def register(app: typer.Typer) -> None:
    """Add ``position`` to the ``answers`` group (which ``_answers`` has put on ``app``)."""
    from ._answers import answers_app

    answers_app.command("position")(position_cmd)


@handle_errors
def position_cmd(
    golden: Path = typer.Option(..., help="Golden set (JSONL) with evidence spans."),
    answers: Path = typer.Option(..., help="Answers JSONL of the variant the run fed."),
    chunks: Path = typer.Option(..., help="Chunking the run and context ids refer to."),
    corpus: Path | None = typer.Option(None, help="Corpus (citations, chunk text check)."),
    run: Path | None = typer.Option(
        None,
        help="Retrieval run (TREC or JSONL) of chunk ids that "
        "built each prompt; default: the answers' context ids.",
    ),
    k: int | None = typer.Option(None, "--k", help="Prompt k (passages in the prompt)."),
    budget: int | None = typer.Option(None, help="Prompt token budget instead of --k."),
    evidence: str = typer.Option(
        "first",
        help="Which evidence span is placed: first (first "
        "found, any grade) or best (first found of the top grade).",
    ),
    cover: float = typer.Option(
        0.5, help="Share of a span's characters the context must hold for it to count as found."
    ),
    per_question: bool = typer.Option(
        False,
        "--per-question",
        help="Also list every placed question (csv: per-question rows instead).",
    ),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json or csv."),
) -> None:
    """Answer correctness by where the evidence sits in the context: first, middle, last.

    Lost in the middle on your answers; small bins give a direction, not proof."""
    from ..workflows.answers import answer_positions

    rep = answer_positions(
        golden=golden,
        answers=answers,
        chunks=chunks,
        corpus=corpus,
        run=run,
        k=k,
        budget=budget,
        evidence=evidence,
        cover=cover,
    )
    if fmt == Format.json:
        print_json(rep.to_dict())
    elif fmt == Format.csv:
        write_csv(*rep.csv_rows(per_question=per_question))
    else:
        print_positions(console, rep, per_question=per_question)


def _rate(k: int, n: int) -> str:
    return f"{k}/{n} ({k / n:.0%})" if n else "-"


def _table(title: str, key: str, groups: Sequence[PositionGroup]) -> Table:
    t = columns_table(
        title,
        (key, "n", "correct", "correct and supported", "support unknown", "95% CI"),
        text=(key,),
    )
    for g in groups:
        ci = g.ok_interval
        t.add_row(
            g.key + (" *" if g.small and g.n else ""),
            str(g.n),
            _rate(g.correct, g.n),
            _rate(g.ok, g.ok_known),
            str(g.support_unknown),
            f"{ci[0]:.2f}-{ci[1]:.2f}" if ci else "-",
        )
    return t


def print_positions(out: Console, rep: PositionReport, *, per_question: bool = False) -> None:
    """The bins, the raw positions, what was left out, and how far to trust it."""
    from ..diagnosis import MIN_BIN, SMALL_BIN_NOTE

    who = escape(rep.variant or "answers")
    version = f", golden {escape(rep.golden_version)}" if rep.golden_version else ""
    out.print(f"[bold]Answer outcomes by evidence position[/bold] ({who}{version})")
    out.print(
        f"Context: {escape(rep.context)}; placed: the {rep.evidence} evidence span found; "
        "first = position 1, last = the context's last chunk, middle = the rest. "
        "Correct and supported: over the answers whose support is known; 95% CI: its "
        "Wilson interval."
    )
    out.print(_table("by bin", "bin", rep.bins))
    out.print(_table("by position in the context", "position", rep.positions))
    ex = rep.excluded
    out.print(
        f"{rep.n} question(s) placed; left out: {ex['not_in_context']} evidence not in "
        f"the context, {ex['unanswerable']} unanswerable, {ex['no_answer']} without an "
        f"answer, {ex['not_scored']} without a reference answer."
    )
    if any(g.small and g.n for g in (*rep.bins, *rep.positions)):
        out.print(f"* under {MIN_BIN} known verdicts: a direction, not proof.")
    for note in rep.notes:
        if note != SMALL_BIN_NOTE:
            out.print(f"Note: {escape(note)}.")
    if per_question:
        t = columns_table(
            "placed questions",
            ("id", "position", "of", "bin", "grade", "correct", "ok"),
            text=("id", "bin"),
        )
        for q in rep.questions:
            t.add_row(
                escape(q.id),
                str(q.position),
                str(q.context_len),
                q.bin,
                "-" if q.grade is None else str(q.grade),
                _yes(q.correct),
                "unknown" if q.ok is None else _yes(q.ok),
            )
        out.print(t)


def _yes(v: bool) -> str:
    return "yes" if v else "no"
