"""``ragmeter db upgrade|current``: the experiment store's schema.

A SQLite store is migrated when a command opens it; a server database (PostgreSQL) is migrated
only by ``ragmeter db upgrade``, once per ragmeter upgrade, by whoever runs the team's database.
"""

from __future__ import annotations

from typing import Any

import typer

from ._common import Format, console, handle_errors, lit, print_json
from ._store_options import db_option, store_errors

db_app = typer.Typer(
    help="The experiment store's schema: show its revision, migrate it.", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")


def _engine(url: str) -> Any:
    from ..store._engine import make_engine

    return make_engine(url)


@db_app.command("upgrade")
@handle_errors
def upgrade_cmd(db: str | None = db_option()) -> None:
    """Migrate the store to this ragmeter's schema (creates the tables on an empty database)."""
    from ..store._migrate import HEAD, ensure_schema, store_revision
    from ..store._url import display_url, resolve_url

    url = resolve_url(db)
    with store_errors(url):
        engine = _engine(url)
        try:
            before = store_revision(engine, url)  # refuses a database that is not ragmeter's
            ensure_schema(engine, url, True)
            after = store_revision(engine, url)
        finally:
            engine.dispose()
    shown = display_url(url)
    if before == after:
        console.print(lit(f"{shown}: already at revision {after} (head {HEAD})"), soft_wrap=True)
    else:
        console.print(
            lit(f"{shown}: upgraded from {before or 'empty'} to revision {after}"), soft_wrap=True
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
    from ..store._migrate import HEAD, KNOWN, store_revision
    from ..store._url import display_url, is_sqlite, resolve_url, sqlite_path

    url = resolve_url(db)
    path = sqlite_path(url) if is_sqlite(url) else None
    if is_sqlite(url) and path is not None and not path.exists():
        revision = None
    else:
        with store_errors(url):
            engine = _engine(url)
            try:
                revision = store_revision(engine, url)  # and refuses someone else's file
            finally:
                engine.dispose()
    if revision == HEAD:
        state = "up to date"
    elif revision is not None and revision not in KNOWN:
        state = "newer than this ragmeter: upgrade ragmeter"
    elif revision is None and is_sqlite(url):
        state = "empty: created and migrated when a command first records into it"
    else:
        how = "ragmeter db upgrade" + (f" --db {display_url(url)}" if db else "")
        state = f"{'empty' if revision is None else 'behind'}: run {how}"
    if fmt == Format.json:
        print_json(
            {
                "url": display_url(url),
                "revision": revision,
                "head": HEAD,
                "up_to_date": revision == HEAD,
            }
        )
        return
    for key, value in (
        ("url", display_url(url)),
        ("revision", revision or "none (no ragmeter tables)"),
        ("head", HEAD),
        ("state", state),
    ):
        console.print(lit(f"{key + ':':<10}{value}"), soft_wrap=True)
