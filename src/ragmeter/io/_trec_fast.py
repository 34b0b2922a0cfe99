"""The fast path for the common TREC run: one space between fields, no comments, no tabs.

pyarrow parses only the three columns a run is scored from (``qid``, ``doc``, ``score``); the
other three (iter, rank, tag) are split but never converted. What pyarrow does not check is
checked byte-wise while the bytes stream past (``_CheckedStream``, numpy, no Python per line):

- pyarrow itself refuses a line with other than 6 space-separated fields;
- no byte <= 0x20 (space, newline, control) may follow another one, and the file may neither
  start nor end with a space: so no field is empty (two spaces, or a space at a line's start or
  end) and there are no blank lines, which makes the space split equal the whitespace split;
- no tab, vertical tab, form feed or carriage return anywhere (they are blanks to a whitespace
  split, so a field holding one would split differently);
- no ``qid`` starts with ``#`` (a comment line); every score is finite.

Row ``i`` is then physical line ``i + 1``. Duplicate (qid, doc) pairs are ruled out with one
64-bit hash per row (``_duplicates.pair_hashes``) sorted once; equal hashes send the run to the
exact check. Anything unusual raises ``Unclean`` and the general parsers take over, so this path
only ever speeds up files it can vouch for; it never changes what a file means.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ._duplicates import pair_hashes
from ._source import Source
from ._trec_columns import _concat_numbers, _concat_strings, _offsets, _report
from ._trec_format import Layout, Parsed, Unclean, describe_nonfinite, rows_are_lines

BLOCK_SIZE = 1 << 22
_OTHER_BLANKS = (b"\t", b"\x0b", b"\x0c", b"\r")


def parse_clean_run(src: Source, layout: Layout) -> Parsed:
    """Parse a clean run (see module doc) or raise Unclean; ``layout`` must be the run layout."""
    import pyarrow.csv as pcsv

    keep = ["qid", "doc", layout.value]
    blocks: list[list[pa.Array]] = []
    checks: list[tuple[np.ndarray, np.ndarray]] = []  # per block: (pair hashes, bad score rows)
    try:
        with src.arrow_stream() as raw:
            stream = _CheckedStream(raw)
            reader = pcsv.open_csv(
                stream,
                read_options=pcsv.ReadOptions(column_names=list(layout.names),
                                              block_size=BLOCK_SIZE),
                parse_options=pcsv.ParseOptions(delimiter=" ", quote_char=False,
                                                double_quote=False, escape_char=False,
                                                ignore_empty_lines=False),
                convert_options=pcsv.ConvertOptions(
                    include_columns=keep, null_values=[], strings_can_be_null=False,
                    column_types={"qid": pa.string(), "doc": pa.string(),
                                  layout.value: pa.float64()},
                ),
            )
            # The checks run here while pyarrow parses the next blocks on its own threads.
            for batch in reader:
                columns = batch.columns
                del batch
                blocks.append(columns)
                checks.append(_check_block(*columns))
            del reader
            stream.finish()
    except (pa.ArrowException, OSError, ValueError, EOFError) as exc:
        raise Unclean(str(exc)) from None
    if not blocks:
        raise Unclean("no rows")

    starts = np.cumsum([0] + [len(b[0]) for b in blocks])
    bad = [rows + start for (_, rows), start in zip(checks, starts) if len(rows)]
    score = _concat_numbers([b.pop() for b in blocks], np.float64)
    if bad:
        _report(src, rows_are_lines, np.concatenate(bad), layout.value, lambda row: (
            f"score is {describe_nonfinite(float(score[row]))}; scores must be finite"))
    doc = _concat_strings([b.pop() for b in blocks])
    qid = _concat_strings([b.pop() for b in blocks])
    keys = _concat_numbers([h for h, _ in checks], np.uint64)
    del checks
    keys.sort()
    maybe_dup = bool((keys[1:] == keys[:-1]).any())
    return Parsed(qid=qid, doc=doc, value=score, line_of=rows_are_lines,
                  maybe_duplicates=maybe_dup)


def _check_block(qid: pa.Array, doc: pa.Array, score: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(pair hashes, rows with a non-finite score) of one block; Unclean on a comment line."""
    offsets = _offsets(qid)
    first = np.frombuffer(qid.buffers()[2], dtype=np.uint8)[offsets[:-1]]
    if (first == ord("#")).any():
        raise Unclean("a comment line")
    hashes = pair_hashes(qid, doc)
    if hashes is None:
        raise Unclean("ids are not plain ASCII")
    values = score.to_numpy()
    finite = np.isfinite(values)
    return hashes, (np.flatnonzero(~finite) if not finite.all() else np.empty(0, np.int64))


class _CheckedStream:
    """A read-only file over a pyarrow stream that checks the blank bytes as they pass.

    pyarrow calls ``read_buffer`` from its reader thread; a failed check raises
    there, which stops the parse with an error the caller turns into Unclean.
    """

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self._last = 0x0A  # as if a newline came before the file: a leading blank is caught
        self._seen = False
        self._flags = np.empty(0, dtype=bool)
        self.closed = False

    def read_buffer(self, nbytes: int | None = None) -> pa.Buffer:
        return pa.py_buffer(self.read(nbytes))

    def read(self, nbytes: int | None = None) -> bytes:
        chunk: bytes = self._raw.read(nbytes)
        if chunk:
            self._check(chunk)
        return chunk

    def _check(self, chunk: bytes) -> None:
        data = np.frombuffer(chunk, dtype=np.uint8)
        if not self._seen:
            self._seen = True
            if data[:3].tobytes() == b"\xef\xbb\xbf":  # pyarrow skips a UTF-8 BOM
                data = data[3:]
                if not len(data):
                    return
        if any(b in chunk for b in _OTHER_BLANKS):  # memchr-fast
            raise ValueError("tab, vertical tab, form feed or carriage return")
        n = len(data)
        if len(self._flags) < n:
            self._flags = np.empty(n, dtype=bool)
        blank = np.less_equal(data, 0x20, out=self._flags[:n])
        if (self._last <= 0x20 and blank[0]) or np.logical_and(blank[:-1], blank[1:]).any():
            raise ValueError("an empty field, a blank line or a space at a line's start or end")
        self._last = int(data[-1])

    def finish(self) -> None:
        """Check the end of the stream (a final line may not end with a space)."""
        if self._last == 0x20:
            raise ValueError("a space at the end of the file")

    # the rest of the file protocol pyarrow's PythonFile wrapper may call
    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True
