"""Chunking: tokenizers, chunkers named by their configuration, chunk tables and adapters."""

from ._chunkers import CHUNKERS, Chunker, make_chunker, split_sentences
from ._chunking import Chunk, Chunking, chunk_corpus, chunk_id, documents_of, index_texts
from ._format import suffix_of
from ._storage import load_chunking
from ._tokenizer import DEFAULT_TOKENIZER, FALLBACK_TOKENIZER, Tokenizer, get_tokenizer
from .adapters import from_langchain, from_ranges

__all__ = [
    "CHUNKERS",
    "DEFAULT_TOKENIZER",
    "FALLBACK_TOKENIZER",
    "Chunk",
    "Chunker",
    "Chunking",
    "Tokenizer",
    "chunk_corpus",
    "chunk_id",
    "documents_of",
    "from_langchain",
    "from_ranges",
    "get_tokenizer",
    "index_texts",
    "load_chunking",
    "make_chunker",
    "split_sentences",
    "suffix_of",
]
