"""Engines for the store: SQLite tuned for several writers, PostgreSQL through psycopg 3.

SQLite: WAL journal (readers never block the writer), a 30 s busy timeout, foreign keys on,
``synchronous=NORMAL`` (safe with WAL). Write transactions start with ``BEGIN IMMEDIATE``: a
deferred transaction that reads and then writes can fail at once with "database is locked"
when another process wrote in between (SQLite cannot wait on a lock upgrade), while an
immediate one waits its turn under the busy timeout. Reads stay deferred, so they never wait
for a writer. The driver's own transaction handling is switched off so these statements are
the only ones issued (SQLAlchemy's documented recipe for pysqlite).

Before SQLite opens a file it is checked to be a SQLite database (or empty): SQLite would
otherwise add a WAL beside a CSV or an HTML report and fail later. A store this process cannot
write (the file or its folder read-only, or ``?mode=ro&uri=true``) is opened read-only: no
journal-mode change, no WAL or lock file to create (in a folder nobody may write, read as an
immutable snapshot, SQLite's only way to read a WAL database there); :func:`read_only` says so
and the store skips what would write. The WAL mode itself is set only once the file is known
to be a ragmeter store (:func:`adopt`): it rewrites the file's header.

PostgreSQL: a connect timeout (``RAGMETER_CONNECT_TIMEOUT`` seconds, default 10, unless the URL
sets ``connect_timeout``), so a server that accepts the connection and never answers is an
error in seconds rather than minutes; a connection that takes longer than a second calls the
hook set with :func:`on_slow_connect` (the command line prints what it waits for).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .._errors import MissingExtraError, UsageError
from ._url import (
    ENV_CONNECT_TIMEOUT,
    display_url,
    is_sqlite,
    read_only_requested,
    sqlite_path,
)

if TYPE_CHECKING:  # pragma: no cover
    from sqlalchemy import Insert
    from sqlalchemy.engine import URL, Connection, Engine

BUSY_TIMEOUT_MS = 30_000
#: the execution option a write transaction sets so ``begin`` takes the write lock at once
WRITE = "ragmeter_write"
#: seconds a server database has to answer a connection, unless the URL or environment says
CONNECT_TIMEOUT_S = 10
#: a connection slower than this (seconds) is announced through the :func:`on_slow_connect` hook
SLOW_CONNECT_S = 1.0
#: the first bytes of every SQLite 3 database file
SQLITE_MAGIC = b"SQLite format 3\x00"
#: attribute on an engine: whether this process may write the store (set by make_engine or
#: found out by :func:`read_only`)
_READ_ONLY = "ragmeter_read_only"
#: attribute on a SQLite engine: the file is known to be a ragmeter store (:func:`adopt`), so
#: new connections put it in WAL mode (a persistent change to the file's header)
_OURS = "ragmeter_ours"

_slow_connect: Callable[[str, int], None] | None = None


def on_slow_connect(hook: Callable[[str, int], None] | None) -> None:
    """Call ``hook(shown_url, timeout_s)`` when connecting to a server takes over a second (the
    command line prints "waiting for the store at ..."); None: stay silent (the library)."""
    global _slow_connect
    _slow_connect = hook


def make_engine(url: str) -> Engine:
    import sqlalchemy as sa

    if is_sqlite(url):
        target, read_only = _sqlite_target(url)
        engine = sa.create_engine(target, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
        setattr(engine, _READ_ONLY, read_only)
        setattr(engine, _OURS, False)
        _tune_sqlite(engine, read_only)
        return engine
    timeout = connect_timeout(url)
    args = {} if "connect_timeout" in _query(url) else {"connect_timeout": timeout}
    try:
        engine = sa.create_engine(url, pool_pre_ping=True, connect_args=args)
    except ModuleNotFoundError as exc:
        raise MissingExtraError("postgres", "psycopg[binary]", "a PostgreSQL store") from exc
    _announce_slow_connects(engine, display_url(url), timeout)
    return engine


def adopt(engine: Engine) -> None:
    """The database was checked to be a ragmeter store (or a new, empty file): switch a
    writable SQLite file to WAL from now on. Until then connections only read, so a file that
    turns out to be someone else's keeps every byte."""
    if getattr(engine, _OURS, True) or read_only(engine):
        return
    setattr(engine, _OURS, True)
    engine.dispose()  # pooled connections were opened before: the next ones set WAL


