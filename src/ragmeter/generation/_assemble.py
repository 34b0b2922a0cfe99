"""Context assembly: which retrieved passages the model reads, in which order, under which ids.

Steps, in this order (each one a setting of :class:`ContextSpec`):

1. **Rank order.** Passages are taken by ``rank`` (1 = best), ties kept in the order given.
2. **k** (``k``): the first k passages.
3. **Token budget** (``budget``): the rule of every ``@budget=B`` metric
   (:func:`ragmeter.labels._budget.assemble`): take passages in rank order while the running
   total of their ``n_tokens`` stays within B, and stop at the first that does not fit (a
   generator's context is the top of the list, not a knapsack). Only passage tokens count; the
   headers add a few tokens per passage, the same in every variant.
   k and the budget cut the list exactly as the retrieval metrics at k and at the budget do, so
   the model reads the passages those metrics scored, never one from deeper in the list.
4. **Duplicate removal** (``dedupe``, on by default), within what was cut. A passage is dropped
   when a better-ranked kept passage has the same text (compared after collapsing whitespace),
   or lies in the same document and its span ``[start, end)`` lies inside that passage's span.
   A dropped passage's text is therefore always inside a kept one: no evidence is lost. A
   passage that *contains* an earlier one is kept (it holds more).
5. **Order** (``order``): ``rank`` (best first), ``reverse`` (best last, next to the
   question), or ``sandwich``: the best passages at both ends and the weakest in the middle,
   where models read least ("lost in the middle"): ranks 1, 3, 5, ... from the start and
   ..., 6, 4, 2 towards the end, so rank 1 opens the context and rank 2 closes it.
6. **Headers** (``headers``, on by default): each passage is shown as
   ``[n] doc-id (chars s-e)`` then its text, passages separated by a blank line; ``n`` is the
   1-based position in the prompt, the number the model cites (``[2]``), and
   :mod:`._citations` maps it back to the passage id.

The result records the exact text the model reads and its sha256, which keys the answer cache.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from typing import Any

from .._errors import InputError, UsageError
from ..labels import assemble as _effective_k

#: The context orders, in the order docs list them.
ORDERS: tuple[str, ...] = ("rank", "reverse", "sandwich")
#: Where a context's passages come from: the retrieved ranked list (:func:`assemble`), or an
#: ablation built from the labelled evidence (:func:`ragmeter.generation.source_context`).
SOURCES: tuple[str, ...] = ("retrieved", "oracle", "none", "oracle+distractors")
#: Keys of a ``context`` table in an experiment file (:meth:`ContextSpec.from_mapping`).
SPEC_FIELDS: tuple[str, ...] = ("k", "budget", "order", "dedupe", "headers", "source")


@dataclass(frozen=True)
class Passage:
    """One retrieved passage: ``id`` (a chunk id such as ``doc#120-480``), where it lives in its
    document (character offsets ``[start, end)``), its text and token count, and its place in the
    ranked list (``rank`` 1 = best) with the retriever's score when known."""

    id: str
    doc: str
    start: int
    end: int
    text: str
    n_tokens: int
    rank: int
    score: float | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end:
            raise UsageError(
                f"passage {self.id}: needs 0 <= start <= end, got {self.start}-{self.end}"
            )
        if self.n_tokens < 0 or self.rank < 1:
            raise UsageError(
                f"passage {self.id}: needs n_tokens >= 0 and rank >= 1, "
                f"got {self.n_tokens} and {self.rank}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "doc": self.doc,
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "n_tokens": self.n_tokens,
            "rank": self.rank,
            "score": self.score,
        }


@dataclass(frozen=True)
class ContextPassage:
    """A passage as placed in the prompt: ``label`` is its 1-based number there."""

    label: int
    passage: Passage

    @property
    def id(self) -> str:
        return self.passage.id

    @property
    def rank(self) -> int:
        return self.passage.rank

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, **self.passage.to_dict()}


def _positive(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"context {name} must be a whole number >= 1 (or unset), got {value!r}")
    return value


@dataclass(frozen=True)
class ContextSpec:
    """How to assemble a context (see the module docstring). ``k`` and ``budget`` may both be
    set (both limits apply) or both unset (every passage given is used). ``source`` says where
    the passages come from (:data:`SOURCES`); :func:`assemble` reads the retrieved ones, the
    ablations are built by :func:`ragmeter.generation.source_context`."""

    k: int | None = None
    budget: int | None = None
    order: str = "rank"
    dedupe: bool = True
    headers: bool = True
    source: str = "retrieved"

    def __post_init__(self) -> None:
        _positive("k", self.k)
        _positive("budget", self.budget)
        if self.order not in ORDERS:
            raise UsageError(
                f"context order must be one of {', '.join(ORDERS)}, got {self.order!r}"
            )
        for name in ("dedupe", "headers"):
            if not isinstance(getattr(self, name), bool):
                raise UsageError(f"context {name} must be true or false")
        if self.source not in SOURCES:
            raise UsageError(
                f"context source must be one of {', '.join(SOURCES)}, got {self.source!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "budget": self.budget,
            "order": self.order,
            "dedupe": self.dedupe,
            "headers": self.headers,
            "source": self.source,
        }

    @classmethod
    def from_mapping(
        cls,
        data: Mapping[str, Any],
        *,
        path: str | PathLike[str] | None = None,
        table: str = "context",
    ) -> ContextSpec:
        """A spec from an experiment file's table; an :class:`InputError` names the field."""
        unknown = sorted(set(data) - set(SPEC_FIELDS))
        if unknown:
            raise InputError(
                f"unknown setting(s) {', '.join(unknown)}; expected {', '.join(SPEC_FIELDS)}",
                path=path,
                field=f"{table}.{unknown[0]}",
            )
        kwargs = {name: data[name] for name in SPEC_FIELDS if name in data}
        for name, value in kwargs.items():
            try:
                cls(**{name: value})
            except UsageError as exc:
                raise InputError(str(exc), path=path, field=f"{table}.{name}") from None
        return cls(**kwargs)


