"""``ragmeter eval``: score runs against item qrels or span labels."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from ._common import (
    CAPTION,
    TITLE,
    Format,
    console,
    err_console,
    handle_errors,
    line,
    lit,
    print_json,
    write_csv,
)
from ._metric_notes import note_trec_eval_names
from ._store_options import db_option, no_store_option

if TYPE_CHECKING:  # pragma: no cover
    from ..metrics import Evaluation

#: the metrics scored on qrels when none are named (``workflows.evaluate.DEFAULT_METRICS``,
#: spelled here too so that ``--help`` imports no scoring code; a test holds them equal)
DEFAULT_METRICS = "nDCG@10,RR@10,R@100,P@5,AP"


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_cmd)


@handle_errors
def eval_cmd(
    paths: list[Path] = typer.Argument(
        ..., help="QRELS RUN [RUN ...]; with --golden, only runs (of chunk ids)."
    ),
    metrics: str | None = typer.Option(
        None,
        "-m",
        "--metrics",
        help=f"Comma-separated metrics. Default: '{DEFAULT_METRICS}' on qrels; 'R,Hit,AllR,RR' at "
        "every --k/--budget on span labels.",
    ),
    per_query: bool = typer.Option(
        False,
        "--per-query",
        help="Also output per-query values (JSON: with the per-query details). The store keeps "
        "them either way.",
    ),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json or csv."),
    missing: str = typer.Option(
        "zero", help="Queries absent from a run: 'zero' (trec_eval -c) or 'skip'."
    ),
    ties: str = typer.Option(
        "trec", help="'trec': score desc then id desc (float32); 'given': file order."
    ),
    duplicates: str = typer.Option(
        "best", help="Duplicate item in one query: 'best' (keep, warn) or 'error'."
    ),
    golden: Path | None = typer.Option(None, help="Span-labelled golden set (JSONL)."),
    chunks: Path | None = typer.Option(None, help="Chunking the runs' chunk ids refer to."),
    corpus: Path | None = typer.Option(None, help="Corpus (to check span labels against)."),
    k: str | None = typer.Option(
        None, "--k", help="Prompt k(s) for span metrics given without a cutoff, e.g. '3' or '1,3'."
    ),
    budget: str | None = typer.Option(
        None, help="Token budget(s) for span metrics given without a cutoff, e.g. '1200,3600'."
    ),
    cover: float = typer.Option(
        0.5, help="Share of a span the retrieved chunks must cover to count it found."
    ),
    query_chunks: int | None = typer.Option(
        None,
        "--query-chunks",
        min=1,
        help="Score N slices of queries one after another, streaming each TREC run (for runs "
        "larger than memory); the same numbers.",
    ),
    db: str | None = db_option(),
    no_store: bool = no_store_option(),
) -> None:
    """Score runs. Metric keys in every output are canonical metric strings."""
    from ..workflows.evaluate import record, score_runs
    from ._store_options import open_store, say_stored, store_errors

    store = open_store(db, no_store)
    if metrics:
        note_trec_eval_names(metrics)
    scored = score_runs(
        paths,
        metrics=metrics,
        missing=missing,
        ties=ties,
        duplicates=duplicates,
        golden=golden,
        chunks=chunks,
        corpus=corpus,
        k=k,
        budget=budget,
        cover=cover,
        query_chunks=query_chunks,
        # a spinner on stderr while large files are read and scored (silent when not a terminal)
        status=lambda text: err_console.status(lit(text)),
        duplicates_fix="give --duplicates best",  # the library's hint, as this command's option
    )
    output(scored.evaluations, fmt, per_query)
    print_warnings(scored.evaluations)
    if store is not None:
        with store_errors(store.url):
            ids = record(store, scored)
        say_stored(store, "run", ids, "ragmeter runs list")


def output(evals: list[Evaluation], fmt: Format, per_query: bool) -> None:
    """Print evaluations as a rich table, JSON (the shape later tools read) or CSV."""
    if fmt == Format.json:
        objs = [json_record(e, per_query) for e in evals]
        print_json(objs[0] if len(objs) == 1 else objs)
    elif fmt == Format.csv:
        tables = [e.csv_rows(per_query=per_query) for e in evals]
        write_csv(tables[0][0], [row for _, rows in tables for row in rows])
    else:
        console.print(table(evals))
        if per_query:
            for e in evals:
                console.print(per_query_table(e))


def json_record(e: Evaluation, per_query: bool) -> dict[str, object]:
    """``eval --format json``'s record of one run: with ``per_query``, the whole
    :meth:`~ragmeter.metrics.Evaluation.to_dict` (per-query values, details, slices, splits:
    what ``compare`` and ``runs import`` read); else the aggregate record (means, counts, the
    missing and no-relevant ids, config, warnings), built without a pass over the queries."""
    if per_query:
        return e.to_dict(per_query=True)
    from dataclasses import replace

    return replace(e, details={}, slices={}, splits={}).to_dict(per_query=False)


def print_warnings(evals: list[Evaluation]) -> None:
    """Each evaluation's warnings on stderr, after the results (stdout stays the table, JSON or
    CSV), so the last thing read is why the numbers are suspect."""
    for e in evals:
        for message in e.warnings:
            err_console.print(line(("warning:", "bold red"), f" {message}"))


def _cell(v: float | None) -> str:
    from ..workflows.evaluate import NO_MEAN

    return NO_MEAN if v is None else f"{v:.4f}"


def table(evals: list[Evaluation], title: str | None = None) -> Table:
    from ..workflows.evaluate import evaluation_notes

    names = [str(m) for m in evals[0].metrics]
    t = Table(title=None if title is None else lit(title, TITLE))
    t.add_column("run")
    for m in evals[0].metrics:
        t.add_column(lit(m.label), justify="right")  # nDCG@10 (linear): the gain said
    t.add_column("queries", justify="right")
    for e in evals:
        t.add_row(lit(e.run), *(_cell(e.aggregate[n]) for n in names), str(e.n_queries))
    notes = evaluation_notes(evals)
    t.caption = lit(
        "\n".join(notes) if notes else "no missing queries; no query without relevant items",
        CAPTION,
    )
    return t


def per_query_table(e: Evaluation) -> Table:
    names = [str(m) for m in e.metrics]
    t = Table(title=lit(f"per query: {e.run}", TITLE))
    t.add_column("query")
    for m in e.metrics:
        t.add_column(lit(m.label), justify="right")
    for q, row in e.per_query.items():
        t.add_row(lit(q), *(f"{row[n]:.4f}" for n in names))
    return t
