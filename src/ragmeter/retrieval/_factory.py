"""Build retrievers and rerankers from normalised specs (see :mod:`ragmeter.retrieval._specs`):
each kind's factory is its entry in :mod:`._kinds`; this module adds the shared encoders."""

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
    """A fresh retriever for a normalised spec of one of ragmeter's own kinds (its entry in
    :data:`._kinds.FIRST_STAGE` builds it)."""
    from ._kinds import FIRST_STAGE, Build

    return FIRST_STAGE[spec["kind"]].build(spec, Build(cache, pool or EncoderPool(), progress))


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
    from ._kinds import RERANKERS, Build
    from .rerank import RerankRetriever

    build = Build(cache, pool or EncoderPool(), progress)
    return RerankRetriever(first, RERANKERS[spec["kind"]].build(spec, build), top=spec["top"])
