"""What ``ragmeter run`` writes per variant: the run file, its config and its evaluation."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InputError
from ..io._atomic import atomic_path, atomic_write, write_text_lines
from ..io._tables import Run


def slug(name: str) -> str:
    """A folder name for a variant: lower case, runs of other characters become one ``-``."""
    s = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return s or "variant"


def ranked_rows(run: Run) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """(qid, chunk id, rank, score) rows, queries sorted, each ranked as the metric engine ranks
    them (score desc as float32, then id desc): the rank column agrees with every score."""
    from ..metrics._ranking import rank_run

    ranked = rank_run(run, ties="trec")
    qids: list[str] = []
    for i, q in enumerate(ranked.qids):
        qids.extend([q] * int(ranked.lengths[i]))
    import pyarrow as pa

    docs = run.doc.take(pa.array(ranked.rows)).to_pylist() if len(ranked.rows) else []
    ranks = (
        np.concatenate([np.arange(1, n + 1) for n in ranked.lengths])
        if len(ranked.rows)
        else np.zeros(0, np.int64)
    )
    return qids, docs, ranks, np.asarray(run.score)[ranked.rows]


def write_run(run: Run, path: Path, fmt: str, *, id_column: str = "chunk_id") -> Path:
    """Write a run as TREC (``qid Q0 chunk_id rank score name``) or parquet
    (columns ``qid, chunk_id, rank, score``; ``id_column`` names the item column), atomically."""
    qids, docs, ranks, scores = ranked_rows(run)
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table(
            {
                "qid": pa.array(qids, pa.string()),
                id_column: pa.array(docs, pa.string()),
                "rank": pa.array(ranks, pa.int64()),
                "score": pa.array(scores, pa.float64()),
            }
        )
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp)
        return path
    name = re.sub(r"\s+", "_", run.name) or "run"
    bad = next((x for x in (*set(qids), *set(docs)) if re.search(r"\s", x)), None)
    if bad is not None:
        raise InputError(
            f"id {bad!r} contains whitespace, which TREC run files cannot hold; "
            'set run_format = "parquet" in the experiment file',
            path=path,
        )
    rows = zip(qids, docs, ranks.tolist(), scores.tolist(), strict=True)
    return write_text_lines(path, (f"{q} Q0 {d} {r} {s!r} {name}" for q, d, r, s in rows))


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
