"""Array helpers shared by the two columnar TREC parsers (``_trec_columns`` and ``_trec_fast``):
string offsets, joining parsed blocks into one column without doubling peak memory (by
concatenation, or filled block by block at places fixed up front: ``StringColumn``), and
raising the problems found at some rows with their line numbers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ._source import Source
from ._trec_format import LineOf, Unclean
from ._trec_lines import Problems

_STRING_LIMIT = 2**31 - 1  # offsets of pa.string(); beyond it use pa.large_string()


def report(src: Source, line_of: LineOf | None, rows: np.ndarray, field: str, message: Any) -> None:
    """Raise the problems at ``rows`` with their lines, or Unclean when lines are unknown."""
    if line_of is None:
        raise Unclean(f"bad '{field}' values")
    problems = Problems(src)
    lines = line_of(rows[:20])
    for row, line in zip(rows[:20].tolist(), lines.tolist(), strict=True):
        problems.add(int(line), message(row), field)
    problems.count = len(rows)  # the rest are counted, not listed
    problems.raise_if_any()


def string_offsets(arr: pa.Array) -> np.ndarray:
    """The offsets of a (large) string or binary array, as numpy, slice-aware."""
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    width = np.int64 if large else np.int32
    raw = np.frombuffer(arr.buffers()[1], dtype=width)
    return raw[arr.offset : arr.offset + len(arr) + 1]


def concat_strings(chunks: list[pa.Array]) -> pa.Array:
    """One string array from blocks, consuming ``chunks``: each block is copied into the
    preallocated result and released at once, so peak memory is the result plus one block
    (``pa.concat_arrays`` would hold every block and the result together).

    Offsets are int32 (``pa.string``) unless the text exceeds 2 GiB (then ``pa.large_string``).
    """
    n = sum(len(c) for c in chunks)
    total = sum(int(string_offsets(c)[-1] - string_offsets(c)[0]) for c in chunks)
    large = total > _STRING_LIMIT
    offsets = np.empty(n + 1, dtype=np.int64 if large else np.int32)
    data = np.empty(total, dtype=np.uint8)
    offsets[0] = 0
    row = pos = 0
    chunks.reverse()  # pop from the end, in file order
    while chunks:
        chunk = chunks.pop()
        o = string_offsets(chunk)
        size = int(o[-1] - o[0])
        data[pos : pos + size] = np.frombuffer(chunk.buffers()[2], dtype=np.uint8)[o[0] : o[-1]]
        offsets[row + 1 : row + len(chunk) + 1] = o[1:] - o[0] + pos
        row += len(chunk)
        pos += size
        del chunk
        if len(chunks) % 16 == 0:
            pa.default_memory_pool().release_unused()  # hand copied blocks' pages back
    kind = pa.large_string() if large else pa.string()
    return pa.Array.from_buffers(kind, n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def concat_numbers(chunks: list[pa.Array], dtype: Any) -> np.ndarray:
    """One numpy array from blocks (arrow or numpy), consuming ``chunks`` (each released once
    copied)."""
    out = np.empty(sum(len(c) for c in chunks), dtype=dtype)
    pos = 0
    chunks.reverse()
    while chunks:
        chunk = chunks.pop()
        out[pos : pos + len(chunk)] = (
            chunk if isinstance(chunk, np.ndarray) else chunk.to_numpy(zero_copy_only=False)
        )
        pos += len(chunk)
        del chunk
        if len(chunks) % 16 == 0:
            pa.default_memory_pool().release_unused()  # hand copied blocks' pages back
    return out


class StringColumn:
    """One string array assembled from blocks at places fixed up front, so that worker threads
    can each copy their own blocks in (``fill``) while the checks run, without a second pass
    that concatenates them: the offsets and the text of every block are known once the parse is
    done. Offsets are int32 (``pa.string``) unless the text exceeds 2 GiB.
    """

    def __init__(self, chunks: list[pa.Array]) -> None:
        sizes = [int(string_offsets(c)[-1] - string_offsets(c)[0]) for c in chunks]
        self._rows = np.cumsum([0] + [len(c) for c in chunks]).tolist()
        self._bytes = np.cumsum([0, *sizes]).tolist()
        self.large = self._bytes[-1] > _STRING_LIMIT
        self._offsets = np.empty(self._rows[-1] + 1, dtype=np.int64 if self.large else np.int32)
        self._offsets[0] = 0
        self._data = np.empty(self._bytes[-1], dtype=np.uint8)

    def fill(self, block: int, chunk: pa.Array) -> None:
        """Copy block number ``block`` (the chunk given for it at construction) into place."""
        o = string_offsets(chunk)
        row, pos, end = self._rows[block], self._bytes[block], self._bytes[block + 1]
        self._data[pos:end] = np.frombuffer(chunk.buffers()[2], dtype=np.uint8)[o[0] : o[-1]]
        out = self._offsets[row + 1 : row + len(chunk) + 1]
        out[:] = o[1:]
        out += pos - int(o[0])  # a Python int: added in the offsets' own type, no temporary

    def array(self) -> pa.Array:
        """The whole column (every block filled)."""
        kind = pa.large_string() if self.large else pa.string()
        offsets, data = pa.py_buffer(self._offsets), pa.py_buffer(self._data)
        return pa.Array.from_buffers(kind, self._rows[-1], [None, offsets, data])
