"""``ragmeter report``: the lab's views as one self-contained HTML file (the runs come from
:mod:`ragmeter.workflows.report`, the page from :func:`ragmeter.lab.write_report`)."""

from __future__ import annotations

from pathlib import Path

import typer

from ._common import err_console, handle_errors, lit
from ._store_options import db_option


def register(app: typer.Typer) -> None:
    app.command("report")(report_cmd)


@handle_errors
def report_cmd(
    selectors: list[str] = typer.Argument(
        ...,
        metavar="RUN_OR_EXPERIMENT...",
        help="Stored run ids (12, run:12) or experiment names; the first run is the baseline.",
    ),
    output: Path = typer.Option(..., "--output", "-o", help="The HTML file to write."),
    force: bool = typer.Option(False, "--force", help="Replace an existing file."),
    db: str | None = db_option(),
    root: Path | None = typer.Option(
        None,
        "--root",
        help="The experiments folder (default: the current one): the experiment and chunk "
        "files stored runs name are read only inside it.",
    ),
) -> None:
    """Write one self-contained HTML report (CSS, JS and data inline; opens from file:// with
    no network): the runs' metrics, per-question ranked lists with evidence marked, the
    comparison against the baseline, sweeps and diagnosis."""
    from ..lab import lab_root, write_report
    from ..store import Store
    from ._outputs import check_output
    from ._store_options import require_existing, store_errors

    # before the store is read: never over the store itself, a folder, or a file without --force
    check_output(output, force=force, option="--output", db=db)
    from ..retrieval import progress_for

    folder = lab_root(root)
    with store_errors(db):
        require_existing(db)
        store = Store.open(db)
        # once the store opens (a bad URL stays one error line), before the seconds of reading
        # ranked lists and resampling: what is being built
        err_console.print(
            lit(
                f"building the report of {' '.join(selectors)}: each run's ranked lists, the "
                "comparisons against the first, sweeps and diagnosis"
            )
        )
        path = write_report(
            store, selectors, output, root=folder, progress=progress_for(err_console)
        )
    err_console.print(lit(f"report written to {path} (open it in a browser; no network needed)"))
