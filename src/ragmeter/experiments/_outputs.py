"""What ``ragmeter run`` writes per variant: the run file, its config and its evaluation."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InputError
from ..io import Run, atomic_path, atomic_write
from ._ranked import RankedRows, first_with_space, ranked_rows, repr_strings

__all__ = [
    "RankedRows",
    "ranked_rows",
    "read_cached_run",
    "slug",
    "write_cached_run",
    "write_json",
    "write_run",
]


def slug(name: str) -> str:
    """A folder name for a variant: lower case, runs of other characters become one ``-``."""
    s = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return s or "variant"


def write_run(run: Run, path: Path, fmt: str, *, id_column: str = "chunk_id") -> Path:
    """Write a run as TREC (``qid Q0 chunk_id rank score name``, scores as Python's ``repr``)
    or parquet (columns ``qid, chunk_id, rank, score``; ``id_column`` names the item column),
    atomically, ranked as the metric engine ranks it; column-wise, no Python object per row."""
    import pyarrow as pa

    r = ranked_rows(run)
    qids = r.qid if r.qid.type == pa.string() else r.qid.cast(pa.string())
    items = r.item if r.item.type == pa.string() else r.item.cast(pa.string())
    if fmt == "parquet":
        import pyarrow.parquet as pq

        table = pa.table(
            {
                "qid": qids,
                id_column: items,
                "rank": pa.array(r.rank, pa.int64()),
                "score": pa.array(r.score, pa.float64()),
            }
        )
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp)
        return path
    name = re.sub(r"\s+", "_", run.name) or "run"
    bad = first_with_space(qids, items)
    if bad is not None:
        raise InputError(
            f"id {bad!r} contains whitespace, which TREC run files cannot hold; "
            'set run_format = "parquet" in the experiment file',
            path=path,
        )
    import pyarrow.compute as pc

    from ..io._writing import write_lines

    rank_text = pc.cast(pa.array(r.rank, pa.int64()), pa.string())
    score_text = repr_strings(r.score)
    write_lines(
        path,
        np.arange(len(r.rows), dtype=np.int64),
        [
            lambda rows: qids.take(rows),
            " Q0 ",
            lambda rows: items.take(rows),
            " ",
            lambda rows: rank_text.take(rows),
            " ",
            lambda rows: score_text.take(rows),
            f" {name}\n",
        ],
    )
    return path


def write_json(obj: Any, path: Path) -> Path:
    return atomic_write(path, json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def read_cached_run(path: Path, name: str) -> Run:
    import pyarrow.parquet as pq

    t = pq.read_table(path)
    return Run(
        qid=t.column("qid").combine_chunks(),
        doc=t.column("doc").combine_chunks(),
        score=t.column("score").to_numpy().astype(np.float64),
        name=name,
    )


def write_cached_run(run: Run, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"qid": run.qid, "doc": run.doc, "score": pa.array(run.score, pa.float64())})
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
