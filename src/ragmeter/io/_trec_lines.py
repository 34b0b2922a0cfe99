"""The line-by-line TREC parser: slow, exact, and the authority on what a file says.

The columnar parser (``_trec_columns``) handles well-formed files; this one runs when that fails
or when a problem needs its line number. It reads every physical line, so it can name the line
and the field of every problem, and it reports all problems at once (the first
``MAX_PROBLEMS``, then a count). Its acceptance rules are the columnar parser's: the same number
syntax (``FLOAT_RE``/``INT_RE``), the same comment and blank-line rules, the same refused bytes
(``_trec_bytes``). ``keep=False`` only looks for problems, keeping no row: a bad file costs one
read and no memory for its rows.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterator
from typing import Literal, overload

import numpy as np
import pyarrow as pa

from .._errors import InputError, Problem, ValidationError
from ._source import BOM, Source
from ._trec_bytes import line_problem
from ._trec_format import FLOAT_RE, INT64_MAX, INT64_MIN, INT_RE, NONFINITE_RE, Layout, Parsed, warn

MAX_PROBLEMS = 20


class Problems:
    """Collects problems; keeps the first MAX_PROBLEMS and counts the rest."""

    def __init__(self, src: Source) -> None:
        self.src = src
        self.kept: list[Problem] = []
        self.count = 0

    def add(self, line: int, message: str, field: str | None = None) -> None:
        self.count += 1
        if len(self.kept) < MAX_PROBLEMS:
            self.kept.append(Problem(message, self.src.display, line, field))

    def raise_if_any(self) -> None:
        if not self.count:
            return
        if self.count == 1:
            p = self.kept[0]
            raise InputError(p.message, path=p.path, line=p.line, field=p.field)
        problems = list(self.kept)
        if self.count > len(problems):
            problems.append(Problem(f"... and {self.count - len(problems)} more problem(s)"))
        raise ValidationError(problems, what=self.src.display)


def _text(token: bytes) -> str:
    return token.decode("utf-8", "replace")


def physical_lines(src: Source) -> Iterator[bytes]:
    """The file's lines, streamed, each with its ``\n`` (only ``\n`` ends a line, as in
    trec_eval; a ``\r`` before it is a blank); the leading byte order mark removed."""
    try:
        with src.open_binary() as f:
            first = True
            for chunk in f:  # chunks end at "\n"
                if first:
                    chunk = chunk.removeprefix(BOM)
                    first = False
                yield chunk
    except (OSError, EOFError) as exc:
        raise src.error(f"cannot read the file: {exc}") from None


@overload
def parse_lines(src: Source, layout: Layout) -> Parsed: ...
@overload
def parse_lines(
    src: Source,
    layout: Layout,
    *,
    keep: Literal[False],
    numbered_lines: Iterator[tuple[int, bytes]] | None = None,
    skipped: Callable[[], tuple[int, int]] | None = None,
) -> None: ...


def parse_lines(
    src: Source,
    layout: Layout,
    *,
    keep: bool = True,
    numbered_lines: Iterator[tuple[int, bytes]] | None = None,
    skipped: Callable[[], tuple[int, int]] | None = None,
) -> Parsed | None:
    """Parse ``src`` line by line; raise InputError/ValidationError naming every bad line.

    ``keep=False`` checks the file without keeping its rows (and returns None).
    ``numbered_lines`` replaces the file's numbered lines (``_trec_check`` leaves out blocks it
    vouched for); ``skipped`` then gives the (rows, bytes) it left out, for the empty-file
    checks."""
    width = layout.width
    i_doc, i_val = layout.index("doc"), layout.index(layout.value)
    is_score = layout.value == "score"
    problems = Problems(src)
    qids: list[bytes] = []
    docs: list[bytes] = []
    values = array("d" if is_score else "q")
    lines = array("q")
    n_bytes = 0
    n_rows = 0
    extra_lines: list[int] = []
    numbered = enumerate(physical_lines(src), start=1) if numbered_lines is None else numbered_lines

    for lineno, raw in numbered:
        n_bytes += len(raw)
        bad_bytes = line_problem(raw)
        if bad_bytes is not None:
            problems.add(lineno, bad_bytes)
            continue
        toks = raw.split()
        if not toks or toks[0].startswith(b"#"):
            continue
        n = len(toks)
        if n < width or (n > width and not layout.allow_extra):
            problems.add(lineno, _count_message(layout, n))
            continue
        if n > width:
            shifted = _shifted(toks, layout)
            if shifted is not None:
                problems.add(lineno, shifted)
                continue
            extra_lines.append(lineno)
        qid, doc = toks[0], toks[i_doc]
        try:
            qid.decode("utf-8")
            doc.decode("utf-8")
        except UnicodeDecodeError:
            problems.add(lineno, "the line is not valid UTF-8 text")
            continue
        token = toks[i_val]
        value = _score(token) if is_score else _grade(token)
        if isinstance(value, str):
            problems.add(lineno, value, layout.value)
            continue
        n_rows += 1
        if not keep or problems.count:  # a bad file: count its problems, keep no more rows
            continue
        qids.append(qid)
        docs.append(doc)
        values.append(value)  # type: ignore[arg-type]  # "d" or "q" array by layout
        lines.append(lineno)

    problems.raise_if_any()
    if skipped is not None:
        rows_skipped, bytes_skipped = skipped()
        n_rows, n_bytes = n_rows + rows_skipped, n_bytes + bytes_skipped
    if not n_rows:
        if n_bytes == 0:
            raise src.error("the file is empty")
        raise src.error("the file has no data lines (only comments or blank lines)")
    if not keep:
        return None
    if extra_lines:
        warn(
            f"{src.display}:{extra_lines[0]}: {len(extra_lines)} line(s) have text after the "
            f"'{layout.names[-1]}' field; it was ignored (as trec_eval does)"
        )
    line_arr = np.frombuffer(lines, dtype=np.int64)
    return Parsed(
        qid=pa.array(qids, type=pa.binary()).cast(pa.string()),  # UTF-8 checked above
        doc=pa.array(docs, type=pa.binary()).cast(pa.string()),
        value=np.frombuffer(values, dtype=np.float64 if is_score else np.int64).copy(),
        line_of=lambda rows: line_arr[rows],
    )


def _count_message(layout: Layout, n: int) -> str:
    """Too few fields, or too many where the format allows no trailing text."""
    message = f"expected {layout.width} fields ({layout.spelled}), found {n}"
    if n > layout.width:
        message += "; an id cannot hold a blank (a space splits it and shifts the later columns)"
    return message


def _shifted(toks: list[bytes], layout: Layout) -> str | None:
    """Why a run line with text after its tag cannot be trusted, or None.

    trec_eval ignores that text, but an id holding a space makes the same shape: every later
    column moves one to the right, so the rank field holds the rest of the id and the tag holds
    the score. Trailing text is accepted only when the rank is an integer and the tag is not a
    number; otherwise the score would be read from the wrong column, silently."""
    rank, tag = toks[layout.index("rank")], toks[layout.names.index("tag")]
    if INT_RE.fullmatch(rank) and not (FLOAT_RE.fullmatch(tag) or NONFINITE_RE.fullmatch(tag)):
        return None
    why = (
        f"the rank '{_text(rank)}' is not an integer"
        if not INT_RE.fullmatch(rank)
        else f"the tag '{_text(tag)}' is a number"
    )
    return (
        f"expected {layout.width} fields ({layout.spelled}), found {len(toks)}, and {why}: the "
        "columns look shifted (an id holding a space?); ids cannot hold blanks. Text after the "
        "tag is ignored only when the rank is an integer and the tag is not a number"
    )


def _score(token: bytes) -> float | str:
    """The score as float64 (correctly rounded, as pyarrow), or a problem message."""
    if FLOAT_RE.fullmatch(token):
        x = float(token)
        if math.isfinite(x):
            return x
        return f"score '{_text(token)}' is too large for a 64-bit float"
    if NONFINITE_RE.fullmatch(token):
        return f"score '{_text(token)}' is NaN or infinite; scores must be finite numbers"
    return f"score '{_text(token)}' is not a number"


def _grade(token: bytes) -> int | str:
    """The relevance grade as int, or a problem message."""
    if INT_RE.fullmatch(token):
        g = int(token)
        if INT64_MIN <= g <= INT64_MAX:
            return g
        return f"rel '{_text(token)}' is out of range for a 64-bit integer"
    return f"rel '{_text(token)}' is not an integer grade"
