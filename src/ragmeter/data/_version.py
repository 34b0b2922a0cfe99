"""Golden-set versions: what is hashed, and reading the lock file ``ragmeter golden freeze``
writes (freezing and checking a frozen set are in ``_freeze``).

Definitions (also in docs/formats.md):

- canonical form of a question: ``json.dumps(question.model_dump(mode="json"), sort_keys=True,
  ensure_ascii=False, separators=(",", ":"))`` -- every field, defaults filled in, so the key
  order, spacing and omitted defaults of the JSONL line do not matter; ``origin`` only when
  set (a set without origins keeps the version it had before the field existed).
- labels digest ``L``: sha256 over the canonical forms of the questions sorted by id, each
  followed by ``"\\n"`` (question order in the file carries no meaning; evidence order does).
- documents digest ``D``: sha256 over ``json.dumps([doc_id, content_sha256],
  ensure_ascii=False) + "\\n"`` for every document the evidence points at, sorted by id;
  ``content_sha256`` is sha256 of the document's UTF-8 text (titles and unreferenced documents
  are not part of the version).
- version digest ``V = sha256("ragmeter-golden-version/1\\n" + L + "\\n" + D + "\\n")``; the
  printable version is ``"g-" + V[:12]``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .._errors import InputError
from ..io import read_json
from ._schema import Question

#: tag mixed into the version digest; bump when the definition changes.
VERSION_TAG = "ragmeter-golden-version/1"
#: hex digits of the version digest shown in the printable version.
SHORT = 12


def canonical_question(question: Question) -> str:
    """The question as canonical JSON (sorted keys, no spaces, defaults filled in)."""
    fields = question.model_dump(mode="json")
    if fields.get("origin") is None:
        fields.pop("origin", None)
    return json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def question_digest(question: Question) -> str:
    """sha256 (hex) of one question's canonical form."""
    return hashlib.sha256(canonical_question(question).encode("utf-8")).hexdigest()


def labels_digest(questions: Iterable[Question]) -> str:
    """``L``: sha256 over the canonical questions sorted by id, one per line."""
    h = hashlib.sha256()
    for q in sorted(questions, key=lambda q: q.id):
        h.update(canonical_question(q).encode("utf-8") + b"\n")
    return h.hexdigest()


def documents_digest(doc_hashes: Mapping[str, str]) -> str:
    """``D``: sha256 over ``[doc_id, content_sha256]`` JSON lines sorted by document id."""
    h = hashlib.sha256()
    for doc_id in sorted(doc_hashes):
        h.update(json.dumps([doc_id, doc_hashes[doc_id]], ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def version_digest(labels: str, documents: str) -> str:
    """``V``: the full version digest from the labels and documents digests."""
    payload = f"{VERSION_TAG}\n{labels}\n{documents}\n"
    return hashlib.sha256(payload.encode("ascii")).hexdigest()


def short_version(digest: str) -> str:
    """The printable version, e.g. ``g-1a2b3c4d5e6f``."""
    return f"g-{digest[:SHORT]}"


# --- lock files ------------------------------------------------------------------------------

#: ``format`` field of lock files written by this version of ragmeter.
LOCK_FORMAT = "ragmeter-golden-lock/1"
#: hex digits of each question digest stored in a lock file.
QUESTION_DIGEST = 16


def lock_path_for(golden_path: str | os.PathLike[str]) -> Path:
    """The lock file beside a golden file: ``golden.jsonl`` → ``golden.lock.json``."""
    return Path(golden_path).with_suffix(".lock.json")


def read_lock(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a lock file written by :func:`ragmeter.data.freeze`."""
    path = Path(path)
    if not path.exists():
        raise InputError("no lock file; run `ragmeter golden freeze` first", path=path)
    lock = read_json(path, hint="not a valid lock file")
    if not isinstance(lock, dict):
        raise InputError("not a ragmeter lock file (expected a JSON object)", path=path)
    missing = [k for k in ("format", "version", "labels_sha256", "documents") if k not in lock]
    if missing:
        raise InputError(f"not a ragmeter lock file (missing {', '.join(missing)})", path=path)
    if lock["format"] != LOCK_FORMAT:
        raise InputError(
            f"lock format {lock['format']!r} is not {LOCK_FORMAT!r}", path=path, field="format"
        )
    return lock
