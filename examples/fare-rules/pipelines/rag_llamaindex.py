"""A LlamaIndex pipeline: Documents whose id_ is the corpus document id, SentenceSplitter
nodes (they keep ref_doc_id, start_char_idx and end_char_idx), a VectorStoreIndex,
as_retriever(). The embedding is ragmeter's offline all-MiniLM-L6-v2 (any BaseEmbedding
works)."""

import json
from pathlib import Path

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.node_parser import SentenceSplitter

from ragmeter.retrieval import Cache, MiniLMEncoder, encode_cached

HERE = Path(__file__).resolve().parent
CACHE = Cache(HERE.parent / ".ragmeter-cache")  # vectors are kept: a re-run encodes nothing
MODEL = MiniLMEncoder()


class MiniLM(BaseEmbedding):
    def _get_query_embedding(self, query: str) -> list[float]:
        return encode_cached(MODEL, [query], role="query", cache=CACHE)[0].tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return encode_cached(MODEL, texts, role="passage", cache=CACHE).tolist()


def make_retriever():
    records = [json.loads(x) for x in (HERE.parent / "corpus.jsonl").open(encoding="utf-8")]
    docs = [Document(text=r["text"], id_=r["id"]) for r in records]
    nodes = SentenceSplitter(chunk_size=256, chunk_overlap=0).get_nodes_from_documents(docs)
    index = VectorStoreIndex(nodes, embed_model=MiniLM(model_name="all-MiniLM-L6-v2"))
    return index.as_retriever(similarity_top_k=20)
