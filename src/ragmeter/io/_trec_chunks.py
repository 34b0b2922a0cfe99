"""A TREC run streamed block by block, checked as ``read_run`` checks it, never held whole.

Scoring a run larger than memory (``ragmeter eval --query-chunks N``) cannot use ``read_run``,
which returns every row at once. This reader cuts the file into blocks of whole lines
(``BLOCK_SIZE`` bytes) and yields each block's rows with their physical line numbers:

- a block already in the single-space form (``_trec_check._single_spaced``) is parsed as it is;
- another block is parsed normalised (tabs and runs of blanks to one space), and kept when that
  dropped no line (so row ``i`` is still line ``start + i``);
- any other block (comments, blank lines, a bad line, text after the tag) goes through the
  line-by-line parser, which names every bad line (file, line, field) or warns as
  ``read_run`` does.

The same refused bytes (NUL, a byte order mark after the start, a lone CR) send a block to the
line-by-line parser, which reports them. Memory: one block of rows at a time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ._source import Source, open_source
from ._trec_format import RUN, Layout

BLOCK_SIZE = 1 << 22


@dataclass
class Rows:
    """One block's rows: qid, doc (pyarrow strings), score (float64) and physical line."""

    qid: pa.Array
    doc: pa.Array
    score: np.ndarray
    line: np.ndarray


def run_blocks(path: str | os.PathLike[str]) -> tuple[Source, Iterator[Rows]]:
    """The run's source (for messages) and an iterator of its checked blocks, in file order.

    Raises InputError (file, line, field) for the first block holding a bad line, and for a
    file with no data line once it is read to its end, like ``read_run``."""
    src = open_source(path)
    return src, _blocks(src, RUN)


def _blocks(src: Source, layout: Layout) -> Iterator[Rows]:
    from ._trec_check import line_blocks

    rows = 0
    for start, text in line_blocks(src, BLOCK_SIZE):
        block = _parse(src, text, start, layout)
        if block is not None and len(block.score):
            rows += len(block.score)
            yield block
    if not rows:  # the line-by-line parser's own empty-file messages
        from ._trec_lines import parse_lines

        parse_lines(src, layout, keep=False)


def _parse(src: Source, text: bytes, start: int, layout: Layout) -> Rows | None:
    """The rows of a block of whole lines starting at line ``start``."""
    from ._trec_check import read_block

    n_lines = text.count(b"\n") + (0 if text.endswith(b"\n") else 1)
    table = read_block(text, layout, use_threads=False)
    if table is not None and table.num_rows == n_lines:
        score = table.column("score").combine_chunks().to_numpy(zero_copy_only=False)
        if np.isfinite(score).all():
            return Rows(
                table.column("qid").combine_chunks(),
                table.column("doc").combine_chunks(),
                np.asarray(score, dtype=np.float64),
                np.arange(start, start + n_lines, dtype=np.int64),
            )
    return _by_lines(src, text, start, layout)


def _by_lines(src: Source, text: bytes, start: int, layout: Layout) -> Rows | None:
    """The line-by-line parser over this block only: raises for a bad line (naming it), warns
    for text after the tag, skips comments and blank lines."""
    from ._trec_lines import parse_lines

    numbered = [(start + i, line + b"\n") for i, line in enumerate(text.split(b"\n"))]
    if text.endswith(b"\n"):
        numbered.pop()  # the empty piece after the last line end
    else:
        numbered[-1] = (numbered[-1][0], numbered[-1][1][:-1])
    # ``skipped`` says rows exist elsewhere, so a block of only comments is not "an empty
    # file"; the whole-file check runs once at the end (``_blocks``)
    parsed = parse_lines(  # type: ignore[call-overload]  # keep=True: returns Parsed
        src, layout, numbered_lines=iter(numbered), skipped=lambda: (1, 0)
    )
    lines = parsed.line_of(np.arange(len(parsed.value))) if parsed.line_of else None
    return Rows(parsed.qid, parsed.doc, np.asarray(parsed.value, np.float64), np.asarray(lines))
