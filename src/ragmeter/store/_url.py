"""Which database a command uses, where its large blobs go, and how the URL prints.

``--db URL`` wins, then ``RAGMETER_DATABASE_URL``, then the embedded default
``sqlite:///.ragmeter/ragmeter.db`` under the current folder (the folder a team keeps its
experiment files in). Large blobs go to ``artifacts/`` beside a SQLite file; for a server
database to ``RAGMETER_ARTIFACTS`` (a folder every teammate can read), else
``.ragmeter/artifacts/`` under the current folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from .._errors import UsageError

ENV_URL = "RAGMETER_DATABASE_URL"
ENV_ARTIFACTS = "RAGMETER_ARTIFACTS"
DEFAULT_FOLDER = ".ragmeter"


def default_url() -> str:
    return f"sqlite:///{Path.cwd() / DEFAULT_FOLDER / 'ragmeter.db'}"


def resolve_url(url: str | None = None) -> str:
    """The database URL to use: ``url``, else the environment's, else the embedded default."""
    chosen = url or os.environ.get(ENV_URL) or default_url()
    if "://" not in chosen:
        raise UsageError(
            f"database URL {chosen!r} has no scheme: use sqlite:///PATH or "
            "postgresql+psycopg://USER@HOST/DB"
        )
    scheme = chosen.split("://", 1)[0]
    if scheme == "postgresql" or scheme == "postgres":
        # the one driver ragmeter ships an extra for
        chosen = "postgresql+psycopg://" + chosen.split("://", 1)[1]
    elif not (scheme.startswith("sqlite") or scheme.startswith("postgresql+")):
        raise UsageError(
            f"database URL scheme {scheme!r} is not supported: use sqlite:///PATH or "
            "postgresql+psycopg://USER@HOST/DB"
        )
    return chosen


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def sqlite_path(url: str) -> Path | None:
    """The database file of a SQLite URL (None for an in-memory one)."""
    from sqlalchemy.engine import make_url

    db = make_url(url).database
    if not db or db == ":memory:":
        return None
    return Path(db)


def artifact_root(url: str) -> Path:
    if is_sqlite(url):
        path = sqlite_path(url)
        if path is not None:
            return path.parent / "artifacts"
    env = os.environ.get(ENV_ARTIFACTS)
    return Path(env) if env else Path.cwd() / DEFAULT_FOLDER / "artifacts"


def display_url(url: str) -> str:
    """The URL with its password hidden, for messages."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
