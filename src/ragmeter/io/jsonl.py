"""JSON Lines runs and qrels: one JSON object per line (plain or gzip).

- run: ``{"qid": "q1", "doc": "d7", "score": 12.5}``, optionally ``"rank": 1`` (a positive
  integer, checked but not used: the ranking comes from the scores, or from the row order with
  ``ties="given"``);
- qrels: ``{"qid": "q1", "doc": "d7", "rel": 2}``.

Other keys are ignored, blank lines skipped. Ids are JSON strings (integers are accepted and
written in decimal); scores finite numbers kept as float64 exactly; grades integers.

Reading is columnar (``pyarrow.json``) when the file is clean; any problem re-reads it line by
line through ragmeter's one JSON Lines reader, so the error names the line and the field (and
an encoding error, a byte order mark mid-file, a NUL byte or a repeated key is reported as for
every other JSON file).
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._jsonl_read import (
    QRELS_FIELDS,
    RUN_FIELDS,
    Field,
    read_qrels_jsonl,
    read_records,
    read_run_jsonl,
)
from ._writing import ranked_rows, sorted_pairs, write_lines
from .convert import to_qrels, to_run

__all__ = [
    "QRELS_FIELDS",
    "RUN_FIELDS",
    "Field",
    "read_qrels_jsonl",
    "read_records",
    "read_run_jsonl",
    "write_qrels_jsonl",
    "write_run_jsonl",
]


# -- writers ------------------------------------------------------------------------------------
def write_run_jsonl(run: Any, path: str | os.PathLike[str]) -> None:
    """Write a run as JSONL ``{"qid", "doc", "score", "rank"}`` in the engine's order (queries
    in byte order; score descending, then doc id descending), gzip when ``path`` ends in .gz.
    Scores are written in the shortest form that reads back to the same float64."""
    r = to_run(run)
    order, ranks = ranked_rows(r, path)
    rank_of = np.empty(len(order), dtype=np.int64)
    rank_of[order] = ranks
    score = pa.array(np.asarray(r.score, dtype=np.float64))
    write_lines(
        path,
        order,
        [
            '{"qid": ',
            lambda rows: _json_strings(r.qid.take(rows)),
            ', "doc": ',
            lambda rows: _json_strings(r.doc.take(rows)),
            ', "score": ',
            lambda rows: pc.cast(score.take(rows), pa.string()),
            ', "rank": ',
            lambda rows: pc.cast(pa.array(rank_of).take(rows), pa.string()),
            "}\n",
        ],
    )


def write_qrels_jsonl(qrels: Any, path: str | os.PathLike[str]) -> None:
    """Write qrels as JSONL ``{"qid", "doc", "rel"}`` sorted by qid then doc (byte order)."""
    q = to_qrels(qrels)
    rel = pa.array(np.asarray(q.rel, dtype=np.int64))
    write_lines(
        path,
        sorted_pairs(q.qid, q.doc),
        [
            '{"qid": ',
            lambda rows: _json_strings(q.qid.take(rows)),
            ', "doc": ',
            lambda rows: _json_strings(q.doc.take(rows)),
            ', "rel": ',
            lambda rows: pc.cast(rel.take(rows), pa.string()),
            "}\n",
        ],
    )


def _json_strings(arr: pa.Array) -> pa.Array:
    """JSON string literals of ``arr`` - each distinct value escaped once by ``json.dumps``."""
    enc = pc.dictionary_encode(arr)
    quoted = pa.array(
        [json.dumps(s, ensure_ascii=False) for s in enc.dictionary.to_pylist()], type=pa.string()
    )
    return quoted.take(enc.indices)
