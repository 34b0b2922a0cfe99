"""``ragmeter labels``: chunk qrels from span labels, and context-budget fairness."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import typer
from rich.table import Table

from ._common import Format, console, err_console, handle_errors, line, lit, print_json

labels_app = typer.Typer(
    help="Labels derived from span labels: chunk qrels for one chunking, budget fairness.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(labels_app, name="labels")


@labels_app.command("export")
@handle_errors
def export_cmd(
    golden: Path = typer.Option(..., "--golden", help="Span-labelled golden set (JSONL)."),
    chunks: Path = typer.Option(..., "--chunks", help="Chunk file (.parquet or .jsonl)."),
    output: Path = typer.Option(..., "-o", "--output", help="TREC qrels file to write."),
    cover: float = typer.Option(
        0.5,
        help="A chunk is labelled with a span's grade when it holds "
        "this share of the span, or the span fills this share "
        "of the chunk.",
    ),
    corpus: Path | None = typer.Option(None, help="Corpus to check the chunk texts against."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing output file."),
) -> None:
    """Write chunk-level TREC qrels (qid 0 chunk_id grade) for one chunking.

    Use them for P@k / nDCG@k between variants of THIS chunking only; compare chunkings with
    span-level recall at an equal token budget (ragmeter eval --golden --chunks --budget).
    """
    from ..labels import check_cover
    from ..workflows.labels import export_chunk_qrels
    from ._outputs import check_output

    check_cover(cover)
    check_output(output, force=force, inputs=[golden, chunks, corpus])
    done = export_chunk_qrels(golden, chunks, output, cover=cover, corpus=corpus)
    for message in done.warnings:
        err_console.print(line(("warning:", "yellow"), f" {message}"))
    err_console.print(
        lit(
            f"wrote {done.judgements:,} chunk judgements for {done.questions:,} questions "
            f"(chunking {done.chunking}, cover {done.cover:g}) to {done.output}"
        )
    )


@labels_app.command("budget")
@handle_errors
def budget_cmd(
    variants: list[str] = typer.Argument(
        ..., help="CHUNK_TOKENSxK per variant, the first is the baseline, e.g. 300x4 900x4 300x12."
    ),
    tolerance: float = typer.Option(
        0.10, help="Largest relative difference of context tokens for a fair comparison."
    ),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json or csv."),
) -> None:
    """Context tokens per variant (chunk tokens x k) and which comparisons are fair."""
    from ..labels import budget_table

    rows = budget_table(variants, tolerance)
    records = [
        {
            "variant": r.variant.name,
            "chunk_tokens": r.variant.chunk_tokens,
            "k": r.variant.k,
            "context_tokens": r.context_tokens,
            "ratio_to_baseline": round(r.ratio_to_baseline, 6),
            "fair_with_baseline": r.fair_with_baseline,
            "fair_with": list(r.fair_with),
            "verdict": r.verdict,
        }
        for r in rows
    ]
    if fmt == Format.json:
        print_json({"tolerance": tolerance, "variants": records})
    elif fmt == Format.csv:
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(
            ["variant", "chunk_tokens", "k", "context_tokens", "ratio_to_baseline", "verdict"]
        )
        for rec in records:
            w.writerow(
                [
                    rec["variant"],
                    rec["chunk_tokens"],
                    rec["k"],
                    rec["context_tokens"],
                    rec["ratio_to_baseline"],
                    rec["verdict"],
                ]
            )
    else:
        t = Table(title=f"context budgets (fair: within {tolerance:.0%})")
        for col in ("chunk size", "k", "context tokens", "vs baseline", "fair comparison?"):
            t.add_column(col, justify="right" if col != "fair comparison?" else "left")
        for r in rows:
            t.add_row(
                f"{r.variant.chunk_tokens:g} tokens",
                str(r.variant.k),
                f"{r.context_tokens:,.0f}",
                f"{r.ratio_to_baseline:.2f}x",
                lit(r.verdict),
            )
        console.print(t)
