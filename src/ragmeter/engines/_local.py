"""The engine protocol and the local engine: what every batch job of ragmeter runs through.

An engine runs the three batch jobs that can outgrow one machine: embedding texts, generating
answers and judging them. Scoring and statistics are not engine jobs: they stay in the calling
process (they are fast, and they need every result at once). Lower layers never import an engine:
the runner hands them *wrapped* objects instead (an encoder whose ``encode_batches`` the
embedding cache consumes, a judge whose ``judge`` fans out), or calls ``engine.generate``.

:class:`LocalEngine` is what ragmeter did before engines existed, unchanged: the wrapped
objects are the objects themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

    from ..answers.judges import JudgeReply, JudgeRequest
    from ..generation import Generation, GenerationRequest
    from ..retrieval import Cache, Encoder

#: ``progress(done, total)``, as generators report it.
Progress = Callable[[int, int], None]


@runtime_checkable
class Engine(Protocol):
    """Where embedding, generation and judging run."""

    name: str

    def wrap_encoder(self, encoder: Encoder, factory: Callable[[], Encoder]) -> Encoder:
        """The encoder to use in place of ``encoder``; ``factory`` builds a fresh copy of it
        anywhere (a picklable zero-argument callable)."""
        ...

    def wrap_judge(self, judge: Any) -> Any:
        """The judge to use in place of ``judge`` (same ``info``, same replies)."""
        ...

    def embed(
        self, encoder: Any, texts: Sequence[str], *, role: str = "passage", cache: Cache | None
    ) -> np.ndarray: ...

    def generate(
        self, generator: Any, requests: Sequence[GenerationRequest], progress: Progress | None
    ) -> list[Generation]: ...

    def judge(
        self, judge: Any, requests: Sequence[JudgeRequest], progress: Progress | None = None
    ) -> list[JudgeReply]: ...

    def describe(self) -> dict[str, Any]:
        """What ran where, for results and reports (plain JSON values)."""
        ...

    def close(self) -> None: ...


def encoder_of(spec: Any) -> tuple[Encoder, Callable[[], Encoder]]:
    """(an encoder, a picklable factory of fresh copies) for what ``embed`` accepts: a model
    spec such as ``{"model": "minilm"}``, a zero-argument factory, or an encoder object (its
    own copy is the factory's result: it must pickle)."""
    import functools

    from ..retrieval import EncoderPool, fresh_encoder

    if isinstance(spec, dict):
        return EncoderPool().get(spec), functools.partial(fresh_encoder, None, dict(spec))
    if hasattr(spec, "encode"):
        return spec, functools.partial(_same, spec)
    if callable(spec):
        return spec(), spec
    from .._errors import UsageError

    raise UsageError(
        f"embed() takes a model spec (a dict), an encoder or a factory, got {type(spec).__name__}"
    )


def _same(obj: Any) -> Any:
    return obj


class LocalEngine:
    """Everything in this process, as ragmeter always ran."""

    name = "local"

    def wrap_encoder(self, encoder: Encoder, factory: Callable[[], Encoder]) -> Encoder:
        return encoder

    def wrap_judge(self, judge: Any) -> Any:
        return judge

    def embed(
        self,
        encoder: Any,
        texts: Sequence[str],
        *,
        role: str = "passage",
        cache: Cache | None = None,
    ) -> np.ndarray:
        """Vectors of ``texts`` through the content cache (only unseen texts are encoded)."""
        from ..retrieval import encode_cached

        enc, factory = encoder_of(encoder)
        if not hasattr(enc, "encode_batches"):  # not already an engine's encoder
            enc = self.wrap_encoder(enc, factory)
        return encode_cached(enc, texts, role=role, cache=cache)

    def generate(
        self,
        generator: Any,
        requests: Sequence[GenerationRequest],
        progress: Progress | None = None,
    ) -> list[Generation]:
        return list(generator.generate(requests, progress))

    def judge(
        self, judge: Any, requests: Sequence[JudgeRequest], progress: Progress | None = None
    ) -> list[JudgeReply]:
        replies = list(self.wrap_judge(judge).judge(requests))
        if progress is not None:
            progress(len(replies), len(requests))
        return replies

    def describe(self) -> dict[str, Any]:
        return {"engine": "local"}

    def close(self) -> None:
        return None


def local() -> LocalEngine:
    """The default engine: everything in this process."""
    return LocalEngine()
