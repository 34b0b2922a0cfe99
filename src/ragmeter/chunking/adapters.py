"""Chunks made elsewhere, as a Chunking: LangChain splitter output or plain (doc, start, end) lists.

Use these to score the splitter configuration a team really runs. Token counts of imported
chunks are the tokenizer's count of each chunk's text alone (their edges may cut words).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .._errors import Problem, UsageError, ValidationError
from ._chunking import Chunking, chunk_id, documents_of
from ._tokenizer import Tokenizer, get_tokenizer


def from_ranges(
    corpus: Any,
    ranges: Iterable[Any],
    *,
    name: str = "custom",
    tokenizer: str | Tokenizer | None = None,
) -> Chunking:
    """A Chunking from ``(doc, start, end)`` triples (tuples, or mappings with those keys).

    Every problem is reported at once (``item N`` counts from 1): unknown document, offsets
    that are not integers, ``start < 0``, ``end <= start`` or ``end`` past the document's end.
    Repeated ranges are kept once.
    """
    texts = dict(documents_of(corpus))
    problems: list[Problem] = []
    rows: dict[tuple[str, int, int], None] = {}
    for i, item in enumerate(ranges, start=1):
        try:
            if isinstance(item, Mapping):
                doc, start, end = item["doc"], item["start"], item["end"]
            else:
                doc, start, end = item
        except (KeyError, TypeError, ValueError):
            problems.append(Problem(f"item {i}: expected (doc, start, end), got {item!r}"))
            continue
        where = f"item {i}"
        src = texts.get(doc)
        if src is None:
            problems.append(Problem(f"{where}: unknown document {doc!r}", field="doc"))
            continue
        if any(not isinstance(v, (int, np.integer)) or isinstance(v, bool) for v in (start, end)):
            problems.append(
                Problem(
                    f"{where}: offsets must be integers, got ({start!r}, {end!r})", field="start"
                )
            )
            continue
        start, end = int(start), int(end)
        if start < 0 or end <= start or end > len(src):
            problems.append(
                Problem(
                    f"{where}: range {start}:{end} is not inside document "
                    f"{doc!r} (length {len(src)}) or is empty",
                    field="end",
                )
            )
            continue
        rows[(str(doc), start, end)] = None
    if problems:
        raise ValidationError(problems, what=f"chunks '{name}'")
    keys = list(rows)
    return _build(keys, [texts[d][a:b] for d, a, b in keys], name, tokenizer)


def from_langchain(
    documents: Iterable[Any],
    corpus: Any = None,
    *,
    doc_key: str = "source",
    name: str = "langchain",
    tokenizer: str | Tokenizer | None = None,
) -> Chunking:
    """A Chunking from LangChain text-splitter output created with ``add_start_index=True``.

    Each item is a LangChain ``Document`` (or a dict) with ``page_content`` and ``metadata``
    holding ``start_index`` and the document id under ``doc_key``. Without ``corpus`` the chunk
    texts are trusted as given; with it, each must equal its document's characters at
    ``start_index`` (LangChain records -1 when it could not locate a chunk).
    """
    texts = dict(documents_of(corpus)) if corpus is not None else None
    problems: list[Problem] = []
    rows: dict[tuple[str, int, int], str] = {}
    for i, item in enumerate(documents, start=1):
        content = (
            item.get("page_content")
            if isinstance(item, Mapping)
            else getattr(item, "page_content", None)
        )
        meta = (
            item.get("metadata") if isinstance(item, Mapping) else getattr(item, "metadata", None)
        )
        where = f"item {i}"
        if not isinstance(content, str) or not isinstance(meta, Mapping):
            problems.append(Problem(f"{where}: expected page_content (str) and metadata (dict)"))
            continue
        start = meta.get("start_index")
        if not isinstance(start, int) or isinstance(start, bool) or start < 0:
            problems.append(
                Problem(
                    f"{where}: metadata['start_index'] is {start!r}; create the splitter with "
                    "add_start_index=True (LangChain records -1 for a chunk it could not locate)",
                    field="metadata.start_index",
                )
            )
            continue
        doc = meta.get(doc_key)
        if doc is None:
            problems.append(
                Problem(
                    f"{where}: metadata has no {doc_key!r}; pass "
                    f"doc_key= the metadata key holding the document id",
                    field=f"metadata.{doc_key}",
                )
            )
            continue
        end = start + len(content)
        if texts is not None:
            src = texts.get(str(doc))
            if src is None:
                problems.append(Problem(f"{where}: unknown document {doc!r}", field=doc_key))
                continue
            if src[start:end] != content:
                problems.append(
                    Problem(
                        f"{where}: page_content is not the text of document "
                        f"{doc!r} at {start}:{end}",
                        field="page_content",
                    )
                )
                continue
        if end > start:
            rows[(str(doc), start, end)] = content
    if problems:
        raise ValidationError(problems, what=f"chunks '{name}'")
    keys = list(rows)
    return _build(keys, [rows[k] for k in keys], name, tokenizer)


def _build(
    keys: list[tuple[str, int, int]],
    chunk_texts: list[str],
    name: str,
    tokenizer: str | Tokenizer | None,
) -> Chunking:
    """Chunks ordered by (doc, start, end) with stable ids and standalone token counts."""
    if not name:
        raise UsageError("a chunking needs a name (it is carried into every result)")
    tok = get_tokenizer(tokenizer)
    order = sorted(range(len(keys)), key=lambda i: keys[i])
    keys = [keys[i] for i in order]
    chunk_texts = [chunk_texts[i] for i in order]
    return Chunking(
        name=name,
        tokenizer=tok.name,
        ids=[chunk_id(d, a, b) for d, a, b in keys],
        doc=[d for d, _, _ in keys],
        start=[a for _, a, _ in keys],
        end=[b for _, _, b in keys],
        text=chunk_texts,
        n_tokens=tok.count_batch(chunk_texts) if keys else [],
    )
