"""A run's ranked lists as columns: what ``run.trec`` holds and what the store keeps per run.

Everything here is column-wise (pyarrow / numpy): a run of 100,000 questions at depth 100 is
10M rows, and one Python object per row would cost tens of seconds and gigabytes. The ranking
is the metric engine's (:func:`ragmeter.metrics._ranking.rank_run` with trec_eval's tie rule:
score descending as a 32-bit float, then item id descending), so the rank column written or
stored always agrees with the rank every metric saw.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..io import Run, flat

#: the ranked table's columns and types (``VariantResult.ranked_table``, the store's ranked lists)
RANKED_SCHEMA = pa.schema(
    [
        ("qid", pa.string()),
        ("rank", pa.int32()),
        ("item", pa.string()),
        ("doc", pa.string()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("score", pa.float64()),
    ]
)


class RankedRows(NamedTuple):
    """A run's rows in ranked order: queries in byte order of their ids, each best first."""

    qid: pa.Array  # string, one per row
    item: pa.Array  # string: the run's item (chunk or document) ids
    rank: np.ndarray  # int64, 1-based within each query
    score: np.ndarray  # float64
    rows: np.ndarray  # int64: the row of ``run`` each ranked row came from


def ranked_rows(run: Run) -> RankedRows:
    """The run ranked exactly as the metric engine ranks it (see the module docstring)."""
    from ..metrics import rank_run

    ranked = rank_run(run, ties="trec")
    rows = ranked.rows.astype(np.int64, copy=False)
    take = pa.array(rows, pa.int64())
    rank = np.arange(1, rows.size + 1, dtype=np.int64)
    rank -= np.repeat(ranked.starts[:-1], ranked.lengths)
    score = np.asarray(run.score, dtype=np.float64)[rows]
    return RankedRows(flat(run.qid).take(take), flat(run.doc).take(take), rank, score, rows)


def ranked_table(run: Run, chunking: Any = None, *, documents: bool = False) -> pa.Table:
    """The ranked lists of ``run`` as a table with :data:`RANKED_SCHEMA`.

    * a chunk run with its ``chunking`` (``documents=False``): ``item`` is the chunk id and
      ``doc``/``start``/``end`` the chunk's document and character span (null for an id that is
      not a chunk of ``chunking``; all null when ``chunking`` is None);
    * ``documents=True`` with a ``chunking``: the chunk run rolled up to documents as document
      level scoring ranks it (:func:`ragmeter.labels.rollup_run`); ``item`` and ``doc`` are the
      document id, ``start``/``end`` null (the item is the whole document);
    * ``documents=True`` without a chunking: the run's items already are document ids.
    """
    if documents and chunking is not None:
        from ..labels import rollup_run

        run = rollup_run(run, chunking)
    r = ranked_rows(run)
    n = len(r.rows)
    item = _as_string(r.item)
    if documents:
        doc = item
        start = end = pa.nulls(n, pa.int64())
    elif chunking is not None:
        pos = chunking.rows_of(item)
        where = pa.array(pos, pa.int64(), mask=pos < 0)  # null for an unknown id
        doc = pa.array(chunking.doc, pa.string()).take(where)
        start = pa.array(chunking.start, pa.int64()).take(where)
        end = pa.array(chunking.end, pa.int64()).take(where)
    else:
        doc = pa.nulls(n, pa.string())
        start = end = pa.nulls(n, pa.int64())
    return pa.Table.from_arrays(
        [
            _as_string(r.qid),
            pa.array(r.rank.astype(np.int32), pa.int32()),
            item,
            doc,
            start,
            end,
            pa.array(r.score, pa.float64()),
        ],
        schema=RANKED_SCHEMA,
    )


def _as_string(arr: pa.Array) -> pa.Array:
    return arr if arr.type == pa.string() else arr.cast(pa.string())


# -- text forms ----------------------------------------------------------------------------------
def repr_strings(values: np.ndarray) -> pa.Array:
    """``repr(float(x))`` of every value, as a pyarrow string array, without a Python call per
    value: Arrow's shortest round-trip text, with ``.0`` added to integral values; the few
    values Arrow writes in another notation (exponents, magnitudes below 1e-4, nan/inf) go
    through Python's ``repr`` one by one."""
    x = np.asarray(values, dtype=np.float64)
    text = pc.cast(pa.array(x, pa.float64()), pa.string())
    if not len(x):
        return text
    dot = pc.match_substring(text, ".").to_numpy(zero_copy_only=False)
    exp = pc.match_substring(text, "e").to_numpy(zero_copy_only=False)
    finite = np.isfinite(x)
    whole = finite & ~dot & ~exp  # "12" -> "12.0", "-0" -> "-0.0"
    if whole.any():
        text = pc.if_else(pa.array(whole), pc.binary_join_element_wise(text, ".0", ""), text)
    odd = np.flatnonzero(exp | ~finite | ((np.abs(x) < 1e-4) & (x != 0)))
    if odd.size:
        fixed = pa.array([repr(v) for v in x[odd].tolist()], pa.string())
        index = np.arange(len(x), dtype=np.int64)
        index[odd] = len(x) + np.arange(odd.size)
        text = pa.concat_arrays([text, fixed]).take(pa.array(index))
    return text


@functools.cache
def _space_class() -> str:
    """An RE2 character class of exactly the characters ``str.isspace`` accepts (what Python's
    ``\\s`` matches in a str pattern); every one lies below U+3001."""
    chars = [c for c in map(chr, range(0x3001)) if c.isspace()]
    return "[" + "".join(f"\\x{{{ord(c):x}}}" for c in chars) + "]"


def first_with_space(*arrays: pa.Array) -> str | None:
    """The first distinct value, of the first array that has one, containing whitespace."""
    for arr in arrays:
        distinct = pc.unique(arr)
        hits = np.flatnonzero(
            pc.match_substring_regex(distinct, _space_class()).to_numpy(zero_copy_only=False)
        )
        if hits.size:
            return str(distinct[int(hits[0])].as_py())
    return None
