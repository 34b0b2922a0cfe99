"""A chunking: every chunk of a corpus under one chunker, stored column-wise, saved and loaded.

A chunk is ``(id, doc, start, end, text, n_tokens)`` with ``text == document.text[start:end]``
(Python string offsets, end exclusive) and ``n_tokens`` the tokenizer's count of ``text`` alone
(no special tokens). Chunk ids of built-in chunkers are ``f"{doc}#{start}-{end}"``: stable
across runs and machines, and unique because a chunking never holds one range twice.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InputError, UsageError
from ..data import Document
from ._chunkers import Chunker, make_chunker
from ._tokenizer import Encoded, Tokenizer, get_tokenizer

#: columns of a chunk table, in file order.
COLUMNS = ("id", "doc", "start", "end", "text", "n_tokens")
#: documents tokenized per batch (one progress step each).
_BATCH_CHARS = 1_000_000
_BATCH_DOCS = 256


@dataclass(frozen=True)
class Chunk:
    """One chunk: ``text == corpus[doc].text[start:end]``, ``n_tokens`` tokens long."""

    id: str
    doc: str
    start: int
    end: int
    text: str
    n_tokens: int


def chunk_id(doc: str, start: int, end: int) -> str:
    """The stable id of a chunk: ``"{doc}#{start}-{end}"``."""
    return f"{doc}#{start}-{end}"


class Chunking:
    """The chunks of a corpus under one chunker, column-wise.

    ``name`` is the chunker's configuration (``tokens:300:50``) or the name given to imported
    chunks; ``tokenizer`` names the tokenizer that counted ``n_tokens``. Both are carried into
    every result computed on this chunking.
    """

    def __init__(
        self,
        *,
        name: str,
        tokenizer: str,
        ids: Sequence[str],
        doc: Sequence[str],
        start: Sequence[int] | np.ndarray,
        end: Sequence[int] | np.ndarray,
        text: Sequence[str],
        n_tokens: Sequence[int] | np.ndarray,
        source: str | None = None,
    ) -> None:
        n = len(ids)
        cols = {"doc": doc, "start": start, "end": end, "text": text, "n_tokens": n_tokens}
        for col, values in cols.items():
            if len(values) != n:
                raise UsageError(f"chunk column '{col}' has {len(values)} values for {n} ids")
        self.name = name
        self.tokenizer = tokenizer
        self.source = source
        self.ids: list[str] = list(ids)
        self.doc: list[str] = list(doc)
        self.text: list[str] = list(text)
        self.start = _int_array(start)
        self.end = _int_array(end)
        self.n_tokens = _int_array(n_tokens)
        if len(set(self.ids)) != n:
            seen: set[str] = set()
            for cid in self.ids:
                if cid in seen:
                    raise InputError(f"duplicate chunk id {cid!r}", path=source, field="id")
                seen.add(cid)

    # --- views -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[Chunk]:
        for i in range(len(self.ids)):
            yield self[i]

    def __getitem__(self, i: int) -> Chunk:
        return Chunk(
            self.ids[i],
            self.doc[i],
            int(self.start[i]),
            int(self.end[i]),
            self.text[i],
            int(self.n_tokens[i]),
        )

    @property
    def chunks(self) -> list[Chunk]:
        """Every chunk as a :class:`Chunk` (built on demand; prefer the columns for speed)."""
        return list(self)

    def __repr__(self) -> str:
        return f"Chunking(name={self.name!r}, tokenizer={self.tokenizer!r}, {len(self)} chunks)"

    @functools.cached_property
    def _position(self) -> dict[str, int]:
        return {cid: i for i, cid in enumerate(self.ids)}

    def get(self, chunk_id: str) -> Chunk | None:
        i = self._position.get(chunk_id)
        return None if i is None else self[i]

    def index_of(self, ids: Iterable[str]) -> np.ndarray:
        """Row of each chunk id (int64), -1 for an id that is not a chunk of this chunking."""
        pos = self._position
        return np.fromiter((pos.get(i, -1) for i in ids), dtype=np.int64)

    @functools.cached_property
    def _id_array(self) -> Any:  # pyarrow.Array of the chunk ids, built once
        import pyarrow as pa

        return pa.array(self.ids, pa.string())

    @functools.cached_property
    def _id_lookup(self) -> Any:  # IdLookup of the chunk ids, built once
        from ._id_lookup import IdLookup

        return IdLookup(self._id_array)

    @functools.cached_property
    def _doc_codes(self) -> Any:  # DocCodes of the chunks' document ids, built once
        from ._id_lookup import DocCodes

        return DocCodes(self.doc)

    def rows_of(self, ids: Any) -> np.ndarray:
        """:meth:`index_of` for a pyarrow string array: the row of each chunk id (int64), -1 for
        an id that is not a chunk of this chunking (or null), without a Python object per id.
        The hash table of the chunk ids is built on the first call and kept
        (``_id_lookup.IdLookup``): a run of 1M items among 1M chunks maps in about 0.1 s."""
        return self._id_lookup.rows(ids)

    #: built on demand from the columns; not pickled (a Ray worker rebuilds what it uses)
    _CACHES = ("_position", "_id_array", "_id_lookup", "_doc_codes")

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in self._CACHES}

    def stats(self) -> dict[str, Any]:
        """Counts and token sizes: chunks, documents, tokens min / median / max / total."""
        t = self.n_tokens
        return {
            "chunking": self.name,
            "tokenizer": self.tokenizer,
            "n_chunks": len(self),
            "n_docs": len(set(self.doc)),
            "tokens_min": int(t.min()) if len(t) else 0,
            "tokens_median": float(np.median(t)) if len(t) else 0.0,
            "tokens_max": int(t.max()) if len(t) else 0,
            "tokens_total": int(t.sum()),
        }

    # --- storage -----------------------------------------------------------------------------
    def to_arrow(self):  # -> pyarrow.Table
        """The chunk table (columns ``id, doc, start, end, text, n_tokens``) with the name and
        tokenizer in the schema metadata."""
        from ._format import to_arrow

        return to_arrow(self)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the chunks to ``.parquet`` or ``.jsonl`` (chosen by suffix), replacing ``path``."""
        from ._format import save_chunking

        return save_chunking(self, path)