def read_only(engine: Engine) -> bool:
    """Whether this process cannot write the store: a SQLite file opened read-only, or a
    PostgreSQL session that is read-only (``default_transaction_read_only``, a standby) or may
    not insert runs. Found out once per engine."""
    known = getattr(engine, _READ_ONLY, None)
    if known is not None:
        return bool(known)
    import sqlalchemy as sa

    with engine.connect() as conn:
        # has_table_privilege(NULL, ...) is NULL: a schema without a runs table yet is not
        # refused here (creating the tables says so itself)
        value = conn.execute(
            sa.text(
                "SELECT current_setting('transaction_read_only') = 'on' OR "
                "COALESCE(NOT has_table_privilege(to_regclass('runs'), 'INSERT'), false)"
            )
        ).scalar()
    setattr(engine, _READ_ONLY, bool(value))
    return bool(value)


def connect_timeout(url: str) -> int:
    """Seconds to wait for a server to answer: the URL's ``connect_timeout``, else
    ``RAGMETER_CONNECT_TIMEOUT``, else 10. libpq waits at least 2 s whatever is asked."""
    given = _query(url).get("connect_timeout")
    source = "the URL's connect_timeout"
    if given is None:
        given = os.environ.get(ENV_CONNECT_TIMEOUT)
        source = ENV_CONNECT_TIMEOUT
    if given is None or str(given).strip() == "":
        return CONNECT_TIMEOUT_S
    try:
        seconds = int(str(given).strip())
    except ValueError:
        raise UsageError(f"{source}={given!r} is not a whole number of seconds") from None
    if seconds < 0:
        raise UsageError(f"{source}={given!r}: give a number of seconds of 1 or more")
    return seconds


def _query(url: str) -> dict[str, Any]:
    from sqlalchemy.engine import make_url

    return dict(make_url(url).query)


