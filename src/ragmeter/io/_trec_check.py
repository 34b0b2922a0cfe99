"""Finding the bad lines of a large TREC file at about the cost of one columnar read.

When no columnar pass vouches for a file it is usually a bad one, and the line-by-line parser
must name its bad lines. Run over every line in Python, that took longer than reading a clean
file many times over (a bad last line of a 2M-line run: ~10 s against ~1.5 s). Here the file
is cut into blocks of whole lines; a block that the normalised columnar parse reads without a
problem (no refused byte, every line of the right width, ids UTF-8, values valid) holds no bad
line and is skipped; only the other blocks' lines go through the line-by-line checks, with their
true line numbers. What a skipped block holds is counted (rows, bytes), so the empty-file
messages stay those of the line-by-line parser.

A block already in the single-space form (no tab, CR, comment, double or edge space, and the
right number of spaces per line: ``normalise`` would return it unchanged) is parsed as it is,
without the normalising copy. A block that is not vouched for is cut into pieces of
``SUB_BLOCK`` bytes of whole lines and each piece tried again, so only the lines of the pieces
holding a bad line reach the Python line checks (a bad last line of a 10M-line run: ~1 piece).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ._source import BOM, Source
from ._trec_format import Layout

BLOCK_SIZE = 1 << 22
SUB_BLOCK = 1 << 16


@dataclass
class Tally:
    """Rows and bytes of the blocks that were vouched for (and not yielded line by line)."""

    rows: int = 0
    bytes: int = 0


def line_blocks(src: Source, size: int = BLOCK_SIZE) -> Iterator[tuple[int, bytes]]:
    """``(first line number, whole lines)`` of the file, about ``size`` bytes at a time (a byte
    order mark dropped, a last line without its newline kept): the one block reader of the
    checking and the streaming paths."""
    start = 1
    carry = b""
    first = True
    with src.open_binary() as f:
        while True:
            data = f.read(size)
            if first:
                data, first = data.removeprefix(BOM), False
            if data:
                data = carry + data
                cut = data.rfind(b"\n") + 1
                if cut == 0:  # no line end yet: keep reading
                    carry = data
                    continue
                text, carry = data[:cut], data[cut:]
            else:
                text, carry = carry, b""
            if text:
                yield start, text
                start += text.count(b"\n")
            if not data:
                return


def unvouched_lines(src: Source, layout: Layout, tally: Tally) -> Iterator[tuple[int, bytes]]:
    """``(line number, line with its \\n)`` of every block not vouched for, in file order."""
    for start, text in line_blocks(src):
        yield from _checked_lines(text, start, layout, tally, BLOCK_SIZE)


def _checked_lines(
    text: bytes, start: int, layout: Layout, tally: Tally, size: int
) -> Iterator[tuple[int, bytes]]:
    """The numbered lines of ``text`` (whole lines from line ``start``) that no columnar parse
    vouches for: the whole text, else its pieces of ``SUB_BLOCK`` bytes, else line by line."""
    rows = _vouch(text, layout)
    if rows is not None:
        tally.rows += rows
        tally.bytes += len(text)
        return
    if size > SUB_BLOCK and len(text) > SUB_BLOCK:
        begin = 0
        while begin < len(text):
            if begin + SUB_BLOCK >= len(text):
                end = len(text)
            else:
                end = text.rfind(b"\n", begin, begin + SUB_BLOCK) + 1
                if end <= begin:  # one line longer than a piece: up to its end
                    end = text.find(b"\n", begin + SUB_BLOCK) + 1 or len(text)
            piece = text[begin:end]
            yield from _checked_lines(piece, start, layout, tally, SUB_BLOCK)
            start += piece.count(b"\n")
            begin = end
        return
    for i, line in enumerate(text.split(b"\n")[: text.count(b"\n")]):
        yield start + i, line + b"\n"
    if not text.endswith(b"\n"):  # the last line, without a line end
        yield start + text.count(b"\n"), text[text.rfind(b"\n") + 1 :]


def read_block(text: bytes, layout: Layout, *, use_threads: bool = True) -> pa.Table | None:
    """The qid, doc and value columns of a block of whole lines read by one columnar parse, or
    None when its bytes (NUL, a byte order mark, a lone carriage return) or its lines need the
    line-by-line parser; blanks other than single spaces are normalised first."""
    import pyarrow.csv as pcsv

    from ._trec_columns import normalise

    if b"\x00" in text or BOM in text or text.count(b"\r") != text.count(b"\r\n"):
        return None
    if text.endswith(b"\r"):  # a lone carriage return ends the file
        return None
    types = {name: pa.binary() for name in layout.names}
    types.update(qid=pa.string(), doc=pa.string())
    types[layout.value] = pa.float64() if layout.value == "score" else pa.string()
    body = text if _single_spaced(text, len(layout.names)) else normalise(text)
    try:
        return pcsv.read_csv(
            io.BytesIO(body),
            read_options=pcsv.ReadOptions(column_names=list(layout.names), use_threads=use_threads),
            parse_options=pcsv.ParseOptions(
                delimiter=" ",
                quote_char=False,
                double_quote=False,
                escape_char=False,
                ignore_empty_lines=True,
            ),
            convert_options=pcsv.ConvertOptions(
                column_types=types,
                null_values=[],
                strings_can_be_null=False,
                include_columns=["qid", "doc", layout.value],
            ),
        )
    except (pa.ArrowException, ValueError):
        return None


def _vouch(text: bytes, layout: Layout) -> int | None:
    """The number of rows of ``text`` when it certainly holds no bad line, else None."""
    from ._trec_columns import _parse_grades

    table = read_block(text, layout)
    if table is None:
        return None
    value = table.column(layout.value).combine_chunks()
    if layout.value == "score":
        if not np.isfinite(value.to_numpy(zero_copy_only=False)).all():
            return None
    elif len(_parse_grades(value)[1]):
        return None
    return int(table.num_rows)


def _single_spaced(text: bytes, width: int) -> bool:
    """``normalise(text) == text`` and every line has ``width`` fields: the only blanks are one
    space between fields and one ``\\n`` per line, no line is a comment (a few numpy passes)."""
    data = np.frombuffer(text, dtype=np.uint8)
    if not len(data) or data[-1] != 0x0A or data[0] <= 0x20 or data[0] == 0x23:
        return False
    blank = data <= 0x20
    if np.logical_and(blank[:-1], blank[1:]).any():  # "  ", " \n", "\n ", "\n\n"
        return False
    rows = int(np.count_nonzero(data == 0x0A))
    if int(np.count_nonzero(blank)) != width * rows:  # so no tab, CR or other control byte ...
        return False
    if int(np.count_nonzero(data == 0x20)) != (width - 1) * rows:  # ... and width fields a line
        return False
    return not (data[1:][data[:-1] == 0x0A] == 0x23).any()  # no comment line
