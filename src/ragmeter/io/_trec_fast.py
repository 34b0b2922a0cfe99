"""The fast path for the common TREC run or qrels: one space between fields, no comments, no tabs.

pyarrow parses the whole file at once on all cores (``read_csv``; the streaming reader parses
one block at a time) but converts only the three columns a run is scored from (``qid``, ``doc``,
``score``) or qrels are read for (``qid``, ``doc``, ``rel``); the others (iter, rank, tag) are
split but never converted. What pyarrow does not check is checked byte-wise while the bytes
stream past (``_CheckedStream``, numpy, no Python per line):

- pyarrow itself refuses a line with other than 6 (qrels: 4) space-separated fields;
- no byte <= 0x20 (space, newline, control) may follow another one, and the file may neither
  start nor end with a space: so no field is empty (two spaces, or a space at a line's start or
  end) and there are no blank lines, which makes the space split equal the whitespace split;
- the file holds exactly 6 (qrels: 4) blank bytes per row (the separating spaces and the line
  end): so no
  field holds a tab, vertical tab, form feed or other control byte (a whitespace split would cut
  there), and lines end in ``\n`` or ``\r`` alone;
- no ``qid`` starts with ``#`` (a comment line); every score is finite; every grade is a
  decimal integer that fits in 64 bits (pyarrow's integer cast, which also reads ``0x`` hex:
  a grade holding an ``x`` is refused here);
- no byte ``_trec_bytes`` refuses (NUL, a byte order mark after the start, a lone ``\\r``).

Row ``i`` is then physical line ``i + 1``. The output columns are allocated once the parse
is done (every block's rows and text sizes are known then) and each worker copies its block into
place after checking it, releasing the block: no concatenation pass after the checks. Duplicate
(qid, doc) pairs are ruled out with one 64-bit hash per row (``_duplicates``: the qid hashed once
per run of equal qids, the doc hashes written straight into the column handed on): sorted per
block, and across blocks only for the query that straddles a boundary, when each query's rows
are contiguous (the usual file); otherwise all hashes are sorted together. Equal hashes send the
run to the exact check. The item ids' hashes and the query runs' first rows are handed on
(``Parsed.doc_hashes``/``qid_starts``, then ``ReadHints`` on the Run or Qrels): the engine's
grade join and query codes reuse them instead of hashing and comparing every row again.
Anything unusual raises ``Unclean`` and the general parsers take over, so this path only ever
speeds up files it can vouch for; it never changes what a file means.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._duplicates import combine_hashes, mix, run_pair_keys, string_hashes
from ._source import Source
from ._trec_arrays import StringColumn
from ._trec_arrays import report as _report
from ._trec_arrays import string_offsets as _offsets
from ._trec_bytes import ByteGuard
from ._trec_format import Layout, Parsed, Unclean, describe_nonfinite, rows_are_lines

BLOCK_SIZE = 1 << 22
_MAX_WORKERS = 4


def parse_clean_run(src: Source, layout: Layout) -> Parsed:
    """Parse a clean run or qrels file (see module doc) or raise Unclean."""
    import pyarrow.csv as pcsv

    keep = ["qid", "doc", layout.value]
    # grades are cast per block (on the worker threads) so their text can be checked first
    value_type = pa.float64() if layout.value == "score" else pa.string()
    options = {
        "read_options": pcsv.ReadOptions(column_names=list(layout.names), block_size=BLOCK_SIZE),
        "parse_options": pcsv.ParseOptions(
            delimiter=" ",
            quote_char=False,
            double_quote=False,
            escape_char=False,
            ignore_empty_lines=False,
        ),
        "convert_options": pcsv.ConvertOptions(
            include_columns=keep,
            null_values=[],
            strings_can_be_null=False,
            column_types={"qid": pa.string(), "doc": pa.string(), layout.value: value_type},
        ),
    }
    try:
        with src.arrow_stream() as raw:
            stream = _CheckedStream(raw)
            table = pcsv.read_csv(stream, **options)
            stream.finish(table.num_rows, layout.width)
        columns = [b.columns for b in table.to_batches() if b.num_rows]  # zero-copy, per block
        del table
        if not columns:
            raise Unclean("no rows")
        out = _Columns(columns, layout.value == "score")
        blocks: list[list[pa.Array] | None] = list(columns)  # a worker drops its block once copied
        del columns
        workers = max(1, min(_MAX_WORKERS, os.cpu_count() or 1))
        infos: list[_Block] = []
        check = partial(_check_block, blocks=blocks, out=out)
        with ThreadPoolExecutor(max_workers=workers) as executor:  # numpy and arrow free the GIL
            for info in executor.map(check, range(len(blocks))):
                infos.append(info)
                if len(infos) % 16 == 0:
                    pa.default_memory_pool().release_unused()  # hand copied blocks' pages back
    except (pa.ArrowException, OSError, ValueError, EOFError) as exc:
        # pyarrow's own errors (not those of the checks, raised as plain ValueError)
        raise Unclean(str(exc), parse_error=isinstance(exc, pa.ArrowInvalid)) from None
    pa.default_memory_pool().release_unused()  # every block is copied and released

    starts = np.asarray(out.rows, dtype=np.int64)
    bad = [
        i.bad_scores + start
        for i, start in zip(infos, starts[:-1], strict=True)
        if len(i.bad_scores)
    ]
    score = out.value
    if bad:
        _report(
            src,
            rows_are_lines,
            np.concatenate(bad),
            layout.value,
            lambda row: f"score is {describe_nonfinite(float(score[row]))}; scores must be finite",
        )
    grouped = _queries_contiguous(infos)
    maybe_dup = grouped and _repeats_in_blocks(infos)
    qid_starts = _run_starts(infos, starts) if grouped else None
    doc_hashes = out.doc_hashes
    doc = out.doc.array()
    qid = out.qid.array()
    if not grouped:  # queries interleave: compare every row's hash with every other's
        hq = string_hashes(qid)
        assert hq is not None  # every block was hashed
        keys = combine_hashes(mix(hq), doc_hashes)
        keys.sort()
        maybe_dup = bool((keys[1:] == keys[:-1]).any())
        del keys
    return Parsed(
        qid=qid,
        doc=doc,
        value=score,
        line_of=rows_are_lines,
        maybe_duplicates=maybe_dup,
        doc_hashes=doc_hashes,
        qid_starts=qid_starts,
    )


class _Columns:
    """The parse's output columns, allocated once the blocks are known and filled by the
    per-block workers (``_check_block``), each block at its own place: no concatenation pass,
    and each block's memory is released as soon as it is copied."""

    def __init__(self, blocks: list[list[pa.Array]], scores: bool) -> None:
        self.rows: list[int] = np.cumsum([0] + [len(b[0]) for b in blocks]).tolist()
        n = self.rows[-1]
        self.qid = StringColumn([b[0] for b in blocks])
        self.doc = StringColumn([b[1] for b in blocks])
        self.value = np.empty(n, dtype=np.float64 if scores else np.int64)
        self.doc_hashes = np.empty(n, dtype=np.uint64)

    def part(self, block: int, column: np.ndarray) -> np.ndarray:
        """Block ``block``'s rows of ``column`` (a view)."""
        return column[self.rows[block] : self.rows[block + 1]]


