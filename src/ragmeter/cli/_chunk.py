"""``ragmeter chunk``: cut a corpus into chunks and write the chunk table."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import typer
from rich.table import Table

from ._common import TITLE, Format, console, err_console, handle_errors, lit, print_json

CHUNKER_HELP = (
    "tokens:SIZE:OVERLAP, sentences:N, sections:MAX_TOKENS, recursive:SIZE:OVERLAP "
    "or document (one chunk per document), e.g. tokens:300:50"
)


def register(app: typer.Typer) -> None:
    app.command("chunk")(chunk_cmd)


@handle_errors
def chunk_cmd(
    corpus: Path = typer.Argument(..., help="Corpus: a JSONL file or a folder of .txt/.md files."),
    chunker: str = typer.Option(..., "--chunker", "-c", help=CHUNKER_HELP),
    output: Path = typer.Option(..., "-o", "--output", help="Chunk file: .parquet or .jsonl."),
    tokenizer: str = typer.Option("minilm-wordpiece", help="minilm-wordpiece or regex-words."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing output file."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json or csv."),
) -> None:
    """Chunk every document; one row per chunk: id, doc, start, end, text, n_tokens."""
    from rich.progress import (
        BarColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )

    from ..chunking import chunk_corpus, get_tokenizer, make_chunker
    from ..chunking._format import suffix_of
    from ..data.corpus import load_corpus
    from ._outputs import check_output

    spec = make_chunker(chunker)  # a bad name fails before any work
    tok = get_tokenizer(tokenizer)
    check_output(output, force=force, inputs=[corpus])  # first: it names the store it protects
    suffix_of(output)  # the library's rule for chunk file names, checked before any work
    docs = load_corpus(corpus)
    # markup=False: the chunker name (tokens:100:0) is printed as written, never as markup/emoji
    columns = (
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        TaskProgressColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task(f"chunking {spec.name}", total=len(docs))
        chunking = chunk_corpus(
            docs, spec, tokenizer=tok, progress=lambda done, _: bar.update(task, completed=done)
        )
    chunking.save(output)
    stats = dict(chunking.stats(), path=str(output))
    if fmt == Format.json:
        print_json(stats)
    elif fmt == Format.csv:
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(list(stats))
        w.writerow(list(stats.values()))
    else:
        t = Table(title=lit(f"{chunking.name} -> {output}", TITLE))
        for col in ("chunks", "documents", "tokens min", "median", "max", "tokenizer"):
            t.add_column(col, justify="right")
        t.add_row(
            f"{stats['n_chunks']:,}",
            f"{stats['n_docs']:,}",
            str(stats["tokens_min"]),
            f"{stats['tokens_median']:g}",
            str(stats["tokens_max"]),
            lit(stats["tokenizer"]),
        )
        console.print(t)
