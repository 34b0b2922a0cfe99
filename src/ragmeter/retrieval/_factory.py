"""Build retrievers and rerankers from normalised specs (see :mod:`ragmeter.retrieval._specs`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from ._cache import Cache
from ._progress import SILENT, ProgressSink
from ._protocol import Encoder, Retriever


class EncoderPool:
    """One encoder object per model spec, shared by every retriever and reranker of a run.

    Sharing keeps each model loaded once and lets :attr:`calls` add up every call made to it.
    """

    def __init__(
        self,
        base_dir: Path | None = None,
        *,
        wrap: Callable[[Encoder, Callable[[], Encoder]], Encoder] | None = None,
    ) -> None:
        self.base_dir = base_dir or Path.cwd()
        #: an engine's ``wrap_encoder(encoder, factory)`` (:mod:`ragmeter.engines`): the
        #: encoder retrievers get in place of the model, and how to build the model elsewhere
        self.wrap = wrap
        self._encoders: dict[str, Encoder] = {}

    def get(self, spec: dict[str, Any]) -> Encoder:
        model = spec["model"]
        opts: dict[str, Any] = {
            k: spec[k] for k in ("max_length", "batch_size", "threads") if k in spec
        }
        key = repr(
            (
                model,
                spec.get("path"),
                sorted(opts.items()),
                spec.get("query_prefix", ""),
                spec.get("passage_prefix", ""),
            )
        )
        if key not in self._encoders:
            encoder = self._make(model, spec, opts)
            if self.wrap is not None:
                encoder = self.wrap(encoder, partial(fresh_encoder, self.base_dir, dict(spec)))
            self._encoders[key] = encoder
        return self._encoders[key]

    def _make(self, model: str, spec: dict[str, Any], opts: dict[str, Any]) -> Encoder:
        if model == "minilm":
            from .dense import MiniLMEncoder

            return MiniLMEncoder(**opts)
        if model == "e5":
            from .e5 import E5Encoder

            return E5Encoder(**{k: v for k, v in opts.items() if k in ("batch_size", "threads")})
        from .st import SentenceTransformerEncoder

        return SentenceTransformerEncoder(
            self.base_dir / spec["path"],
            batch_size=opts.get("batch_size", 32),
            query_prefix=spec.get("query_prefix", ""),
            passage_prefix=spec.get("passage_prefix", ""),
        )

    @property
    def calls(self) -> dict[str, int]:
        """model id -> number of encode calls that reached the model."""
        out: dict[str, int] = {}
        for enc in self._encoders.values():
            out[enc.model_id] = out.get(enc.model_id, 0) + enc.calls
        return out

    @property
    def texts_encoded(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for enc in self._encoders.values():
            out[enc.model_id] = out.get(enc.model_id, 0) + enc.texts_encoded
        return out


def fresh_encoder(base_dir: Path | None, spec: dict[str, Any]) -> Encoder:
    """A new encoder for a model spec (picklable with ``partial``: an engine's workers build
    their own copy of the model from it)."""
    return EncoderPool(base_dir).get(spec)


def build_retriever(
    spec: dict[str, Any],
    *,
    cache: Cache | None = None,
    pool: EncoderPool | None = None,
    progress: ProgressSink = SILENT,
) -> Retriever:
    """A fresh retriever for a normalised spec."""
    pool = pool or EncoderPool()
    kind = spec["kind"]
    if kind == "bm25":
        from .bm25 import BM25Retriever

        return BM25Retriever(
            k1=spec["k1"],
            b=spec["b"],
            method=spec["method"],
            stemmer=spec["stemmer"],
            stopwords=spec["stopwords"],
            cache=cache,
            progress=progress,
        )
    if kind == "dense":
        from ._specs import describe
        from .dense import DenseRetriever

        return DenseRetriever(pool.get(spec), cache=cache, name=describe(spec), progress=progress)
    if kind == "hybrid":
        from .hybrid import HybridRetriever

        first, second = (
            build_retriever(s, cache=cache, pool=pool, progress=progress) for s in spec["of"]
        )
        return HybridRetriever(
            first,
            second,
            fusion=spec["fusion"],
            k=spec.get("k", 60),
            weight=spec.get("weight", 0.5),
            pool=spec["pool"],
        )
    raise ValueError(f"unknown retriever kind {kind!r}")  # pragma: no cover - specs are validated


def build_reranked(
    first: Retriever,
    spec: dict[str, Any] | None,
    *,
    cache: Cache | None = None,
    pool: EncoderPool | None = None,
    progress: ProgressSink = SILENT,
) -> Retriever:
    """``first`` alone (no spec) or ``first`` followed by the reranker of ``spec``."""
    if spec is None:
        return first
    from ._specs import model_label
    from .rerank import BiEncoderReranker, CrossEncoderReranker, RerankRetriever

    pool = pool or EncoderPool()
    reranker: Any
    if spec["kind"] == "bi-encoder":
        reranker = BiEncoderReranker(
            pool.get(spec), cache=cache, name=model_label(spec), progress=progress
        )
    else:
        reranker = CrossEncoderReranker(
            str(pool.base_dir / spec["path"]), batch_size=spec["batch_size"], progress=progress
        )
    return RerankRetriever(first, reranker, top=spec["top"])
