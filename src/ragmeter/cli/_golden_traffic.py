"""``ragmeter golden sample`` and ``golden compare-traffic``: does the golden set look like the
traffic, and which logged questions to label next.

Added to the ``golden`` command group by :func:`add_traffic`. Exit codes: 0 ok; 2 usage or input
error (every bad log line is listed with file, line and field).
"""

from __future__ import annotations

import csv
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ._common import CAPTION, TITLE, Format, console, err_console, handle_errors, lit, print_json

if TYPE_CHECKING:  # pragma: no cover
    from ..data import TrafficComparison, TrafficSample

LogArg = Annotated[
    Path,
    typer.Argument(
        help='Question log: JSONL, one {"question": ..., <metadata>} object a line; CSV with a '
        "question column; or an OpenInference span export (Arize Phoenix JSON Lines of spans: "
        "one question per trace)."
    ),
]


class LogFormat(StrEnum):
    jsonl = "jsonl"
    csv = "csv"
    openinference = "openinference"


LogFormatOpt = Annotated[
    LogFormat | None,
    typer.Option(
        "--log-format",
        help="The log's format; without it: .csv/.tsv names are CSV, and a first line with span "
        "fields (context, span_kind, attributes) is an OpenInference export.",
    ),
]
#: a status → the flag shown in the table.
FLAGS = {
    "over": "over",
    "under": "under",
    "ok": "",
    "not in golden": "not in golden",
    "not in log": "not in log",
}


def add_traffic(golden_app: typer.Typer) -> None:
    golden_app.command("sample")(sample)
    golden_app.command("compare-traffic")(compare_traffic)


@handle_errors
def sample(
    logs: LogArg,
    n: Annotated[
        int,
        typer.Option(
            "-n",
            "--size",
            help="How many distinct questions to draw "
            "(repeats, same text ignoring case and whitespace, are "
            "dropped first).",
        ),
    ],
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            help="Log field to stratify by (one string per line; lines without it form "
            "their own stratum). Without it: a simple random sample.",
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", help="Random seed; the same seed draws the same sample.")
    ] = 0,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Write the sampled lines here instead of stdout."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing --out file.")] = False,
    log_format: LogFormatOpt = None,
) -> None:
    """Seeded sample of distinct logged questions to label, stratified (proportional)."""
    from ..workflows.golden import sample_traffic
    from ._outputs import check_output

    if out is not None:
        check_output(out, force=force, inputs=[logs])
    fmt = None if log_format is None else log_format.value
    result = sample_traffic(logs, n, by=by, seed=seed, out=out, log_format=fmt)
    if out is None:
        for line in result.to_jsonl():
            sys.stdout.write(line + "\n")
        sys.stdout.flush()
    _print_summary(result, logs, out)


def _print_summary(s: TrafficSample, logs: Path, out: Path | None) -> None:
    from rich.table import Table

    distinct = s.read - s.duplicates
    where = "stdout" if out is None else str(out)
    err_console.print(
        lit(
            f"read {s.read} {'traces' if s.log_format == 'openinference' else 'lines'} from "
            f"{logs}; dropped {s.duplicates} repeated "
            f"question(s) (same text ignoring case and whitespace); sampled {len(s.lines)} of "
            f"{distinct} distinct (seed {s.seed}) -> {where}"
        )
    )
    for note in s.notes:
        err_console.print(lit(f"note: {note}"))
    if s.requested > distinct:
        err_console.print(
            f"warning: asked for {s.requested} but the log has only {distinct} "
            "distinct questions: all of them were taken"
        )
    if s.by is None:
        return
    table = Table(title=lit(f"strata by {s.by!r} (proportional, largest remainder)", TITLE))
    table.add_column("stratum", overflow="fold")
    table.add_column("distinct questions", justify="right")
    table.add_column("share", justify="right")
    table.add_column("proportional n", justify="right")
    table.add_column("sampled", justify="right")
    for st in s.strata:
        name = f"(no {s.by})" if st.name is None else st.name
        table.add_row(
            lit(name),
            str(st.lines),
            f"{st.lines / distinct:.1%}",
            f"{st.expected:.2f}",
            str(st.sampled),
        )
    err_console.print(table)
    empty = [st for st in s.strata if st.sampled == 0]
    if empty:
        err_console.print(
            f"note: {len(empty)} stratum(s) got no question at this size; a larger -n reaches them"
        )


