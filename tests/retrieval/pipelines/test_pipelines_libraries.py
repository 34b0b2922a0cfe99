"""LangChain and LlamaIndex pipelines on real objects of those libraries, over the fare-rules
corpus: their span scores equal ragmeter's own retriever's, question by question, when both
return the same chunks; every contract break names the question and the document; nothing
reaches the network."""

from __future__ import annotations

import json
import os
import socket
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _pipelines_real import CACHE_ROOT, DEPTH, FARE_RULES, corpus_records
from _retrieval_fakes import HashingEncoder

from ragmeter import UsageError, ValidationError
from ragmeter.chunking import from_langchain, from_ranges
from ragmeter.data import load_corpus, load_golden
from ragmeter.experiments import run_experiment
from ragmeter.retrieval import LangChainPipeline, LlamaIndexPipeline, run_pipeline
from ragmeter.retrieval._protocol import ranked_lists
from ragmeter.retrieval.pipelines import check_llamaindex_offline

pytest.importorskip("langchain_core")  # justified: the test extra installs both libraries
pytest.importorskip("llama_index.core")  # justified: as above, a test-extra library


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection to another host fails at once with a clear message (none is expected:
    the libraries must run from what their wheels ship)."""
    real = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if host not in ("127.0.0.1", "::1", "localhost") and self.family != socket.AF_UNIX:
            raise OSError(f"test tried to reach the network: {address!r}")
        return real(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)


@pytest.fixture(scope="module")
def corpus() -> Any:
    return load_corpus(FARE_RULES / "corpus.jsonl")


@pytest.fixture(scope="module")
def golden(corpus) -> Any:
    return load_golden(FARE_RULES / "golden.jsonl", corpus)


def _lc_documents(texts: dict[str, str] | None = None, key: str = "source") -> list[Any]:
    from langchain_core.documents import Document

    return [
        Document(page_content=(texts or {}).get(d["id"], d["text"]), metadata={key: d["id"]})
        for d in corpus_records()
    ]


def _lc_retriever(chunks: list[Any], k: int = 4) -> Any:
    """A real InMemoryVectorStore with langchain_core's deterministic embedding (fast)."""
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents(chunks)
    return store.as_retriever(search_kwargs={"k": k})


def _split(docs: list[Any], **kw: Any) -> list[Any]:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    opts = {"chunk_size": 800, "chunk_overlap": 100, "add_start_index": True, **kw}
    return RecursiveCharacterTextSplitter(**opts).split_documents(docs)


# -- LangChain -------------------------------------------------------------------------------


def test_a_langchain_retriever_is_recognised_and_its_spans_point_into_the_corpus(
    corpus, golden
) -> None:
    chunks = _split(_lc_documents())
    piped = run_pipeline(_lc_retriever(chunks), golden, corpus)
    assert piped.label == "langchain(VectorStoreRetriever)"
    assert piped.shape == "spans" and piped.errors == () and piped.questions == len(golden)
    assert len(piped.run.qid) == 4 * len(golden)
    texts = {d.id: d.text for d in corpus}
    for c in piped.chunking:  # every returned span is the splitter's chunk, at its offsets
        assert texts[c.doc][c.start : c.end] == c.text
    known = {(c.metadata["source"], c.metadata["start_index"]) for c in chunks}
    assert {(c.doc, c.start) for c in piped.chunking} <= known


def test_a_langchain_chunk_from_another_corpus_version_is_named(corpus, golden) -> None:
    """The index was built from an older fee schedule: the text at those offsets differs."""
    text = next(d["text"] for d in corpus_records() if d["id"] == "fees-2026")
    old = text.replace("Standard fares: $75", "Standard fares: $60")
    assert old != text
    chunks = _split(_lc_documents({"fees-2026": old}))
    retriever = _lc_retriever(chunks, k=len(chunks))  # every chunk, so the stale one too
    with pytest.raises(ValidationError) as info:
        run_pipeline(retriever, golden, corpus)
    first = info.value.problems[0].message
    assert first.startswith(f"question '{next(iter(golden)).id}': item ")
    assert "for document 'fees-2026'" in first and "Standard fares: $60" not in first
    assert "the pipeline indexed other text than the corpus" in first
    assert len(info.value.problems) == 21  # 20 listed, then a count of the rest
    assert info.value.problems[-1].message.startswith("(")


def test_a_splitter_without_start_index_is_told_to_add_it(corpus, golden) -> None:
    chunks = _split(_lc_documents(), add_start_index=False)
    with pytest.raises(ValidationError, match=r"add_start_index=True"):
        run_pipeline(_lc_retriever(chunks), golden, corpus)


