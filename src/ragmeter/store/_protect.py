"""What no command may write over: the experiment store's database, its SQLite companions and
its artifacts folder.

One rule for every path a user names to be written (``report -o``, ``gate --markdown``, a
``--ledger`` appended to, ``runs export -o DIR``, a ``--cache-dir``, an experiment's
``output``/``cache``): after resolving ``..`` and symbolic links (and, for a file that exists,
hard links), the path may not be

- the database file of a SQLite store, nor its ``-wal``, ``-shm``, ``-journal`` or
  ``.migrate-lock`` companion (writing there corrupts every stored run), whether or not the file
  exists yet;
- the artifacts folder, nor anything inside it (blob files are named by their hash; a file
  written there is either a broken blob or a stray the store never reads).

``--force`` does not lift the rule: ``--force`` means "replace my file", and the store is not a
file the user asked to replace. The stores protected are the one the command would use (``--db``,
else ``RAGMETER_DATABASE_URL``, else the default), the default one under the current folder, and
the ``RAGMETER_ARTIFACTS`` folder when set: a command run with ``--no-store``, or a command that
has no store at all (``chunk``), still never writes over them.

This module lives in the store layer so that :meth:`Store.export_run` refuses too; the command
line's checks (``ragmeter.cli._outputs``) call it before any work is done.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .._errors import UsageError
from ._url import (
    ENV_ARTIFACTS,
    artifact_root,
    default_url,
    display_url,
    is_sqlite,
    resolve_url,
    sqlite_path,
)

#: files SQLite (and ragmeter's migration lock) keep beside a database, by suffix
COMPANIONS = {
    "-wal": "write-ahead log",
    "-shm": "shared-memory index",
    "-journal": "rollback journal",
    ".migrate-lock": "migration lock",
}


def _real(path: str | os.PathLike[str]) -> str:
    """``path`` absolute, ``..`` and links resolved (also where part of it does not exist)."""
    return os.path.normcase(os.path.realpath(path))


@dataclass(frozen=True)
class Guarded:
    """One protected place: a file (the database, a companion) or a folder (artifacts)."""

    real: str
    shown: str  #: what it is, for messages: "the experiment store's database sqlite:///..."
    folder: bool

    def covers(self, target: str | os.PathLike[str]) -> bool:
        """Writing ``target`` (a file, or a folder written into) would hit this place."""
        mine = _real(target)
        if self.folder:
            return mine == self.real or mine.startswith(self.real.rstrip(os.sep) + os.sep)
        if mine == self.real:
            return True
        try:  # a hard link, or a path the resolution above did not see as the same file
            return os.path.samefile(target, self.real)
        except OSError:
            return False

    def inside(self, folder: str | os.PathLike[str]) -> bool:
        """This place lies inside ``folder`` (or is it)."""
        root = _real(folder)
        return self.real == root or self.real.startswith(root.rstrip(os.sep) + os.sep)


@dataclass(frozen=True)
class Protected:
    """The places of one or more stores that no output may be written over."""

    places: tuple[Guarded, ...]

    def clash(self, target: str | os.PathLike[str]) -> str | None:
        """What writing ``target`` would destroy ("is the experiment store's database ..."),
        or None when it is free."""
        for place in self.places:
            if place.covers(target):
                # a link or a `..` that leads there is named as such: the path may look harmless
                plain = os.path.normcase(os.path.abspath(target)) == _real(target)
                if place.folder and _real(target) != place.real:
                    return f"{'is' if plain else 'leads'} inside {place.shown}"
                return f"{'is' if plain else 'leads to'} {place.shown}"
        return None

    def holding(self, folder: str | os.PathLike[str]) -> str | None:
        """What of a store lies inside ``folder`` ("holds the experiment store's database
        ..."), for a folder ragmeter would fill with files of its own naming."""
        for place in self.places:
            if place.inside(folder):
                return f"holds {place.shown}"
        return None

    def refuse(self, target: str | os.PathLike[str], option: str) -> None:
        """Raise :class:`UsageError` when ``target`` (named by ``option``) is protected."""
        what = self.clash(target)
        if what is not None:
            raise UsageError(f"{option} {target} {what}; write elsewhere")

    def refuse_folder(
        self, folder: str | os.PathLike[str], option: str, files: Iterable[str] = ()
    ) -> None:
        """Raise :class:`UsageError` when writing into ``folder`` would hit a protected place:
        the folder is a protected file, is (or lies inside) the artifacts folder, or one of the
        ``files`` (names inside the folder) that will be written is protected."""
        self.refuse(folder, option)
        for name in files:
            what = self.clash(Path(folder) / name)
            if what is not None:
                raise UsageError(
                    f"{option} {folder}: the file {Path(folder) / name} it would write {what}; "
                    "write elsewhere"
                )


def _store_places(url: str) -> list[Guarded]:
    shown = display_url(url)
    places: list[Guarded] = []
    db = sqlite_path(url) if is_sqlite(url) else None
    if db is not None:
        places.append(Guarded(_real(db), f"the experiment store's database {shown}", False))
        for suffix, name in COMPANIONS.items():
            companion = f"{db}{suffix}"
            places.append(
                Guarded(_real(companion), f"the {name} of the experiment store {shown}", False)
            )
    root = artifact_root(url)
    places.append(Guarded(_real(root), f"the artifacts folder {root} of the store {shown}", True))
    return places


def protected_paths(db: str | None = None, *, also: Iterable[str] = ()) -> Protected:
    """The places no output may be written over, for a command whose ``--db`` is ``db`` (None:
    the environment's store, else the default): see the module doc. ``also``: more store URLs
    (the one a command has open, when it was given as an object)."""
    urls: list[str] = []
    try:
        urls.append(resolve_url(db))
    except UsageError:
        pass  # a malformed --db or environment URL: the command that opens it says so
    urls.append(default_url())
    urls.extend(also)
    places: list[Guarded] = []
    for url in dict.fromkeys(urls):
        try:
            places += _store_places(url)
        except Exception:  # an unparsable URL protects nothing: opening it reports it
            continue
    env = os.environ.get(ENV_ARTIFACTS)
    if env:  # a team's blob folder, whichever store this command uses
        places.append(Guarded(_real(env), f"the artifacts folder {env} (RAGMETER_ARTIFACTS)", True))
    unique: dict[tuple[str, bool], Guarded] = {}
    for place in places:  # the first description of a place wins (the store in force's)
        unique.setdefault((place.real, place.folder), place)
    return Protected(tuple(unique.values()))


def export_names() -> list[str]:
    """Every file name :meth:`Store.export_run` may write into its folder."""
    from ._transfer import FILES

    return [*dict.fromkeys(FILES.values()), "config.json", "run.json", "run.trec"]


def refuse_export(url: str, out: str | os.PathLike[str]) -> None:
    """:meth:`Store.export_run` (the Python API; the command checks first): never into the
    artifacts folder, never over the database of the store exported from (nor of the others
    :func:`protected_paths` names)."""
    protected_paths(url).refuse_folder(out, "export folder", export_names())
