"""``ragmeter runs list|show|delete|export|import``: what the experiment store remembers.

Every ``run``, ``eval``, ``compare``, ``gate``, ``answers check`` and ``judge validate`` records
into the store (``--db URL``, else ``$RAGMETER_DATABASE_URL``, else
``sqlite:///.ragmeter/ragmeter.db``); these commands read it back. Deleting always asks: with no
terminal to ask on, only ``--yes`` deletes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich import box
from rich.table import Table

from .._errors import UsageError
from ._common import (
    TITLE,
    Format,
    console,
    err_console,
    handle_errors,
    lit,
    print_json,
    write_csv,
)
from ._render_runs import record_table, runs_tables
from ._store_options import (
    db_option,
    id_ranges,
    open_required,
    open_store,
    shown_url,
    store_errors,
)

runs_app = typer.Typer(
    help="The experiment store's runs: list, show, delete, export to files, import files.",
    no_args_is_help=True,
)
STATUSES = ("running", "finished", "interrupted", "failed")


def register(app: typer.Typer) -> None:
    app.add_typer(runs_app, name="runs")


# -- list -----------------------------------------------------------------------------------------
@runs_app.command("list")
@handle_errors
def list_cmd(
    experiment: str | None = typer.Option(None, "--experiment", help="Only this experiment."),
    golden: str | None = typer.Option(
        None, "--golden", help="Only runs on this golden-set version (g-...)."
    ),
    status: str | None = typer.Option(
        None, "--status", help="Only runs with this status: " + ", ".join(STATUSES) + "."
    ),
    limit: int = typer.Option(50, "--limit", help="Newest N runs; 0 for all.", min=0),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json or csv."),
    db: str | None = db_option(),
) -> None:
    """Stored runs, newest first: experiment, variant, status, golden version, headline metrics."""
    from ..workflows.runs import list_runs

    if status is not None and status not in STATUSES:
        raise UsageError(f"--status must be one of {', '.join(STATUSES)}, got '{status}'")
    store = open_required(db)
    with store_errors(store.url):
        listed = list_runs(
            store, experiment=experiment, golden=golden, status=status, limit=limit or None
        )
    records, more = listed.records, listed.more
    if fmt == Format.json:
        print_json([r.to_dict() for r in records])
    elif fmt == Format.csv:
        write_csv(*listed.csv_rows())
    elif not records:
        filters = [
            f"{k} {v}"
            for k, v in (("experiment", experiment), ("golden", golden), ("status", status))
            if v is not None
        ]
        err_console.print(
            lit(
                f"no runs in {shown_url(store)}"
                + (f" with {', '.join(filters)}" if filters else "")
            )
        )
    else:
        for renderable in runs_tables(records, console.width):
            console.print(renderable)
    if more > 0:
        err_console.print(f"… and {more} more (--limit 0 for all)")


# -- show -----------------------------------------------------------------------------------------
@runs_app.command("show")
@handle_errors
def show_cmd(
    run_id: int = typer.Argument(..., metavar="ID", help="Run id (see ragmeter runs list)."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table or json."),
    db: str | None = db_option(),
) -> None:
    """One run: its record, the metrics of every evaluation level, its settings and provenance."""
    from ..workflows.runs import show_run

    store = open_required(db)
    with store_errors(store.url):
        shown = show_run(store, run_id)
    if fmt == Format.json:
        print_json(shown.to_dict())
        return
    if fmt == Format.csv:
        raise UsageError("runs show prints a table or JSON (--format table|json)")
    console.print(record_table(shown.record))
    for lvl, e in shown.evaluations.items():
        console.print(lit(f"{lvl}-level metrics, {e.n_queries} questions", TITLE))
        t = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        t.add_column("metric", overflow="fold")
        t.add_column("mean", justify="right", no_wrap=True)
        for k, v in e.aggregate.items():
            t.add_row(lit(k), "-" if v is None else f"{v:.4f}")
        console.print(t)
    if shown.settings:
        console.print(lit("settings", TITLE))
        t = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        t.add_column("setting", overflow="fold")
        t.add_column("value", overflow="fold")
        for name, value in shown.settings.items():
            t.add_row(lit(name), lit(json.dumps(value, ensure_ascii=False, default=str)))
        console.print(t)


# -- delete ---------------------------------------------------------------------------------------
def can_ask() -> bool:
    """True when there is a terminal to ask on (tests replace this)."""
    return sys.stdin.isatty()


@runs_app.command("delete")
@handle_errors
def delete_cmd(
    run_ids: list[int] = typer.Argument(..., metavar="ID...", help="Run ids to delete."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Delete without asking."),
    db: str | None = db_option(),
) -> None:
    """Delete runs (asks first; without a terminal, only --yes deletes).

    Their evaluations and ranked lists go with them; comparisons that used them keep their
    numbers."""
    from ..workflows.runs import DamagedRun, delete_runs, runs_to_delete

    store = open_required(db)
    with store_errors(store.url):
        found = runs_to_delete(store, run_ids)  # every id is checked before anything is deleted
    ids = [r.id for r in found]
    for r in found:
        if isinstance(r, DamagedRun):
            err_console.print(lit(f"  run {r.id}: damaged ({r.what})"))
        else:
            err_console.print(
                lit(
                    f"  run {r.id}: {r.experiment} / {r.name} "
                    f"({r.status}, {r.golden_version or '-'})"
                )
            )
    what = f"{len(ids)} run{'s' if len(ids) > 1 else ''} from {shown_url(store)}"
    if not yes:
        if not can_ask():
            raise UsageError(f"not deleting {what}: no terminal to ask on; pass --yes to delete")
        if not typer.confirm(f"Delete {what}?", default=False, err=True):
            err_console.print("nothing deleted")
            return
    with store_errors(store.url):
        delete_runs(store, ids)
    err_console.print(lit(f"deleted {'runs' if len(ids) > 1 else 'run'} {id_ranges(ids)}"))


# -- export and import ----------------------------------------------------------------------------
@runs_app.command("export")
@handle_errors
def export_cmd(
    run_id: int = typer.Argument(..., metavar="ID", help="Run id."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder to write the run's files into."),
    force: bool = typer.Option(False, "--force", help="Replace files already there."),
    db: str | None = db_option(),
) -> None:
    """Write a stored run's files, as ragmeter run writes a variant's.

    evaluation.json (and chunk_evaluation.json), config.json, run.trec when its ranked lists
    were stored, and run.json (the store's record)."""
    from ..store import export_names
    from ..workflows.runs import export_run
    from ._outputs import check_folder

    # before the store is read: never into its artifacts folder, never over its database
    check_folder(out, option="--out", files=export_names(), db=db)
    store = open_required(db)
    with store_errors(store.url):
        written = export_run(store, run_id, out, force=force)
    for p in written:
        console.print(lit(str(p)), soft_wrap=True)


@runs_app.command("import")
@handle_errors
def import_cmd(
    paths: list[Path] = typer.Argument(
        ...,
        metavar="PATH...",
        help="Experiment output folders (summary.json), variant folders (evaluation.json), "
        "eval JSON files, or a selection ledger (ledger.jsonl).",
    ),
    db: str | None = db_option(),
) -> None:
    """Bring files ragmeter wrote before the store into it; prints the new run ids.

    Every file of every PATH is checked first; then all of them are stored in one transaction,
    or none. A run or ledger entry already in the store is skipped, saying which run it is."""
    from ..workflows.runs import import_paths

    store = open_store(db)  # created when missing; a read-only store is refused first
    assert store is not None  # (open_store gives None only with --no-store)
    with store_errors(store.url):
        done = import_paths(store, paths)
    for p in done.paths:
        parts = []
        ledger = p.path.suffix == ".jsonl" and p.path.is_file()
        if p.ids or not ledger:
            label = "run" if len(p.new) == 1 else "runs"
            parts.append(f"{label} {id_ranges(list(p.new)) or '(none)'}")
        if ledger:
            parts.append(f"{p.ledger} ledger entr{'y' if p.ledger == 1 else 'ies'}")
        if p.skipped or p.ledger_skipped:
            n = len(p.skipped) + p.ledger_skipped
            parts.append(f"{n} already in the store, skipped")
        console.print(lit(f"{p.path}: {'; '.join(parts)}"), soft_wrap=True)
        for what, run_id in p.skipped:
            err_console.print(
                lit(f"note: {p.path}: {what} is already in the store as run {run_id}; skipped"),
                soft_wrap=True,
            )
        if p.ledger_skipped:
            err_console.print(
                lit(
                    f"note: {p.path}: {p.ledger_skipped} ledger entr"
                    f"{'y is' if p.ledger_skipped == 1 else 'ies are'} already in the store; "
                    "skipped (a comparison is counted once)"
                ),
                soft_wrap=True,
            )
    err_console.print(lit(f"in {shown_url(store)}  (ragmeter runs list)"), soft_wrap=True)