def _announce_slow_connects(engine: Engine, shown: str, timeout: int) -> None:
    """A connection still pending after :data:`SLOW_CONNECT_S` is announced, once a process:
    the one sign of life a command gives while a server does not answer."""
    from sqlalchemy import event

    announced = threading.Event()

    @event.listens_for(engine, "do_connect")
    def _connect(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        hook = _slow_connect
        if hook is None or announced.is_set():
            return None  # the dialect connects as usual

        def _say() -> None:
            announced.set()
            hook(shown, timeout)

        timer = threading.Timer(SLOW_CONNECT_S, _say)
        timer.daemon = True  # never keeps the interpreter alive at exit
        timer.start()
        try:
            return dialect.connect(*cargs, **cparams)
        finally:
            timer.cancel()


# -- SQLite --------------------------------------------------------------------------------------
def _sqlite_target(url: str) -> tuple[URL, bool]:
    """The URL SQLite opens (read-only where this process cannot write) and whether it is
    read-only. Refuses a path that is not a SQLite database, before SQLite touches it."""
    from sqlalchemy.engine import make_url

    path = sqlite_path(url)
    if path is None:  # resolve_url refuses in-memory URLs; a caller that skipped it gets this
        raise UsageError(f"{display_url(url)} is an in-memory database: name a file")
    requested = read_only_requested(url)
    if not (path.exists() or path.is_symlink()):
        if requested:
            raise UsageError(
                f"the store {path} does not exist (the URL opens it read-only, so it is not "
                "created)"
            )
        _creatable(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        return make_url(url), False
    check_database_file(path)
    folder_writable = _writable(path.parent)
    if folder_writable and _writable(path) and not requested:
        return make_url(url), False
    # open it read-only through a SQLite URI, keeping any URI arguments the user gave
    u = make_url(url)
    query = dict(u.query)
    if str(query.get("uri", "")).lower() not in ("true", "1", "yes", "on"):
        u = u.set(database="file:" + quote(str(path), safe="/"))
    query.update(uri="true", mode="ro")
    if not folder_writable and not Path(f"{path}-shm").exists():
        # SQLite cannot create the WAL index in a folder nobody may write, and cannot read a
        # WAL database without one: no writer has it open (it would have made the index), so
        # the file as it is, read without locks, is the store
        query["immutable"] = "1"
    return u.set(query=query), True


def check_database_file(path: Path) -> None:
    """Raise :class:`UsageError` unless ``path`` is a SQLite database (or an empty file, which
    SQLite makes one): never let SQLite add a journal beside someone's CSV."""
    if path.is_dir():
        raise UsageError(f"the store {path} is a folder: name a SQLite file (sqlite:///PATH)")
    if not path.is_file():
        raise UsageError(f"the store {path} is not a regular file: name a SQLite file")
    try:
        with path.open("rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise UsageError(f"the store {path} cannot be read: {exc.strerror or exc}") from None
    if head and head != SQLITE_MAGIC:
        raise UsageError(
            f"{path} is not a SQLite database, so not a ragmeter store; nothing was changed. "
            "Name the store's file, or a new file (sqlite:///PATH)"
        )


def _writable(path: Path) -> bool:
    effective = os.access in os.supports_effective_ids
    return os.access(path, os.W_OK, effective_ids=effective)


def _creatable(path: Path) -> None:
    """A store that does not exist yet can be made: the nearest existing folder above it is a
    writable folder (else one line now, not "unable to open database file" later)."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise UsageError(f"the store {path} cannot be created: {folder} is not a folder")
    if not _writable(folder):
        raise UsageError(
            f"the store {path} does not exist and cannot be created: the folder {folder} is "
            "not writable"
        )


def _tune_sqlite(engine: Engine, read_only: bool) -> None:
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (below)
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        if getattr(engine, _OURS, False):  # rewrites the header: only a file known to be ours
            cur.execute("PRAGMA journal_mode=WAL")
        if not read_only:
            cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        immediate = conn.get_execution_options().get(WRITE, False) and not read_only
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


@contextmanager
def writing(engine: Engine) -> Iterator[Connection]:
    """A connection in a write transaction: committed on success, rolled back on any error."""
    with engine.connect() as conn:
        conn = conn.execution_options(**{WRITE: True})
        with conn.begin():
            yield conn


def insert_row(conn: Connection, statement: Insert) -> int:
    """Execute ``statement`` (an insert of one row) on ``conn``; the new row's id."""
    key = conn.execute(statement).inserted_primary_key
    if key is None:  # pragma: no cover - every table inserted this way has an id column
        raise RuntimeError("the database gave no id for the new row")
    return int(key[0])


@contextmanager
def reading(engine: Engine) -> Iterator[Connection]:
    with engine.connect() as conn, conn.begin():
        yield conn


def dispose_engines() -> None:
    """Dispose of every SQLAlchemy engine still open (a process that ends with ``os._exit``
    skips the finalization that would have); does nothing when no store was opened."""
    import sys

    if "sqlalchemy" not in sys.modules:
        return
    import gc

    from sqlalchemy.engine import Engine

    for obj in gc.get_objects():
        if isinstance(obj, Engine):
            try:
                obj.dispose()
            except Exception:  # closing at exit: a failure here changes nothing already written
                pass


def is_database_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the database's or its driver's (a server that does not answer, a
    statement refused, a read-only store), as SQLAlchemy raises them: the command line says
    these in one line naming the store."""
    import sqlalchemy.exc as sa_exc

    return isinstance(exc, sa_exc.SQLAlchemyError)
