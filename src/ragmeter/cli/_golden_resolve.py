"""``ragmeter golden resolve``: write the offsets of evidence spans written as quotes.

Added to the ``golden`` command group by :func:`add_resolve`. Exit codes: 0 written; 2 usage or
input error, or a quote that could not be resolved (not found, in several places, in several
documents) or another label problem: every one is listed, with file, line and field, and
nothing is written.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ._common import TableJson, err_console, handle_errors, lit, print_json

#: characters of a quote or span text shown in a line of the table output (JSON has them all).
SNIPPET = 60


def add_resolve(golden_app: typer.Typer) -> None:
    golden_app.command("resolve")(resolve)


def _out(line: str) -> None:
    """One plain line to stdout (never wrapped: each span stays one grep-able line)."""
    sys.stdout.write(line + "\n")


def _short(text: str) -> str:
    """``repr`` (whitespace shown as written: it may be why a match was not exact), cut."""
    return repr(text if len(text) <= SNIPPET else text[: SNIPPET - 1] + "…")


@handle_errors
def resolve(
    golden: Annotated[
        Path,
        typer.Argument(
            help='Golden set whose spans may be written as {"quote": ..., "doc": ..., '
            '"occurrence": N} instead of start/end.'
        ),
    ],
    corpus: Annotated[
        Path,
        typer.Option("--corpus", "-c", help="Corpus: JSONL file or folder of .txt/.md files."),
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Where to write the golden set with offsets.")
    ],
    force: Annotated[bool, typer.Option("--force", help="Replace an existing output.")] = False,
    fmt: Annotated[
        TableJson,
        typer.Option("--format", "-f", help="table, or json (every span and problem)."),
    ] = TableJson.table,
) -> None:
    """Find each quoted span in the corpus (exactly, else after normalising whitespace and
    case) and write the golden set with offsets; list every quote that is missing or ambiguous."""
    from ..workflows.golden import resolve_golden
    from ._outputs import check_output

    # never over the golden file itself, --force or not: it holds people's labels
    check_output(out, force=force, option="--out", inputs=[golden, corpus])
    done = resolve_golden(golden, corpus, out)
    c = done.counts
    if fmt is TableJson.json:
        print_json(done.to_dict())
    else:
        for q in done.resolution.normalised:
            _out(
                f"normalised: {golden}:{q.line}: {q.where} quote {_short(q.quote)} read as "
                f"{_short(q.text)} ({q.doc!r} {q.start}-{q.end})"
            )
        for p in done.problems:
            _out(f"problem: {p}")
    summary = (
        f"{c['quotes']} quote span(s) in {golden}: {c['exact']} exact, "
        f"{c['normalised']} after normalising whitespace and case, {c['errors']} not resolved"
    )
    if not done.written:
        err_console.print(
            lit(f"{summary}; {c['problems']} problem(s): nothing written"), soft_wrap=True
        )
        raise typer.Exit(2)
    if fmt is TableJson.table:
        _out(f"{summary}; wrote {out}")
