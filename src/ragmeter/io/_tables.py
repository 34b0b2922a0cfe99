"""Columnar in-memory forms of labels and runs, shared by every reader and the metric engine."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._errors import InputError, UsageError


def flat(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous array (chunked arrays are combined)."""
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def dictionary_codes(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """(int64 index of each row's value in the dictionary, the dictionary of distinct values)."""
    enc = pc.dictionary_encode(flat(arr))
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64), enc.dictionary


@dataclass(frozen=True, eq=False)
class ReadHints:
    """What a reader learnt about its columns for free, kept so the engine need not recompute it.

    ``doc_hashes``: ``string_hashes`` of every item id (the reader hashes them to find duplicate
    pairs); ``qid_starts``: the rows where a run of equal query ids begins, when each query's rows
    are contiguous (every run a different query), else None. They describe the exact arrays
    ``qid`` and ``doc`` (compared by identity), so a Run or Qrels rebuilt with other columns
    (``dataclasses.replace``, a ``take``) never uses hints that are not its own.
    """

    qid: pa.Array
    doc: pa.Array
    doc_hashes: np.ndarray | None = None
    qid_starts: np.ndarray | None = None


def doc_hashes_of(table: Qrels | Run) -> np.ndarray | None:
    """The reader's per-row item id hashes of ``table``, if they describe its ``doc`` column."""
    h = table.hints
    return h.doc_hashes if h is not None and h.doc is table.doc else None


def qid_starts_of(table: Qrels | Run) -> np.ndarray | None:
    """The reader's query-run starts of ``table``, if they describe its ``qid`` column."""
    h = table.hints
    return h.qid_starts if h is not None and h.qid is table.qid else None


def _check_columns(kind: str, source: str, qid: object, doc: object, values: object) -> None:
    """Aligned columns and ids that are strings, none missing: what every reader guarantees,
    checked here for tables built by hand (a missing id would otherwise be scored as garbage)."""
    for name, col in (("qid", qid), ("doc", doc)):
        if not isinstance(col, pa.Array | pa.ChunkedArray) or not (
            pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
        ):
            raise UsageError(
                f"{kind}.{name} must be a pyarrow string array (pa.array(list_of_str)), got "
                f"{getattr(col, 'type', type(col).__name__)}"
            )
        if col.null_count:
            row = int(pc.index(pc.is_null(col), True).as_py())
            raise InputError(f"row {row + 1}: {name} is missing", path=source, field=name)
    n = (len(qid), len(doc), len(values))  # type: ignore[arg-type]
    if len(set(n)) > 1:
        raise UsageError(f"{kind}: qid, doc and values must be as long as each other, got {n}")


def _check_empty_queries(kind: str, ids: object) -> None:
    if not isinstance(ids, tuple) or not all(isinstance(q, str) and q for q in ids):
        raise UsageError(f"{kind}.empty_queries must be a tuple of query ids, got {ids!r}")


@dataclass(frozen=True)
class Qrels:
    """Relevance judgements: one row per (query, item) with an integer grade (0 = judged
    non-relevant).

    ``qid`` and ``doc`` are pyarrow string arrays, ``rel`` an int64 numpy array; no duplicate
    (qid, doc) pairs (readers enforce it).
    """

    qid: pa.Array
    doc: pa.Array
    rel: np.ndarray
    source: str = "<qrels>"
    hints: ReadHints | None = field(default=None, repr=False, compare=False)
    #: queries labelled with no judgement at all (``{qid: {}}`` in a dict; a file cannot say
    #: it): scored as queries with no relevant item, as a query with only grade-0 lines is
    empty_queries: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_columns("Qrels", self.source, self.qid, self.doc, self.rel)
        _check_empty_queries("Qrels", self.empty_queries)

    def __len__(self) -> int:
        return len(self.rel)


@dataclass(frozen=True)
class Run:
    """A ranked run: one row per (query, item) with a float64 score (higher = better).

    Rows need not be sorted; the engine orders them (score desc, then item id desc, as trec_eval)
    unless asked to keep the given order, in which case row order within a query is the ranking.
    No duplicate (qid, doc) pairs (readers enforce it).
    """

    qid: pa.Array
    doc: pa.Array
    score: np.ndarray
    name: str = "<run>"
    hints: ReadHints | None = field(default=None, repr=False, compare=False)
    #: queries the run answers with an empty ranking (``{qid: {}}`` in a dict; a file cannot
    #: say it): in the run, retrieving nothing, so scored 0 and never "missing"
    empty_queries: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_columns("Run", self.name, self.qid, self.doc, self.score)
        _check_empty_queries("Run", self.empty_queries)

    def __len__(self) -> int:
        return len(self.score)
