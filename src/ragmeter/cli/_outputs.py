"""One rule for every command that writes a path the user names (``-o``, ``--out``, reports,
``--ledger``, ``--cache-dir``).

Checked before any work is done, so a mistake costs nothing:

- the path may never be the experiment store's database (or its ``-wal``/``-shm``/``-journal``/
  ``.migrate-lock`` companion) nor lie in its artifacts folder, ``--force`` or not, also with
  ``--no-store`` (:func:`ragmeter.store.protected_paths`: which stores, and why);
- the path must not be a folder (``-o .``): a file is written, never a folder replaced;
- the path must not be one of the command's own inputs (``-o corpus.jsonl`` while reading that
  corpus, or an existing file inside an input folder such as a BEIR folder), even with
  ``--force``: the output would destroy what it was computed from;
- an existing file is replaced only with ``--force``, except a file the same command wrote
  before and can recognise (``replaceable``: a gate report), which a re-run replaces.

Folders a command fills with files of its own naming (``runs export -o DIR``, ``golden import
--out DIR``, cache folders) follow :func:`check_folder`; files appended to (a selection
``--ledger``) follow :func:`check_append`. The write itself is atomic
(:mod:`ragmeter.io._atomic`): whole or not at all.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from .._errors import UsageError


def _same_or_inside(path: Path, other: Path) -> bool:
    """``path`` is ``other`` (the same file, links followed) or lies inside folder ``other``."""
    mine, theirs = os.path.realpath(path), os.path.realpath(other)
    return mine == theirs or mine.startswith(theirs.rstrip(os.sep) + os.sep)


def _same(path: Path, other: Path) -> bool:
    """``path`` and ``other`` name one file or folder (links and ``..`` resolved)."""
    if os.path.realpath(path) == os.path.realpath(other):
        return True
    try:
        return os.path.samefile(path, other)
    except OSError:
        return False


def check_store(path: Path, *, option: str, db: str | None = None) -> None:
    """Refuse ``path`` when it is the store's database, a companion of it, or lies in its
    artifacts folder (the store of ``--db`` ``db``, the environment's and the default's)."""
    from ..store import protected_paths

    protected_paths(db).refuse(path, option)


def check_output(
    path: Path,
    *,
    force: bool,
    option: str = "-o",
    inputs: Iterable[Path | None] = (),
    replaceable: Callable[[Path], bool] | None = None,
    db: str | None = None,
) -> None:
    """Raise :class:`UsageError` when writing ``path`` would break a rule of the module doc;
    ``db``: the command's ``--db`` (None: the environment's store, else the default)."""
    check_store(path, option=option, db=db)
    if path.is_dir():
        raise UsageError(f"{option} {path} is a folder; name the file to write")
    for source in inputs:
        if source is not None and path.exists() and _same_or_inside(path, source):
            raise UsageError(
                f"{option} {path} would overwrite the input {source}; write to another file"
            )
    if path.exists() and not force and not (replaceable is not None and replaceable(path)):
        raise UsageError(f"{option} {path} already exists; pass --force to replace it")


def check_folder(
    folder: Path,
    *,
    option: str,
    inputs: Iterable[Path | None] = (),
    files: Iterable[str] = (),
    db: str | None = None,
) -> None:
    """A folder the command writes ``files`` (names of its own choosing) into: not a store's
    place, not an input, none of ``files`` an input, and not a file."""
    from ..store import protected_paths

    names = list(files)
    protected_paths(db).refuse_folder(folder, option, names)
    for source in inputs:
        if source is None:
            continue
        if _same(folder, source):
            raise UsageError(f"{option} {folder} is the input {source}; write to another folder")
        for name in names:
            target = folder / name
            if _same(target, source):
                raise UsageError(
                    f"{option} {folder} would overwrite the input {target}; write to another folder"
                )
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{option} {folder} is a file; name a folder")


def check_append(
    path: Path, *, option: str, inputs: Iterable[Path | None] = (), db: str | None = None
) -> None:
    """A file the command appends to (a selection ledger): not a store's place, not a folder,
    not one of the command's inputs. It may exist: appending is what it is for."""
    check_store(path, option=option, db=db)
    if path.is_dir():
        raise UsageError(f"{option} {path} is a folder; name the file to append to")
    for source in inputs:
        if source is not None and _same_or_inside(path, source) and path.exists():
            raise UsageError(f"{option} {path} is the input {source}; name another file")


def starts_with(marker: bytes) -> Callable[[Path], bool]:
    """A ``replaceable`` test: the file begins with ``marker`` (what the command writes first)."""

    def check(path: Path) -> bool:
        try:
            with open(path, "rb") as fh:
                return fh.read(len(marker)) == marker
        except OSError:
            return False

    return check
