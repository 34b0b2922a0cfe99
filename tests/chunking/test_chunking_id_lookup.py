"""Chunking.rows_of (a hash table of the chunk ids built once) against pyarrow's index_in.

Differential: over seeded random id sets (ids of any length, non-ASCII, NUL bytes, empty, absent
ids, chunked and sliced arrays, large strings) the table must give exactly what
``pc.index_in(ids, value_set=chunk_ids).fill_null(-1)`` gives, which is what ``rows_of`` returned
before. Degenerate hash functions force every id into one chain, so the exact comparison of
lengths and padded words is what decides every hit.
"""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.chunking import Chunking, _id_lookup
from ragmeter.chunking._id_lookup import IdLookup

#: pieces ids are made of: NUL (inside and trailing), non-ASCII, an 8-byte word edge, '#'.
PIECES = ["\x00", "a", "b", "é", "東", "😀", "#", "-", "1", "doc", "abcdefgh", " "]


def reference(ids: pa.Array | pa.ChunkedArray, chunk_ids: list[str]) -> np.ndarray:
    """What rows_of returned before the table: Arrow's index_in, null -> -1."""
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    values = pa.array(chunk_ids, pa.string())
    if ids.type != pa.string():
        values = values.cast(ids.type)
    found = pc.index_in(ids, value_set=values).fill_null(-1)
    return found.to_numpy(zero_copy_only=False).astype(np.int64)


def chunking_of(ids: list[str]) -> Chunking:
    n = len(ids)
    return Chunking(
        name="t",
        tokenizer="none",
        ids=ids,
        doc=["d"] * n,
        start=np.arange(n),
        end=np.arange(n) + 1,
        text=[""] * n,
        n_tokens=np.ones(n, dtype=np.int64),
    )


def random_ids(rng: np.random.Generator, n: int, max_pieces: int) -> list[str]:
    out = {"".join(rng.choice(PIECES, rng.integers(0, max_pieces + 1)).tolist()) for _ in range(n)}
    return sorted(out)


def probes(rng: np.random.Generator, chunk_ids: list[str], n: int, max_pieces: int) -> list[str]:
    """Chunk ids (repeats allowed) mixed with other random ids, many of them absent."""
    others = random_ids(rng, n, max_pieces + 2)
    own = [chunk_ids[i] for i in rng.integers(0, len(chunk_ids), n)] if chunk_ids else []
    mixed = own + others + [c + "\x00" for c in own[:5]] + [c[:-1] for c in own[:5]]
    return [mixed[i] for i in rng.permutation(len(mixed))]


def shapes(rng: np.random.Generator, ids: list[str]) -> list[pa.Array | pa.ChunkedArray]:
    """The same ids as a plain, sliced, chunked and large-string array."""
    plain = pa.array(ids, pa.string())
    padded = pa.array(["x"] * 3 + ids + ["y"] * 2, pa.string())
    cut = int(rng.integers(0, len(ids) + 1))
    return [
        plain,
        padded.slice(3, len(ids)),
        pa.chunked_array([plain.slice(0, cut), plain.slice(cut)], pa.string()),
        pa.array(ids, pa.large_string()),
    ]


@pytest.mark.parametrize("seed", range(40))
def test_rows_of_equals_index_in_over_seeded_id_sets(seed: int) -> None:
    rng = np.random.default_rng(seed)
    max_pieces = int(rng.integers(1, 12))  # some sets all <= 8 bytes, some far longer
    chunk_ids = random_ids(rng, int(rng.integers(1, 400)), max_pieces)
    chunking = chunking_of(chunk_ids)
    asked = probes(rng, chunk_ids, int(rng.integers(0, 300)), max_pieces)
    assert chunking._id_lookup.hashed
    for ids in shapes(rng, asked):
        got = chunking.rows_of(ids)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, reference(ids, chunk_ids))


@settings(max_examples=200, deadline=None)
@given(
    chunk_ids=st.lists(st.text(max_size=20), unique=True, max_size=40),
    extra=st.lists(st.text(max_size=24), max_size=40),
    data=st.data(),
)
def test_rows_of_equals_index_in_on_any_text(
    chunk_ids: list[str], extra: list[str], data: st.DataObject
) -> None:
    asked = extra + data.draw(st.lists(st.sampled_from(chunk_ids), max_size=40) if chunk_ids
                              else st.just([]))  # fmt: skip
    ids = pa.array(asked, pa.string())
    np.testing.assert_array_equal(chunking_of(chunk_ids).rows_of(ids), reference(ids, chunk_ids))