def test_the_document_id_key_is_configurable(corpus, golden) -> None:
    chunks = _split(_lc_documents(key="doc_id"))
    retriever = _lc_retriever(chunks)
    with pytest.raises(ValidationError, match=r"metadata\['source'\] is None.*doc_key"):
        run_pipeline(retriever, golden, corpus)
    piped = run_pipeline(LangChainPipeline(retriever, doc_key="doc_id"), golden, corpus)
    assert len(piped.run.qid) == 4 * len(golden)


def test_errors_of_a_langchain_retriever_are_recorded_per_question(corpus, golden) -> None:
    from langchain_core.retrievers import BaseRetriever

    chunks = _split(_lc_documents())

    class Flaky(BaseRetriever):
        """A real LangChain retriever whose backend fails on questions about infants."""

        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Any]:
            if "infant" in query:
                raise ConnectionError("vector store unreachable")
            return chunks[:3]

    piped = run_pipeline(Flaky(), golden, corpus)
    expected = [q.id for q in golden if "infant" in q.question]
    assert [e.qid for e in piped.errors] == expected and expected
    assert piped.errors[0].error == "ConnectionError: vector store unreachable"
    assert piped.notes[0].startswith(f"the pipeline raised an error on {len(expected)} of 90")
    assert set(piped.run.qid.to_pylist()).isdisjoint(expected)


# -- LlamaIndex ------------------------------------------------------------------------------


