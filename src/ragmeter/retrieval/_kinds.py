"""What each retriever and reranker kind is: one registry entry per kind owns its name, its role,
its settings model, its defaults and shorthand names, the factory that builds it, its short
label, a description and the extras it needs.

The spec grammar (:mod:`._specs`: defaults, labels), the schema (:mod:`._spec_schema`: the
discriminated unions and the lists of kinds in its messages) and the factory (:mod:`._factory`)
all read these entries, so a kind is declared once, as :mod:`ragmeter.metrics._registry`
declares metrics. Adding a kind: its module, its settings model in :mod:`._spec_schema`, one
entry here, its test (docs/architecture.md, "Adding a retriever kind").

Light on purpose: no pydantic (the settings model is named, and looked up in
:mod:`._spec_schema` on first validation) and no model library (factories import their
retriever when they run).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    from ._cache import Cache
    from ._factory import EncoderPool
    from ._progress import ProgressSink
    from ._protocol import Retriever
    from .pipelines import Pipeline
    from .rerank import Reranker

#: a normalised spec: ``kind`` and every option with its default (:func:`._specs.spec_dict`)
Spec = dict[str, Any]
#: ``first-stage``: ragmeter's own retrievers (what a hybrid fuses); ``pipeline``: the user's own
#: pipeline asked in place (no chunking of ragmeter's, no reranker); ``reranker``: rescores the
#: top of a first stage
Role = Literal["first-stage", "pipeline", "reranker"]
#: the embedding models a dense retriever or a bi-encoder reranker names (``model = ...``)
MODELS = ("minilm", "e5", "st")

Built = TypeVar("Built", covariant=True)


@dataclass(frozen=True)
class Build:
    """What a factory gets beside the spec: the embedding cache, the run's shared encoders (and
    the folder relative paths are read from, ``pool.base_dir``) and where progress goes."""

    cache: Cache | None
    pool: EncoderPool
    progress: ProgressSink


@dataclass(frozen=True)
class Kind(Generic[Built]):
    """One kind of retriever or reranker."""

    name: str
    role: Role
    description: str
    #: the name of its pydantic settings model in :mod:`._spec_schema` (``extra="forbid"``,
    #: ``kind: Literal[name]``), which looks it up when it builds the unions (first validation)
    settings: str
    #: the options a normalised spec fills in when the table leaves them out
    defaults: Mapping[str, Any]
    #: ``build(spec, Build(...))``: the retriever, reranker or pipeline of a normalised spec
    build: Callable[[Spec, Build], Built]
    #: the short label of a normalised spec in tables: ``bm25``, ``dense(e5)``, ``e5@50``
    label: Callable[[Spec], str]
    #: the pip extras it needs (``pip install "ragmeter[bm25]"``); empty: the core suffices
    extras: tuple[str, ...] = ()
    #: names that stand for a table of this kind (``"e5"`` = ``{kind = "dense", model = "e5"}``)
    shorthands: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


# -- labels ----------------------------------------------------------------------------------
def describe(spec: Spec | None) -> str:
    """A short label: ``bm25``, ``dense(minilm)``, ``hybrid-rrf(bm25+dense(minilm))``, ``e5@50``."""
    return "none" if spec is None else KINDS[spec["kind"]].label(spec)


def model_label(spec: Spec) -> str:
    return f"st:{spec['path']}" if spec["model"] == "st" else str(spec["model"])


def _title(spec: Spec) -> list[str]:
    return [f"title={'on' if spec['title'] else 'off'}"] if "title" in spec else []


def _bm25_label(spec: Spec) -> str:
    d = BM25.defaults
    opts = [f"{k}={spec[k]}" for k in ("k1", "b", "method") if spec[k] != d[k]]
    opts += [f"{k}={spec[k] or 'off'}" for k in ("stemmer", "stopwords") if spec[k] != d[k]]
    opts += _title(spec)
    return "bm25" + (f"({','.join(opts)})" if opts else "")


def _dense_label(spec: Spec) -> str:
    return f"dense({','.join([model_label(spec), *_title(spec)])})"


def _hybrid_label(spec: Spec) -> str:
    a, b = (describe(s) for s in spec["of"])
    return f"hybrid-{spec['fusion']}({'+'.join((a, b))}{''.join(',' + t for t in _title(spec))})"


def _pipeline_label(spec: Spec) -> str:
    return f"{spec['kind']}({spec['target']})"


def _bi_encoder_label(spec: Spec) -> str:
    return f"{model_label(spec)}@{spec['top']}"


def _cross_encoder_label(spec: Spec) -> str:
    return f"cross-encoder({spec['path']})@{spec['top']}"


# -- factories -------------------------------------------------------------------------------
def _bm25(spec: Spec, b: Build) -> Retriever:
    from .bm25 import BM25Retriever

    return BM25Retriever(
        k1=spec["k1"],
        b=spec["b"],
        method=spec["method"],
        stemmer=spec["stemmer"],
        stopwords=spec["stopwords"],
        cache=b.cache,
        progress=b.progress,
    )


def _dense(spec: Spec, b: Build) -> Retriever:
    from .dense import DenseRetriever

    return DenseRetriever(
        b.pool.get(spec), cache=b.cache, name=_dense_label(spec), progress=b.progress
    )


def _hybrid(spec: Spec, b: Build) -> Retriever:
    from .hybrid import HybridRetriever

    first, second = (FIRST_STAGE[s["kind"]].build(s, b) for s in spec["of"])
    return HybridRetriever(
        first,
        second,
        fusion=spec["fusion"],
        k=spec.get("k", 60),
        weight=spec.get("weight", 0.5),
        pool=spec["pool"],
    )


def _pipeline(spec: Spec, b: Build) -> Pipeline:
    from .pipelines import load_pipeline

    return load_pipeline(spec, b.pool.base_dir)


def _bi_encoder(spec: Spec, b: Build) -> Reranker:
    from .rerank import BiEncoderReranker

    return BiEncoderReranker(
        b.pool.get(spec), cache=b.cache, name=model_label(spec), progress=b.progress
    )


def _cross_encoder(spec: Spec, b: Build) -> Reranker:
    from .rerank import CrossEncoderReranker

    return CrossEncoderReranker(
        str(b.pool.base_dir / spec["path"]),
        batch_size=spec["batch_size"],
        progress=b.progress,
    )


# -- the registry ----------------------------------------------------------------------------
_ON_ERROR = {"on_error": "record"}  # a question whose call raised is recorded, not fatal

BM25: Kind[Retriever] = Kind(
    "bm25",
    "first-stage",
    "BM25 (bm25s) over the chunk texts, with stemming and stopwords",
    "BM25Spec",
    {"k1": 1.2, "b": 0.75, "method": "lucene", "stemmer": "english", "stopwords": "en"},
    _bm25,
    _bm25_label,
    extras=("bm25",),
    shorthands={"bm25": {"kind": "bm25"}},
)
#: ragmeter's own retrievers, the ones a hybrid fuses
FIRST_STAGE: dict[str, Kind[Retriever]] = {
    k.name: k
    for k in (
        BM25,
        Kind(
            "dense",
            "first-stage",
            "cosine over embeddings: all-MiniLM-L6-v2 int8 (minilm), e5-small (e5) or a local "
            "sentence-transformers folder (st, path = ...)",
            "DenseSpec",
            {"model": "minilm"},
            _dense,
            _dense_label,
            extras=("dense", "e5", "torch"),
            shorthands={
                "dense": {"kind": "dense", "model": "minilm"},
                "minilm": {"kind": "dense", "model": "minilm"},
                "e5": {"kind": "dense", "model": "e5"},
            },
        ),
        Kind(
            "hybrid",
            "first-stage",
            "two first-stage retrievers fused by reciprocal rank (rrf) or weighted scores",
            "HybridSpec",
            {"fusion": "rrf", "k": 60, "weight": 0.5, "pool": 100, "of": ["bm25", "dense"]},
            _hybrid,
            _hybrid_label,
            extras=("bm25", "dense"),
            shorthands={"hybrid": {"kind": "hybrid"}},
        ),
    )
}
#: the user's own pipelines (:mod:`ragmeter.retrieval.pipelines`): ``target`` is required
PIPELINES: dict[str, Kind[Pipeline]] = {
    k.name: k
    for k in (
        Kind(
            "python",
            "pipeline",
            'your function, question -> hits (target = "mypkg.rag:retrieve")',
            "PythonSpec",
            _ON_ERROR,
            _pipeline,
            _pipeline_label,
        ),
        Kind(
            "langchain",
            "pipeline",
            "your LangChain retriever, or a function of no arguments that returns one",
            "LangChainSpec",
            {"doc_key": "source", **_ON_ERROR},
            _pipeline,
            _pipeline_label,
            extras=("langchain",),
        ),
        Kind(
            "llamaindex",
            "pipeline",
            "your LlamaIndex retriever, or a function of no arguments that returns one",
            "LlamaIndexSpec",
            _ON_ERROR,
            _pipeline,
            _pipeline_label,
            extras=("llamaindex",),
        ),
    )
}
RERANKERS: dict[str, Kind[Reranker]] = {
    k.name: k
    for k in (
        Kind(
            "bi-encoder",
            "reranker",
            "rescores the top items by cosine under a (usually stronger) embedding model",
            "BiEncoderSpec",
            {"model": "e5", "top": 50},
            _bi_encoder,
            _bi_encoder_label,
            extras=("e5", "dense", "torch"),
            shorthands={
                "e5": {"kind": "bi-encoder", "model": "e5"},
                "minilm": {"kind": "bi-encoder", "model": "minilm"},
            },
        ),
        Kind(
            "cross-encoder",
            "reranker",
            "rescores the top items with a local sentence-transformers CrossEncoder folder",
            "CrossEncoderSpec",
            {"top": 50, "batch_size": 32},
            _cross_encoder,
            _cross_encoder_label,
            extras=("torch",),
        ),
    )
}
#: every kind by name, in the order messages list them
KINDS: dict[str, Kind[object]] = {**FIRST_STAGE, **PIPELINES, **RERANKERS}


def shorthands(kinds: Mapping[str, Kind[object]]) -> dict[str, Mapping[str, Any]]:
    """Every shorthand name of ``kinds`` and the table it stands for."""
    return {name: table for k in kinds.values() for name, table in k.shorthands.items()}
