"""The two TREC text formats, described once for every parser.

- qrels: ``qid iter doc rel`` - exactly 4 whitespace-separated fields; ``rel`` an integer grade.
- run: ``qid Q0 doc rank score tag`` - 6 fields; ``score`` a decimal number (higher = better).
  Text after the 6th field is ignored with a warning, as trec_eval ignores it ("reserved for
  future expansion"), but only on a line whose columns cannot have shifted: its rank is an
  integer and its tag is not a number. Otherwise it is an error: an id holding a space moves
  every later column one to the right (the rank read as the score, the score as the tag).

Fields are separated by runs of blanks (space, tab, vertical tab, form feed). Blank lines and
lines whose first non-blank character is ``#`` are skipped (a ``#`` inside a field, as in MS
MARCO v2.1 ids, is data). Line numbers are 1-based physical lines: ``\\n`` ends a line (``\\r\\n``
too); NUL bytes, a byte order mark after the file's start and a ``\\r`` not followed by ``\\n``
are refused (``_trec_bytes``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa

#: A decimal number as pyarrow's parser accepts it (no hex, no ``_``, no surrounding blanks).
FLOAT_RE = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: The words pyarrow and Python read as NaN or infinity.
NONFINITE_RE = re.compile(rb"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)
#: An integer grade (trec_eval reads it with atol; we refuse anything atol would truncate).
INT_RE = re.compile(rb"[+-]?[0-9]+")

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class Layout:
    """Column layout of one TREC format."""

    kind: Literal["run", "qrels"]
    names: tuple[str, ...]
    value: str  # name of the numeric column ("score" or "rel")
    allow_extra: bool  # trailing text after the last field is ignored (with a warning)

    @property
    def width(self) -> int:
        return len(self.names)

    @property
    def spelled(self) -> str:
        return " ".join("Q0" if n == "iter" and self.kind == "run" else n for n in self.names)

    def index(self, name: str) -> int:
        return self.names.index(name)


RUN = Layout("run", ("qid", "iter", "doc", "rank", "score", "tag"), "score", allow_extra=True)
QRELS = Layout("qrels", ("qid", "iter", "doc", "rel"), "rel", allow_extra=False)

LineOf = Callable[[np.ndarray], np.ndarray]


class Unclean(Exception):
    """A fast pass cannot vouch for this input (or lost its line numbers); use the slow pass.

    ``parse_error``: pyarrow itself refused a row (a field count or a number), so another
    pyarrow pass over the same bytes with the same delimiter would refuse it too."""

    def __init__(self, message: str = "", *, parse_error: bool = False) -> None:
        super().__init__(message)
        self.parse_error = parse_error


@dataclass
class Parsed:
    """Columns read from a file, before duplicate handling.

    ``line_of`` maps row indices to physical line numbers, or is None when the cheap parse lost
    the mapping (then any problem sends the file through the line-by-line pass for lines).
    ``maybe_duplicates`` is False only when a cheap check proved every (qid, doc) pair unique.
    """

    qid: pa.Array
    doc: pa.Array
    value: np.ndarray
    line_of: LineOf | None
    maybe_duplicates: bool = True
    doc_hashes: np.ndarray | None = None  # string_hashes of each doc, when computed for free
    qid_starts: np.ndarray | None = None  # rows starting a run of equal qids (queries contiguous)


def rows_are_lines(rows: np.ndarray) -> np.ndarray:
    """Row i sits on line i + 1 (a file without comments or blank lines)."""
    return np.asarray(rows, dtype=np.int64) + 1


def warn(message: str) -> None:
    """Issue a RagmeterWarning attributed to the first caller outside the ragmeter package."""
    import sys
    import warnings
    from types import FrameType

    from .._errors import RagmeterWarning

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    level = 2  # stacklevel 2 is the caller of warn()
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, RagmeterWarning, stacklevel=level)


def describe_nonfinite(x: float) -> str:
    if np.isnan(x):
        return "NaN"
    return "infinite (inf)" if x > 0 else "infinite (-inf)"
