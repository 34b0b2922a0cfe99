"""``ragmeter answers export``: a stored answer set written back as an answers JSONL file.

The lab's and the report's "same numbers as" lines start with it when the answers file an
answer set was checked from is gone, or lies outside the folder the lines run from (see
:mod:`ragmeter.lab._commands`), as they start with ``ragmeter runs export`` for a run file.
Registers itself on the ``answers`` group of :mod:`ragmeter.cli._answers` (listed after it in
``COMMAND_MODULES``).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ._common import console, handle_errors, lit
from ._store_options import db_option


def register(app: typer.Typer) -> None:
    """Add ``export`` to the ``answers`` group (which ``_answers`` has put on ``app``)."""
    from ._answers import answers_app

    answers_app.command("export")(export_cmd)


@handle_errors
def export_cmd(
    set_id: int = typer.Argument(..., metavar="ID", help="Stored answer set id."),
    out: Path = typer.Option(..., "--out", "-o", help="The answers JSONL file to write."),
    force: bool = typer.Option(False, "--force", help="Replace an existing file."),
    db: str | None = db_option(),
) -> None:
    """Write a stored answer set (ragmeter answers check recorded it) as an answers JSONL file,
    one answer a line, as it was checked (the store's judge verdicts and generation records
    left out)."""
    from ..io import atomic_write
    from ..workflows.answers import STORE_ONLY
    from ._outputs import check_output
    from ._store_options import open_required, store_errors

    # before the store is read: never over the store itself, a folder, or a file without --force
    check_output(out, force=force, option="--out", db=db)
    store = open_required(db)
    with store_errors(store.url):
        stored = store.answer_set(set_id)
    lines = [
        json.dumps({k: v for k, v in a.items() if k not in STORE_ONLY}, ensure_ascii=False)
        for a in stored.answers
    ]
    atomic_write(out, "".join(f"{line}\n" for line in lines))
    console.print(lit(f"{out}: {len(lines)} answers of answer set {stored.id} ({stored.name})"))
