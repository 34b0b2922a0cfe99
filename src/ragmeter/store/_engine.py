"""Engines for the store: SQLite tuned for several writers, PostgreSQL through psycopg 3.

SQLite: WAL journal (readers never block the writer), a 30 s busy timeout, foreign keys on,
``synchronous=NORMAL`` (safe with WAL). Write transactions start with ``BEGIN IMMEDIATE``: a
deferred transaction that reads and then writes can fail at once with "database is locked"
when another process wrote in between (SQLite cannot wait on a lock upgrade), while an
immediate one waits its turn under the busy timeout. Reads stay deferred, so they never wait
for a writer. The driver's own transaction handling is switched off so these statements are
the only ones issued (SQLAlchemy's documented recipe for pysqlite).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .._errors import MissingExtraError
from ._url import is_sqlite, sqlite_path

BUSY_TIMEOUT_MS = 30_000
#: the execution option a write transaction sets so ``begin`` takes the write lock at once
WRITE = "ragmeter_write"


def make_engine(url: str) -> Any:
    import sqlalchemy as sa

    if is_sqlite(url):
        path = sqlite_path(url)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
        _tune_sqlite(engine)
        return engine
    try:
        return sa.create_engine(url, pool_pre_ping=True)
    except ModuleNotFoundError as exc:
        raise MissingExtraError("postgres", "psycopg[binary]", "a PostgreSQL store") from exc


def _tune_sqlite(engine: Any) -> None:
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (below)
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get(WRITE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


@contextmanager
def writing(engine: Any) -> Iterator[Any]:
    """A connection in a write transaction: committed on success, rolled back on any error."""
    with engine.connect() as conn:
        conn = conn.execution_options(**{WRITE: True})
        with conn.begin():
            yield conn


@contextmanager
def reading(engine: Any) -> Iterator[Any]:
    with engine.connect() as conn, conn.begin():
        yield conn
