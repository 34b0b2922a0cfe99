"""One rule for every command that writes a file the user names (``-o``, ``--out``, reports).

Checked before any work is done, so a mistake costs nothing:

- the path must not be a folder (``-o .``): a file is written, never a folder replaced;
- the path must not be one of the command's own inputs (``-o corpus.jsonl`` while reading that
  corpus, or an existing file inside an input folder such as a BEIR folder), even with
  ``--force``: the output would destroy what it was computed from;
- an existing file is replaced only with ``--force``, except a file the same command wrote
  before and can recognise (``replaceable``: a gate report), which a re-run replaces.

The write itself is atomic (:mod:`ragmeter.io._atomic`): whole or not at all.
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


def check_output(
    path: Path,
    *,
    force: bool,
    option: str = "-o",
    inputs: Iterable[Path | None] = (),
    replaceable: Callable[[Path], bool] | None = None,
) -> None:
    """Raise :class:`UsageError` when writing ``path`` would break a rule of the module doc."""
    if path.is_dir():
        raise UsageError(f"{option} {path} is a folder; name the file to write")
    for source in inputs:
        if source is not None and path.exists() and _same_or_inside(path, source):
            raise UsageError(
                f"{option} {path} would overwrite the input {source}; write to another file"
            )
    if path.exists() and not force and not (replaceable is not None and replaceable(path)):
        raise UsageError(f"{option} {path} already exists; pass --force to replace it")


def starts_with(marker: bytes) -> Callable[[Path], bool]:
    """A ``replaceable`` test: the file begins with ``marker`` (what the command writes first)."""

    def check(path: Path) -> bool:
        try:
            with open(path, "rb") as fh:
                return fh.read(len(marker)) == marker
        except OSError:
            return False

    return check
