"""The bytes no TREC parser accepts, checked the same way by every one of them.

trec_eval reads a file as C strings split on blanks, with only ``\\n`` ending a line. A file
that it would read differently from a Python tool is refused, so that no two readers disagree
about what it says:

- a NUL byte (0x00): C stops a string there, Python does not (``q1\\0x`` is ``q1`` to trec_eval);
- a UTF-8 byte order mark (U+FEFF) anywhere but the first bytes of the file: what ``cat a b``
  makes of two files that each start with one; left in, it becomes part of a query id;
- a carriage return not followed by a line feed (a "lone CR", old Mac line ends): trec_eval reads
  it as a blank inside the line, most other tools as a line end.

A leading byte order mark is skipped, and ``\\r\\n`` ends a line like ``\\n``. The line-by-line
parser checks each line with :func:`line_problem` (and names it); the columnar parsers feed
their byte stream through :class:`ByteGuard`, which refuses the same bytes (then the
line-by-line parser runs and names the line).
"""

from __future__ import annotations

from typing import Any

import numpy as np

BOM = b"\xef\xbb\xbf"

NUL_MESSAGE = "the line holds a NUL byte (0x00): a binary or UTF-16 file, or a damaged one"
BOM_MESSAGE = (
    "the line holds a byte order mark (U+FEFF) after the start of the file (two files joined "
    "with cat?); remove it, or it becomes part of an id"
)
CR_MESSAGE = (
    "the line holds a carriage return (\\r) not followed by a line feed: trec_eval reads it as a "
    "blank inside the line, other tools as a line end; use \\n or \\r\\n line ends"
)


def line_problem(raw: bytes) -> str | None:
    """The byte rule a physical line breaks, or None. ``raw`` is the line with its ``\\n`` (if
    any); the file's leading byte order mark is already removed."""
    if b"\x00" in raw:
        return NUL_MESSAGE
    if BOM in raw:
        return BOM_MESSAGE
    if b"\r" in raw and b"\r" in raw.removesuffix(b"\r\n"):
        return CR_MESSAGE
    return None


class BadBytes(ValueError):
    """A columnar parser met bytes the rules above refuse (its caller hands over to the
    line-by-line parser, which names the line)."""


class ByteGuard:
    """Checks a stream, fed in pieces in order, against the byte rules (see module doc)."""

    def __init__(self) -> None:
        self._pos = 0  # bytes fed so far
        self._tail = b""  # the last (up to) 2 bytes fed: a BOM may straddle two pieces
        self._cr_pending = False  # the last piece ended in \r: the next must start with \n

    def feed(self, data: Any) -> None:
        """Check the next piece (bytes, a buffer or a uint8 numpy array); BadBytes if bad."""
        arr = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
        n = len(arr)
        if n == 0:
            return
        if self._cr_pending and arr[0] != 0x0A:
            raise BadBytes("a lone carriage return")
        self._cr_pending = False
        if not arr.all():  # a zero byte
            raise BadBytes("a NUL byte")
        cr = np.flatnonzero(arr == 0x0D)
        if len(cr):
            if cr[-1] == n - 1:
                self._cr_pending = True
                cr = cr[:-1]
            if len(cr) and (arr[cr + 1] != 0x0A).any():
                raise BadBytes("a lone carriage return")
        head = self._tail + arr[:2].tobytes()
        at = head.find(BOM)
        if 0 <= at < len(self._tail) and self._pos - len(self._tail) + at > 0:
            raise BadBytes("a byte order mark inside the file")
        ef = np.flatnonzero(arr[: max(n - 2, 0)] == 0xEF)
        if len(ef):
            hits = ef[(arr[ef + 1] == 0xBB) & (arr[ef + 2] == 0xBF)]
            if len(hits) and (self._pos + int(hits[-1])) > 0:
                raise BadBytes("a byte order mark inside the file")
        self._tail = arr[-2:].tobytes()
        self._pos += n

    def finish(self) -> None:
        """The stream ended: a carriage return as its last byte is a lone one."""
        if self._cr_pending:
            raise BadBytes("a lone carriage return")


class GuardedStream:
    """A read-only file over a pyarrow input stream that feeds every byte it hands out to a
    :class:`ByteGuard` (pyarrow reads it through its Python file wrapper)."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self.guard = ByteGuard()
        self.closed = False

    def read_buffer(self, nbytes: int | None = None) -> Any:
        buf = self._raw.read_buffer(nbytes) if nbytes is not None else self._raw.read_buffer()
        if buf.size:
            self.guard.feed(np.frombuffer(buf, dtype=np.uint8))
        else:  # the end: checked before the parser reports anything about the rows
            self.guard.finish()
        return buf

    def read(self, nbytes: int | None = None) -> bytes:
        return bytes(self.read_buffer(nbytes).to_pybytes())

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True
