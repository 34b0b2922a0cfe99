"""BM25 through bm25s (eager sparse scoring), with optional stemming and stopword removal.

Score of item d for query q (``method="lucene"``, the default, as Lucene/Elasticsearch)::

    score(q, d) = sum_{t in q} idf(t) * tf(t, d) * (k1 + 1)
                  / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

Texts are lower-cased and split on ``\\b\\w\\w+\\b`` (bm25s' default, as scikit-learn), English
stopwords removed and words stemmed with the Snowball English stemmer (PyStemmer) unless
turned off. Items that share no term with the query (score 0) are not returned, so a run
may hold fewer than ``depth`` items for a query.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._errors import UsageError
from .._extras import require
from .._numbers import number_in
from ..io import Run, atomic_path
from ._cache import Cache, digest, texts_digest
from ._progress import SILENT, ProgressSink
from ._protocol import check_depth, check_fit_input, query_ids, run_from_topk

METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")


class BM25Retriever:
    """Lexical retriever over bm25s; the index is cached by (item texts, parameters)."""

    def __init__(
        self,
        *,
        k1: float = 1.2,
        b: float = 0.75,
        method: str = "lucene",
        stemmer: str | None = "english",
        stopwords: str | None = "en",
        threads: int = 0,
        cache: Cache | None = None,
        name: str = "bm25",
        progress: ProgressSink = SILENT,
    ) -> None:
        if method not in METHODS:
            raise UsageError(f"bm25 method must be one of {', '.join(METHODS)}, got '{method}'")
        # NaN passes every comparison: the family check refuses it (and infinity) by name
        self.k1 = number_in("bm25 k1", k1, 0.0)
        self.b = number_in("bm25 b", b, 0.0, 1.0)
        self.method = method
        self.stemmer = stemmer
        self.stopwords = stopwords
        self.threads = threads
        self.cache = cache
        self.name = name
        self.progress = progress
        self._index: Any = None
        self._ids: np.ndarray | None = None
        self._stem: Any = None
        self.loaded_from_cache = False

    @property
    def config(self) -> dict[str, Any]:
        try:
            version = importlib.metadata.version("bm25s")
        except importlib.metadata.PackageNotFoundError:
            version = "missing"
        return {
            "kind": "bm25",
            "k1": self.k1,
            "b": self.b,
            "method": self.method,
            "stemmer": self.stemmer,
            "stopwords": self.stopwords,
            "bm25s": version,
        }

    def _stemmer(self) -> Any:
        if self.stemmer is None:
            return None
        if self._stem is None:
            stemmer_mod = require("Stemmer", "BM25 stemming")
            try:
                self._stem = stemmer_mod.Stemmer(self.stemmer)
            except KeyError:
                langs = ", ".join(sorted(stemmer_mod.algorithms()))
                raise UsageError(
                    f"unknown stemmer '{self.stemmer}'; choose one of: {langs}"
                ) from None
        return self._stem

    def tokenize(self, texts: Sequence[str]) -> Any:
        """bm25s tokens of ``texts`` with this retriever's stemmer and stopwords."""
        bm25s = require("bm25s", "the BM25 retriever")
        return bm25s.tokenize(
            list(texts),
            stopwords=self.stopwords or [],
            stemmer=self._stemmer(),
            show_progress=False,
            return_ids=False,
        )

    def fit(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        check_fit_input(ids, texts)
        bm25s = require("bm25s", "the BM25 retriever")
        self._ids = np.asarray(ids, dtype=object)
        cache = self.cache or Cache(None)
        key = digest("bm25", self.config, texts_digest(ids, texts))
        loaded = cache.load("bm25", key, "", lambda p: _load_index(bm25s, p, len(texts)))
        if loaded is not None:  # a damaged entry is a miss (with a warning), rebuilt below
            self._index = loaded
            self.loaded_from_cache = True
            return
        with self.progress.step(f"index {len(texts)} items ({self.name})", None):
            index = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
            index.index(self.tokenize(texts), show_progress=False)
        self._index = index
        self.loaded_from_cache = False
        path = cache.entry("bm25", key)
        if path is not None:
            with atomic_path(path) as tmp:
                index.save(str(tmp), show_progress=False)

    def search(
        self, queries: Sequence[str], depth: int, *, qids: Sequence[str] | None = None
    ) -> Run:
        check_depth(depth)
        if self._index is None or self._ids is None:
            raise UsageError(f"{self.name}: call fit() before search()")
        qs = query_ids(queries, qids)
        k = min(depth, len(self._ids))
        if not queries:
            return run_from_topk(
                [], self._ids, np.zeros((0, k), np.int64), np.zeros((0, k)), self.name
            )
        with self.progress.step(f"search {len(queries)} queries ({self.name})", None):
            res = self._index.retrieve(
                self.tokenize(queries), k=k, show_progress=False, n_threads=self.threads
            )
        idx = np.asarray(res.documents, dtype=np.int64)
        scores = np.asarray(res.scores, dtype=np.float64)
        return run_from_topk(qs, self._ids, idx, scores, self.name, valid=scores > 0)


def _load_index(bm25s: Any, path: Any, n_items: int) -> Any:
    """A cached index, checked against the items it must cover: a folder that lost a file or
    holds arrays of the wrong shape raises (and the cache rebuilds it) instead of searching."""
    index = bm25s.BM25.load(str(path), show_progress=False)
    scores = index.scores
    data, indices, indptr = (np.asarray(scores[k]) for k in ("data", "indices", "indptr"))
    if int(scores["num_docs"]) != n_items:
        raise ValueError(f"an index of {scores['num_docs']} items, not {n_items}")
    if (
        indptr.ndim != 1
        or not len(indptr)
        or int(indptr[0]) != 0
        or int(indptr[-1]) != len(data)
        or bool((np.diff(indptr) < 0).any())
        or len(data) != len(indices)
        or (len(indices) and (int(indices.min()) < 0 or int(indices.max()) >= n_items))
    ):
        raise ValueError("index arrays of inconsistent shapes")
    return index
