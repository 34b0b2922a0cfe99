"""A LangChain pipeline: RecursiveCharacterTextSplitter with add_start_index=True, an
InMemoryVectorStore, as_retriever(). The embedding is ragmeter's offline all-MiniLM-L6-v2 (any
LangChain Embeddings works: OpenAIEmbeddings, HuggingFaceEmbeddings, ...)."""

import json
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_text_splitters import RecursiveCharacterTextSplitter

from ragmeter.retrieval import Cache, MiniLMEncoder, encode_cached

HERE = Path(__file__).resolve().parent
CACHE = Cache(HERE.parent / ".ragmeter-cache")  # vectors are kept: a re-run encodes nothing


class MiniLM(Embeddings):
    def __init__(self) -> None:
        self.model = MiniLMEncoder()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return encode_cached(self.model, texts, role="passage", cache=CACHE).tolist()

    def embed_query(self, text: str) -> list[float]:
        return encode_cached(self.model, [text], role="query", cache=CACHE)[0].tolist()


def make_retriever():
    records = [json.loads(x) for x in (HERE.parent / "corpus.jsonl").open(encoding="utf-8")]
    docs = [Document(page_content=r["text"], metadata={"source": r["id"]}) for r in records]
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=1000, chunk_overlap=0, add_start_index=True
    )
    store = InMemoryVectorStore(MiniLM())
    store.add_documents(splitter.split_documents(docs))
    return store.as_retriever(search_kwargs={"k": 20})
