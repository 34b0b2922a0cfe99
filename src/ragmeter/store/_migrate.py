"""Schema versions: Alembic migrations, run on open for SQLite and by ``ragmeter db upgrade``
for a server database; a database newer than this ragmeter is refused.

Opening an up-to-date store reads one row (``alembic_version``) and does not import Alembic.
SQLite upgrades happen under an exclusive file lock beside the database, so two commands that
open a new store at once do not both create its tables.

A database that is someone else's is never migrated: a SQLite file holding tables but no
ragmeter schema (another application's database), or any database whose ``alembic_version``
names a revision ragmeter does not know while it lacks ragmeter's core tables (another
Alembic-managed application), is refused naming the store, before anything is written. A
read-only store at the current schema opens (nothing is written); one that would need
migrating is refused.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import StoreSchemaError
from ._engine import adopt, read_only
from ._url import display_url, is_sqlite, sqlite_path

if TYPE_CHECKING:  # pragma: no cover
    from sqlalchemy.engine import Engine

#: the newest revision this ragmeter knows; tests check it is Alembic's head
HEAD = "0002"
#: every revision this ragmeter knows, oldest first
KNOWN = ("0001", "0002")
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
#: tables every ragmeter schema has had: a database with an unknown revision and without them is
#: another Alembic application's, not one written by a newer ragmeter
CORE = frozenset({"runs", "evaluations", "blobs"})


def alembic_config(connection: Any = None) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def current_revision(engine: Engine) -> str | None:
    """The database's schema revision (None for a database ragmeter has never written)."""
    import sqlalchemy as sa

    with engine.connect() as conn:
        if not sa.inspect(conn).has_table("alembic_version"):
            return None
        row = conn.execute(sa.text("SELECT version_num FROM alembic_version")).first()
    return None if row is None else str(row[0])


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate to ``revision`` (Alembic's ``upgrade``), in one transaction."""
    import sqlalchemy as sa
    from alembic import command

    with engine.connect() as conn, conn.begin():
        if conn.dialect.name == "postgresql":
            # two `db upgrade`s at once: the second waits, then finds the schema at head
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(7251434)"))
        command.upgrade(alembic_config(conn), revision)


def downgrade(engine: Engine, revision: str) -> None:
    from alembic import command

    with engine.connect() as conn, conn.begin():
        command.downgrade(alembic_config(conn), revision)


def store_revision(engine: Engine, url: str) -> str | None:
    """:func:`current_revision`, after refusing a database that is not a ragmeter store (see
    the module doc): what every command reads before it trusts the tables."""
    import sqlalchemy as sa

    with engine.connect() as conn:
        inspector = sa.inspect(conn)
        tables = set(inspector.get_table_names())
        current = None
        if "alembic_version" in tables:
            row = conn.execute(sa.text("SELECT version_num FROM alembic_version")).first()
            current = None if row is None else str(row[0])
        if is_sqlite(url) and current is None:
            # views and triggers count too: anything a user made there is theirs
            others = conn.execute(
                sa.text(
                    "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite!_%' "
                    "ESCAPE '!' AND name != 'alembic_version'"
                )
            ).scalar()
            if others:
                raise StoreSchemaError(
                    f"{_where(url)} is not a ragmeter store: it holds {others} table(s) of "
                    "another application and no ragmeter schema, so ragmeter changes nothing "
                    "in it. Name the store's file, or a new file (sqlite:///PATH)"
                )
    if current is not None and current not in KNOWN and not CORE <= tables:
        raise StoreSchemaError(
            f"{_where(url)} is not a ragmeter store: its alembic_version {current!r} is another "
            f"application's and it lacks ragmeter's tables ({', '.join(sorted(CORE - tables))}), "
            "so ragmeter changes nothing in it"
        )
    return current


def _where(url: str) -> str:
    path = sqlite_path(url) if is_sqlite(url) else None
    return f"the database {display_url(url)}" if path is None else str(path)


def ensure_schema(engine: Engine, url: str, migrate: bool | None) -> None:
    """Check (and for SQLite, by default, bring up) the schema; refuse a newer one, and a
    database that is not ragmeter's.

    ``migrate=None``: upgrade SQLite, require a server database to be at head already.
    """
    current = store_revision(engine, url)
    adopt(engine)  # ragmeter's (or new): SQLite may switch it to WAL
    if current == HEAD:
        return
    _refuse_newer(current, url)
    auto = is_sqlite(url) if migrate is None else migrate
    now = "has no ragmeter tables" if current is None else f"is at schema {current}"
    if not auto:
        raise StoreSchemaError(
            f"the store {display_url(url)} {now}; this ragmeter needs schema {HEAD}. "
            f"Migrate it with: ragmeter db upgrade --db {display_url(url)}"
        )
    if read_only(engine):
        raise StoreSchemaError(
            f"the store {display_url(url)} {now} and is read-only here, so it cannot be "
            f"migrated to schema {HEAD}: open it where it can be written (or have whoever runs "
            "it run ragmeter db upgrade)"
        )
    with _lock(url):
        current = store_revision(engine, url)  # another process may have migrated meanwhile
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


@dataclass(frozen=True)
class SchemaState:
    """A store's schema as ``ragmeter db current`` reports it."""

    #: the store's URL (resolved: ``--db``, else the environment's, else the default)
    url: str
    #: its schema revision; None for a database ragmeter never wrote (or a SQLite file that
    #: does not exist yet)
    revision: str | None
    #: the newest revision this ragmeter knows
    head: str = HEAD

    @property
    def display_url(self) -> str:
        return display_url(self.url)

    @property
    def up_to_date(self) -> bool:
        return self.revision == self.head

    @property
    def newer(self) -> bool:
        """Written by a newer ragmeter (a revision this one does not know)."""
        return self.revision is not None and self.revision not in KNOWN

    @property
    def is_sqlite(self) -> bool:
        return is_sqlite(self.url)


def schema_state(url: str | None = None) -> SchemaState:
    """The schema of the store at ``url`` (None: the environment's, else the default). Changes
    nothing: a SQLite file that does not exist is not created, and a database that is not a
    ragmeter store is refused (:class:`StoreSchemaError`), as opening it is."""
    from ._engine import make_engine
    from ._url import resolve_url

    resolved = resolve_url(url)
    path = sqlite_path(resolved) if is_sqlite(resolved) else None
    if path is not None and not path.exists():
        return SchemaState(resolved, None)
    engine = make_engine(resolved)
    try:
        return SchemaState(resolved, store_revision(engine, resolved))
    finally:
        engine.dispose()


def upgrade_schema(url: str | None = None) -> tuple[SchemaState, SchemaState]:
    """Migrate the store at ``url`` to this ragmeter's schema (creating the tables in an empty
    database; a database that is not ragmeter's, or is newer, is refused); returns its schema
    before and after (``ragmeter db upgrade``)."""
    from ._engine import make_engine
    from ._url import resolve_url

    resolved = resolve_url(url)
    engine = make_engine(resolved)
    try:
        before = store_revision(engine, resolved)  # refuses a database that is not ragmeter's
        ensure_schema(engine, resolved, True)
        after = store_revision(engine, resolved)
    finally:
        engine.dispose()
    return SchemaState(resolved, before), SchemaState(resolved, after)
