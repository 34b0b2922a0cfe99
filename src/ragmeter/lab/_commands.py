"""The command lines a lab page (and the report) prints beside its numbers, "the same numbers
as ...": runnable as printed from the folder the lab was started in (its root, ``--root``), or,
in the report, from the experiments folder the report names.

Rules:
- Every path is written as a user types it there: a path inside that folder relative to it
  (``golden.jsonl``, ``runs/baseline/run.trec``, ``--db sqlite:///lab.db``). A path outside it
  is written whole in the lab, and by its file name only in the report (a file meant to be
  shared holds no absolute local path).
- A stored run's own file is named where it exists inside the folder. Where it does not (the
  demo records its runs without writing files; a run folder was moved, deleted or lies
  elsewhere), the lines first write it from the store: ``ragmeter runs export ID -o run-ID
  --db URL`` (``run-ID/run.trec``). An answer set's file likewise: ``ragmeter answers export
  ID -o answers-ID.jsonl --db URL``.
- The chunking is the run's chunk file when its settings name one inside the folder, else the
  ``ragmeter chunk CORPUS -c CHUNKER -o chunks-ID.jsonl`` line that rebuilds it; runs sharing
  a chunker and corpus share one line.
- ``--db`` names the page's store; a URL holding a password is written as
  ``"$RAGMETER_DATABASE_URL"`` (a page never shows it).
- Every path is shell-quoted.
A value the store does not hold at all (a run recorded with no corpus or chunker) stays a
capitalised placeholder (``CORPUS``), the one case a line cannot be run as printed.
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from starlette.types import ASGIApp, Receive, Scope, Send

    from ..store import RunRecord, Store


@dataclass(frozen=True)
class _Folder:
    """The folder the lines run from; ``shared``: the report (no absolute path outside it)."""

    path: Path
    shared: bool


#: the folder the lines are written for (None: none set, every path printed whole)
_RELATIVE_TO: ContextVar[_Folder | None] = ContextVar("ragmeter_command_folder", default=None)


@contextlib.contextmanager
def paths_relative_to(folder: str | Path, *, shared: bool = True) -> Iterator[None]:
    """While a page or the report is built: every path a line or a page names is written
    relative to ``folder``, or, outside it, whole (``shared=False``, the lab) or by its file
    name (``shared=True``, the report; see :func:`shown_path`)."""
    token = _RELATIVE_TO.set(_Folder(Path(folder).resolve(), shared))
    try:
        yield
    finally:
        _RELATIVE_TO.reset(token)


class CommandFolder:
    """ASGI middleware: each request's lines are written for the lab's root folder (see the
    module doc); the request's threads run in a copy of this context."""

    def __init__(self, app: ASGIApp, root: Path) -> None:
        self.app = app
        self.root = root

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with paths_relative_to(self.root, shared=False):
            await self.app(scope, receive, send)


def _relative(text: str, base: Path) -> str | None:
    path = Path(text)
    for candidate in (path, path.resolve()):
        with contextlib.suppress(ValueError):
            return candidate.relative_to(base).as_posix() or "."
    return None


def inside_folder(value: object) -> bool:
    """Whether the path ``value`` lies inside the folder the lines run from (True when no
    folder is set, or for a relative path)."""
    folder = _RELATIVE_TO.get()
    text = str(value)
    if folder is None or not Path(text).is_absolute():
        return True
    return _relative(text, folder.path) is not None


def shown_path(value: object) -> str:
    """``value`` as a page shows it: an absolute path inside the folder the lines run from
    relative to it; outside it, whole in the lab, cut to its file name in the report (a
    relative path, or a word that is not a path, is unchanged)."""
    text = str(value)
    folder = _RELATIVE_TO.get()
    if folder is None or (not text.startswith(("/", "\\")) and not Path(text).is_absolute()):
        return text
    inside = _relative(text, folder.path)
    if inside is not None:
        return inside
    return Path(text).name if folder.shared else text


def shown_url(url: str) -> str:
    """A store URL as a page shows it: a SQLite file's path as :func:`shown_path` writes it
    (``sqlite:///lab.db``); any other URL unchanged."""
    prefix = "sqlite:///"
    if url.startswith(prefix) and _RELATIVE_TO.get() is not None:
        file, _, query = url[len(prefix) :].partition("?")
        if file and file != ":memory:":
            return prefix + shown_path(file) + (f"?{query}" if query else "")
    return url


def quoted(value: object) -> str:
    """One shell word (a path as :func:`shown_path` writes it)."""
    return shlex.quote(shown_path(value))


def db_option(store: Store) -> str:
    """``--db URL`` for the store the page reads."""
    shown = store.display_url
    if shown != store.url:  # the URL carries a password: never printed
        return '--db "$RAGMETER_DATABASE_URL"'
    return f"--db {shlex.quote(shown_url(store.url))}"


@dataclass(frozen=True)
class RunFiles:
    """The files a command needs for one stored run, and the lines that make those missing."""

    steps: tuple[str, ...]
    run: str
    chunks: str
    golden: str
    corpus: str


def _existing(value: object) -> Path | None:
    """The file ``value`` names when it exists inside the folder the lines run from."""
    if isinstance(value, str) and value:
        p = Path(value)
        if p.is_file() and inside_folder(p):
            return p
    return None


def has_run_file(run: RunRecord) -> bool:
    """Whether the run file ``ragmeter run`` wrote for ``run`` is still on disk (inside the
    folder the lines run from)."""
    return _existing((run.config or {}).get("run_file")) is not None


def run_files(store: Store, run: RunRecord, *, made: set[str] | None = None) -> RunFiles:
    """The run file, chunk file, golden set and corpus of ``run`` as shell words, with the lines
    (export, chunk) that write what no longer exists. ``made`` collects lines already printed
    for other runs of the same command, so a shared chunking is built once."""
    from ._context import settings_of

    cfg = dict(run.config or {})
    made = set() if made is None else made
    steps: list[str] = []

    def once(line: str) -> None:
        if line not in made:
            made.add(line)
            steps.append(line)

    own = _existing(cfg.get("run_file"))
    if own is not None:
        run_word = quoted(own)
    else:
        once(f"ragmeter runs export {run.id} -o run-{run.id} {db_option(store)}")
        run_word = f"run-{run.id}/run.trec"
    corpus = quoted(cfg["corpus"]) if isinstance(cfg.get("corpus"), str) else "CORPUS"
    golden = quoted(cfg["golden"]) if isinstance(cfg.get("golden"), str) else "GOLDEN"
    chunker = settings_of(run).get("chunker")
    chunk_file = _existing(chunker)
    if chunk_file is not None:
        chunks = quoted(chunk_file)
    elif isinstance(chunker, str) and chunker:
        chunks = f"chunks-{_slug(chunker)}.jsonl"
        once(f"ragmeter chunk {corpus} -c {quoted(chunker)} -o {chunks}")
    else:
        chunks = "CHUNKS"
    return RunFiles(tuple(steps), run_word, chunks, golden, corpus)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text).strip("-") or "chunks"


def answers_file(store: Store, set_id: int, source: object, steps: list[str]) -> str:
    """The answers file of stored answer set ``set_id`` as a shell word: ``source`` (the file it
    was checked from) where it exists inside the folder, else ``answers-ID.jsonl`` with the
    ``ragmeter answers export`` line that writes it appended to ``steps``."""
    own = _existing(source)
    if own is not None:
        return quoted(own)
    steps.append(f"ragmeter answers export {set_id} -o answers-{set_id}.jsonl {db_option(store)}")
    return f"answers-{set_id}.jsonl"
