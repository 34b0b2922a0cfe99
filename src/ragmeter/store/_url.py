"""Which database a command uses, where its large blobs go, and how the URL prints.

``--db URL`` wins, then ``RAGMETER_DATABASE_URL``, then the embedded default
``sqlite:///.ragmeter/ragmeter.db`` under the current folder (the folder a team keeps its
experiment files in). Large blobs go to ``artifacts/`` beside a SQLite file; for a server
database to ``RAGMETER_ARTIFACTS`` (a folder every teammate can read), else
``.ragmeter/artifacts/`` under the current folder.

Two kinds of URL are accepted, each with the one driver ragmeter ships and tests:
``sqlite:///PATH`` (``sqlite+pysqlite``; SQLite's ``file:`` URIs with ``uri=true`` too) and
``postgresql+psycopg://`` (``postgresql://`` and ``postgres://`` mean it). Anything else is
refused here, before a driver is imported, in one line naming what to write instead. An
in-memory SQLite database is refused as well: the store is where results are kept, and one
that vanishes when the command ends would say "stored: run 1" and keep nothing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from .._errors import UsageError

ENV_URL = "RAGMETER_DATABASE_URL"
ENV_ARTIFACTS = "RAGMETER_ARTIFACTS"
#: seconds to wait for a server database to answer a connection (default 10)
ENV_CONNECT_TIMEOUT = "RAGMETER_CONNECT_TIMEOUT"
DEFAULT_FOLDER = ".ragmeter"

USE = "use sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"
#: the drivers ragmeter ships (its postgres extra) and tests; the spellings that mean them
SQLITE_DRIVERS = {"sqlite": "sqlite", "sqlite+pysqlite": "sqlite"}
SERVER_DRIVERS = {
    "postgresql": "postgresql+psycopg",
    "postgres": "postgresql+psycopg",
    "postgresql+psycopg": "postgresql+psycopg",
}
#: query arguments the SQLite driver itself takes; others are SQLite URI arguments
SQLITE_DRIVER_ARGS = {"timeout", "check_same_thread", "isolation_level", "detect_types",
                      "cached_statements", "uri"}  # fmt: skip


def default_url() -> str:
    return f"sqlite:///{Path.cwd() / DEFAULT_FOLDER / 'ragmeter.db'}"


def resolve_url(url: str | None = None) -> str:
    """The database URL to use: ``url``, else the environment's, else the embedded default.

    Raises :class:`UsageError` for a URL ragmeter cannot keep a store in (module doc)."""
    chosen = url or os.environ.get(ENV_URL) or default_url()
    if "://" not in chosen:
        raise UsageError(f"database URL {_shown(chosen)} has no scheme: {USE}")
    scheme, rest = chosen.split("://", 1)
    name = scheme.lower()
    if name in SQLITE_DRIVERS:
        chosen = f"{SQLITE_DRIVERS[name]}://{rest}"
        _check_sqlite(chosen)
    elif name in SERVER_DRIVERS:
        chosen = f"{SERVER_DRIVERS[name]}://{rest}"
        _parse(chosen)
    elif name.startswith(("postgresql+", "postgres+")):
        raise UsageError(
            f"database driver {_shown(scheme)} is not supported: ragmeter talks to PostgreSQL "
            "through psycopg 3 only (pip install 'ragmeter[postgres]'); write "
            "postgresql+psycopg://USER@HOST/DB"
        )
    elif name.startswith("sqlite+"):
        raise UsageError(
            f"database driver {_shown(scheme)} is not supported: write sqlite:///PATH (Python's "
            "own sqlite3)"
        )
    else:
        raise UsageError(f"database URL scheme {_shown(scheme)} is not supported: {USE}")
    return chosen


def _shown(text: str) -> str:
    """A piece of a URL for a one-line message: quoted, control characters escaped."""
    return ascii(text) if not text.isprintable() else repr(text)


def _parse(url: str) -> Any:
    from sqlalchemy.engine import make_url

    try:
        return make_url(url)
    except Exception as exc:  # ArgumentError, or ValueError for a bad port
        raise UsageError(f"database URL {display_url(url)} cannot be read ({exc}): {USE}") from None


def _check_sqlite(url: str) -> None:
    """Refuse a SQLite URL that keeps nothing (in memory) or means something else than it says."""
    u = _parse(url)
    if u.host or u.port or u.username or u.password:
        # sqlite://store.db is SQLite's in-memory database with "store.db" ignored as a host
        raise UsageError(
            f"database URL {display_url(url)} names a host, which SQLite has none of: a file "
            "is sqlite:///relative/path.db (three slashes) or sqlite:////absolute/path.db"
        )
    query = dict(u.query)
    if not _is_uri(url):
        others = sorted(set(query) - SQLITE_DRIVER_ARGS)
        if others:
            # SQLAlchemy ignores them with a warning: ?mode=ro alone would open read-write
            raise UsageError(
                f"database URL {display_url(url)}: SQLite URI options ({', '.join(others)}) "
                "need uri=true, e.g. sqlite:///file:PATH?mode=ro&uri=true"
            )
    if sqlite_path(url) is None:
        raise UsageError(
            f"database URL {display_url(url)} is an in-memory SQLite database: it keeps nothing "
            "after the command ends. Name a file: sqlite:///PATH (e.g. a temporary folder's)"
        )


def _is_uri(url: str) -> bool:
    from sqlalchemy.engine import make_url

    value = str(make_url(url).query.get("uri", "")).lower()
    return value in ("true", "1", "yes", "on")


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def sqlite_path(url: str) -> Path | None:
    """The database file of a SQLite URL (None for an in-memory one).

    With ``uri=true`` the database is a SQLite URI (``file:PATH?mode=ro``): its path is
    percent-decoded, and ``file::memory:`` or ``mode=memory`` are in memory."""
    from sqlalchemy.engine import make_url

    u = make_url(url)
    db = u.database
    if not db or db == ":memory:":
        return None
    if _is_uri(url) and db.startswith("file:"):
        if str(u.query.get("mode", "")).lower() == "memory":
            return None
        rest = db[len("file:") :].split("?", 1)[0].split("#", 1)[0]
        if rest.startswith("//"):  # file://HOST/PATH: SQLite takes only an empty host or localhost
            host, _, tail = rest[2:].partition("/")
            rest = "/" + tail if host in ("", "localhost") else rest
        rest = unquote(rest)
        if not rest or rest == ":memory:":
            return None
        return Path(rest)
    return Path(db)


def read_only_requested(url: str) -> bool:
    """The URL opens SQLite read-only (``file:PATH?mode=ro&uri=true``)."""
    from sqlalchemy.engine import make_url

    return _is_uri(url) and str(make_url(url).query.get("mode", "")).lower() == "ro"


def artifact_root(url: str) -> Path:
    if is_sqlite(url):
        path = sqlite_path(url)
        if path is not None:
            return path.parent / "artifacts"
    env = os.environ.get(ENV_ARTIFACTS)
    return Path(env) if env else Path.cwd() / DEFAULT_FOLDER / "artifacts"


def display_url(url: str) -> str:
    """The URL with its password hidden, for messages (never raises: a URL that cannot be
    parsed is shown up to its host, where a password would be)."""
    from sqlalchemy.engine import make_url

    if is_sqlite(url) and "@" not in url:  # no password to hide: shown as written, not escaped
        return url if url.isprintable() else ascii(url)
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # a message must not fail on the URL it reports
        scheme, sep, rest = url.partition("://")
        shown = f"{scheme}{sep}***" if "@" in rest else url
        return shown if shown.isprintable() else ascii(shown)