def _run_starts(infos: list[_Block], offsets: np.ndarray) -> np.ndarray:
    """The rows where a run of equal qids begins, over the whole file (a run continued from the
    previous block is one run)."""
    parts = [
        (i.starts[1:] if c else i.starts) + int(off)
        for i, c, off in zip(infos, _continues(infos), offsets[:-1], strict=True)
    ]
    return np.concatenate(parts).astype(np.int64, copy=False)


@dataclass
class _Block:
    """What the checks learnt about one block of rows."""

    queries: pa.Array  # the qid of each run of equal qids, in order
    repeat: bool  # two rows of the block have equal pair hashes
    head: np.ndarray  # pair hashes of the first run's rows
    tail: np.ndarray  # pair hashes of the last run's rows
    bad_scores: np.ndarray  # rows whose score is NaN or infinite
    query_hashes: np.ndarray  # string hash of each run's qid (mixed)
    starts: np.ndarray  # first row of each run


def _check_block(b: int, blocks: list[list[pa.Array] | None], out: _Columns) -> _Block:
    """Per-block checks (comment lines, finite scores, integer grades) and pair hashes; the
    block's columns are copied into ``out`` (the doc hashes too) and released from ``blocks``."""
    cols = blocks[b]
    assert cols is not None
    qid, doc, score = cols
    offsets = _offsets(qid)
    starts = np.concatenate(
        (np.zeros(1, np.int64), _true_rows(pc.not_equal(qid[1:], qid[:-1])) + 1)
    )
    queries = qid.take(pa.array(starts))
    first = np.frombuffer(qid.buffers()[2], dtype=np.uint8)[offsets[starts]]
    if (first == ord("#")).any():
        raise Unclean("a comment line")
    hq = string_hashes(queries)
    hd = string_hashes(doc, out.part(b, out.doc_hashes))
    if hq is None or hd is None:
        raise Unclean("ids could not be hashed")
    lengths = np.diff(np.append(starts, len(qid)))
    mix(hq)
    keys = run_pair_keys(hq, lengths, hd)  # hd itself is kept unchanged
    head = keys[: lengths[0]].copy()
    tail = keys[int(starts[-1]) :].copy()
    keys.sort()
    repeat = bool((keys[1:] == keys[:-1]).any())
    del keys
    value = out.part(b, out.value)
    bad = np.empty(0, np.int64)
    if pa.types.is_string(score.type):  # qrels grades, as text
        value[:] = _grades(score)
    else:
        value[:] = score.to_numpy()
        finite = np.isfinite(value)
        if not finite.all():
            bad = np.flatnonzero(~finite)
    out.qid.fill(b, qid)
    out.doc.fill(b, doc)
    blocks[b] = None  # the block is copied: release it
    return _Block(queries, repeat, head, tail, bad, hq, starts)