@dataclass(frozen=True)
class AssembledContext:
    """The context of one question as the model reads it.

    ``passages`` are in prompt order, each with its label number and rank; ``text`` is what the
    model reads; ``hash`` its sha256 (hex); ``dropped`` the ids removed as duplicates;
    ``n_tokens`` the passage tokens used (headers not counted).
    """

    question_id: str
    passages: tuple[ContextPassage, ...]
    text: str
    hash: str
    spec: ContextSpec
    dropped: tuple[str, ...] = ()

    @property
    def n_tokens(self) -> int:
        return sum(p.passage.n_tokens for p in self.passages)

    @property
    def ids(self) -> tuple[str, ...]:
        """Passage ids in prompt order (the answers file's ``context``)."""
        return tuple(p.id for p in self.passages)

    def by_label(self, label: int) -> ContextPassage | None:
        """The passage numbered ``label`` in the prompt, or None."""
        return self.passages[label - 1] if 1 <= label <= len(self.passages) else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "question_id": self.question_id,
            "spec": self.spec.to_dict(),
            "passages": [p.to_dict() for p in self.passages],
            "dropped": list(self.dropped),
            "text": self.text,
            "hash": self.hash,
        }


def _norm(text: str) -> str:
    return " ".join(text.split())


def dedupe(passages: Sequence[Passage]) -> tuple[list[Passage], list[Passage]]:
    """``(kept, dropped)`` of passages in the order given (best first): a passage is dropped
    when an earlier kept one has the same text or, in the same document, a span containing its
    span."""
    kept: list[Passage] = []
    dropped: list[Passage] = []
    texts: set[str] = set()
    spans: dict[str, list[tuple[int, int]]] = {}
    for p in passages:
        inside = any(s <= p.start and p.end <= e for s, e in spans.get(p.doc, ()))
        if inside or _norm(p.text) in texts:
            dropped.append(p)
            continue
        kept.append(p)
        texts.add(_norm(p.text))
        spans.setdefault(p.doc, []).append((p.start, p.end))
    return kept, dropped


def arrange(items: Sequence[Any], order: str) -> list[Any]:
    """``items`` (best first) in the prompt ``order``: rank, reverse or sandwich."""
    if order == "rank":
        return list(items)
    if order == "reverse":
        return list(reversed(items))
    if order == "sandwich":
        return list(items[0::2]) + list(reversed(items[1::2]))
    raise UsageError(f"context order must be one of {', '.join(ORDERS)}, got {order!r}")


def header(label: int, p: Passage) -> str:
    """The line above a passage: ``[n] doc-id (chars s-e)``."""
    return f"[{label}] {p.doc} (chars {p.start}-{p.end})"


def render(passages: Sequence[Passage], headers: bool = True) -> str:
    """The context text of passages already in prompt order."""
    blocks = [f"{header(i, p)}\n{p.text}" if headers else p.text for i, p in enumerate(passages, 1)]
    return "\n\n".join(blocks)


def assemble(question_id: str, passages: Sequence[Passage], spec: ContextSpec) -> AssembledContext:
    """The context of one question: cut to k and the budget, duplicates removed, arranged in
    the spec's order, rendered with headers (see the module docstring).

    The cut comes first, exactly as the retrieval metrics at k and at the budget cut the ranked
    list, so the model reads the passages those metrics scored (less any duplicates), never one
    from deeper in the list: "evidence in the prompt" means the same thing on both sides."""
    ranked = sorted(passages, key=lambda p: p.rank)  # stable: ties keep the order given
    dropped: list[Passage] = []
    if spec.k is not None:
        ranked = ranked[: spec.k]
    if spec.budget is not None:
        ranked = ranked[: _effective_k([p.n_tokens for p in ranked], spec.budget)]
    if spec.dedupe:
        ranked, dropped = dedupe(ranked)
    placed = arrange(ranked, spec.order)
    text = render(placed, spec.headers)
    return AssembledContext(
        question_id,
        tuple(ContextPassage(i, p) for i, p in enumerate(placed, 1)),
        text,
        hashlib.sha256(text.encode("utf-8")).hexdigest(),
        spec,
        tuple(p.id for p in dropped),
    )
