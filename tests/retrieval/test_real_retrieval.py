"""Real data: ragmeter's retrievers reproduce published SciFact figures; SQuAD span-level pins.

Needs $RAGMETER_DATA (skips otherwise). The dense SciFact check (marked ``slow``) encodes
5,183 abstracts with MiniLM int8: about 19 abstracts/s on 2 cores (they fill the 256-piece
window), so about 4.5 minutes cold. Embeddings go to $RAGMETER_TEST_CACHE when set (CI can keep
that folder between jobs; the check then takes seconds), else to a temporary folder used once.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

from ragmeter.retrieval import BM25Retriever, Cache, DenseRetriever, MiniLMEncoder

pytestmark = pytest.mark.data

#: BEIR paper (Thakur et al., 2021), SciFact test nDCG@10: BM25 (Elasticsearch).
BEIR_BM25 = 0.665
#: sentence-transformers' published all-MiniLM-L6-v2 SciFact nDCG@10.
PUBLISHED_MINILM = 0.645
TOLERANCE = 0.02


@pytest.fixture(scope="module")
def scifact(data_root: Path):
    from ragmeter.data import load_beir

    corpus, golden = load_beir(data_root / "beir-scifact", "test")
    ids = corpus.ids
    texts = [f"{d.title} {d.text}" if d.title else d.text for d in corpus]  # BEIR: title + text
    return ids, texts, [q.id for q in golden], [q.question for q in golden], golden.doc_qrels()


@pytest.fixture(scope="module")
def test_cache(tmp_path_factory) -> Cache:
    return Cache(os.environ.get("RAGMETER_TEST_CACHE") or tmp_path_factory.mktemp("cache"))


def ndcg10(qrels, run) -> float:
    from ragmeter.metrics import evaluate

    return evaluate(qrels, run, "nDCG@10").mean("nDCG@10")


def test_scifact_bm25_matches_beir(scifact) -> None:
    ids, texts, qids, queries, qrels = scifact
    r = BM25Retriever()
    r.fit(ids, texts)
    run = r.search(queries, 100, qids=qids)
    assert len(set(run.qid.to_pylist())) == 300
    value = ndcg10(qrels, run)
    assert abs(value - BEIR_BM25) <= TOLERANCE, value


@pytest.mark.slow
def test_scifact_minilm_int8_matches_published_minilm(scifact, test_cache) -> None:
    ids, texts, qids, queries, qrels = scifact
    r = DenseRetriever(MiniLMEncoder(), cache=test_cache)
    r.fit(ids, texts)
    run = r.search(queries, 100, qids=qids)
    value = ndcg10(qrels, run)
    assert abs(value - PUBLISHED_MINILM) <= TOLERANCE, value


def test_squad_bm25_span_recall_pin(data_root: Path, tmp_path) -> None:
    """BM25 over 300-token windows of SQuAD dev articles: pins the README's BM25 row."""
    from ragmeter.chunking import chunk_corpus
    from ragmeter.data import load_squad
    from ragmeter.labels import evaluate_spans

    corpus, golden = load_squad(data_root / "squad-v1.1-dev" / "dev-v1.1.json")
    chunking = chunk_corpus(corpus, "tokens:300:0")
    r = BM25Retriever()
    r.fit(chunking.ids, chunking.text)
    run = r.search([q.question for q in golden], 10, qids=[q.id for q in golden])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ev = evaluate_spans(golden, chunking, run, ["R@5", "RR@10"])
    assert ev.n_queries == 10570
    assert ev.mean("R@5") == pytest.approx(SQUAD_BM25_R5, abs=0.002)
    assert ev.mean("RR@10") == pytest.approx(SQUAD_BM25_RR10, abs=0.002)


#: benchmarks/squad_retrieval.py's BM25 row (README table); a change here changes the README.
SQUAD_BM25_R5 = 0.9163
SQUAD_BM25_RR10 = 0.8122
