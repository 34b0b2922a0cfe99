"""Paths read from the store, opened only inside the lab's folder.

A stored run names files: the experiment file it came from (``config["experiment"]``, or
``runs.source`` with its ``config.json`` / ``summary.json``) and a chunk file
(``settings.chunks``). The lab reads those files again to recompute a run, and a job RUNS the
experiment file, with whatever Python generators and pipelines it names. A shared PostgreSQL
store (or a SQLite file passed around) is written by other people, so none of those paths is
trusted: each is used only when, once ``..`` and every link on the way are resolved, it lies
inside the lab's root folder (the folder ``ragmeter lab`` or ``ragmeter report`` was started in,
or ``--root DIR``) and has the suffix its kind needs (``.toml`` for an experiment file,
``.parquet``/``.jsonl`` for a chunk file). A path that fails is never opened or listed:
:class:`OutsideRoot` names it and says why, and the page shows that sentence
while every stored number stays on it (the recomputation falls back to what the store holds,
and no job can be started from that run). A relative path is taken relative to the root, as
``ragmeter run`` wrote it relative to the folder it ran in.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from .._errors import UsageError

#: each kind of file: what it is called, the suffixes it may have, what the lab would do with it
EXPERIMENT = ("experiment file", (".toml",), "re-run it")
CHUNKS = ("chunk file", (".parquet", ".jsonl"), "read it")
#: the files beside an imported variant that name its experiment file
RECORD = ("run record", (".json",), "read it")
#: a recorded path longer than this is not one ragmeter wrote (and is not echoed whole)
MAX_SHOWN = 300


class OutsideRoot(UsageError):
    """A path read from the store that the lab will not open: outside its folder, of the wrong
    kind, or not a path at all. The message is the page's note."""

    def __init__(self, what: str, shown: str, run_id: int | None, root: Path, why: str) -> None:
        self.what = what
        self.shown = shown
        self.root = root
        self.why = why
        by = f" recorded by run {run_id}" if run_id is not None else ""
        super().__init__(f"the {what} {shown}{by} {why}")


def lab_root(root: str | Path | None = None) -> Path:
    """The lab's folder, resolved (default: the current folder); UsageError when it is not a
    folder (``--root``)."""
    if root is not None and "\x00" in str(root):
        raise UsageError("--root: a folder name cannot hold a NUL character")
    try:
        folder = Path.cwd() if root is None else Path(root)
        resolved = folder.expanduser().resolve()
    except (OSError, RuntimeError) as exc:  # (the current folder itself may be gone)
        raise UsageError(
            f"--root: {root or 'the current folder'} cannot be resolved ({exc})"
        ) from None
    if not resolved.is_dir():
        raise UsageError(f"--root: {folder} is not a folder")
    return resolved


class LabCache(dict[Any, Any]):
    """The loaded experiments and prepared runs of one lab (or one report), with the root folder
    every path read from its store must lie in. A plain mapping (or none) as the cache means
    the current folder."""

    def __init__(self, root: str | Path | None = None) -> None:
        super().__init__()
        self.root = lab_root(root)


def root_of(cache: MutableMapping[Any, Any] | None) -> Path:
    """The root folder a cache carries (:class:`LabCache`), else the current folder."""
    return cache.root if isinstance(cache, LabCache) else lab_root()


def shown(recorded: Any) -> str:
    """A recorded value as a page may print it: plain text as it is, anything with a control
    character (a NUL, a newline) or of another type in Python's quoted form, at most
    :data:`MAX_SHOWN` characters."""
    text = recorded if isinstance(recorded, str) and recorded.isprintable() else repr(recorded)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


def contained(
    recorded: Any,
    root: Path,
    kind: tuple[str, tuple[str, ...], str],
    run_id: int | None = None,
    *,
    folder: bool = False,
) -> Path:
    """The file (``folder=True``: the folder) ``recorded`` names, resolved, when it lies inside
    ``root`` and, for a file, ends in one of the kind's suffixes; :class:`OutsideRoot` saying
    why otherwise. Deciding opens no file: resolving reads only the links on the way."""
    what, suffixes, use = kind
    if not isinstance(recorded, str | Path) or not str(recorded).strip():
        raise OutsideRoot(what, shown(recorded), run_id, root, "is not a file name")
    text = str(recorded)
    if "\x00" in text or len(text) > 4096:
        raise OutsideRoot(what, shown(text), run_id, root, "is not a file name the lab opens")
    if not folder and not text.lower().endswith(suffixes):
        need = " or ".join(suffixes)
        raise OutsideRoot(
            what, shown(text), run_id, root, f"is not a {need} file: the lab opens no other"
        )
    path = Path(text)  # (no ~ expansion: ragmeter records the paths the shell expanded)
    try:
        target = (path if path.is_absolute() else root / path).resolve()
    except (OSError, RuntimeError, ValueError):  # a link loop, an unreadable folder
        raise OutsideRoot(what, shown(text), run_id, root, "cannot be resolved") from None
    if not target.is_relative_to(root):
        raise OutsideRoot(
            what,
            shown(text),
            run_id,
            root,
            f"lies outside the lab's folder {root}; start the lab there (or give --root) to {use}",
        )
    if not folder and not target.name.lower().endswith(suffixes):  # a link to another kind
        need = " or ".join(suffixes)
        raise OutsideRoot(
            what, shown(text), run_id, root, f"leads to {target.name}, not a {need} file"
        )
    return target
