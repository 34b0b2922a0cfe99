"""Freezing a golden set's version and checking a frozen set: the lock file beside it.

``freeze`` writes ``<golden>.lock.json`` (docs/formats.md defines every field) and never
replaces a lock that records another version (or another parent) unless asked; ``check_frozen``
compares a golden set and corpus now with what their lock recorded. The digests are in
``_version``. A lock may record its ``parent``: the version this one was made from (lineage
only: the parent is not part of the version, and locks written before it read as no parent).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._errors import UsageError
from ._golden_set import GoldenSet, load_golden
from ._version import (
    LOCK_FORMAT,
    QUESTION_DIGEST,
    documents_digest,
    lock_path_for,
    question_digest,
    read_lock,
    short_version,
    version_digest,
)
from .corpus import Corpus, load_corpus, write_lines

__all__ = [
    "VERSION_PATTERN",
    "FreezeResult",
    "FrozenCheck",
    "build_lock",
    "check_frozen",
    "check_version",
    "freeze",
    "lock_parent",
]

#: a printable golden-set version, as ``short_version`` writes it (``g-`` + 12 hex digits).
VERSION_PATTERN = re.compile(r"g-[0-9a-f]{12}")


def check_version(value: str, what: str = "parent") -> str:
    """``value`` when it is a printable golden-set version (``g-1a2b3c4d5e6f``); else UsageError
    naming ``what``."""
    if not isinstance(value, str) or not VERSION_PATTERN.fullmatch(value):
        raise UsageError(
            f"{what} {value!r} is not a golden-set version (g- and 12 hex digits, as "
            "`ragmeter golden freeze` prints it)"
        )
    return value


def lock_parent(lock: dict[str, Any]) -> str | None:
    """The parent version a lock records (None: none, or a lock written before lineage)."""
    parent = lock.get("parent")
    return parent if isinstance(parent, str) else None


def build_lock(
    golden: GoldenSet,
    corpus: Corpus,
    golden_path: Path,
    corpus_path: str | None,
    parent: str | None = None,
) -> dict[str, Any]:
    """The lock record of a validated golden set (see docs/formats.md); ``parent`` is the
    version it was made from (checked: a printable version, not the set's own)."""
    from .._about import __version__

    doc_hashes = {d: corpus.content_hash(d) for d in golden.doc_ids}
    labels = golden.labels_digest
    documents = documents_digest(doc_hashes)
    digest = version_digest(labels, documents)
    version = short_version(digest)
    if parent is not None:
        check_version(parent)
        if parent == version:
            raise UsageError(
                f"the parent {parent} is this golden set's own version: a version cannot be "
                "its own parent (nothing changed since it was frozen?)"
            )
    stats = golden.stats()
    return {
        "format": LOCK_FORMAT,
        "version": version,
        "parent": parent,
        "version_sha256": digest,
        "labels_sha256": labels,
        "documents_sha256": documents,
        "golden": golden_path.name,
        "corpus": {"path": corpus_path, "sha256": corpus.fingerprint, "documents": len(corpus)},
        "counts": {
            "questions": stats["questions"],
            "answerable": stats["answerable"],
            "unanswerable": stats["unanswerable"],
            "spans": stats["spans"],
            "documents_referenced": stats["documents_referenced"],
            "tune": stats["splits"]["tune"],
            "heldout": stats["splits"]["heldout"],
        },
        "frozen_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "ragmeter": __version__,
        "documents": doc_hashes,
        "questions": {q.id: question_digest(q)[:QUESTION_DIGEST] for q in golden.questions},
    }


@dataclass(frozen=True)
class FreezeResult:
    """What :func:`freeze` did: the lock, its path, and whether the file was (re)written."""

    lock_path: Path
    lock: dict[str, Any]
    written: bool
    previous_version: str | None


def freeze(
    golden_path: str | os.PathLike[str],
    corpus: Corpus | str | os.PathLike[str],
    *,
    force: bool = False,
    lock_path: str | os.PathLike[str] | None = None,
    parent: str | None = None,
) -> FreezeResult:
    """Record the version of a golden set in ``<golden>.lock.json`` beside it.

    The golden set must validate against the corpus. ``parent`` (a printable version) records
    the version this one was made from. An existing lock that records the same version and
    corpus (and the same parent, when one is given) is left untouched; one that differs is
    replaced only with ``force=True`` (otherwise UsageError), so a frozen version or its
    recorded lineage is never overwritten silently.
    """
    golden_path = Path(golden_path)
    corpus_path = None if isinstance(corpus, Corpus) else str(corpus)
    if not isinstance(corpus, Corpus):
        corpus = load_corpus(corpus)
    golden = load_golden(golden_path, corpus)
    target = Path(lock_path) if lock_path is not None else lock_path_for(golden_path)
    lock = build_lock(golden, corpus, golden_path, corpus_path or corpus.source, parent)
    previous = read_lock(target) if target.exists() else None
    if previous is not None:
        same = (
            previous.get("version_sha256") == lock["version_sha256"]
            and previous.get("corpus", {}).get("sha256") == lock["corpus"]["sha256"]
        )
        # freezing again without a parent keeps the one recorded; another parent is a change
        same_parent = parent is None or lock_parent(previous) == parent
        if same and same_parent:
            return FreezeResult(target, previous, False, previous["version"])
        if not force:
            if same:
                raise UsageError(
                    f"{target} records version {previous['version']} with parent "
                    f"{lock_parent(previous) or '(none)'}, not {parent}; pass --force "
                    "(force=True) to replace the lock"
                )
            raise UsageError(
                f"{target} already records version {previous['version']} and the golden set "
                f"is now {lock['version']}; pass --force (force=True) to replace the lock"
            )
    write_lines(target, [json.dumps(lock, indent=2, ensure_ascii=False)])
    return FreezeResult(target, lock, True, None if previous is None else previous["version"])


@dataclass(frozen=True)
class FrozenCheck:
    """Differences between a golden set and corpus now and what their lock recorded."""

    lock_path: Path
    locked_version: str
    current_version: str | None
    added_questions: list[str] = field(default_factory=list)
    removed_questions: list[str] = field(default_factory=list)
    changed_questions: list[str] = field(default_factory=list)
    changed_documents: list[str] = field(default_factory=list)
    missing_documents: list[str] = field(default_factory=list)
    corpus_changed: bool = False

    @property
    def ok(self) -> bool:
        """True when the golden set and the documents it points at are as frozen."""
        return self.current_version == self.locked_version

    def describe(self) -> list[str]:
        """One line per kind of change (empty when nothing changed)."""
        lines = []
        if not self.ok:
            now = self.current_version or "not computable"
            lines.append(f"version changed: frozen {self.locked_version}, now {now}")
        for label, ids in (
            ("questions added", self.added_questions),
            ("questions removed", self.removed_questions),
            ("questions changed", self.changed_questions),
            ("referenced documents changed", self.changed_documents),
            ("referenced documents missing", self.missing_documents),
        ):
            if ids:
                shown = ", ".join(ids[:10]) + (
                    f", ... ({len(ids)} in all)" if len(ids) > 10 else ""
                )
                lines.append(f"{label}: {shown}")
        if self.corpus_changed and self.ok:
            lines.append(
                "the corpus changed outside the referenced documents (the version is "
                "unaffected; retrieval results may differ)"
            )
        return lines


def check_frozen(
    golden_path: str | os.PathLike[str],
    corpus: Corpus | str | os.PathLike[str],
    *,
    lock_path: str | os.PathLike[str] | None = None,
) -> FrozenCheck:
    """Compare a golden set and corpus with the lock ``freeze`` wrote; report what changed."""
    target = Path(lock_path) if lock_path is not None else lock_path_for(golden_path)
    lock = read_lock(target)
    if not isinstance(corpus, Corpus):
        corpus = load_corpus(corpus)
    # schema only: a changed corpus must not stop the check (quote spans still need it)
    golden = load_golden(golden_path, quotes_from=corpus)
    locked_q: dict[str, str] = lock.get("questions", {})
    now_q = {q.id: question_digest(q)[:QUESTION_DIGEST] for q in golden.questions}
    locked_docs: dict[str, str] = lock["documents"]
    referenced = sorted(set(golden.doc_ids) | set(locked_docs))
    missing = [d for d in referenced if d not in corpus]
    changed = [
        d
        for d in referenced
        if d in corpus and locked_docs.get(d) not in (None, corpus.content_hash(d))
    ]
    current = None if missing else short_version(golden.version_digest(corpus))
    return FrozenCheck(
        lock_path=target,
        locked_version=str(lock["version"]),
        current_version=current,
        added_questions=[q for q in now_q if q not in locked_q],
        removed_questions=[q for q in locked_q if q not in now_q],
        changed_questions=[q for q in now_q if q in locked_q and locked_q[q] != now_q[q]],
        changed_documents=changed,
        missing_documents=missing,
        corpus_changed=lock.get("corpus", {}).get("sha256") != corpus.fingerprint,
    )
