"""Second-stage reranking: rescore the top ``top`` items of any retriever with a stronger model.

Two rerankers, both offline:

* :class:`BiEncoderReranker`: a (usually stronger, slower) embedding model, e.g. e5-small
  rescoring BM25's or MiniLM's top 50; score = cosine(query, item). Item vectors are cached
  per text like a dense retriever's, so only the candidates are ever embedded.
* :class:`CrossEncoderReranker`: a sentence-transformers ``CrossEncoder`` from a local folder
  (extra [torch]); score = the model's output for the (query, item) pair.

The output ranking is the reranked top ``top`` items followed by the first stage's items
``top+1 .. depth`` in their original order. Tail scores are placeholders that keep that order
below every reranked item: ``min(reranked) - 1 - j`` for the j-th tail item (j = 0, 1, ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from ..io import Run
from ._cache import Cache, encode_cached
from ._progress import SILENT, ProgressSink
from ._protocol import Encoder, Retriever, check_depth, check_fit_input, query_ids, ranked_lists
from .dense import normalize


class Reranker(Protocol):
    """Scores (query, item) pairs; ``fit`` gives it the item texts."""

    name: str

    @property
    def config(self) -> dict[str, Any]: ...

    def fit(self, ids: Sequence[str], texts: Sequence[str]) -> None: ...

    def score(self, queries: Sequence[str], items: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """For query i, the scores of the item ids ``items[i]`` (higher = more relevant)."""
        ...


class BiEncoderReranker:
    """Cosine between query and item vectors of an :class:`Encoder` (e.g. e5-small)."""

    def __init__(
        self,
        encoder: Encoder,
        *,
        cache: Cache | None = None,
        name: str | None = None,
        progress: ProgressSink = SILENT,
    ) -> None:
        self.encoder = encoder
        self.cache = cache
        self.progress = progress
        self.name = name or getattr(encoder, "config", {}).get("model", "bi-encoder")
        self._texts: dict[str, str] = {}

    @property
    def config(self) -> dict[str, Any]:
        return {
            "kind": "bi-encoder",
            **getattr(self.encoder, "config", {"model_id": self.encoder.model_id}),
        }

    def fit(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        check_fit_input(ids, texts)
        self._texts = dict(zip(ids, texts, strict=True))

    def score(self, queries: Sequence[str], items: Sequence[Sequence[str]]) -> list[np.ndarray]:
        unique = list(dict.fromkeys(i for row in items for i in row))
        with self.progress.step(
            f"embed {len(unique)} candidates ({self.name})", len(unique)
        ) as adv:
            vecs = normalize(
                encode_cached(
                    self.encoder,
                    [self._texts[i] for i in unique],
                    role="passage",
                    cache=self.cache,
                    on_progress=adv,
                )
            )
        with self.progress.step(f"embed {len(queries)} queries ({self.name})", len(queries)) as adv:
            qvecs = normalize(
                encode_cached(
                    self.encoder, queries, role="query", cache=self.cache, on_progress=adv
                )
            )
        pos = {i: j for j, i in enumerate(unique)}
        return [
            vecs[[pos[i] for i in row]] @ qvecs[n] if row else np.zeros(0)
            for n, row in enumerate(items)
        ]


class CrossEncoderReranker:
    """A local sentence-transformers CrossEncoder folder scoring each (query, item text) pair."""

    def __init__(
        self,
        path: str,
        *,
        batch_size: int = 32,
        name: str | None = None,
        progress: ProgressSink = SILENT,
    ) -> None:
        from .st import CrossEncoderScorer

        self.scorer = CrossEncoderScorer(path, batch_size=batch_size)
        self.progress = progress
        self.name = name or "cross-encoder"
        self._texts: dict[str, str] = {}

    @property
    def config(self) -> dict[str, Any]:
        return {"kind": "cross-encoder", **self.scorer.config}

    def fit(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        check_fit_input(ids, texts)
        self._texts = dict(zip(ids, texts, strict=True))

    def score(self, queries: Sequence[str], items: Sequence[Sequence[str]]) -> list[np.ndarray]:
        pairs = [(q, self._texts[i]) for q, row in zip(queries, items, strict=True) for i in row]
        with self.progress.step(f"score {len(pairs)} pairs ({self.name})", None):
            flat = self.scorer.score(pairs)
        bounds = np.cumsum([0] + [len(row) for row in items])
        return [flat[a:b] for a, b in pairwise(bounds)]


class RerankRetriever:
    """``first`` retrieves, ``reranker`` rescores its top ``top`` items per query."""

    def __init__(
        self, first: Retriever, reranker: Reranker, *, top: int = 50, name: str | None = None
    ) -> None:
        check_depth(top)
        self.first = first
        self.reranker = reranker
        self.top = top
        self.name = name or f"{first.name}>{reranker.name}@{top}"

    @property
    def config(self) -> dict[str, Any]:
        return {
            "kind": "rerank",
            "top": self.top,
            "first": self.first.config,
            "reranker": self.reranker.config,
        }

    def fit(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        check_fit_input(ids, texts)
        self.first.fit(ids, texts)
        self.reranker.fit(ids, texts)

    def search(
        self, queries: Sequence[str], depth: int, *, qids: Sequence[str] | None = None
    ) -> Run:
        check_depth(depth)
        qs = query_ids(queries, qids)
        lists = ranked_lists(self.first.search(queries, max(depth, self.top), qids=qs))
        heads = [[item for item, _ in lists.get(q, [])[: self.top]] for q in qs]
        scores = self.reranker.score(queries, heads)
        out_q: list[str] = []
        out_d: list[str] = []
        out_s: list[float] = []
        for q, head, sc in zip(qs, heads, scores, strict=True):
            order = sorted(range(len(head)), key=lambda j: (-sc[j], j))
            ranked = [(head[j], float(sc[j])) for j in order]
            floor = min((s for _, s in ranked), default=0.0)
            tail = lists.get(q, [])[self.top :]
            ranked += [(item, floor - 1.0 - j) for j, (item, _) in enumerate(tail)]
            for item, s in ranked[:depth]:
                out_q.append(q)
                out_d.append(item)
                out_s.append(s)
        return Run(
            qid=pa.array(out_q, type=pa.string()),
            doc=pa.array(out_d, type=pa.string()),
            score=np.asarray(out_s, dtype=np.float64),
            name=self.name,
        )
