"""The content-addressed cache: per-text embeddings, resume after a crash, atomic writes."""

from __future__ import annotations

import numpy as np
import pytest
from _retrieval_fakes import HashingEncoder

from ragmeter import RagmeterWarning
from ragmeter.io import atomic_path
from ragmeter.retrieval import Cache, digest, encode_cached, texts_digest
from ragmeter.retrieval._cache import MAX_SHARDS

TEXTS = [f"passage number {i} about fares and fees {i % 7}" for i in range(50)]


def test_embeddings_are_encoded_once_per_text(tmp_path) -> None:
    enc = HashingEncoder()
    cache = Cache(tmp_path)
    texts = TEXTS + TEXTS[:10]  # repeated texts are encoded once
    a = encode_cached(enc, texts, role="passage", cache=cache)
    assert enc.texts_encoded == 50
    assert np.array_equal(a, enc.encode(texts))
    enc2 = HashingEncoder()
    b = encode_cached(enc2, list(reversed(texts)), role="passage", cache=Cache(tmp_path))
    assert enc2.calls == 0  # a new process on the same folder: nothing to encode
    assert np.array_equal(b, a[::-1])


def test_only_new_texts_are_encoded(tmp_path) -> None:
    cache = Cache(tmp_path)
    encode_cached(HashingEncoder(), TEXTS[:30], role="passage", cache=cache)
    enc = HashingEncoder()
    encode_cached(enc, TEXTS, role="passage", cache=Cache(tmp_path))
    assert enc.texts_encoded == 20


def test_an_interrupted_run_resumes_where_it_stopped(tmp_path) -> None:
    crashing = HashingEncoder(fail_after=25)
    with pytest.raises(KeyboardInterrupt):
        encode_cached(crashing, TEXTS, role="passage", cache=Cache(tmp_path), flush_every=10)
    assert crashing.texts_encoded == 20  # two slices of 10 stored before the crash
    enc = HashingEncoder()
    out = encode_cached(enc, TEXTS, role="passage", cache=Cache(tmp_path), flush_every=10)
    assert enc.texts_encoded == 30
    assert np.array_equal(out, HashingEncoder().encode(TEXTS))
    assert not list(tmp_path.rglob(".tmp-*"))  # no half-written file survives


def test_finished_slices_are_kept_when_encoding_is_interrupted(tmp_path) -> None:
    crashing = HashingEncoder(fail_after=25)
    with pytest.raises(KeyboardInterrupt):
        encode_cached(
            crashing, TEXTS, role="passage", cache=Cache(tmp_path), slice_size=10, flush_every=1000
        )
    enc = HashingEncoder()
    encode_cached(enc, TEXTS, role="passage", cache=Cache(tmp_path))
    assert enc.texts_encoded == 30  # the two slices done before Ctrl-C were stored


def test_models_and_roles_do_not_share_vectors(tmp_path) -> None:
    cache = Cache(tmp_path)
    encode_cached(HashingEncoder(model_id="m1"), TEXTS, role="passage", cache=cache)
    other = HashingEncoder(model_id="m2")
    encode_cached(other, TEXTS, role="passage", cache=cache)
    assert other.texts_encoded == 50
    asym = HashingEncoder(model_id="m3")
    asym.symmetric = False
    encode_cached(asym, TEXTS[:5], role="passage", cache=cache)
    encode_cached(asym, TEXTS[:5], role="query", cache=cache)
    assert asym.texts_encoded == 10
    sym = HashingEncoder(model_id="m1")  # symmetric: a query reuses the passage vector
    encode_cached(sym, TEXTS[:5], role="query", cache=cache)
    assert sym.calls == 0


def test_a_damaged_shard_is_ignored_and_its_texts_encoded_again(tmp_path) -> None:
    encode_cached(HashingEncoder(), TEXTS, role="passage", cache=Cache(tmp_path), flush_every=25)
    shards = sorted(tmp_path.rglob("shard-*.npz"))
    assert len(shards) == 2
    shards[0].write_bytes(b"not an npz file")
    enc = HashingEncoder()
    with pytest.warns(RagmeterWarning, match=rf"{shards[0].name}"):
        out = encode_cached(enc, TEXTS, role="passage", cache=Cache(tmp_path))
    assert enc.texts_encoded == 25
    assert np.array_equal(out, HashingEncoder().encode(TEXTS))


def test_many_shards_are_compacted_into_one(tmp_path) -> None:
    for i in range(MAX_SHARDS + 2):
        encode_cached(HashingEncoder(), [f"text {i}"], role="passage", cache=Cache(tmp_path))
    enc = HashingEncoder()
    texts = [f"text {i}" for i in range(MAX_SHARDS + 2)]
    out = encode_cached(enc, texts, role="passage", cache=Cache(tmp_path))
    assert enc.calls == 0
    # the load before the last write found MAX_SHARDS + 1 shards and merged them into one
    assert len(list(tmp_path.rglob("shard-*.npz"))) == 2
    assert np.array_equal(out, HashingEncoder().encode(texts))


def test_a_disabled_cache_writes_nothing(tmp_path) -> None:
    enc = HashingEncoder()
    encode_cached(enc, TEXTS, role="passage", cache=Cache(None))
    encode_cached(enc, TEXTS, role="passage", cache=None)
    assert enc.texts_encoded == 100
    assert not any(tmp_path.iterdir())


def test_atomic_path_leaves_old_content_when_writing_fails(tmp_path) -> None:
    target = tmp_path / "entry.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("crash while writing")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["entry.json"]
    with atomic_path(target) as tmp:
        tmp.write_text("new")
    assert target.read_text() == "new"


def test_keys_depend_on_content_only() -> None:
    assert digest("bm25", {"k1": 1.2, "b": 0.75}) == digest("bm25", {"b": 0.75, "k1": 1.2})
    assert digest("bm25", {"k1": 1.2}) != digest("bm25", {"k1": 1.5})
    assert texts_digest(["a", "b"], ["x", "y"]) != texts_digest(["a", "b"], ["y", "x"])
    assert texts_digest(["ab"], ["c"]) != texts_digest(["a"], ["bc"])


def test_json_entries_round_trip_and_count_hits(tmp_path) -> None:
    cache = Cache(tmp_path)
    assert cache.read_json("runs", "k1") is None
    cache.write_json("runs", "k1", {"a": 1})
    assert cache.read_json("runs", "k1") == {"a": 1}
    assert cache.hits == {"runs": 1} and cache.misses == {"runs": 1}
