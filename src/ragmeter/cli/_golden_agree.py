"""``ragmeter golden agree``: do two labellers agree on the evidence?

Added to the ``golden`` command group by :func:`add_agree`. Exit codes: 0 ok; 2 usage or input
error (a labeller file that does not validate lists every problem with file, line and field).
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._common import TITLE, Format, console, err_console, handle_errors, lit, print_json

if TYPE_CHECKING:  # pragma: no cover
    from rich.text import Text

    from ..data import Corpus, LabelAgreement, QuestionAgreement

#: characters of a span's text shown in the table output (JSON has the whole text).
SNIPPET = 70
#: who found evidence, as the table says it.
FOUND = {"both": "both", "neither": "neither", "only_a": "only A", "only_b": "only B"}
#: ids listed in a warning before "and N more".
LISTED = 10


def _num(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _ids(ids: tuple[str, ...] | list[str]) -> str:
    shown = ", ".join(ids[:LISTED])
    return shown + (f" and {len(ids) - LISTED} more" if len(ids) > LISTED else "")


def add_agree(golden_app: typer.Typer) -> None:
    golden_app.command("agree")(agree)


@handle_errors
def agree(
    a: Annotated[
        Path,
        typer.Argument(
            help="First labeller's golden file, the reference: "
            "precision = |A∩B| / |B|, recall = |A∩B| / |A|."
        ),
    ],
    b: Annotated[Path, typer.Argument(help="Second labeller's golden file (same question ids).")],
    corpus: Annotated[
        Path | None,
        typer.Option(
            "--corpus",
            "-c",
            help="Corpus the spans point into: checks every span and shows its "
            "text (without it, the text recorded in the labels is shown).",
        ),
    ] = None,
    worst: Annotated[
        int,
        typer.Option("--worst", "-n", min=0, help="How many of the worst disagreements to list."),
    ] = 10,
    fmt: Annotated[
        Format,
        typer.Option("--format", "-f", help="table, json or csv (csv: one row per question)."),
    ] = Format.table,
) -> None:
    """Two labellers' span overlap (A is the reference), kappa on grades, worst disagreements."""
    from ..workflows.golden import agree as run_agree

    agreement = run_agree(a, b, corpus)
    result, docs = agreement.result, agreement.corpus
    if fmt is Format.json:
        print_json(agreement.to_dict(worst))
    elif fmt is Format.csv:
        _write_csv(result)
    else:
        _print_table(result, docs, worst)
    _warn(result)


def _warn(r: LabelAgreement) -> None:
    if r.only_in_a:
        err_console.print(
            lit(
                f"warning: {len(r.only_in_a)} question(s) only in {r.source_a} "
                f"(left out): {_ids(r.only_in_a)}"
            )
        )
    if r.only_in_b:
        err_console.print(
            lit(
                f"warning: {len(r.only_in_b)} question(s) only in {r.source_b} "
                f"(left out): {_ids(r.only_in_b)}"
            )
        )
    if r.text_differs:
        err_console.print(
            lit(
                f"warning: the question text differs for {len(r.text_differs)} "
                f"id(s): {_ids(r.text_differs)}; were both files labelled from the "
                "same golden-set version?"
            )
        )
    if not r.questions:
        err_console.print("warning: the two files share no question id: nothing to compare")


def _write_csv(r: LabelAgreement) -> None:
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(
        [
            "question",
            "found",
            "chars_a",
            "chars_b",
            "chars_both",
            "precision",
            "recall",
            "f1",
            "grade_pairs",
            "grade_mismatches",
        ]
    )
    for q in r.questions:
        w.writerow(
            [
                q.question,
                q.found,
                q.chars_a,
                q.chars_b,
                q.chars_both,
                "" if q.precision is None else repr(q.precision),
                "" if q.recall is None else repr(q.recall),
                repr(q.f1),
                " ".join(f"{x}:{y}" for x, y in q.grade_pairs),
                q.grade_mismatches,
            ]
        )


def _print_table(r: LabelAgreement, docs: Corpus | None, worst: int) -> None:
    from rich.table import Table

    table = Table(
        title=lit(f"labeller agreement: {r.source_a} (A, reference) vs {r.source_b} (B)", TITLE),
        show_header=False,
    )
    table.add_column("what", overflow="fold")
    table.add_column("value", justify="right", overflow="fold")
    found = " / ".join(str(r.count(k)) for k in ("both", "neither", "only_a", "only_b"))
    rows: list[tuple[str, Any]] = [
        (
            "questions in both files",
            f"{len(r.questions)} (only in A: {len(r.only_in_a)}, only in B: {len(r.only_in_b)})",
        ),
        ("evidence found by both / neither / only A / only B", found),
        ("characters A / B / both", f"{r.chars_a} / {r.chars_b} / {r.chars_both}"),
        ("precision |A∩B| / |B|", _num(r.precision)),
        ("recall |A∩B| / |A|", _num(r.recall)),
        ("F1 (characters summed over questions)", _num(r.f1)),
        ("F1 (mean per question)", _num(r.macro_f1)),
        ("grade pairs (overlapping spans)", len(r.grade_pairs)),
        ("same grade", _num(r.grade_agreement)),
        (
            "Cohen's kappa: unweighted / linear / quadratic",
            " / ".join(_num(r.kappa(w)) for w in ("none", "linear", "quadratic")),
        ),
    ]
    for what, value in rows:
        table.add_row(what, lit(value))
    console.print(table)
    _print_confusion(r)
    if worst:
        _print_worst(r.worst(worst), docs)


def _print_confusion(r: LabelAgreement) -> None:
    from rich.table import Table

    confusion = r.grade_confusion
    if not confusion:
        return
    grades = sorted({g for pair in confusion for g in pair})
    console.print("grades of overlapping span pairs (rows: A's grade, columns: B's grade)")
    table = Table()
    table.add_column("A \\ B")
    for g in grades:
        table.add_column(str(g), justify="right")
    for ga in grades:
        table.add_row(str(ga), *(str(confusion.get((ga, gb), 0)) for gb in grades))
    console.print(table)


def _span_line(who: str, view: dict[str, Any]) -> Text:
    text = view["text"]
    if text is None:
        shown = "(text not recorded; pass --corpus)"
    else:
        flat = " ".join(text.split())
        shown = repr(flat if len(flat) <= SNIPPET else flat[: SNIPPET - 1] + "…")
    return lit(
        f"  {who}: {view['doc']} {view['start']}-{view['end']} grade {view['grade']} {shown}"
    )


def _print_worst(rows: list[QuestionAgreement], docs: Corpus | None) -> None:
    from ..data.agreement import span_view

    if not rows:
        console.print("no disagreement: every shared question has the same characters and grades")
        return
    console.print(f"\nworst disagreements ({len(rows)}; F1 ascending):")
    for q in rows:
        mismatch = f", {q.grade_mismatches} grade mismatch(es)" if q.grade_mismatches else ""
        console.print(
            lit(
                f"{q.question}  F1 {q.f1:.3f}  precision {_num(q.precision)}  "
                f"recall {_num(q.recall)}  found: {FOUND[q.found]}"
                f"{mismatch}"
            )
        )
        for who, spans in (("A", q.spans_a), ("B", q.spans_b)):
            if not spans:
                console.print(f"  {who}: no evidence (unanswerable)")
            for ev in spans:
                console.print(_span_line(who, span_view(ev, docs)))
