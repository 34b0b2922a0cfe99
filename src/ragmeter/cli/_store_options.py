"""The experiment-store options every recording command shares: ``--db URL`` and ``--no-store``.

Every command records what it made by default and says so in one line on stderr (stdout stays
the command's JSON or CSV, parseable as before); ``--no-store`` records nothing and leaves the
command exactly as it was before the store. Opening problems (a newer schema, a server URL
without the ``postgres`` extra, a server that does not answer) are one clear line and exit 2,
through :func:`~ragmeter.cli._common.handle_errors`.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from .._errors import UsageError
from ._common import err_console, lit

if TYPE_CHECKING:  # keeps `ragmeter --help` fast: sqlalchemy loads only when a store opens
    from ..metrics._evaluation import Evaluation
    from ..paired import Comparison
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


@contextlib.contextmanager
def store_errors(url: str | None = None) -> Iterator[None]:
    """A database that cannot be reached or refuses a statement: one line naming the store,
    never a SQLAlchemy traceback."""
    try:
        yield
    except ImportError:
        raise
    except Exception as exc:
        import sqlalchemy.exc as sa_exc

        if not isinstance(exc, sa_exc.SQLAlchemyError):
            raise
        from ..store._url import display_url, resolve_url

        shown = display_url(resolve_url(url))
        orig = getattr(exc, "orig", None) or exc
        first = (str(orig).strip().splitlines() or [type(orig).__name__])[0]
        raise UsageError(f"the experiment store {shown} failed: {first}") from None


def open_store(db: str | None, no_store: bool = False) -> Store | None:
    """The store the command records into (``None`` with ``--no-store``)."""
    if no_store:
        if db is not None:
            raise UsageError("--db names a store and --no-store records nothing: give one")
        return None
    return open_required(db)


def open_required(db: str | None) -> Store:
    """The store at ``--db`` (or the environment's, or the default) for commands that read it."""
    from ..store import Store

    with store_errors(db):
        return Store.open(db)


def shown_url(store: Store) -> str:
    """The store's URL for messages: a SQLite file under the current folder is shown relative
    (``sqlite:///.ragmeter/ragmeter.db``), the password of a server URL hidden."""
    from ..store._url import is_sqlite, sqlite_path

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


# -- stored runs as inputs of compare and gate ---------------------------------------------------
_RUN_REF = re.compile(r"run:(\d+)(?::([a-z]+))?")


def run_ref(spec: str) -> tuple[int, str | None] | None:
    """``12``, ``run:12`` or ``run:12:chunk`` (a stored run, optionally one evaluation level)
    -> ``(12, level)``; anything else is a file (``None``). A bare number that is also a file
    here is refused: the user says which one is meant."""
    m = _RUN_REF.fullmatch(spec)
    if m is not None:
        return int(m[1]), m[2]
    if spec.isascii() and spec.isdigit():
        if Path(spec).exists():
            raise UsageError(
                f"'{spec}' is both a stored run id and a file here: write ./{spec} for the "
                f"file or run:{spec} for the stored run"
            )
        return int(spec), None
    if spec.startswith("run:"):
        raise UsageError(
            f"'{spec}' is not a stored run: write run:ID or run:ID:LEVEL (LEVEL: span, chunk, "
            "document or eval), e.g. run:12 or run:12:chunk"
        )
    return None


def read_stored(store: Store | None, spec: str, ref: tuple[int, str | None]) -> Evaluation:
    """The evaluation of a stored run named on the command line."""
    if store is None:
        raise UsageError(f"'{spec}' names a stored run: drop --no-store to read it")
    run_id, level = ref
    with store_errors(store.url):
        return store.evaluation(run_id, level)


def record_comparison(
    store: Store | None, comparison: Comparison, specs: Sequence[str], scored: bool
) -> None:
    """Record a comparison (with the stored runs it read, when it read any) and say so."""
    if store is None:
        return
    refs = [None if scored else run_ref(s) for s in specs]
    base_id, cand_id = (None if r is None else r[0] for r in refs)
    with store_errors(store.url):
        cid = store.record_comparison(comparison, baseline_run=base_id, candidate_run=cand_id)
    say_stored(store, "comparison", [cid])
