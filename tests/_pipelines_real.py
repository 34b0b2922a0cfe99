"""Real LangChain and LlamaIndex pipelines over the fare-rules corpus, built once per session.

Both libraries' objects are the real ones (splitters, ``InMemoryVectorStore``,
``VectorStoreIndex``); the embedding is ragmeter's offline all-MiniLM-L6-v2, wrapped as a
LangChain ``Embeddings`` and a LlamaIndex ``BaseEmbedding`` around one shared encoder whose
vectors are cached per text (in memory, and on disk in ``$RAGMETER_TEST_CACHE`` or the
example's cache folder, which the experiment runner is also pointed at): each chunk text and
each question is encoded once, whoever asks, and ragmeter's own dense retriever reads the
very same vectors, so the two sides can only differ in how they rank and score.

The experiment files of the tests name the factories below as targets
(``_pipelines_real:make_langchain_retriever``): the tests folder is on the Python path.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.retrieval import Cache, MiniLMEncoder, encode_cached

FARE_RULES = Path(__file__).resolve().parents[1] / "examples" / "fare-rules"
#: the depth both sides retrieve to (and the experiments' headroom_k)
DEPTH = 20
#: the cache folder; set by the session fixture before anything is encoded
CACHE_ROOT: list[Path] = []


def corpus_records() -> list[dict[str, Any]]:
    with open(FARE_RULES / "corpus.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


class SharedMiniLM:
    """MiniLM vectors per text: memory first, then ragmeter's embedding cache, then the model."""

    symmetric = True

    def __init__(self, root: Path) -> None:
        self.model = MiniLMEncoder()
        self.cache = Cache(root)
        self.memo: dict[str, np.ndarray] = {}

    @property
    def model_id(self) -> str:
        return self.model.model_id

    @property
    def calls(self) -> int:
        return self.model.calls

    def encode(self, texts: Sequence[str], *, role: str = "passage") -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self.memo))
        if missing:
            vecs = encode_cached(self.model, missing, role=role, cache=self.cache)
            self.memo.update(zip(missing, vecs, strict=True))
        return np.stack([self.memo[t] for t in texts]) if texts else np.zeros((0, 384))


@functools.cache
def shared_encoder() -> SharedMiniLM:
    assert CACHE_ROOT, "the session fixture sets the cache folder first"
    return SharedMiniLM(CACHE_ROOT[0])


def langchain_embeddings() -> Any:
    from langchain_core.embeddings import Embeddings

    class MiniLMEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return shared_encoder().encode(texts).tolist()

        def embed_query(self, text: str) -> list[float]:
            return shared_encoder().encode([text], role="query")[0].tolist()

    return MiniLMEmbeddings()


def llamaindex_embedding() -> Any:
    from llama_index.core.embeddings import BaseEmbedding

    class MiniLMEmbedding(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return shared_encoder().encode([query], role="query")[0].tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return shared_encoder().encode([text])[0].tolist()

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return shared_encoder().encode(texts).tolist()

    return MiniLMEmbedding(model_name="all-MiniLM-L6-v2-int8", embed_batch_size=64)


@functools.cache
def langchain_chunks() -> tuple[Any, ...]:
    """The corpus split by LangChain's RecursiveCharacterTextSplitter with start indexes."""
    from langchain_core.documents import Document
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(
        chunk_size=1000, chunk_overlap=0, add_start_index=True
    )
    docs = [
        Document(page_content=d["text"], metadata={"source": d["id"]}) for d in corpus_records()
    ]
    return tuple(splitter.split_documents(docs))


@functools.cache
def make_langchain_retriever() -> Any:
    """An InMemoryVectorStore over the splitter's chunks, as a retriever of the top DEPTH."""
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(langchain_embeddings())
    store.add_documents(list(langchain_chunks()))
    return store.as_retriever(search_kwargs={"k": DEPTH})


@functools.cache
def llamaindex_nodes() -> tuple[Any, ...]:
    """The corpus split by LlamaIndex's SentenceSplitter (nodes keep ref_doc_id and offsets)."""
    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceSplitter

    docs = [Document(text=d["text"], id_=d["id"]) for d in corpus_records()]
    return tuple(SentenceSplitter(chunk_size=256, chunk_overlap=0).get_nodes_from_documents(docs))


@functools.cache
def make_llamaindex_retriever() -> Any:
    """A VectorStoreIndex over the SentenceSplitter's nodes, as a retriever of the top DEPTH."""
    from llama_index.core import VectorStoreIndex

    index = VectorStoreIndex(list(llamaindex_nodes()), embed_model=llamaindex_embedding())
    return index.as_retriever(similarity_top_k=DEPTH)
