"""Read and write TREC qrels and runs (plain or gzip), columnar and exact.

Formats (fields separated by spaces or tabs; ``#`` comment lines and blank lines skipped):

- qrels: ``qid iter doc rel`` - ``rel`` an integer grade (0 = judged non-relevant);
- run: ``qid Q0 doc rank score tag`` - ``score`` a decimal number, higher = better. The rank and
  tag fields are not used: the ranking comes from the scores (score descending, then doc id
  descending, as trec_eval) or, with ``ties="given"`` in the engine, from the row order. Text
  after the 6th field is ignored with a warning (trec_eval ignores it too) when the line's rank
  is an integer and its tag is not a number; otherwise the columns look shifted (an id holding a
  space) and the line is an error.

NUL bytes, a byte order mark after the file's start and a ``\\r`` not followed by ``\\n`` are
errors naming the line (trec_eval would read them differently from other tools; see
docs/formats.md).

Scores keep every digit of float64 (pyarrow's parser rounds correctly). Bad input raises
InputError naming the file, the 1-based line and the field; it never passes silently.
A file is gzip when it starts with gzip's magic bytes, whatever its name.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._errors import InputError
from ._trec_read import read_qrels, read_run
from ._writing import ranked_rows, sorted_pairs, write_lines
from .convert import to_qrels, to_run

__all__ = ["read_qrels", "read_run", "write_qrels", "write_run"]


# -- writers ------------------------------------------------------------------------------------
def write_run(run: Any, path: str | os.PathLike[str], *, tag: str | None = None) -> None:
    """Write a run as TREC text: ``qid Q0 doc rank score tag``, gzip when ``path`` ends in .gz.

    Queries in byte order of their ids; within a query score descending, then doc id descending
    (the engine's order), ranked 1, 2, ... Scores are written in the shortest form that reads
    back to the same float64. ``run`` may be anything ``ragmeter.io.convert.to_run`` accepts;
    ``tag`` defaults to the run's name without folders and blanks (``ragmeter`` if unnamed).
    """
    r = to_run(run)
    _check_writable(r.qid, r.doc, path)
    tag = _default_tag(r.name) if tag is None else tag
    if not tag or any(c.isspace() for c in tag):
        raise InputError(f"the run tag must be one word, got {tag!r}", path=os.fspath(path))
    order, ranks = ranked_rows(r, path)
    rank_of = np.empty(len(order), dtype=np.int64)
    rank_of[order] = ranks
    rank_text = pc.cast(pa.array(rank_of), pa.string())
    score_text = pc.cast(pa.array(np.asarray(r.score, dtype=np.float64)), pa.string())
    write_lines(
        path,
        order,
        [
            lambda rows: r.qid.take(rows),
            " Q0 ",
            lambda rows: r.doc.take(rows),
            " ",
            lambda rows: rank_text.take(rows),
            " ",
            lambda rows: score_text.take(rows),
            f" {tag}\n",
        ],
    )


def write_qrels(qrels: Any, path: str | os.PathLike[str]) -> None:
    """Write qrels as TREC text ``qid 0 doc rel``, sorted by qid then doc (byte order).

    ``qrels`` may be anything ``ragmeter.io.convert.to_qrels`` accepts; gzip when ``path`` ends
    in .gz.
    """
    q = to_qrels(qrels)
    _check_writable(q.qid, q.doc, path)
    rel_text = pc.cast(pa.array(np.asarray(q.rel, dtype=np.int64)), pa.string())
    write_lines(
        path,
        sorted_pairs(q.qid, q.doc),
        [
            lambda rows: q.qid.take(rows),
            " 0 ",
            lambda rows: q.doc.take(rows),
            " ",
            lambda rows: rel_text.take(rows),
            "\n",
        ],
    )


def _check_writable(qid: pa.Array, doc: pa.Array, path: str | os.PathLike[str]) -> None:
    """TREC text cannot hold empty ids, ids with blanks, or qids starting with ``#`` (the line
    would read back as a comment): refuse them before writing."""
    for field, arr in (("qid", qid), ("doc", doc)):
        bad = pc.or_(
            pc.equal(pc.binary_length(arr), 0), pc.match_substring_regex(arr, "[\t\n\v\f\r ]")
        )
        if field == "qid":
            bad = pc.or_(bad, pc.starts_with(arr, "#"))
        hits = np.flatnonzero(bad.to_numpy(zero_copy_only=False))
        if len(hits):
            raise InputError(
                f"{field} {arr[int(hits[0])].as_py()!r} is empty, contains whitespace or starts "
                "a comment; TREC text cannot hold it (write JSONL instead)",
                path=os.fspath(path),
                field=field,
            )


def _default_tag(name: str) -> str:
    base = name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    base = "_".join(base.split())
    return base if base and not base.startswith("<") else "ragmeter"
