"""``ragmeter run EXPERIMENT.toml``: chunk, index, retrieve and score every variant of an
experiment."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from .._errors import RagmeterWarning
from ._common import Format, console, err_console, handle_errors, line, lit, print_json, write_csv
from ._store_options import db_option, no_store_option

if TYPE_CHECKING:  # pragma: no cover
    from ..experiments import ExperimentResult
    from ..workflows.experiment import RunCounts


def register(app: typer.Typer) -> None:
    app.command("run")(run_cmd)


@handle_errors
def run_cmd(
    experiment: Path = typer.Argument(
        ..., help="Experiment file (TOML): golden set, corpus, baseline and variants."
    ),
    cache_dir: Path | None = typer.Option(
        None,
        "--cache-dir",
        help="Cache folder (default: the file's 'cache', else "
        ".ragmeter-cache/ beside the experiment file).",
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Recompute everything; store nothing."),
    allow_outside: bool = typer.Option(
        False,
        "--allow-outside",
        help="Let the file's output and cache point outside its folder.",
    ),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json or csv."),
    db: str | None = db_option(),
    no_store: bool = no_store_option(),
    engine: str = typer.Option(
        "local",
        "--engine",
        help="Where embedding, generation and judging run: local (this process) or ray "
        "(needs the ray extra: docs/scale.md). Results are the same.",
    ),
    ray_address: str | None = typer.Option(
        None,
        "--ray-address",
        help="An existing Ray cluster (auto, host:6379 or ray://host:10001) for --engine ray; "
        "default: start a local one for this run.",
    ),
) -> None:
    """Run every variant; write run files, configs and evaluations; print the metric table.

    Metrics are shown at the prompt k / token budget; recall at headroom_k is labelled
    "headroom (not quality)". Re-running an unchanged experiment recomputes nothing.
    Exit code 1 when the experiment's [judge] failed any judgement (the run still completes
    and is stored; the failures are counted, never passed).
    """
    from ..engines import resolve_engine
    from ..workflows.experiment import run_and_record
    from ._store_options import open_store, say_stored, store_errors

    runner = resolve_engine(engine, address=ray_address)  # checked before anything runs
    check_writes(experiment, cache_dir, allow_outside=allow_outside, db=db)
    store = open_store(db, no_store)
    options: dict[str, Any] = dict(
        console=err_console, cache_dir=cache_dir, use_cache=not no_cache, engine=runner
    )
    with runner_closed(runner), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RagmeterWarning)
        with contextlib.nullcontext() if store is None else store_errors(store.url):
            result, ids = run_and_record(store, experiment, allow_outside=allow_outside, **options)
    for w in caught:
        if issubclass(w.category, RagmeterWarning):
            err_console.print(line(("warning:", "yellow"), f" {w.message}"))
    for v in result.variants:
        for trap in v.warnings:  # measured once it ran: the "changing k" trap
            err_console.print(line(("warning", "yellow"), f" ({v.name}): {trap}"))
        for note in dict.fromkeys(v.notes):
            err_console.print(line(("note", "yellow"), f" ({v.name}): {note}"))
    counts = _output(result, fmt)
    if store is not None:  # stderr: stdout stays the table, JSON or CSV
        say_stored(store, "run", list(ids.values()), "ragmeter runs list")
    if counts.judge_failed:  # everything is written and stored; the exit code says so
        err_console.print(
            line(
                (f"{counts.judge_failed} judgement(s) failed", "red"),
                "; they are recorded as failed, not as passes (see judgements.jsonl)",
            )
        )
        raise typer.Exit(1)


def check_writes(
    experiment: Path, cache_dir: Path | None, *, allow_outside: bool, db: str | None
) -> None:
    """Before anything runs: neither ``--cache-dir`` nor the experiment file's ``output`` and
    ``cache`` may write over the experiment store (``--no-store`` or not) or an input
    (cli/_outputs.py, experiments/_paths.py)."""
    from ..experiments import load_experiment
    from ..workflows.experiment import check_store_writes
    from ._outputs import check_folder

    if cache_dir is not None:
        check_folder(cache_dir, option="--cache-dir", inputs=[experiment], db=db)
    exp = load_experiment(experiment, warn=False, allow_outside=allow_outside)
    if cache_dir is not None:  # the inputs the file names are known now
        check_folder(
            cache_dir, option="--cache-dir", inputs=[exp.golden, exp.corpus, exp.beir], db=db
        )
    check_store_writes(exp, db=db, cache_dir=cache_dir)


@contextlib.contextmanager
def runner_closed(runner: Any) -> Iterator[None]:
    """Stop the engine when the run ends (a Ray cluster started for it stops with it)."""
    try:
        yield
    finally:
        runner.close()


def _output(result: ExperimentResult, fmt: Format) -> RunCounts:
    """The metric table (table, JSON or CSV) on stdout; in a table's wake, on stderr, what the
    run had to do and how to diagnose its answers. Returns the run's counts."""
    from ..workflows.experiment import diagnose_files, run_counts

    counts = run_counts(result)
    if fmt is Format.json:
        print_json(result.to_dict())
        return counts
    if fmt is Format.csv:
        write_csv(*result.csv_rows())
        return counts
    from ._render_experiment import render_answers, render_causal, render_experiment

    causal = render_causal(result)
    shown = [*render_experiment(result), *render_answers(result), *causal]
    for renderable in shown:
        console.print(renderable)
    err_console.print(lit(run_note(counts) + f"; outputs in {result.experiment.output}"))
    files = diagnose_files(result)
    if files is not None and not causal:  # with ablations, the causal section names the command
        err_console.print(
            lit(f"diagnose the baseline: ragmeter diagnose --experiment {result.experiment.path}")
        )
        cut = f"--k {files.k}" if files.k is not None else f"--budget {files.budget}"
        err_console.print(
            lit(
                f"a variant: ragmeter diagnose --golden {files.golden} --corpus "
                f"{files.corpus} --chunks {files.chunks} --run {files.run} {cut} "
                f"--answers {files.answers}"
            )
        )
    return counts


def run_note(c: RunCounts) -> str:
    """What the run had to do: encoder calls (or none), pipelines asked in place, answers made,
    judge HTTP requests; "from the cache" where a re-run recomputed nothing."""
    if c.encoder_calls is None:
        encoded = "no encoder"
    else:
        cached = " (everything from the cache)" if c.encoder_calls == 0 and not c.piped else ""
        encoded = f"encoder calls: {c.encoder_calls}{cached}"
    note = f"{c.variants} variants in {c.seconds:.1f}s; {encoded}"
    if c.piped:  # the user's own pipelines run every time and encode with their own models
        note += f"; pipelines asked in place: {c.piped}"
    if c.answers:
        all_cached = " (every answer from the cache)" if c.answers_made == 0 else ""
        note += f"; answers made: {c.answers_made} of {c.answers}{all_cached}"
    if c.judge_requests is not None:
        all_cached = (
            " (every reply from the cache)" if c.judge_requests == 0 and c.judge_cache_hits else ""
        )
        note += f"; judge HTTP requests: {c.judge_requests}{all_cached}"
    return note