@handle_errors
def compare_traffic(
    golden: Annotated[Path, typer.Argument(help="Golden set (JSONL, one question a line).")],
    logs: LogArg,
    field: Annotated[
        str,
        typer.Option(
            "--field",
            help="Log field holding the slice name (a string or a list of strings), "
            "matched against the golden questions' slices.",
        ),
    ] = "slice",
    factor: Annotated[
        float,
        typer.Option(
            "--factor",
            help="Flag a slice whose golden share is more than FACTOR times its share of "
            "the log, or less than 1/FACTOR times.",
        ),
    ] = 2.0,
    fmt: Annotated[
        Format, typer.Option("--format", "-f", help="table, json or csv.")
    ] = Format.table,
    log_format: LogFormatOpt = None,
) -> None:
    """Per slice: golden share vs traffic share; flags over-, under- and unrepresented slices."""
    from ..workflows.golden import compare_traffic as run_compare

    result = run_compare(
        golden,
        logs,
        field=field,
        factor=factor,
        log_format=None if log_format is None else log_format.value,
    )
    for note in result.notes:
        err_console.print(lit(f"note: {note}"))
    if fmt is Format.json:
        print_json({"golden": str(golden), "log": str(logs), **result.to_dict()})
    elif fmt is Format.csv:
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(["slice", "golden", "golden_share", "log", "log_share", "ratio", "status"])
        for s in result.slices:
            w.writerow(
                [
                    s.name,
                    s.golden,
                    repr(s.golden_share),
                    s.log,
                    repr(s.log_share),
                    "" if s.ratio is None else repr(s.ratio),
                    s.status(factor),
                ]
            )
    else:
        _print_comparison(result, golden, logs)


def _print_comparison(r: TrafficComparison, golden: Path, logs: Path) -> None:
    from rich.table import Table

    table = Table(title=lit(f"golden set {golden} vs log {logs}", TITLE))
    table.add_column("slice", overflow="fold")
    table.add_column("golden", justify="right")
    table.add_column("golden %", justify="right")
    table.add_column("log", justify="right")
    table.add_column("log %", justify="right")
    table.add_column("ratio", justify="right")
    table.add_column("flag", overflow="fold")
    # the golden questions by origin, once any records one (drafted apart from logged): one
    # narrow column of counts per origin seen
    order = ["logged", "written", "drafted", "golden"]
    seen = {k for s in r.slices for k in s.by_origin} if r.has_origins else set()
    origins = sorted(seen, key=lambda k: (order.index(k) if k in order else len(order), k))
    for s in r.slices:
        ratio = "-" if s.ratio is None else f"{s.ratio:.2f}"
        table.add_row(
            lit(s.name),
            str(s.golden),
            f"{s.golden_share:.1%}",
            str(s.log),
            f"{s.log_share:.1%}",
            ratio,
            FLAGS[s.status(r.factor)],
        )
    table.caption = lit(
        f"ratio = golden share ÷ log share; over: above {r.factor:g}, under: "
        f"below 1/{r.factor:g}; shares of {r.golden_questions} golden questions "
        f"and {r.log_lines} log lines (repeats counted)",
        CAPTION,
    )
    console.print(table)
    if origins:  # a table of its own: the first keeps to a terminal's width
        made = Table(title=lit("golden questions by how they were made", TITLE))
        made.add_column("slice", overflow="fold")
        for k in origins:
            made.add_column(lit("not recorded" if k == "unknown" else k), justify="right")
        for s in r.slices:
            made.add_row(lit(s.name), *(str(s.by_origin.get(k, 0)) for k in origins))
        console.print(made)
    lines = [
        ("over-represented in the golden set", r.with_status("over")),
        ("under-represented in the golden set", r.with_status("under")),
        ("in the log but not in the golden set", r.with_status("not in golden")),
        ("in the golden set but not in the log", r.with_status("not in log")),
    ]
    for what, rows in lines:
        if rows:
            console.print(lit(f"{what}: {', '.join(s.name for s in rows)}"))
    if r.log_unsliced:
        console.print(
            lit(
                f"{r.log_unsliced} log line(s) have no {r.field!r} field; "
                f"{r.golden_unsliced} golden question(s) have no slice"
            )
        )
    elif r.golden_unsliced:
        console.print(f"{r.golden_unsliced} golden question(s) have no slice")