@pytest.mark.parametrize(
    "degenerate",
    [
        lambda w: np.zeros(len(w), dtype=np.uint64),  # one chain holds every id
        lambda w: (w[:, 0] % np.uint64(3)) << np.uint64(62),  # three chains, equal hashes
    ],
    ids=["constant", "three-values"],
)
@pytest.mark.parametrize("seed", range(8))
def test_hash_collisions_never_map_to_a_wrong_row(
    monkeypatch: pytest.MonkeyPatch, degenerate, seed: int
) -> None:
    monkeypatch.setattr(_id_lookup, "hash_words", degenerate)
    rng = np.random.default_rng(100 + seed)
    chunk_ids = random_ids(rng, 120, 6)
    lookup = IdLookup(pa.array(chunk_ids, pa.string()))
    assert lookup.hashed
    asked = probes(rng, chunk_ids, 150, 6)
    for ids in shapes(rng, asked):
        np.testing.assert_array_equal(lookup.rows(ids), reference(ids, chunk_ids))


def test_ids_equal_but_for_trailing_nul_or_length_are_told_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # "a", "a\0" and "a\0\0" pad to the same word; only the byte length separates them
    monkeypatch.setattr(_id_lookup, "hash_words", lambda w: np.zeros(len(w), dtype=np.uint64))
    chunk_ids = ["a\x00", "", "a", "abcdefgh", "abcdefgh\x00"]
    lookup = IdLookup(pa.array(chunk_ids, pa.string()))
    asked = pa.array(["a", "a\x00", "a\x00\x00", "", "\x00", "abcdefgh\x00", "abcdefgh", "b"])
    assert lookup.rows(asked).tolist() == [2, 0, -1, 1, -1, 4, 3, -1]


def test_ids_longer_than_every_chunk_id_are_absent() -> None:
    chunking = chunking_of(["doc#0-5", "doc#5-9"])
    asked = pa.array(["doc#0-5" + "x" * 30, "doc#5-9", "doc#0-5\x00" * 5, "doc#0-5"])
    assert chunking.rows_of(asked).tolist() == [-1, 1, -1, 0]


def test_inputs_the_table_cannot_take_give_index_in_results() -> None:
    chunk_ids = ["c1", "c2", "c3"]
    chunking = chunking_of(chunk_ids)
    with_null = pa.array(["c2", None, "c9", "c1"], pa.string())
    assert chunking.rows_of(with_null).tolist() == [1, -1, -1, 0]
    binary = pa.array([b"c3", b"c1", b"zz"], pa.binary())
    assert chunking.rows_of(binary).tolist() == [2, 0, -1]
    assert chunking.rows_of(pa.array([], pa.string())).tolist() == []
    assert chunking_of([]).rows_of(pa.array(["c1"])).tolist() == [-1]


def test_one_very_long_chunk_id_falls_back_to_index_in() -> None:
    # padding 1,000 short ids to a 5,000-byte id would take 5 MB: index_in instead, same rows
    chunk_ids = [f"d{i}" for i in range(1000)] + ["L" * 5000]
    chunking = chunking_of(chunk_ids)
    assert not chunking._id_lookup.hashed
    asked = pa.array(["d7", "L" * 5000, "L", "d999", "d1000"])
    assert chunking.rows_of(asked).tolist() == [7, 1000, -1, 999, -1]


def test_rows_of_reuses_one_table_and_a_pickle_carries_none() -> None:
    chunking = chunking_of([f"doc#{i}-{i + 1}" for i in range(50)])
    first = chunking.rows_of(pa.array(["doc#3-4", "nope"]))
    table = chunking._id_lookup
    assert chunking.rows_of(pa.array(["doc#3-4"])).tolist() == [3]
    assert chunking._id_lookup is table  # built once
    copy = pickle.loads(pickle.dumps(chunking))
    assert not {"_id_lookup", "_id_array", "_position"} & set(copy.__dict__)
    assert copy.rows_of(pa.array(["doc#3-4", "nope"])).tolist() == first.tolist() == [3, -1]
    assert copy.ids == chunking.ids and copy.name == chunking.name