def _hash_embedding() -> Any:
    from llama_index.core.embeddings import BaseEmbedding

    enc = HashingEncoder(dim=64)

    class Hashing(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return enc.encode([query])[0].tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return enc.encode([text])[0].tolist()

    return Hashing(model_name="hashing-64")


def _li_nodes(texts: dict[str, str] | None = None) -> list[Any]:
    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceSplitter

    docs = [
        Document(text=(texts or {}).get(d["id"], d["text"]), id_=d["id"]) for d in corpus_records()
    ]
    return SentenceSplitter(chunk_size=256, chunk_overlap=32).get_nodes_from_documents(docs)


def _li_retriever(nodes: list[Any], k: int = 4) -> Any:
    from llama_index.core import VectorStoreIndex

    index = VectorStoreIndex(nodes, embed_model=_hash_embedding())
    return index.as_retriever(similarity_top_k=k)


def test_a_llamaindex_retriever_keeps_its_similarity_scores(corpus, golden) -> None:
    piped = run_pipeline(_li_retriever(_li_nodes()), golden, corpus)
    assert piped.label == "llamaindex(VectorIndexRetriever)"
    assert piped.errors == () and piped.notes == ()
    lists = ranked_lists(piped.run)
    assert all(len(v) == 4 for v in lists.values()) and len(lists) == len(golden)
    scores = [s for v in lists.values() for _, s in v]
    assert all(-1.0 <= s <= 1.0 for s in scores)  # cosine similarities, not -rank
    ev = piped.evaluate(golden, ["R@4"])
    assert ev.mean("R@4") > 0.3  # a bag-of-words embedding finds evidence on this corpus


def test_a_llamaindex_node_without_a_source_document_is_named(corpus, golden) -> None:
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.schema import TextNode

    text = corpus_records()[0]["text"]
    pieces = SentenceSplitter(chunk_size=128, chunk_overlap=0).split_text(text)
    nodes = [TextNode(text=p) for p in pieces]  # split from a string: no ref_doc_id
    with pytest.raises(ValidationError, match=r"node 1: ref_doc_id is None; build the index"):
        run_pipeline(_li_retriever(nodes), golden, corpus)


def test_a_llamaindex_node_from_another_corpus_version_is_named(corpus, golden) -> None:
    text = next(d["text"] for d in corpus_records() if d["id"] == "fees-2026")
    nodes = _li_nodes({"fees-2026": text.replace("$75", "$70")})
    with pytest.raises(ValidationError) as info:
        run_pipeline(LlamaIndexPipeline(_li_retriever(nodes, k=len(nodes))), golden, corpus)
    assert "document 'fees-2026'" in info.value.problems[0].message
    assert "is not the document's text there" in info.value.problems[0].message


def test_llamaindex_is_refused_before_it_would_download_nltk_data(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NLTK_DATA", raising=False)
    check_llamaindex_offline()  # the data llama-index-core ships is used: nothing to fetch
    monkeypatch.setenv("NLTK_DATA", str(tmp_path))
    with pytest.raises(UsageError, match=r"lacks corpora/stopwords, tokenizers/punkt_tab"):
        check_llamaindex_offline()
    for name in ("corpora/stopwords", "tokenizers/punkt_tab"):
        (tmp_path / name).mkdir(parents=True)
    check_llamaindex_offline()


def test_a_llamaindex_experiment_with_empty_nltk_data_stops_before_user_code(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "rag_li_g3.py").write_text("raise AssertionError('user code ran')\n")
    toml = _experiment(tmp_path, "llamaindex", "rag_li_g3.py:make")
    monkeypatch.setenv("NLTK_DATA", str(tmp_path / "empty"))
    with pytest.raises(UsageError, match="would try to download"):
        _quiet(toml, tmp_path / "cache")


# -- equal to ragmeter's own retriever when both return the same chunks -----------------------


@pytest.fixture(scope="module")
def minilm_cache(golden) -> Path:
    """One embedding cache for the pipelines' MiniLM and ragmeter's dense retriever; every
    golden question is encoded once, in one batch."""
    from _pipelines_real import shared_encoder

    # the example's own cache (git-ignored), which docs/pipelines.md's example pipelines also
    # use: the fare-rules chunks are encoded once per checkout, not once per session
    root = Path(os.environ.get("RAGMETER_TEST_CACHE") or FARE_RULES / ".ragmeter-cache")
    if not CACHE_ROOT:
        CACHE_ROOT.append(root)
    shared_encoder().encode([q.question for q in golden], role="query")
    return CACHE_ROOT[0]


def _experiment(folder: Path, kind: str, target: str, chunks: str | None = None) -> Path:
    variant = (
        f'[[variant]]\nname = "ragmeter dense"\nchunks = "{chunks}"\nretriever = "dense"\n'
        if chunks
        else ""
    )
    path = folder / f"{kind}.toml"
    path.write_text(
        f'golden = "{FARE_RULES / "golden.jsonl"}"\n'
        f'corpus = "{FARE_RULES / "corpus.jsonl"}"\n'
        "k = 4\nbudget = 600\n"
        f"headroom_k = {DEPTH}\n"
        'metrics = ["R", "Hit", "AllR", "RR"]\n'
        f'[baseline]\nname = "{kind}"\n'
        f'retriever = {{kind = "{kind}", target = "{target}"}}\n'
        f"depth = {DEPTH}\n" + variant
    )
    return path


def _quiet(path: Path, cache: Path) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_experiment(path, cache_dir=cache, write=False)


def _same_lists_and_scores(result: Any) -> None:
    pipeline, ours = result.variants
    theirs_lists, our_lists = ranked_lists(pipeline.run), ranked_lists(ours.run)
    assert theirs_lists.keys() == our_lists.keys() and len(our_lists) == 90
    for qid, pairs in our_lists.items():  # the same spans in the same order, every question
        assert [c for c, _ in theirs_lists[qid]] == [c for c, _ in pairs], qid
    a, b = pipeline.evaluation, ours.evaluation
    assert a.query_ids == b.query_ids and len(a.query_ids) == 80
    assert [str(m) for m in a.metrics] == [str(m) for m in b.metrics]
    assert np.array_equal(a.values, b.values)  # every metric, every question, exactly
    assert a.mean("R@4") > 0.5  # MiniLM finds most evidence: not two empty runs agreeing
    row = result.to_dict()["vs_baseline"][0]
    assert (row["wins"], row["losses"], row["delta"]) == (0, 0, 0.0)


def test_langchain_pipeline_scores_equal_ragmeters_dense_retriever_on_its_chunks(
    tmp_path, corpus, minilm_cache
) -> None:
    """RecursiveCharacterTextSplitter(add_start_index=True) + InMemoryVectorStore over MiniLM,
    against ragmeter's DenseRetriever (same MiniLM vectors) over the very chunks the splitter
    made (``from_langchain``)."""
    from _pipelines_real import langchain_chunks

    from_langchain(langchain_chunks(), corpus).save(tmp_path / "lc-chunks.jsonl")
    toml = _experiment(
        tmp_path, "langchain", "_pipelines_real:make_langchain_retriever", "lc-chunks.jsonl"
    )
    result = _quiet(toml, minilm_cache)
    _same_lists_and_scores(result)
    assert result.baseline.run.score.tolist()[0] == -1.0  # Documents carry no score: -rank


def test_llamaindex_pipeline_scores_equal_ragmeters_dense_retriever_on_its_nodes(
    tmp_path, corpus, minilm_cache
) -> None:
    """SentenceSplitter nodes + VectorStoreIndex over MiniLM, against ragmeter's DenseRetriever
    over the same nodes' spans (``from_ranges``)."""
    from _pipelines_real import llamaindex_nodes

    spans = [(n.ref_doc_id, n.start_char_idx, n.end_char_idx) for n in llamaindex_nodes()]
    from_ranges(corpus, spans).save(tmp_path / "li-chunks.jsonl")
    toml = _experiment(
        tmp_path, "llamaindex", "_pipelines_real:make_llamaindex_retriever", "li-chunks.jsonl"
    )
    result = _quiet(toml, minilm_cache)
    _same_lists_and_scores(result)
    first = result.baseline.run.score.tolist()[0]
    assert 0 < first < 1  # the index's cosine similarity is kept
    config = result.baseline.to_dict()
    assert config["pipeline_errors"] == [] and json.dumps(config)
