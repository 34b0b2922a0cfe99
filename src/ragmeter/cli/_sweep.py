"""``ragmeter sweep``: a metric for several runs at every k (or token budget), and where the
leader changes. The job is :func:`ragmeter.workflows.sweep.sweep_files`."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import typer

from ._common import Format, err_console, handle_errors, print_json


def register(app: typer.Typer) -> None:
    app.command("sweep")(sweep_cmd)


@handle_errors
def sweep_cmd(
    runs: list[Path] = typer.Argument(..., metavar="RUN...", help="Run files (TREC or JSONL)."),
    qrels: Path | None = typer.Option(None, "--qrels", help="Item qrels (rank-level sweep)."),
    golden: Path | None = typer.Option(
        None,
        "--golden",
        help="Span-labelled golden set: sweeps ranks or token budgets of chunk runs.",
    ),
    chunks: list[Path] | None = typer.Option(
        None, "--chunks", help="Chunking of the runs (once for all, or once per run in order)."
    ),
    metrics: str = typer.Option(
        "R,RR",
        "--metric",
        "-m",
        help="Metrics without a cutoff, comma-separated, e.g. 'R,RR' or 'nDCG(gain=exp)'.",
    ),
    ks: str | None = typer.Option(
        None,
        "--k",
        help="Rank cutoffs: '1..20' (the default without --budget), '1,3,5,10' or a mix; a "
        "range stops at the runs' depth.",
    ),
    budgets: str | None = typer.Option(
        None, "--budget", help="Token budgets (with --golden), e.g. '400..2000:400' or '600,1200'."
    ),
    headroom_k: int = typer.Option(
        100,
        "--headroom-k",
        help="Recall at this k is shown as pool headroom, never as quality (0: leave out).",
    ),
    cover: float = typer.Option(0.5, "--cover", help="Span share that counts as found."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json or csv."),
    name: list[str] | None = typer.Option(
        None,
        "--name",
        help="A name per run, in order (repeat the option); default: each run's tag (the last "
        "column of a TREC line), else the file name.",
    ),
) -> None:
    """A metric for several runs at every k (or token budget), and where the winner changes."""
    from ..workflows.sweep import sweep_files
    from ._render_compare import print_sweep

    with err_console.status("scoring every run at every cutoff..."):
        sweeps = sweep_files(
            runs,
            qrels=qrels,
            golden=golden,
            chunks=chunks or (),
            metrics=metrics,
            ks=ks,
            budgets=budgets,
            headroom_k=headroom_k,
            cover=cover,
            names=name or (),
        )
    if fmt == Format.json:
        print_json([s.to_dict() for s in sweeps])
    elif fmt == Format.csv:
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(["metric", "run", "cutoff", "value"])
        for s in sweeps:
            for r, row in zip(s.runs, s.values, strict=True):
                for k, v in zip(s.cutoffs, row, strict=True):
                    w.writerow([s.label, r, k, f"{v:.6f}"])
    else:
        for s in sweeps:
            print_sweep(s)