def _int_array(values: Sequence[int] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=np.int64).reshape(-1)
    arr.setflags(write=False)
    return arr


# --- chunking a corpus ---------------------------------------------------------------------------
def documents_of(corpus: Any) -> list[tuple[str, str]]:
    """``(id, text)`` of each document of a Corpus, an iterable of Documents, or a mapping of
    id -> Document or text."""
    if isinstance(corpus, Mapping):
        return [(str(k), v.text if isinstance(v, Document) else str(v)) for k, v in corpus.items()]
    out: list[tuple[str, str]] = []
    for d in corpus:
        if isinstance(d, Document) or (hasattr(d, "id") and hasattr(d, "text")):
            out.append((d.id, d.text))
        else:
            raise UsageError("a corpus must be a Corpus, Documents, or a mapping of id -> text")
    return out


def index_texts(chunking: Chunking, corpus: Any, title: bool | None = None) -> list[str]:
    """What a retriever indexes for each chunk of ``chunking``.

    ``title=True``: each chunk whose document has a (non-empty) title is indexed as
    ``title + " " + chunk text`` (BEIR's convention for whole documents; for windows the title
    says which document a passage comes from). ``title=False``: the chunk text alone.
    ``title=None`` (the default, and a retriever spec without ``title``): the chunker's
    convention, titles joined only by a chunker that joins them (``document``; titles carry much
    of a scientific abstract's vocabulary). Chunk offsets and ``Chunking.text`` stay those of the
    document text either way, so evidence spans map exactly as before. ``corpus`` (a Corpus,
    Documents or a mapping) supplies the titles.
    """
    if title is None:
        try:
            title = make_chunker(chunking.name).joins_title
        except UsageError:  # an imported chunking named freely: its texts are what it holds
            title = False
    if not title:
        return list(chunking.text)
    titles = _titles_of(corpus)
    return [
        f"{t} {x}" if (t := titles.get(d)) else x
        for d, x in zip(chunking.doc, chunking.text, strict=True)
    ]


def _titles_of(corpus: Any) -> dict[str, str]:
    docs = corpus.values() if isinstance(corpus, Mapping) else corpus
    return {d.id: d.title for d in docs if getattr(d, "title", None)}


def finalize(enc: Encoded, ranges: Sequence[tuple[int, int]]) -> tuple[np.ndarray, ...]:
    """Clean a chunker's ranges: widen edges inside a word to the word's edges, drop empty and
    repeated ranges, order by (start, end); returns (start, end, n_tokens) arrays."""
    if not ranges:
        e = np.zeros(0, dtype=np.int64)
        return e, e, e
    arr = np.asarray(ranges, dtype=np.int64).reshape(-1, 2)
    start, _ = enc.snap(arr[:, 0])
    _, end = enc.snap(arr[:, 1])
    keep = end > start
    pairs = np.unique(np.stack([start[keep], end[keep]], axis=1), axis=0)
    s, e = pairs[:, 0], pairs[:, 1]
    return s, e, np.asarray(enc.count_in(s, e), dtype=np.int64)


def chunk_corpus(
    corpus: Any,
    chunker: str | Chunker,
    *,
    tokenizer: str | Tokenizer | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Chunking:
    """Chunk every document of ``corpus`` with ``chunker`` (a name such as ``tokens:300:50``).

    Documents are tokenized once, in batches; ``progress(done, total)`` is called after each
    batch. Empty and whitespace-only documents give no chunks.
    """
    ch = make_chunker(chunker)
    tok = get_tokenizer(tokenizer)
    docs = documents_of(corpus)
    ids: list[str] = []
    doc_col: list[str] = []
    texts: list[str] = []
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    done = 0
    for batch in _batches(docs):
        for (doc_id, text), enc in zip(batch, tok.encode([t for _, t in batch]), strict=True):
            s, e, n = finalize(enc, ch.split(text, enc))
            sl, el = s.tolist(), e.tolist()
            ids.extend(f"{doc_id}#{a}-{b}" for a, b in zip(sl, el, strict=True))
            doc_col.extend([doc_id] * len(sl))
            texts.extend(text[a:b] for a, b in zip(sl, el, strict=True))
            starts.append(s)
            ends.append(e)
            counts.append(n)
        done += len(batch)
        if progress is not None:
            progress(done, len(docs))

    def cat(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    return Chunking(
        name=ch.name,
        tokenizer=tok.name,
        ids=ids,
        doc=doc_col,
        start=cat(starts),
        end=cat(ends),
        text=texts,
        n_tokens=cat(counts),
    )


def _batches(docs: list[tuple[str, str]]) -> Iterator[list[tuple[str, str]]]:
    batch: list[tuple[str, str]] = []
    size = 0
    for item in docs:
        batch.append(item)
        size += len(item[1])
        if size >= _BATCH_CHARS or len(batch) >= _BATCH_DOCS:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch
