"""Columnar TREC parsing with pyarrow.csv: no Python work per line on the happy path.

Runs and qrels without tabs or comments in their first 64 KiB go first to ``_trec_fast``
(whole-file ``read_csv`` of three columns, byte-level checks; the common case). Otherwise, or
when that refuses the file, two tries, cheapest first; either raises ``Unclean`` when the file
needs a slower pass:

1. *direct*: pyarrow reads the file (streamed, gzip decompressed on the fly) split on a single
   space, or on a single tab when the first lines use tabs. Every field is checked after the
   parse without touching rows one by one: no field may be empty or contain other whitespace
   (which would mean the split differed from whitespace tokenisation), no ``qid`` may start with
   ``#`` (a comment line), scores must be finite. Row ``i`` is then physical line ``i + 1``.
   The bytes pass a ``ByteGuard`` on their way to pyarrow (no NUL, no byte order mark after
   the start, no lone ``\\r``: pyarrow would end a line there, the line-by-line pass does not).
2. *normalised*: the bytes are streamed through a block-wise normaliser (tabs and other blanks
   to spaces, runs of spaces collapsed, lines stripped, comment lines dropped) and parsed again.
   Line numbers are lost here, so any problem found afterwards goes to the line-by-line pass.
   The raw bytes pass the same ``ByteGuard`` first.

The file is streamed in blocks (``BLOCK_SIZE`` bytes): pyarrow parses ahead on its threads while
worker threads check each finished block, and only qid, doc and the value column are kept, so
peak memory stays near the size of those columns. Per block, qid and doc are hashed once
(``dictionary_encode``) to find duplicate (qid, doc) pairs inside the block; pairs repeated
across blocks are ruled out from the qid runs (see ``_duplicates_across_blocks``), and only when
that fails does the caller run the exact global check.
"""

from __future__ import annotations

import io
import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._source import Source
from ._trec_arrays import concat_numbers as _concat_numbers
from ._trec_arrays import concat_strings as _concat_strings
from ._trec_arrays import report as _report
from ._trec_arrays import string_offsets as _offsets
from ._trec_bytes import BadBytes, ByteGuard, GuardedStream
from ._trec_format import (
    INT64_MAX,
    INT64_MIN,
    INT_RE,
    Layout,
    LineOf,
    Parsed,
    Unclean,
    describe_nonfinite,
    rows_are_lines,
)

SNIFF_BYTES = 1 << 16
BLOCK_SIZE = 1 << 22
_BLANKS = (b" ", b"\t", b"\x0b", b"\x0c")
_TO_SPACE = bytes.maketrans(b"\t\r\x0b\x0c", b"    ")
_MAX_WORKERS = 4


# -- entry point --------------------------------------------------------------------------------
def parse_columnar(src: Source, layout: Layout) -> Parsed:
    """Parse ``src`` columnar (direct, then normalised); raise Unclean if neither can vouch."""
    head = src.read_head(SNIFF_BYTES)
    has_comments = head.startswith(b"#") or b"\n#" in head
    tabs = b"\t" in head
    direct = not has_comments and not (tabs and b" " in head)
    if not has_comments and not tabs:
        from ._trec_fast import parse_clean_run

        try:
            return parse_clean_run(src, layout)
        except Unclean as exc:
            if exc.parse_error and "conversion error" in str(exc):
                # a value no normalisation turns into a number: the file most likely has a bad
                # line, which the caller's block check names at about one read's cost
                raise
            # the direct pass would split the same bytes on the same spaces and fail alike
            direct = direct and not exc.parse_error
    if direct:
        try:
            with src.arrow_stream() as stream:
                guarded = GuardedStream(stream)
                parsed = _parse(guarded, src, layout, "\t" if tabs else " ", rows_are_lines)
                guarded.guard.finish()  # the parse read every byte
                return parsed
        except (Unclean, BadBytes):
            pass
    with src.open_binary() as raw:
        return _parse(_Normalising(raw), src, layout, " ", None)


def _parse(
    stream: Any, src: Source, layout: Layout, delimiter: str, line_of: LineOf | None
) -> Parsed:
    import pyarrow.csv as pcsv

    # Side columns (iter, rank, tag) are only checked, so they stay raw bytes (no UTF-8 check).
    types = {name: pa.binary() for name in layout.names}
    types.update(qid=pa.string(), doc=pa.string())
    types[layout.value] = pa.float64() if layout.value == "score" else pa.string()
    keep = ("qid", "doc", layout.value)
    blocks: list[dict[str, pa.Array]] = []
    infos: list[_Block] = []
    try:
        reader = pcsv.open_csv(
            stream,
            read_options=pcsv.ReadOptions(column_names=list(layout.names), block_size=BLOCK_SIZE),
            parse_options=pcsv.ParseOptions(
                delimiter=delimiter,
                quote_char=False,
                double_quote=False,
                escape_char=False,
                ignore_empty_lines=line_of is None,
            ),
            convert_options=pcsv.ConvertOptions(
                column_types=types, null_values=[], strings_can_be_null=False
            ),
        )
        # Streamed, so only a few blocks' side columns (iter, rank, tag) are alive at once; the
        # per-block checks run on worker threads (pyarrow and numpy release the GIL) while
        # pyarrow parses the next blocks.
        workers = max(1, min(_MAX_WORKERS, os.cpu_count() or 1))
        with ThreadPoolExecutor(max_workers=workers) as executor:
            pending: deque[tuple[Future[_Block], dict[str, pa.Array]]] = deque()

            def settle() -> None:
                future, kept = pending.popleft()
                info = future.result()
                if info.unusual:
                    for f, _ in pending:
                        f.cancel()
                    raise Unclean(f"unusual '{info.unusual}' field")
                blocks.append(kept)
                infos.append(info)

            for batch in reader:
                if batch.num_rows:
                    block = dict(zip(layout.names, batch.columns, strict=True))
                    kept = {name: block[name] for name in keep}
                    pending.append((executor.submit(_analyse, block, layout), kept))
                    del block
                del batch
                while len(pending) > 2 * workers:
                    settle()
            while pending:
                settle()
        del reader
    except (pa.ArrowException, OSError, ValueError, EOFError) as exc:
        raise Unclean(str(exc)) from None
    if not blocks:
        raise Unclean("no rows")
    pool = pa.default_memory_pool()
    pool.release_unused()  # the freed side columns: give the pages back before copying columns

    if layout.value == "score":
        value = _concat_numbers([b.pop("score") for b in blocks], np.float64)
        bad = ~np.isfinite(value)
        if bad.any():
            _report(
                src,
                line_of,
                np.flatnonzero(bad),
                "score",
                lambda row: (
                    f"score is {describe_nonfinite(float(value[row]))}; scores must be finite"
                ),
            )
    else:
        value = _grades(src, line_of, blocks, infos)

    maybe_dup = any(i.duplicate for i in infos) or _duplicates_across_blocks(blocks, infos)
    qid = _concat_strings([b.pop("qid") for b in blocks])
    doc = _concat_strings([b.pop("doc") for b in blocks])
    return Parsed(qid=qid, doc=doc, value=value, line_of=line_of, maybe_duplicates=maybe_dup)


@dataclass
class _Block:
    """What the checks learnt about one block of rows."""

    starts: np.ndarray  # rows where a run of equal qids begins (0 first)
    firsts: pa.Array  # the qid of each run
    unusual: str | None = None  # a field whose split cannot be trusted
    duplicate: bool = False  # a (qid, doc) pair repeats inside the block
    grades: np.ndarray | None = None  # qrels: int grades (valid ones)
    bad_grades: np.ndarray | None = None  # qrels: rows whose rel is not an integer


def _analyse(block: dict[str, pa.Array], layout: Layout) -> _Block:
    """Per-block checks: each field a clean token, runs of qids, duplicates inside the block."""
    qid = pc.dictionary_encode(block["qid"])
    qcode = qid.indices.to_numpy()
    starts = np.concatenate(([0], np.flatnonzero(qcode[1:] != qcode[:-1]) + 1)).astype(np.int64)
    info = _Block(starts, block["qid"].take(pa.array(starts)))
    for name in layout.names:
        # every field but the scores pyarrow parsed: rel stays text, so a blank in it (a tab
        # after the delimiter) would reach the grade check and be reported as a bad grade
        if name not in ("qid", "doc", "score") and _bad_strings(block[name]):
            info.unusual = name
            return info
    if _bad_strings(qid.dictionary) or pc.any(pc.starts_with(qid.dictionary, "#")).as_py():
        info.unusual = "qid"
        return info
    doc = pc.dictionary_encode(block["doc"])
    if _bad_strings(doc.dictionary):
        info.unusual = "doc"
        return info
    key = qcode.astype(np.int64) * max(len(doc.dictionary), 1) + doc.indices.to_numpy()
    key.sort()
    info.duplicate = bool((key[1:] == key[:-1]).any())
    if layout.value == "rel":
        info.grades, info.bad_grades = _parse_grades(block["rel"])
    return info


def _parse_grades(rel: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(grades, rows with a non-integer rel) - each distinct string of the block parsed once."""
    enc = pc.dictionary_encode(rel)
    words = enc.dictionary.to_pylist()
    ok = np.ones(len(words), dtype=bool)
    nums = np.zeros(len(words), dtype=np.int64)
    for i, w in enumerate(words):  # one iteration per distinct grade in the block
        b = w.encode()
        if INT_RE.fullmatch(b) and INT64_MIN <= int(b) <= INT64_MAX:
            nums[i] = int(b)
        else:
            ok[i] = False
    idx = enc.indices.to_numpy()
    return nums[idx], np.flatnonzero(~ok[idx])


def _grades(
    src: Source, line_of: LineOf | None, blocks: list[dict[str, pa.Array]], infos: list[_Block]
) -> np.ndarray:
    offsets = np.cumsum([0] + [len(b["qid"]) for b in blocks])
    bad = [
        i.bad_grades + off
        for i, off in zip(infos, offsets[:-1], strict=True)
        if i.bad_grades is not None and len(i.bad_grades)
    ]
    if bad:
        rows = np.concatenate(bad)
        flat = pa.chunked_array([b["rel"] for b in blocks])
        _report(
            src,
            line_of,
            rows,
            "rel",
            lambda row: f"rel '{flat[int(row)].as_py()}' is not an integer grade",
        )
    return np.concatenate([i.grades for i in infos if i.grades is not None])


# -- cheap checks on blocks ---------------------------------------------------------------------
def _bad_strings(arr: pa.Array) -> bool:
    """True when some string is empty or contains a blank (the split went wrong there)."""
    if len(arr) == 0:
        return False
    offsets = _offsets(arr)
    if (np.diff(offsets) == 0).any():
        return True
    start = int(offsets[0])
    blob = arr.buffers()[2].slice(start, int(offsets[-1]) - start).to_pybytes()
    return any(b in blob for b in _BLANKS)


def _duplicates_across_blocks(blocks: list[dict[str, pa.Array]], infos: list[_Block]) -> bool:
    """True unless (qid, doc) pairs are proven unique across blocks (within-block is done).

    When each query's rows are contiguous in the file (the usual case), a pair can repeat across
    blocks only in a query whose rows straddle a block boundary; those few queries' doc ids are
    compared directly. Files that interleave queries return True (the caller checks exactly).
    """
    n_runs = sum(len(i.firsts) for i in infos)
    # cont[b]: block b's first run continues block b-1's last run (one query, two blocks)
    cont = [
        b > 0 and infos[b].firsts[0].as_py() == infos[b - 1].firsts[-1].as_py()
        for b in range(len(infos))
    ]
    distinct = pc.count_distinct(pa.concat_arrays([i.firsts for i in infos])).as_py()
    if distinct != n_runs - sum(cont):
        return True  # some query appears in two separate stretches of the file
    b = 1
    while b < len(blocks):
        if not cont[b]:
            b += 1
            continue
        prev = blocks[b - 1]["doc"]
        lo = int(infos[b - 1].starts[-1])
        pieces = [prev.slice(lo, len(prev) - lo)]
        while True:
            starts = infos[b].starts
            if len(starts) > 1:  # the query ends inside block b
                pieces.append(blocks[b]["doc"].slice(0, int(starts[1])))
                break
            pieces.append(blocks[b]["doc"])  # block b is all this query
            if b + 1 < len(blocks) and cont[b + 1]:
                b += 1
                continue
            break
        ids = pa.concat_arrays(pieces)
        if pc.count_distinct(ids).as_py() != len(ids):
            return True
        b += 1
    return False


# -- the normalising stream ---------------------------------------------------------------------
def normalise(text: bytes) -> bytes:
    """Whole lines in, single-space-separated lines out; comment lines dropped.

    Tabs, CR, VT and FF become spaces, runs of spaces collapse to one, lines lose leading and
    trailing blanks, and lines starting with ``#`` are removed (their newline is kept, so blank
    lines may remain; the parser skips those).
    """
    t = text.translate(_TO_SPACE)
    while b"  " in t:
        t = t.replace(b"  ", b" ")
    t = t.replace(b" \n", b"\n").replace(b"\n ", b"\n")
    if t.startswith(b" "):
        t = t[1:]
    if t.endswith(b" "):
        t = t[:-1]
    if t.startswith(b"#") or b"\n#" in t:
        parts = (b"\n" + t).split(b"\n#")
        kept = [parts[0]]
        for p in parts[1:]:  # one iteration per comment line, not per line
            nl = p.find(b"\n")
            kept.append(p[nl:] if nl >= 0 else b"")
        t = b"".join(kept)[1:]
    return t


class _Normalising(io.RawIOBase):
    """A read-only stream of ``normalise``d text, cut at line boundaries, block by block."""

    def __init__(self, raw: IO[bytes], block: int = BLOCK_SIZE) -> None:
        super().__init__()
        self._raw = raw
        self._block = block
        self._carry = b""
        self._buf = b""
        self._eof = False
        self._guard = ByteGuard()

    def readable(self) -> bool:
        return True

    def _fill(self) -> None:
        data = self._raw.read(self._block)
        self._guard.feed(data)
        if not data:
            self._guard.finish()
            self._eof = True
            text, self._carry = self._carry, b""
        else:
            data = self._carry + data
            cut = data.rfind(b"\n") + 1
            text, self._carry = data[:cut], data[cut:]
        if text:
            self._buf += normalise(text)

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            while not self._eof:
                self._fill()
            out, self._buf = self._buf, b""
            return out
        while len(self._buf) < size and not self._eof:
            self._fill()
        out, self._buf = self._buf[:size], self._buf[size:]
        return out

    def readinto(self, b: Any) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)