def _grades(rel: pa.Array) -> np.ndarray:
    """The int64 grades of a block; ValueError for one pyarrow reads but a grade is not
    (``0x10``: a hex number); pyarrow's own error for text that is no integer (``+1``, ``1.0``)
    or overflows."""
    o = _offsets(rel)
    text = np.frombuffer(rel.buffers()[2], dtype=np.uint8)[int(o[0]) : int(o[-1])]
    if ((text | 0x20) == ord("x")).any():
        raise ValueError("a hexadecimal grade")
    return rel.cast(pa.int64()).to_numpy()


def _true_rows(mask: pa.BooleanArray) -> np.ndarray:
    """Indices of the true values of a null-free boolean array (its bitmap unpacked by numpy,
    much faster than ``pc.indices_nonzero``)."""
    bits = np.frombuffer(mask.buffers()[1], dtype=np.uint8)
    flags = np.unpackbits(bits, count=mask.offset + len(mask), bitorder="little")
    return np.flatnonzero(flags[mask.offset :])


def _continues(infos: list[_Block]) -> list[bool]:
    """[b]: block b starts with the query block b - 1 ended with (one query, two blocks)."""
    return [
        b > 0 and infos[b].queries[0].as_py() == infos[b - 1].queries[-1].as_py()
        for b in range(len(infos))
    ]


def _queries_contiguous(infos: list[_Block]) -> bool:
    """True when each query's rows form one stretch of the file: no two runs of equal qids
    (a run continued from the previous block aside) hash alike, else compared exactly."""
    cont = _continues(infos)
    hashes = np.concatenate(
        [i.query_hashes[1:] if c else i.query_hashes for i, c in zip(infos, cont, strict=True)]
    )
    hashes.sort()
    if not (hashes[1:] == hashes[:-1]).any():
        return True  # equal qids hash alike: all runs have different qids
    runs = sum(len(i.queries) for i in infos) - sum(cont)
    return bool(pc.count_distinct(pa.concat_arrays([i.queries for i in infos])).as_py() == runs)


def _repeats_in_blocks(infos: list[_Block]) -> bool:
    """Some pair hash repeats, within a block or in a query straddling blocks (contiguous
    queries only: then a pair can repeat across blocks only inside such a query)."""
    if any(i.repeat for i in infos):
        return True
    carry = infos[0].tail
    for info, cont in zip(infos[1:], _continues(infos)[1:], strict=True):
        if not cont:
            carry = info.tail
            continue
        both = np.concatenate((carry, info.head))
        both.sort()
        if (both[1:] == both[:-1]).any():
            return True
        carry = both if len(info.queries) == 1 else info.tail
    return False


def check_totals(blanks: int, last: int, rows: int, width: int) -> None:
    """The whole file's checks once its bytes are checked: ``width - 1`` spaces and 1 line end
    per row (the last line end may be missing), nothing else blank; the file ends neither in a
    space nor in a carriage return. ``last``: the file's last byte."""
    if last == 0x0D:
        raise ValueError("a lone carriage return")
    if last == 0x20:
        raise ValueError("a space at the end of the file")
    expected = width * rows - (0 if last in (0x0A, 0x0D) else 1)
    if blanks != expected:
        raise ValueError("a tab, control byte or CRLF line end")


class _CheckedStream:
    """A read-only file over a pyarrow stream that checks the blank bytes as they pass.

    Blank bytes are those <= 0x20 (space, line ends, tabs, other controls). pyarrow calls
    ``read_buffer`` from its reader thread (zero-copy); a failed check raises there, which stops
    the parse with an error the caller turns into Unclean. ``finish`` checks the totals.
    """

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self._guard = ByteGuard()
        self._last = 0x0A  # as if a newline came before the file: a leading blank is caught
        self._seen = False
        self._blanks = 0
        self._flags = np.empty(0, dtype=bool)
        self.closed = False

    def read_buffer(self, nbytes: int | None = None) -> pa.Buffer:
        buf = self._raw.read_buffer(nbytes) if nbytes is not None else self._raw.read_buffer()
        if buf.size:
            data = np.frombuffer(buf, dtype=np.uint8)
            self._guard.feed(data)
            self._check(data)
        return buf

    def read(self, nbytes: int | None = None) -> bytes:
        return bytes(self.read_buffer(nbytes).to_pybytes())

    def _check(self, data: np.ndarray) -> None:
        if not self._seen:
            self._seen = True
            if data[:3].tobytes() == b"\xef\xbb\xbf":  # pyarrow skips a UTF-8 BOM
                data = data[3:]
                if not len(data):
                    return
        n = len(data)
        if len(self._flags) < n:
            self._flags = np.empty(n, dtype=bool)
        blank = np.less_equal(data, 0x20, out=self._flags[:n])
        if (self._last <= 0x20 and blank[0]) or np.logical_and(blank[:-1], blank[1:]).any():
            raise ValueError("an empty field, a blank line or a space at a line's start or end")
        self._blanks += int(np.count_nonzero(blank))
        self._last = int(data[-1])

    def finish(self, rows: int, width: int) -> None:
        """Check the whole file (:func:`check_totals`)."""
        self._guard.finish()
        check_totals(self._blanks, self._last, rows, width)

    # the rest of the file protocol pyarrow's PythonFile wrapper may call
    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True
