"""The command lines a lab page (and the report) prints beside its numbers, "the same numbers
as ...": runnable as printed, from any folder.

Rules:
- A stored run's own file is named where it still exists. Where it does not (the demo records
  its runs without writing files; a run folder was moved or deleted), the lines first write it
  from the store: ``ragmeter runs export ID -o run-ID --db URL`` (``run-ID/run.trec``).
- The chunking is the run's chunk file when its settings name one that exists, else the
  ``ragmeter chunk CORPUS -c CHUNKER -o chunks-ID.jsonl`` line that rebuilds it; runs sharing a
  chunker and corpus share one line.
- ``--db`` names the lab's own store, so the line does not depend on the folder it is typed in;
  a URL holding a password is written as ``"$RAGMETER_DATABASE_URL"`` (a page never shows it).
- Every path is shell-quoted.
- In the report (a file meant to be shared, :func:`paths_relative_to`), no absolute local path:
  a path inside the experiments folder is written relative to it (the lines run from there),
  any other by its file name only; a SQLite store's file likewise.
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
    from ..store import RunRecord, Store


#: the folder the report writes its paths relative to (None: the lab, which prints them whole)
_RELATIVE_TO: ContextVar[Path | None] = ContextVar("ragmeter_report_folder", default=None)


@contextlib.contextmanager
def paths_relative_to(folder: str | Path) -> Iterator[None]:
    """While the report is built: every path a line or a page names is written relative to
    ``folder`` (the experiments folder), or by file name when outside it (see
    :func:`shown_path`)."""
    token = _RELATIVE_TO.set(Path(folder).resolve())
    try:
        yield
    finally:
        _RELATIVE_TO.reset(token)


def shown_path(value: object) -> str:
    """``value`` as a page shows it: unchanged in the lab; in the report an absolute path is
    made relative to the experiments folder, or cut to its file name when outside it (a
    relative path, or a word that is not a path, is unchanged)."""
    text = str(value)
    base = _RELATIVE_TO.get()
    if base is None or (not text.startswith(("/", "\\")) and not Path(text).is_absolute()):
        return text
    path = Path(text)
    for candidate in (path, path.resolve()):
        with contextlib.suppress(ValueError):
            return candidate.relative_to(base).as_posix() or "."
    return path.name


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
    if isinstance(value, str) and value:
        p = Path(value)
        if p.is_file():
            return p
    return None


def has_run_file(run: RunRecord) -> bool:
    """Whether the run file ``ragmeter run`` wrote for ``run`` is still on disk."""
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
