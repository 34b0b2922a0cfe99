"""The experiment-store options every recording command shares: ``--db URL`` and ``--no-store``.

Every command records what it made by default and says so in one line on stderr (stdout stays
the command's JSON or CSV, parseable as before); ``--no-store`` records nothing and leaves the
command exactly as it was before the store. Opening problems (a newer schema, a server URL
without the ``postgres`` extra or with another driver, a server that does not answer, a file
that is not a ragmeter store, an in-memory URL) are one clear line and exit 2, through
:func:`~ragmeter.cli._common.handle_errors`; a server slower than a second to answer is
announced first ("waiting for the store at ...").

A store this user cannot write opens read-only: commands that only read it (``runs list``,
``runs show``, ``report``, the lab) work as usual, ``compare``/``gate`` compare stored runs and
say the comparison was not recorded, and a command that exists to record (``eval``, ``run``)
is refused before it does any work.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from .._errors import UsageError
from ._common import err_console, lit

if TYPE_CHECKING:  # keeps `ragmeter --help` fast: the store loads only when one opens
    from ..store import Store

DEFAULT_SHOWN = "sqlite:///.ragmeter/ragmeter.db"
DB_HELP = (
    f"Experiment store URL. Default: $RAGMETER_DATABASE_URL, else {DEFAULT_SHOWN} under the "
    "current folder; a team server: postgresql+psycopg://USER@HOST/DB (the postgres extra)."
)


def db_option() -> Any:
    return typer.Option(None, "--db", metavar="URL", help=DB_HELP, show_default=False)


def no_store_option(what: str = "") -> Any:
    return typer.Option(
        False,
        "--no-store",
        help="Record nothing in the experiment store" + (f" ({what})" if what else "") + ".",
    )


#: what a driver says when the store cannot be written (SQLite; PostgreSQL's SQLSTATEs for a
#: read-only transaction and a missing privilege)
_READ_ONLY_SIGNS = ("attempt to write a readonly database", "read-only transaction")
_READ_ONLY_STATES = ("25006", "42501")


def _say_waiting(shown: str, timeout: int) -> None:
    wait = f"up to {max(timeout, 2)} s" if timeout > 0 else "with no time limit"
    err_console.print(
        lit(f"waiting for the store at {shown} to answer ({wait}; RAGMETER_CONNECT_TIMEOUT)..."),
        soft_wrap=True,
    )


def _shown(url: str | None) -> str:
    from ..store import display_url, resolve_url

    try:
        return display_url(resolve_url(url))
    except UsageError:  # the URL itself is what failed: show it as given, password hidden
        return display_url(url or "")


@contextlib.contextmanager
def store_errors(url: str | None = None) -> Iterator[None]:
    """A database that cannot be reached or refuses a statement: one line naming the store,
    never a SQLAlchemy traceback. Inside, a connection slower than a second says what it waits
    for on stderr."""
    from ..store import on_slow_connect

    on_slow_connect(_say_waiting)
    try:
        yield
    except ImportError:
        raise
    except Exception as exc:
        from ..store import is_database_error

        if not is_database_error(exc):
            raise
        shown = _shown(url)
        orig = getattr(exc, "orig", None) or exc
        first = (str(orig).strip().splitlines() or [type(orig).__name__])[0]
        raise UsageError(_store_failure(shown, url, orig, first)) from None


def _store_failure(shown: str, url: str | None, orig: BaseException, first: str) -> str:
    """The one line for a database error: a read-only store and a server that does not answer
    say what to do; anything else is the driver's first line."""
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if state in _READ_ONLY_STATES or any(s in first.lower() for s in _READ_ONLY_SIGNS):
        return (
            f"the experiment store {shown} is read-only here ({first}); nothing was written "
            "to it. Use --db with a store you can write (or --no-store to record nothing)"
        )
    if "timeout expired" in first.lower():
        from ..store import connect_timeout, resolve_url

        try:
            seconds = f"{max(connect_timeout(resolve_url(url)), 2)} s"
        except UsageError:
            seconds = "the connect timeout"
        return (
            f"the experiment store {shown} did not answer within {seconds} ({first}): is the "
            "server up and is this its address? Wait longer with RAGMETER_CONNECT_TIMEOUT="
            "SECONDS or ?connect_timeout=SECONDS in the URL"
        )
    return f"the experiment store {shown} failed: {first}"


