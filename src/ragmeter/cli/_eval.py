"""``ragmeter eval``: score runs against item qrels or span labels."""

from __future__ import annotations

import csv
import functools
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import typer
from rich.table import Table

from .._errors import UsageError
from ..metrics._evaluation import NO_MEAN, Evaluation
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
)
from ._metric_notes import note_trec_eval_names
from ._store_options import db_option, no_store_option

if TYPE_CHECKING:
    from ..metrics._engine import Missing
    from ..metrics._ranking import Ties

DEFAULT_METRICS = "nDCG@10,RR@10,R@100,P@5,AP"
F = TypeVar("F", bound=Callable[..., Any])


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_cmd)


def _duplicates_spelled(fn: F) -> F:
    """The library's duplicate-row error suggests ``duplicates='best'``; here, the option."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from ..io._duplicates import DuplicateRowsError

        try:
            return fn(*args, **kwargs)
        except DuplicateRowsError as e:
            raise e.spelled("give --duplicates best") from None

    return cast("F", wrapper)


@handle_errors
@_duplicates_spelled
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
    per_query: bool = typer.Option(False, "--per-query", help="Also output per-query values."),
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
    from ._store_options import open_store, say_stored, store_errors

    store = open_store(db, no_store)
    if metrics:
        note_trec_eval_names(metrics)
    if golden is not None or chunks is not None:
        evals = _span_evals(
            paths, metrics, golden, chunks, corpus, k, budget, cover, missing, ties, duplicates
        )
    else:
        if k is not None or budget is not None:
            raise UsageError("--k and --budget apply to span labels; give --golden and --chunks")
        if query_chunks is not None:
            from ..metrics._chunked import evaluate_chunked
            from ..metrics._spec import parse_list

            ms = parse_list(metrics or DEFAULT_METRICS)
        if len(paths) < 2:
            raise UsageError("give QRELS and at least one RUN (or --golden G --chunks C RUN ...)")
        from ..io import to_qrels, to_run
        from ..metrics._engine import evaluate

        # a spinner on stderr while large files are read and scored (silent when not a terminal);
        # the library picks the reader (TREC or JSON Lines) from the file, as ragmeter.evaluate does
        with err_console.status(lit(f"reading {paths[0]}")):
            qrels = to_qrels(paths[0])
        evals = []
        for p in paths[1:]:
            with err_console.status(lit(f"reading and scoring {p}")), warnings.catch_warnings():
                # an id-space mismatch is kept in the Evaluation and printed after the results
                warnings.filterwarnings("ignore", message=ID_SPACE_WARNING)
                if query_chunks is not None:  # the run is streamed, never read whole
                    chunked = evaluate_chunked(
                        qrels,
                        p,
                        ms,
                        query_chunks=query_chunks,
                        duplicates=duplicates,
                        missing=missing,
                        ties=ties,
                        run_name=str(p),
                        config={"qrels": str(paths[0])},
                    )
                    evals.append(chunked)
                    continue
                run = to_run(p, duplicates=duplicates)
                evals.append(
                    evaluate(
                        qrels,
                        run,
                        metrics or DEFAULT_METRICS,
                        # the strings as typed: evaluate() refuses any other value (UsageError)
                        missing=cast("Missing", missing),
                        ties=cast("Ties", ties),
                        run_name=str(p),
                        config={"qrels": str(paths[0])},
                    )
                )
    output(evals, fmt, per_query)
    print_warnings(evals)
    if store is not None:
        run_files = paths if golden is not None or chunks is not None else paths[1:]
        with store_errors(store.url):
            ids = [
                store.record_evaluation(e, source=str(p))
                for e, p in zip(evals, run_files, strict=True)
            ]
        say_stored(store, "run", ids, "ragmeter runs list")


def _span_evals(
    paths, metrics, golden, chunks, corpus, k, budget, cover, missing, ties, duplicates
):
    if golden is None or chunks is None:
        raise UsageError("span-level scoring needs both --golden and --chunks")
    from ..labels import evaluate_spans_files

    return evaluate_spans_files(
        paths,
        metrics=metrics,
        golden=golden,
        chunks=chunks,
        corpus=corpus,
        k=k,
        budget=budget,
        cover=cover,
        missing=missing,
        ties=ties,
        duplicates=duplicates,
    )


def output(evals: list[Evaluation], fmt: Format, per_query: bool) -> None:
    """Print evaluations as a rich table, JSON (the shape later tools read) or CSV."""
    if fmt == Format.json:
        objs = [e.to_dict(per_query=per_query) for e in evals]
        print_json(objs[0] if len(objs) == 1 else objs)
    elif fmt == Format.csv:
        w = csv.writer(sys.stdout, lineterminator="\n")
        names = [str(m) for m in evals[0].metrics]
        w.writerow(["run", "query", *names])
        for e in evals:
            if per_query:
                for q, row in e.per_query.items():
                    w.writerow([e.run, q, *(_fmt(row[n]) for n in names)])
            w.writerow([e.run, "all", *(_fmt(e.aggregate[n]) for n in names)])
    else:
        console.print(table(evals))
        if per_query:
            for e in evals:
                console.print(per_query_table(e))


#: the start of the id-space warning's text (ragmeter.io._id_spaces.check_item_ids)
ID_SPACE_WARNING = r".*: none of the \d+ item id\(s\) the run retrieves is judged"


def print_warnings(evals: list[Evaluation]) -> None:
    """Each evaluation's warnings on stderr, after the results (stdout stays the table, JSON or
    CSV), so the last thing read is why the numbers are suspect."""
    for e in evals:
        for message in e.warnings:
            err_console.print(line(("warning:", "bold red"), f" {message}"))


def _fmt(v: float | None) -> str:
    # no scorable query: no mean, an empty cell (never 0)
    return "" if v is None else f"{v:.6f}"


def _cell(v: float | None) -> str:
    return NO_MEAN if v is None else f"{v:.4f}"


def table(evals: list[Evaluation], title: str | None = None) -> Table:
    names = [str(m) for m in evals[0].metrics]
    t = Table(title=None if title is None else lit(title, TITLE))
    t.add_column("run")
    for n in names:
        t.add_column(lit(n), justify="right")
    t.add_column("queries", justify="right")
    for e in evals:
        t.add_row(lit(e.run), *(_cell(e.aggregate[n]) for n in names), str(e.n_queries))
    notes = []
    for e in evals:
        if e.warnings:
            notes.append(
                f"{e.run}: no item id of the run is in the qrels: every score is 0 "
                "(see the warning)"
            )
        if e.n_missing or e.n_no_relevant:
            notes.append(
                f"{e.run}: {e.n_missing} labelled queries missing from the run (counted as "
                f"{'0' if e.config.get('missing', 'zero') == 'zero' else 'skipped'}), "
                f"{e.n_no_relevant} queries with no relevant item excluded"
            )
        if e.golden_version:
            notes.append(f"{e.run}: golden set {e.golden_version}")
        for budget, eff in (e.config.get("effective_k") or {}).items():
            notes.append(
                f"{e.run}: effective k at budget {budget}: min {eff.get('min')}, "
                f"median {eff.get('median')}, max {eff.get('max')}"
            )
    t.caption = lit(
        "\n".join(notes) if notes else "no missing queries; no query without relevant items",
        CAPTION,
    )
    return t


def per_query_table(e: Evaluation) -> Table:
    names = [str(m) for m in e.metrics]
    t = Table(title=lit(f"per query: {e.run}", TITLE))
    t.add_column("query")
    for n in names:
        t.add_column(lit(n), justify="right")
    for q, row in e.per_query.items():
        t.add_row(lit(q), *(f"{row[n]:.4f}" for n in names))
    return t
