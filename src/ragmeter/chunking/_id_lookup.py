"""The row of each chunk id among a chunking's ids, with a hash table built once per chunking.

``pyarrow.compute.index_in`` builds a hash table of its value set on every call: looking up a
run's 1M items among 1M chunk ids spent about 0.15 s building the table of the chunk ids and as
much again probing it, for every run scored. :class:`IdLookup` builds its table once (a
:class:`~ragmeter.chunking.Chunking` keeps it; about 0.05 s for 1M ids) and answers each lookup
with a few numpy passes (about 0.08 s for 1M items).

How: each id is read as NUL-padded little-endian 64-bit words (``W`` bytes, the longest chunk id
rounded up to 8) and hashed from them. The table is open addressing with linear probing, load at
most 1/2: each slot holds 1 + the row of the chunk id placed there (0: empty); the chunk ids'
padded words and byte lengths stay beside it in row order. A lookup walks from its hash's home
slot until a slot whose chunk id has the same byte length and the same padded words (a hit:
the very same bytes, so a hash collision can never map an id to a wrong row) or an empty slot
(-1, as ``index_in`` gives null). Ids longer than ``W`` bytes cannot be chunk ids: they are
blanked before padding and their length keeps them from matching.

Inputs the table cannot take fall back to ``index_in``, with identical results: types other
than (large) strings, nulls, and chunk ids so uneven in length that padding them all to the
longest would take more than four times their bytes plus 32 a string (``_fits``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..io._duplicates import mix, padded_words, word_hashes
from ..io._trec_arrays import string_offsets

_S32 = np.uint64(32)
_LOW32 = np.uint64(0xFFFFFFFF)


def hash_words(words: np.ndarray) -> np.ndarray:
    """One uint64 per row of ``words`` (n x m uint64, ``padded_words``): the ids' string hash
    (``word_hashes``), then MurmurHash3's finaliser (``mix``) so the top bits (the home slot)
    depend on every byte. Equal rows hash equal; different rows rarely collide (collisions are
    resolved by exact comparison)."""
    return mix(word_hashes(words))


def _fits(n: int, width: int, total: int) -> bool:
    """Whether padding ``n`` strings of ``total`` bytes to ``width`` each stays within four
    times their size plus 32 bytes a string (one very long id would otherwise pad every id to
    its length: the table is for ids of similar lengths, as chunk ids are)."""
    return n * width <= 4 * total + 32 * n


class IdLookup:
    """Row of each id among ``ids`` (unique strings: a chunking's chunk ids); see the module
    doc. Build once, call :meth:`rows` per run."""

    def __init__(self, ids: pa.Array) -> None:
        self._ids = ids
        self._table: np.ndarray | None = None
        n = len(ids)
        if not n or ids.null_count or n >= 2**31:
            return
        off = string_offsets(ids)
        length = np.diff(off)
        self._width = max(8, -(-int(length.max()) // 8) * 8)
        if not _fits(n, self._width, int(off[-1] - off[0])):
            return
        words = padded_words(ids, self._width)
        if words is not None:
            self._words = words
            self._length = length.astype(np.uint32)
            self._build(hash_words(words))

    @property
    def hashed(self) -> bool:
        """Whether lookups use the table (False: ``index_in`` on every call)."""
        return self._table is not None

    def _build(self, h: np.ndarray) -> None:
        """The table: per slot, 1 + the row of the chunk id placed there (0: empty); the ids'
        padded words and byte lengths stay in row order beside it.

        Linear probing without wrapping, placed in one pass: ids sorted by home slot (the top
        ``bits`` of the hash), the i-th goes to ``max(home_i, slot of the (i-1)-th + 1)`` (a
        running maximum), so every slot from an id's home to its own is occupied, as a probe's
        walk needs. The table runs past ``2**bits`` as far as the last id placed, plus one empty
        slot that ends every walk.
        """
        n = len(h)
        bits = max(1, (2 * n - 1).bit_length())  # 2**bits >= 2n: load at most 1/2
        key = (h >> np.uint64(64 - bits)) << _S32
        key |= np.arange(n, dtype=np.uint64)
        key.sort()  # by home slot, then row: one sort of packed keys, no argsort
        i = np.arange(n, dtype=np.int64)
        pos = (key >> _S32).astype(np.int64)
        pos -= i
        np.maximum.accumulate(pos, out=pos)
        pos += i
        table = np.zeros(max(1 << bits, int(pos[-1]) + 2), dtype=np.uint32)
        table[pos] = (key & _LOW32).astype(np.uint32) + 1
        self._table = table
        self._bits = bits

    def rows(self, ids: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """The row of each of ``ids`` among the chunk ids (int64), -1 where it is none."""
        if isinstance(ids, pa.ChunkedArray):
            ids = ids.combine_chunks()
        if (
            self._table is None
            or ids.null_count
            or not (pa.types.is_string(ids.type) or pa.types.is_large_string(ids.type))
        ):
            return self._index_in(ids)
        if len(ids) == 0:
            return np.zeros(0, dtype=np.int64)
        length = np.diff(string_offsets(ids))
        probe = ids
        if int(length.max()) > self._width:  # longer than every chunk id: blank, never a hit
            probe = pc.if_else(pa.array(length > self._width), pa.scalar("", ids.type), ids)
        words = padded_words(probe, self._width)
        if words is None:
            return self._index_in(ids)
        return self._probe(words, np.minimum(length, self._width + 1).astype(np.uint32))

    def _probe(self, words: np.ndarray, length: np.ndarray) -> np.ndarray:
        """Walk each id's chain from its home slot until its own entry (a hit: byte length and
        every padded word equal) or an empty slot (-1)."""
        table = self._table
        assert table is not None
        out: np.ndarray | None = None
        slot = (hash_words(words) >> np.uint64(64 - self._bits)).astype(np.int64)
        pend = np.arange(len(words), dtype=np.int64)
        while pend.size:
            row = np.take(table, slot).astype(np.int64)
            # -1: an empty slot. Its gathers read the last chunk id; equal to it, the id would
            # have met its own entry before this empty slot, so it cannot hit here.
            row -= 1
            hit = np.take(self._length, row) == length
            theirs = np.take(self._words, row, axis=0)
            for j in range(words.shape[1]):
                hit &= theirs[:, j] == words[:, j]
            if out is None:  # the first step covers every id
                out = np.where(hit, row, -1)
            else:
                out[pend[hit]] = row[hit]
            go_on = np.flatnonzero((row >= 0) & ~hit)
            pend, slot = pend[go_on], slot[go_on] + 1  # never past the end: it is empty
            words, length = np.take(words, go_on, axis=0), length[go_on]
        assert out is not None
        return out

    def _index_in(self, ids: pa.Array) -> np.ndarray:
        """The lookup as ``pyarrow.compute.index_in`` gives it (nulls and absent ids: -1)."""
        values = self._ids if ids.type == self._ids.type else self._ids.cast(ids.type)
        found = pc.index_in(ids, value_set=values).fill_null(-1)
        return found.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


class DocCodes:
    """The chunks' document ids as integer codes, built once per chunking (a Chunking keeps
    it): ``codes[i]`` numbers chunk i's document in order of first appearance among the
    chunks, and :meth:`of` numbers other document ids (a golden set's spans') the same way, an
    id no chunk has after all of the chunks' ones. Mapping 100k spans onto 1M chunks then
    hashes the 100k span documents, not the 1M chunk documents again for every call."""

    def __init__(self, docs: Sequence[str] | pa.Array) -> None:
        arr = docs if isinstance(docs, pa.Array) else pa.array(docs, type=pa.string())
        encoded = pc.dictionary_encode(arr)
        self.dictionary = encoded.dictionary
        self.codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)

    def of(self, docs: Sequence[str] | pa.Array) -> np.ndarray:
        """The code of each of ``docs`` (int64): a chunk document's own, else
        ``len(dictionary) + j`` for the j-th distinct id no chunk has (first appearance)."""
        arr = docs if isinstance(docs, pa.Array) else pa.array(docs, type=pa.string())
        found = pc.index_in(arr, value_set=self.dictionary).fill_null(-1)
        codes = found.to_numpy(zero_copy_only=False).astype(np.int64)
        absent = np.flatnonzero(codes < 0)
        if len(absent):
            others = pc.dictionary_encode(arr.take(pa.array(absent, type=pa.int64())))
            extra = others.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            codes[absent] = len(self.dictionary) + extra
        return codes
