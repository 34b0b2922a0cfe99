"""``ragmeter chunk``: cut a corpus into chunks and write the chunk table."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from ._common import (
    TITLE,
    Format,
    columns_table,
    console,
    err_console,
    handle_errors,
    lit,
    print_json,
    write_csv,
)

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
    from ..workflows.labels import chunk_files, plan_chunking
    from ._outputs import check_output

    plan = plan_chunking(chunker, tokenizer)  # a bad name fails before any work
    check_output(output, force=force, inputs=[corpus])  # first: it names the store it protects
    done = chunk_files(corpus, plan, output, progress=_progress_bar)
    stats = done.stats()
    if fmt == Format.json:
        print_json(stats)
    elif fmt == Format.csv:
        write_csv(list(stats), [list(stats.values())])
    else:
        t = columns_table(
            lit(f"{done.chunking.name} -> {output}", TITLE),
            ("chunks", "documents", "tokens min", "median", "max", "tokenizer"),
            text=(),
        )
        t.add_row(
            f"{stats['n_chunks']:,}",
            f"{stats['n_docs']:,}",
            str(stats["tokens_min"]),
            f"{stats['tokens_median']:g}",
            str(stats["tokens_max"]),
            lit(stats["tokenizer"]),
        )
        console.print(t)


@contextmanager
def _progress_bar(description: str, total: int) -> Iterator[Callable[[int, int], None]]:
    """A transient progress bar on stderr for one long step; yields its ``update(done, total)``."""
    from rich.progress import (
        BarColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )

    # markup=False: the chunker name (tokens:100:0) is printed as written, never as markup/emoji
    columns = (
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        TaskProgressColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda done, _: bar.update(task, completed=done)
