"""The names and defaults of the retriever and reranker spec grammar (see :mod:`._specs`).

Apart from :mod:`._specs` so that the schema models (:mod:`._spec_schema`, which
:mod:`._specs` imports when it validates) can read them without an import cycle.
"""

from __future__ import annotations

from typing import Any

RETRIEVER_SHORTHANDS: dict[str, dict[str, Any]] = {
    "bm25": {"kind": "bm25"},
    "dense": {"kind": "dense", "model": "minilm"},
    "minilm": {"kind": "dense", "model": "minilm"},
    "e5": {"kind": "dense", "model": "e5"},
    "hybrid": {"kind": "hybrid"},
}
RERANKER_SHORTHANDS: dict[str, dict[str, Any]] = {
    "e5": {"kind": "bi-encoder", "model": "e5"},
    "minilm": {"kind": "bi-encoder", "model": "minilm"},
}
DEFAULTS: dict[str, dict[str, Any]] = {
    "bm25": {"k1": 1.2, "b": 0.75, "method": "lucene", "stemmer": "english", "stopwords": "en"},
    "dense": {"model": "minilm"},
    "hybrid": {"fusion": "rrf", "k": 60, "weight": 0.5, "pool": 100, "of": ["bm25", "dense"]},
    "bi-encoder": {"model": "e5", "top": 50},
    "cross-encoder": {"top": 50, "batch_size": 32},
    # the user's own pipelines (:mod:`ragmeter.retrieval.pipelines`): ``target`` is required
    "python": {"on_error": "record"},
    "langchain": {"doc_key": "source", "on_error": "record"},
    "llamaindex": {"on_error": "record"},
}
#: retriever kinds that run the user's own pipeline rather than one of ragmeter's retrievers
PIPELINE_KINDS = ("python", "langchain", "llamaindex")
MODELS = ("minilm", "e5", "st")
