"""sentence-transformers model folders (extra [torch]): bi-encoders and the cross-encoder reranker.

The tests that load a model build a tiny random BERT (2 layers of width 16) in a temporary
folder, so nothing is downloaded. They need torch and sentence-transformers, which are the
optional [torch] extra (about 1.5 GB installed): where the extra is absent they are skipped,
because installing torch into every test environment to exercise one optional path costs
more than the path is worth. ``test_missing_extra_names_it`` always runs.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from test_retrieval import IDS, TEXTS

from ragmeter import InputError, MissingExtraError
from ragmeter.retrieval import (
    BM25Retriever,
    Cache,
    CrossEncoderReranker,
    DenseRetriever,
    RerankRetriever,
    SentenceTransformerEncoder,
)
from ragmeter.retrieval._protocol import ranked_lists

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    *sorted(
        {
            w
            for t in [*TEXTS, "fee for infants", "refund payment"]
            for w in "".join(c.lower() if c.isalnum() else " " for c in t).split()
        }
    ),
]


def test_missing_extra_names_it(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails
    enc = SentenceTransformerEncoder(tmp_path)
    with pytest.raises(MissingExtraError, match=r"pip install 'ragmeter\[torch\]'"):
        enc.encode(["x"])
    with pytest.raises(InputError, match="model folder not found"):
        SentenceTransformerEncoder(tmp_path / "missing")


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    # justified: sentence-transformers is the optional [torch] extra, not installed by CI
    pytest.importorskip("sentence_transformers", reason="the [torch] extra is not installed")
    import torch
    from sentence_transformers import SentenceTransformer

    try:  # sentence-transformers >= 6 moved the modules
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:  # pragma: no cover - older releases
        from sentence_transformers.models import Pooling, Transformer
    from transformers import BertConfig, BertForSequenceClassification, BertModel, BertTokenizerFast

    root = tmp_path_factory.mktemp("models")
    vocab = root / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")
    tok = BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True)
    cfg = BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    bert = root / "bert"
    BertModel(cfg).save_pretrained(bert)
    tok.save_pretrained(bert)
    st = root / "st"
    word = Transformer(str(bert), max_seq_length=64)
    SentenceTransformer(modules=[word, Pooling(16, "mean")], device="cpu").save(str(st))
    ce = root / "ce"
    torch.manual_seed(1)
    BertForSequenceClassification(BertConfig(**{**cfg.to_dict(), "num_labels": 1})).save_pretrained(
        ce
    )
    tok.save_pretrained(ce)
    return st, ce


def test_sentence_transformers_folder_as_dense_retriever(tiny_models, tmp_path) -> None:
    from sentence_transformers import SentenceTransformer

    st, _ = tiny_models
    enc = SentenceTransformerEncoder(st)
    vecs = enc.encode(TEXTS)
    ref = SentenceTransformer(str(st), device="cpu").encode(TEXTS, normalize_embeddings=True)
    assert vecs.shape == (5, 16) and np.allclose(vecs, ref, atol=1e-5)
    assert enc.model_id == SentenceTransformerEncoder(st).model_id  # names the weights
    r = DenseRetriever(enc, cache=Cache(tmp_path))
    r.fit(IDS, TEXTS)
    run = r.search(["refund payment"], 3)
    assert len(run) == 3
    again = SentenceTransformerEncoder(st)
    DenseRetriever(again, cache=Cache(tmp_path)).fit(IDS, TEXTS)
    assert again.calls == 0


def test_cross_encoder_reranks_by_its_pair_scores(tiny_models) -> None:
    from sentence_transformers import CrossEncoder

    _, ce = tiny_models
    first = BM25Retriever(stemmer=None, stopwords=None)
    r = RerankRetriever(first, CrossEncoderReranker(str(ce)), top=3)
    r.fit(IDS, TEXTS)
    query = "fee for infants"
    head = [d for d, _ in ranked_lists(first.search([query], 3))["0"]]
    got = ranked_lists(r.search([query], 3))["0"]
    ref = CrossEncoder(str(ce), device="cpu").predict([(query, TEXTS[IDS.index(d)]) for d in head])
    expect = [head[i] for i in np.argsort(-np.asarray(ref).reshape(-1), kind="stable")]
    assert [d for d, _ in got] == expect
    assert r.config["reranker"]["kind"] == "cross-encoder"
