"""Duplicate (qid, doc) pairs: found exactly, then kept, merged or refused.

- runs: a document listed twice for one query would be counted twice by every metric. With
  ``duplicates="best"`` the row with the highest score is kept (the first such row on a tie) and a
  RagmeterWarning names the first repeated line and how many rows were dropped; with
  ``duplicates="error"`` the first repeat is an InputError.
- qrels: two judgements of one (qid, doc) must agree. Identical repeats are merged with a warning;
  different grades are an error listing every conflict.

Rows keep their original order (``ties="given"`` reads the ranking from it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa

from .._errors import InputError, Problem, UsageError, ValidationError
from ._tables import dictionary_codes
from ._trec_arrays import string_offsets as _offsets
from ._trec_format import LineOf, Unclean, warn

Duplicates = Literal["best", "error"]
MAX_LISTED = 20


@dataclass(frozen=True)
class Table:
    """Three aligned columns: qid, doc (pyarrow strings) and a numpy value column."""

    qid: pa.Array
    doc: pa.Array
    value: np.ndarray

    def take(self, rows: np.ndarray) -> Table:
        idx = pa.array(rows, type=pa.int64())
        return Table(self.qid.take(idx), self.doc.take(idx), self.value[rows])


def _codes(arr: pa.Array) -> tuple[np.ndarray, int]:
    codes, dictionary = dictionary_codes(arr)
    return codes, len(dictionary)


def pair_keys(qid: pa.Array, doc: pa.Array) -> np.ndarray:
    """One int64 per row, equal exactly when (qid, doc) is equal."""
    q, _ = _codes(qid)
    d, nd = _codes(doc)
    return q * max(nd, 1) + d


_MULT = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio (odd)
_FMIX1 = np.uint64(0xFF51AFD7ED558CCD)  # MurmurHash3's 64-bit finaliser constants
_FMIX2 = np.uint64(0xC4CEB9FE1A85EC53)


def _fmix(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's finaliser, in place: every input bit reaches every output bit."""
    h ^= h >> np.uint64(33)
    h *= _FMIX1
    h ^= h >> np.uint64(33)
    h *= _FMIX2
    h ^= h >> np.uint64(33)
    return h


