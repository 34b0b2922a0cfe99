"""The golden-set diff page's model: two stored versions and what changed between them, the
same record ``ragmeter golden diff A B`` prints (:func:`ragmeter.workflows.golden.diff_stored`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._errors import NotFoundError, RagmeterError

if TYPE_CHECKING:
    from ..data import GoldenDiff
    from ..store import Store

#: characters of a version name read from the query string that an error message repeats
SHOWN = 40


@dataclass(frozen=True)
class VersionChoice:
    """One stored golden-set version offered in the page's two pickers."""

    version: str
    name: str | None
    questions: int
    spans: int
    parent: str | None


@dataclass(frozen=True)
class GoldenDiffPage:
    """``/golden/diff?a=V1&b=V2``: the stored versions, the two asked for, and their diff
    (None until both are named); ``error`` says what could not be read, ``status`` its code."""

    versions: tuple[VersionChoice, ...]
    a: str
    b: str
    diff: GoldenDiff | None
    summary: dict[str, int] | None
    error: str | None
    status: int


def golden_diff_context(store: Store, a: str | None, b: str | None) -> GoldenDiffPage:
    """The page for versions ``a`` and ``b`` (each a version or its first digits); with only
    ``b``, ``a`` is the parent the store recorded for it, when it did."""
    from ..workflows.golden import diff_stored

    rows = store.golden_versions()
    versions = tuple(
        VersionChoice(
            r.version, r.name, r.n_questions, r.n_spans, _parent(getattr(r, "parent", None))
        )
        for r in reversed(rows)  # newest first
    )
    a_text, b_text = (a or "").strip(), (b or "").strip()
    if not a_text and b_text:
        a_text = next((v.parent or "" for v in versions if v.version == b_text), "")
    if not a_text or not b_text:
        return GoldenDiffPage(versions, a_text, b_text, None, None, None, 200)
    try:
        found = diff_stored(store, a_text[:100], b_text[:100])
    except RagmeterError as exc:
        # not stored, ambiguous, or damaged: the message names which (never a traceback)
        status = 404 if isinstance(exc, NotFoundError) else 400
        message = str(exc)
        if len(message) > 400:
            message = message[:399] + "…"
        return GoldenDiffPage(versions, a_text[:SHOWN], b_text[:SHOWN], None, None, message, status)
    a_version, b_version = found.a.version or a_text, found.b.version or b_text
    return GoldenDiffPage(versions, a_version, b_version, found, found.summary(), None, 200)


def _parent(value: object) -> str | None:
    return value if isinstance(value, str) else None
