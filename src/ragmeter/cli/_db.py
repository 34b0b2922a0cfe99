"""``ragmeter db upgrade|current``: the experiment store's schema.

A SQLite store is migrated when a command opens it; a server database (PostgreSQL) is migrated
only by ``ragmeter db upgrade``, once per ragmeter upgrade, by whoever runs the team's database.
"""

from __future__ import annotations

import typer

from ._common import Format, console, handle_errors, lit, print_json
from ._store_options import db_option, store_errors

db_app = typer.Typer(
    help="The experiment store's schema: show its revision, migrate it.", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")


@db_app.command("upgrade")
@handle_errors
def upgrade_cmd(db: str | None = db_option()) -> None:
    """Migrate the store to this ragmeter's schema (creates the tables on an empty database)."""
    from ..store import upgrade_schema

    with store_errors(db):
        before, after = upgrade_schema(db)
    shown = after.display_url
    if before.revision == after.revision:
        console.print(
            lit(f"{shown}: already at revision {after.revision} (head {after.head})"),
            soft_wrap=True,
        )
    else:
        console.print(
            lit(
                f"{shown}: upgraded from {before.revision or 'empty'} to revision {after.revision}"
            ),
            soft_wrap=True,
        )


@db_app.command("current")
@handle_errors
def current_cmd(
    db: str | None = db_option(),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table or json."),
) -> None:
    """The store's URL (password hidden), its schema revision, this ragmeter's head, and whether
    it is up to date. Changes nothing (a SQLite file that does not exist is not created; one
    that is not a ragmeter store is refused, as every command refuses it)."""
    from ..store import schema_state

    with store_errors(db):
        schema = schema_state(db)  # and refuses someone else's file
    revision, head, shown = schema.revision, schema.head, schema.display_url
    if schema.up_to_date:
        state = "up to date"
    elif schema.newer:
        state = "newer than this ragmeter: upgrade ragmeter"
    elif revision is None and schema.is_sqlite:
        state = "empty: created and migrated when a command first records into it"
    else:
        how = "ragmeter db upgrade" + (f" --db {shown}" if db else "")
        state = f"{'empty' if revision is None else 'behind'}: run {how}"
    if fmt == Format.json:
        print_json(
            {"url": shown, "revision": revision, "head": head, "up_to_date": schema.up_to_date}
        )
        return
    for key, value in (
        ("url", shown),
        ("revision", revision or "none (no ragmeter tables)"),
        ("head", head),
        ("state", state),
    ):
        console.print(lit(f"{key + ':':<10}{value}"), soft_wrap=True)
