"""``ragmeter run EXPERIMENT.toml``: chunk, index, retrieve and score every variant of an
experiment."""

from __future__ import annotations

import contextlib
import csv
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from .._errors import RagmeterWarning
from ._common import Format, console, err_console, handle_errors, line, lit, print_json
from ._store_options import db_option, no_store_option

if TYPE_CHECKING:  # pragma: no cover
    from ..experiments import ExperimentResult


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
        for note in dict.fromkeys(v.notes):
            err_console.print(line(("note", "yellow"), f" ({v.name}): {note}"))
    _output(result, fmt)
    if store is not None:  # stderr: stdout stays the table, JSON or CSV
        say_stored(store, "run", list(ids.values()), "ragmeter runs list")
    failed = sum(r.get("judge_failed") or 0 for r in result.answer_rows())
    if failed:  # everything is written and stored; the exit code says the judge fell short
        err_console.print(
            line(
                (f"{failed} judgement(s) failed", "red"),
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


def _output(result: ExperimentResult, fmt: Format) -> None:
    if fmt is Format.json:
        print_json(result.to_dict())
        return
    if fmt is Format.csv:
        rows = result.table_rows()
        writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return
    from ._render_experiment import render_answers, render_experiment

    for renderable in [*render_experiment(result), *render_answers(result)]:
        console.print(renderable)
    # the user's own pipelines run every time and encode with their own models
    piped = sum(v.pipeline_errors is not None for v in result.variants)
    answers = result.answer_rows()
    made = sum(r["model_calls"] for r in answers)
    err_console.print(
        lit(
            f"{len(result.variants)} variants in {result.seconds:.1f}s; "
            f"{encoder_note(result, piped=piped)}"
            + (f"; pipelines asked in place: {piped}" if piped else "")
            + (
                f"; answers made: {made} of {sum(r['answers'] for r in answers)}"
                f"{' (every answer from the cache)' if made == 0 else ''}"
                if answers
                else ""
            )
            + _judge_note(result)
            + f"; outputs in {result.experiment.output}"
        )
    )
    if answers:
        _say_diagnose(result)


def _judge_note(result: ExperimentResult) -> str:
    """The run note's "judge HTTP requests: N" over every variant, when the judge counts its
    requests (the fake judge sends none and says nothing here); a re-run answered from the
    judge cache says so, as the answers' note does."""
    usages = [
        v.answers.judge_usage
        for v in result.variants
        if v.answers is not None and v.answers.judge_usage is not None
    ]
    if not usages:
        return ""
    sent = sum(u["http_requests"] for u in usages)
    hits = sum(u["cache_hits"] for u in usages)
    return f"; judge HTTP requests: {sent}" + (
        " (every reply from the cache)" if sent == 0 and hits else ""
    )


def encoder_note(result: ExperimentResult, *, piped: int) -> str:
    """How many texts reached an encoder: a BM25-only run has no encoder, and saying
    "0 (everything from the cache)" there would claim a cache that was never involved."""
    if not result.encoder_calls:
        return "no encoder"
    calls = result.total_encoder_calls
    cached = " (everything from the cache)" if calls == 0 and not piped else ""
    return f"encoder calls: {calls}{cached}"


def _say_diagnose(result: ExperimentResult) -> None:
    """How to diagnose one variant's answers from the files just written (stderr)."""
    exp = result.experiment
    v = result.baseline
    folder = exp.output / v.name if v.answers is None else v.answers.folder
    if folder is None:
        return
    cut = f"--k {v.settings.k}" if v.settings.k is not None else f"--budget {v.settings.budget}"
    run = v.run_path or folder / "run.trec"
    err_console.print(
        lit(
            f"diagnose a variant: ragmeter diagnose --golden {exp.golden} --corpus "
            f"{exp.corpus} --chunks {folder / 'chunks.jsonl'} --run {run} {cut} "
            f"--answers {folder / 'answers.jsonl'}"
        )
    )
