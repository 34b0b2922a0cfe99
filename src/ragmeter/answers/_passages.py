"""Resolve what an answer cites or saw: document spans and chunk texts, by id.

Accepts a corpus (ragmeter's ``Corpus``, a mapping ``doc id -> Document``, or any iterable of
objects with ``id`` and ``text``) and chunks (a ``Chunking`` with ``.chunks``, a mapping, or an
iterable of objects with ``id``, ``doc``, ``start``, ``end``, ``text``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import Problem
from ._schema import AnswerSet, Citation


@dataclass(frozen=True)
class CitedText:
    """Text an answer cites or saw (a citation or a context id, resolved), with where it lives."""

    label: str  # "doc:12-80", "chunk#3"
    doc: str | None
    text: str
    #: character offsets of ``text`` in its document, when known (chunks and doc spans)
    start: int | None = None
    end: int | None = None


def _items(obj: Any, attrs: tuple[str, ...]) -> list[Any]:
    if obj is None:
        return []
    if isinstance(obj, Mapping):
        return list(obj.values())
    for name in attrs:
        inner = getattr(obj, name, None)
        if inner is not None and not callable(inner):
            return list(inner.values()) if isinstance(inner, Mapping) else list(inner)
    return list(obj)


class PassageIndex:
    """Documents and chunks by id; resolves citations and context ids to text."""

    def __init__(self, corpus: Any = None, chunks: Any = None) -> None:
        self.docs: dict[str, Any] = {d.id: d for d in _items(corpus, ("documents", "docs"))}
        self.chunks: dict[str, Any] = {c.id: c for c in _items(chunks, ("chunks",))}

    def metadata(self, doc_id: str) -> Mapping[str, Any]:
        doc = self.docs.get(doc_id)
        return dict(getattr(doc, "metadata", None) or {}) if doc is not None else {}

    def problem(self, c: Citation) -> str | None:
        """Why a citation cannot be resolved, or None."""
        if c.doc is not None:
            if not self.docs:
                return "cites a document but no corpus was given (pass the corpus)"
            doc = self.docs.get(c.doc)
            if doc is None:
                return f"cites unknown document '{c.doc}'"
            if c.end is not None and c.end > len(doc.text):
                return f"citation end {c.end} is past the end of '{c.doc}' ({len(doc.text)} chars)"
            return None
        if not self.chunks:
            return "cites a chunk but no chunks were given (pass the chunking used for the prompt)"
        chunk = self.chunks.get(str(c.chunk))
        if chunk is None:
            return f"cites unknown chunk '{c.chunk}'"
        if c.end is not None and c.end > len(chunk.text):
            return f"citation end {c.end} is past the end of chunk '{c.chunk}'"
        return None

    def cited(self, c: Citation) -> CitedText:
        """The cited text (call :meth:`problem` first)."""
        if c.doc is not None:
            text = self.docs[c.doc].text
            if c.start is None:
                return CitedText(c.label, c.doc, text, 0, len(text))
            return CitedText(c.label, c.doc, text[c.start : c.end], c.start, c.end)
        chunk = self.chunks[str(c.chunk)]
        text = chunk.text if c.start is None else chunk.text[c.start : c.end]
        base = getattr(chunk, "start", None)
        if base is None:
            return CitedText(c.label, str(chunk.doc), text)
        lo = int(base) + (c.start or 0)
        return CitedText(c.label, str(chunk.doc), text, lo, lo + len(text))

    def context(self, ids: Iterable[str]) -> list[CitedText]:
        """Chunks of a prompt context in order; unknown ids are skipped (see :meth:`check`)."""
        out = []
        for cid in ids:
            chunk = self.chunks.get(cid)
            if chunk is not None:
                start = getattr(chunk, "start", None)
                out.append(
                    CitedText(
                        cid,
                        str(chunk.doc),
                        chunk.text,
                        None if start is None else int(start),
                        None if start is None else int(start) + len(chunk.text),
                    )
                )
        return out

    def outside(self, citations: Iterable[Citation], context_ids: Iterable[str]) -> tuple[str, ...]:
        """Labels of the citations that point outside the prompt context ``context_ids``.

        A chunk citation is inside when its chunk is one of the context's chunks. A document
        citation is inside when at least one character of the cited span (the whole document
        when it names no offsets) lies in a context chunk of that document: a span that
        straddles a chunk boundary was partly seen, so it is not flagged.
        """
        ids = list(context_ids)
        members = set(ids)
        ctx = self.context(ids)
        out = []
        for c in citations:
            if c.chunk is not None:
                inside = str(c.chunk) in members
            else:
                p = self.cited(c)
                inside = any(
                    q.doc == p.doc
                    and (
                        q.start is None
                        or (
                            p.start is not None
                            and p.end is not None
                            and q.end is not None
                            and q.start < p.end
                            and p.start < q.end
                        )
                    )
                    for q in ctx
                )
            if not inside:
                out.append(c.label)
        return tuple(out)

    def check(self, answers: AnswerSet, *, need_context: bool = False) -> list[Problem]:
        """Every citation or context id that cannot be resolved, with file, line and field."""
        problems: list[Problem] = []
        for a in answers.answers:
            line = answers.lines.get(a.id)
            for i, c in enumerate(a.citations):
                why = self.problem(c)
                if why:
                    problems.append(Problem(why, answers.path, line, f"citations.{i}"))
            if a.context and (need_context or self.chunks):
                if not self.chunks:
                    problems.append(
                        Problem(
                            "lists context chunk ids but no chunks were given",
                            answers.path,
                            line,
                            "context",
                        )
                    )
                    continue
                unknown = [cid for cid in a.context if cid not in self.chunks]
                if unknown:
                    problems.append(
                        Problem(f"unknown chunk id(s) {unknown[:3]}", answers.path, line, "context")
                    )
        return problems