def open_store(
    db: str | None, no_store: bool = False, *, read_only_ok: bool = False
) -> Store | None:
    """The store the command records into (``None`` with ``--no-store``).

    A store this user cannot write is refused before any work (``read_only_ok``: the command
    reads stored runs too, and says itself that it recorded nothing: ``compare``, ``gate``)."""
    if no_store:
        if db is not None:
            raise UsageError("--db names a store and --no-store records nothing: give one")
        return None
    from ..store import Store

    with store_errors(db):
        store = Store.open(db)  # (created when missing: this command records)
    if store.read_only and not read_only_ok:
        shown = shown_url(store)
        store.close()
        raise UsageError(
            f"the experiment store {shown} is read-only here and this command records into it: "
            "pass --no-store to record nothing, or --db a store you can write"
        )
    return store


def open_required(db: str | None) -> Store:
    """The store at ``--db`` (or the environment's, or the default) for commands that read it.

    A SQLite file that does not exist is refused, not created (:func:`require_existing`)."""
    from ..store import Store

    with store_errors(db):
        require_existing(db)
        return Store.open(db)


def require_existing(db: str | None) -> None:
    """Refuse a SQLite store file that does not exist, for a command that only reads the store:
    opening would create an empty one and answer "no runs" or "has no run 1" about a store
    that was never there (a relative ``--db sqlite:///lab.db`` typed in another folder). The
    message names the file the URL resolved to and the folder a relative path is read from."""
    from ..store import is_sqlite, resolve_url, sqlite_path

    url = resolve_url(db)
    path = sqlite_path(url) if is_sqlite(url) else None
    if path is None or path.exists():
        return
    here = Path.cwd()
    if db is None and not os.environ.get("RAGMETER_DATABASE_URL"):
        raise UsageError(
            f"no experiment store in {here}: {DEFAULT_SHOWN.removeprefix('sqlite:///')} does not "
            "exist here (the commands that record, such as ragmeter eval, run and compare, "
            "create it); run this in the folder you recorded from, or pass --db URL"
        )
    raise UsageError(
        f"no experiment store at {path if path.is_absolute() else here / path} (the file does "
        "not exist; a relative sqlite:/// path is read from the current folder); nothing was "
        "created. Check the folder or the URL"
    )


def shown_url(store: Store) -> str:
    """The store's URL for messages: a SQLite file under the current folder is shown relative
    (``sqlite:///.ragmeter/ragmeter.db``), the password of a server URL hidden."""
    from ..store import is_sqlite, sqlite_path

    if is_sqlite(store.url):
        path = sqlite_path(store.url)
        if path is not None:
            with contextlib.suppress(ValueError):
                return f"sqlite:///{path.resolve().relative_to(Path.cwd().resolve())}"
    return store.display_url


def id_ranges(ids: Sequence[int]) -> str:
    """``[12, 13, 14, 17]`` -> ``12-14, 17``."""
    out: list[str] = []
    s = sorted(set(ids))
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[j] + 1:
            j += 1
        out.append(str(s[i]) if i == j else f"{s[i]}-{s[j]}")
        i = j + 1
    return ", ".join(out)


def say_stored(store: Store, what: str, ids: Sequence[int], hint: str | None = None) -> None:
    """One line on stderr: what was recorded, its ids, where, and how to see it."""
    if not ids:
        return
    plural = what if len(ids) == 1 else f"{what}s"
    tail = f"  ({hint})" if hint else ""
    err_console.print(
        lit(f"stored: {plural} {id_ranges(ids)} in {shown_url(store)}{tail}"), soft_wrap=True
    )
