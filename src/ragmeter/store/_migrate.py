"""Schema versions: Alembic migrations, run on open for SQLite and by ``ragmeter db upgrade``
for a server database; a database newer than this ragmeter is refused.

Opening an up-to-date store reads one row (``alembic_version``) and does not import Alembic.
SQLite upgrades happen under an exclusive file lock beside the database, so two commands that
open a new store at once do not both create its tables.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._errors import StoreSchemaError
from ._url import display_url, is_sqlite, sqlite_path

#: the newest revision this ragmeter knows; tests check it is Alembic's head
HEAD = "0001"
#: every revision this ragmeter knows, oldest first
KNOWN = ("0001",)
MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def alembic_config(connection: Any = None) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def current_revision(engine: Any) -> str | None:
    """The database's schema revision (None for a database ragmeter has never written)."""
    import sqlalchemy as sa

    with engine.connect() as conn:
        if not sa.inspect(conn).has_table("alembic_version"):
            return None
        row = conn.execute(sa.text("SELECT version_num FROM alembic_version")).first()
    return None if row is None else str(row[0])


def upgrade(engine: Any, revision: str = "head") -> None:
    """Migrate to ``revision`` (Alembic's ``upgrade``), in one transaction."""
    import sqlalchemy as sa
    from alembic import command

    with engine.connect() as conn, conn.begin():
        if conn.dialect.name == "postgresql":
            # two `db upgrade`s at once: the second waits, then finds the schema at head
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(7251434)"))
        command.upgrade(alembic_config(conn), revision)


def downgrade(engine: Any, revision: str) -> None:
    from alembic import command

    with engine.connect() as conn, conn.begin():
        command.downgrade(alembic_config(conn), revision)


def ensure_schema(engine: Any, url: str, migrate: bool | None) -> None:
    """Check (and for SQLite, by default, bring up) the schema; refuse a newer one.

    ``migrate=None``: upgrade SQLite, require a server database to be at head already.
    """
    current = current_revision(engine)
    if current == HEAD:
        return
    _refuse_newer(current, url)
    auto = is_sqlite(url) if migrate is None else migrate
    if not auto:
        now = "has no ragmeter tables" if current is None else f"is at schema {current}"
        raise StoreSchemaError(
            f"the store {display_url(url)} {now}; this ragmeter needs schema {HEAD}. "
            f"Migrate it with: ragmeter db upgrade --db {display_url(url)}"
        )
    with _lock(url):
        current = current_revision(engine)  # another process may have migrated meanwhile
        _refuse_newer(current, url)
        if current != HEAD:
            upgrade(engine)


def _refuse_newer(current: str | None, url: str) -> None:
    if current is not None and current not in KNOWN:
        raise StoreSchemaError(
            f"the store {display_url(url)} has schema {current}, newer than this ragmeter knows "
            f"(up to {HEAD}): it was written by a newer ragmeter. Upgrade ragmeter "
            "(pip install -U ragmeter) or point --db at another store"
        )


@contextlib.contextmanager
def _lock(url: str) -> Iterator[None]:
    path = sqlite_path(url) if is_sqlite(url) else None
    if path is None:
        yield
        return
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: SQLite's own locking still applies
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(str(path) + ".migrate-lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