def string_hashes(arr: pa.Array, out: np.ndarray | None = None) -> np.ndarray | None:
    """One uint64 per string, equal for equal strings (different strings rarely collide);
    written into ``out`` (a uint64 array as long as ``arr``) when given.

    Each string is right-padded with NUL bytes to ``W`` bytes (the longest, rounded up to 8) and
    read as little-endian words ``w_0..w_m``; ``h = xor_j (w_j * M_j) (mod 2**64)`` with odd
    constants ``M_j``. An all-NUL word adds nothing, so the hash does not depend on ``W`` and
    hashes of different blocks agree; a string of at most 8 bytes hashes without collisions.
    Strings that differ only in trailing NULs collide, as may others: callers treat equal hashes
    as "maybe equal". None if the padding did not give ``W`` bytes per string.
    """
    import pyarrow.compute as pc

    n = len(arr)
    if n == 0:
        return np.empty(0, dtype=np.uint64) if out is None else out
    width = max(8, -(-int(pc.max(pc.binary_length(arr)).as_py()) // 8) * 8)
    words = padded_words(arr, width)
    return None if words is None else word_hashes(words, out)


def padded_words(arr: pa.Array, width: int) -> np.ndarray | None:
    """``arr`` (strings of at most ``width`` bytes, ``width`` a multiple of 8) as an
    (n, width / 8) uint64 matrix of NUL-padded little-endian words; None when the padding did
    not give ``width`` bytes per string."""
    import pyarrow.compute as pc

    n = len(arr)
    padded = pc.ascii_rpad(arr, width=width, padding="\x00")  # pads bytes, ASCII or not
    p_off = _offsets(padded)
    if int(p_off[-1]) - int(p_off[0]) != n * width:
        return None
    return np.frombuffer(
        padded.buffers()[2], dtype=np.uint64, count=n * width // 8, offset=int(p_off[0])
    ).reshape(n, width // 8)


def word_hashes(words: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``xor_j (w_j * M_j)`` of each row of :func:`padded_words` (see :func:`string_hashes`),
    into ``out`` when given."""
    h = np.multiply(words[:, 0], _MULT, out=out)
    for j in range(1, words.shape[1]):
        h ^= words[:, j] * np.uint64((0x9E3779B97F4A7C15 * (2 * j + 1)) % 2**64 | 1)
    return h


def mix(h: np.ndarray) -> np.ndarray:
    """``string_hashes`` scrambled in place (MurmurHash3's finaliser, one-to-one): the qid side of
    :func:`combine_hashes` must be, or structured ids (``q1``..``q999999`` against ``J0``..) xor
    into equal pair hashes far more often than chance."""
    return _fmix(h)


def combine_hashes(qid_hashes: np.ndarray, doc_hashes: np.ndarray) -> np.ndarray:
    """Pair hashes ``fmix(hq * 0x9E3779B97F4A7C15 xor hd)``, in place in ``qid_hashes``, which
    must be :func:`mix`-ed string hashes."""
    qid_hashes *= _MULT
    qid_hashes ^= doc_hashes
    return _fmix(qid_hashes)


def run_pair_keys(
    query_hashes: np.ndarray, lengths: np.ndarray, doc_hashes: np.ndarray
) -> np.ndarray:
    """Pair keys of rows grouped in runs of equal qids, equal exactly when their
    :func:`combine_hashes` are (the finaliser there is one-to-one, so it decides no equality):
    ``hq * 0x9E3779B97F4A7C15 xor hd``, the product taken once per run rather than per row.
    ``query_hashes``: the :func:`mix`-ed hash of each run's qid (left unchanged); ``lengths``:
    each run's row count. For sorting and comparing only: the keys are not well mixed."""
    keys = np.repeat(query_hashes * _MULT, lengths)
    keys ^= doc_hashes
    return keys


def pair_hashes(qid: pa.Array, doc: pa.Array) -> np.ndarray | None:
    """One uint64 per row, equal whenever (qid, doc) is equal (``combine_hashes`` of the
    ``string_hashes``); None when they cannot be computed."""
    hq = string_hashes(qid)
    hd = string_hashes(doc) if hq is not None else None
    if hq is None or hd is None:
        return None
    return combine_hashes(mix(hq), hd)


#: how the Python API keeps the best-scored row (the command line says ``--duplicates best``)
KEEP_BEST = "pass duplicates='best'"


class DuplicateRowsError(InputError):
    """A run repeats a (query, document) pair under ``duplicates="error"``. The message ends
    with how to keep the best-scored row in the caller's own spelling: the API's by default,
    :meth:`spelled` gives the command line's."""

    def __init__(
        self, what: str, *, path: str | None, line: int | None, fix: str = KEEP_BEST
    ) -> None:
        self.what = what
        super().__init__(
            f"{what}. Remove them, or {fix} to keep the best-scored row",
            path=path,
            line=line,
            field="doc",
        )

    def spelled(self, fix: str) -> DuplicateRowsError:
        """The same error, suggesting ``fix`` (e.g. ``give --duplicates best``)."""
        return DuplicateRowsError(self.what, path=self.path, line=self.line, fix=fix)


def check_policy(duplicates: str) -> None:
    if duplicates not in ("best", "error"):
        raise UsageError(f"duplicates must be 'best' or 'error', got '{duplicates}'")


def dedupe_run(
    t: Table, *, policy: str, source: str, line_of: LineOf | None, unit: str = "line"
) -> Table:
    """Apply the duplicate rule for runs (see module doc); returns ``t`` when nothing repeats."""
    check_policy(policy)
    key = pair_keys(t.qid, t.doc)
    order = np.argsort(key, kind="stable")
    sk = key[order]
    same = sk[1:] == sk[:-1]
    if not same.any():
        return t
    if line_of is None:
        raise Unclean("duplicates need line numbers")
    repeats = order[1:][same]  # each a later row of a pair seen before
    first = int(repeats.min())
    earlier = int(order[np.searchsorted(sk, key[first])])  # stable sort: first occurrence
    line, line0 = (int(x) for x in line_of(np.array([first, earlier])))
    what = f"document '{t.doc[first].as_py()}' in query '{t.qid[first].as_py()}'"
    if policy == "error":
        raise DuplicateRowsError(
            f"{what} is listed more than once (also at {unit} {line0}); {len(repeats)} repeated "
            "row(s) in all",
            path=source,
            line=line,
        )
    rows = np.arange(len(key))
    best = np.lexsort((rows, -t.value, key))
    kb = key[best]
    keep = np.sort(best[np.concatenate(([True], kb[1:] != kb[:-1]))])
    warn(
        f"{source}:{line}: {len(repeats)} duplicate row(s) - the same document twice in one "
        f"query (first: {what}, also at {unit} {line0}); kept the best-scored row of each"
    )
    return t.take(keep)


def dedupe_qrels(t: Table, *, source: str, line_of: LineOf | None, unit: str = "line") -> Table:
    """Merge identical repeated judgements (with a warning); refuse conflicting ones."""
    key = pair_keys(t.qid, t.doc)
    order = np.lexsort((np.arange(len(key)), t.value, key))  # by pair, then grade, then row
    sk = key[order]
    same = sk[1:] == sk[:-1]
    if not same.any():
        return t
    if line_of is None:
        raise Unclean("duplicates need line numbers")
    sv = t.value[order]
    conflict = same & (sv[1:] != sv[:-1])
    if conflict.any():
        problems = []
        pos = np.flatnonzero(conflict)
        for p in pos[:MAX_LISTED].tolist():
            a, b = int(order[p]), int(order[p + 1])
            la, lb = (int(x) for x in line_of(np.array([a, b])))
            problems.append(
                Problem(
                    f"document '{t.doc[b].as_py()}' in query '{t.qid[b].as_py()}' is judged twice "
                    f"with different grades ({t.value[a]} at {unit} {la}, "
                    f"{t.value[b]} at {unit} {lb})",
                    source,
                    max(la, lb),
                    "rel",
                )
            )
        if len(pos) > MAX_LISTED:
            problems.append(Problem(f"... and {len(pos) - MAX_LISTED} more conflict(s)"))
        if len(problems) == 1:
            p0 = problems[0]
            raise InputError(p0.message, path=p0.path, line=p0.line, field=p0.field)
        raise ValidationError(problems, what=source)
    first_of_group = np.concatenate(([True], ~same))
    keep = np.sort(order[first_of_group])
    dropped = np.setdiff1d(np.arange(len(key)), keep)
    line = int(line_of(dropped[:1])[0])
    warn(
        f"{source}:{line}: {len(dropped)} repeated judgement(s) with the same grade; kept one "
        "of each"
    )
    return t.take(keep)
