"""Corpora: the source documents that evidence spans point into.

On disk a corpus is either a JSONL file, one ``{"id", "text", "title"?, "metadata"?}`` object a
line, or a folder of ``.txt`` / ``.md`` files whose ids are their paths relative to the folder
(posix form, e.g. ``rules/refunds.md``). See docs/formats.md.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import pydantic

from .._errors import InputError, NotFoundError, Problem, ValidationError
from ..io import iter_jsonl, write_text_lines
from ._schema import Document
from ._validate import schema_problems

#: file suffixes read from a corpus folder.
TEXT_SUFFIXES = (".txt", ".md")


class Corpus:
    """An ordered collection of documents with unique ids.

    Iterating yields :class:`Document` values in order; ``corpus[doc_id]`` looks one up and
    ``doc_id in corpus`` tests membership. Content hashes are computed once and cached.
    """

    def __init__(self, documents: Iterable[Document], *, source: str | None = None) -> None:
        docs: dict[str, Document] = {}
        for doc in documents:
            if doc.id in docs:
                raise InputError(f"duplicate document id {doc.id!r}", path=source, field="id")
            docs[doc.id] = doc
        self._docs = docs
        self._hashes: dict[str, str] = {}
        self.source = source

    def __getitem__(self, doc_id: str) -> Document:
        try:
            return self._docs[doc_id]
        except KeyError:
            raise NotFoundError(f"document {doc_id!r} is not in the corpus") from None

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._docs

    def __iter__(self) -> Iterator[Document]:
        return iter(self._docs.values())

    def __len__(self) -> int:
        return len(self._docs)

    def __repr__(self) -> str:
        where = f", source={self.source!r}" if self.source else ""
        return f"Corpus({len(self)} documents{where})"

    @property
    def ids(self) -> list[str]:
        """Document ids in corpus order."""
        return list(self._docs)

    def get(self, doc_id: str, default: Document | None = None) -> Document | None:
        return self._docs.get(doc_id, default)

    def content_hash(self, doc_id: str) -> str:
        """sha256 (hex) of the document's text encoded as UTF-8 (``Document.content_hash``)."""
        value = self._hashes.get(doc_id)
        if value is None:
            value = self[doc_id].content_hash
            self._hashes[doc_id] = value
        return value

    @property
    def fingerprint(self) -> str:
        """sha256 (hex) of every document record: id, content hash, title and metadata.

        Defined as sha256 over the lines ``json.dumps([id, content_hash, title, metadata],
        sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\\n"`` for the documents
        sorted by id, so it ignores document order and file formatting.
        """
        h = hashlib.sha256()
        for doc_id in sorted(self._docs):
            doc = self._docs[doc_id]
            row = [doc_id, self.content_hash(doc_id), doc.title, doc.metadata]
            h.update(_canonical(row).encode("utf-8") + b"\n")
        return h.hexdigest()

    def suggest(self, doc_id: str) -> str:
        """``"; did you mean 'x'?"`` for a near-miss id, or an empty string."""
        if len(self._docs) > 20_000:
            return ""
        close = difflib.get_close_matches(doc_id, self._docs, n=1, cutoff=0.75)
        return f"; did you mean {close[0]!r}?" if close else ""


def _canonical(obj: object) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def load_corpus(path: str | os.PathLike[str]) -> Corpus:
    """Read a corpus from a JSONL file or a folder of .txt/.md files.

    Raises :class:`ValidationError` listing every bad line (invalid JSON, missing or wrong
    fields, duplicate ids) with its line number and field.
    """
    path = Path(path)
    if path.is_dir():
        return _load_folder(path)
    problems: list[Problem] = []
    docs: list[Document] = []
    first_line: dict[str, int] = {}
    where = str(path)
    for number, obj in iter_jsonl(path, problems, what="documents"):
        try:
            doc = Document.model_validate(obj)
        except pydantic.ValidationError as exc:
            problems.extend(schema_problems(exc, where, number))
            continue
        if doc.id in first_line:
            problems.append(
                Problem(
                    f"duplicate document id {doc.id!r} (first on line {first_line[doc.id]})",
                    where,
                    number,
                    "id",
                )
            )
            continue
        first_line[doc.id] = number
        docs.append(doc)
    if problems:
        raise ValidationError(problems, what=f"corpus {where}")
    if not docs:
        raise InputError("the corpus has no documents", path=path)
    return Corpus(docs, source=where)


def _folder_files(folder: Path, problems: list[Problem]) -> list[Path]:
    """The .txt/.md files under ``folder`` (names starting with ``.`` skipped), sorted.

    Symbolic links are never a way out of the folder: a linked file is read only when it
    resolves inside the folder, a link that leads outside is a problem naming it (a corpus
    folder from elsewhere must not pull ``/etc/passwd`` into the chunks), and linked folders
    are not descended into (what they hold inside the folder is read at its own path)."""
    root = os.path.realpath(folder)
    files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in list(dirnames):
            if (here / name).is_symlink():
                dirnames.remove(name)
                if not _within(here / name, root):
                    problems.append(_outside(here / name, "folder"))
        for name in filenames:
            path = here / name
            if name.startswith(".") or path.suffix.lower() not in TEXT_SUFFIXES:
                continue
            if path.is_symlink() and not _within(path, root):
                problems.append(_outside(path, "file"))
            elif path.is_file():
                files.append(path)
    return sorted(files)


def _within(link: Path, root: str) -> bool:
    target = os.path.realpath(link)
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


def _outside(link: Path, kind: str) -> Problem:
    return Problem(
        f"a symbolic link to a {kind} outside the corpus folder ({os.path.realpath(link)}); "
        "links are followed only inside the folder: copy the file in, or remove the link",
        str(link),
    )


def _load_folder(folder: Path) -> Corpus:
    problems: list[Problem] = []
    docs: list[Document] = []
    files = _folder_files(folder, problems)
    for file in files:
        doc_id = file.relative_to(folder).as_posix()
        try:
            # bytes, not read_text: offsets must index the file's exact characters (no newline
            # translation); a UTF-8 byte-order mark is dropped.
            text = file.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            problems.append(Problem(f"not valid UTF-8 (byte {exc.start + 1})", str(file)))
            continue
        docs.append(Document(id=doc_id, text=text))
    if problems:
        raise ValidationError(problems, what=f"corpus folder {folder}")
    if not docs:
        raise InputError("the folder has no .txt or .md files", path=folder)
    return Corpus(docs, source=str(folder))


def write_corpus(corpus: Corpus | Iterable[Document], path: str | os.PathLike[str]) -> Path:
    """Write documents as JSONL (``title`` and ``metadata`` only when set), replacing ``path``.

    The file is written beside the target and renamed into place, so a failed write never
    leaves half a corpus.
    """
    path = Path(path)
    lines = (doc.model_dump_json(exclude_none=True, exclude_defaults=True) for doc in corpus)
    return write_lines(path, lines)


def write_lines(path: str | os.PathLike[str], lines: Iterable[str]) -> Path:
    """Write ``lines`` (one JSON record each) to ``path`` atomically, UTF-8, ``\\n`` endings
    (``ragmeter.io._atomic.write_text_lines``)."""
    return write_text_lines(path, lines)
