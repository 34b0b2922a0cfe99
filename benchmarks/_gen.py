"""Seeded TREC qrels and runs for the benchmarks: the same bytes for the same (queries, depth,
seed).

The data are shaped so every peer's definition agrees and the means must be identical:

- every query is in both files and has at least one relevant item (peers average queries without
  one, or absent from the run, differently from ragmeter);
- scores strictly decrease with rank with gaps of at least 0.005, far above float32 resolution,
  so there are no ties (peers break ties differently);
- per query, ``depth`` distinct retrieved items; 5 of them judged (grades 0-3, at least one >= 1)
  plus 3 judged items the run never retrieved (so recall and the ideal DCG see unretrieved
  relevant items).

Files are single-space separated: ``qid 0 doc grade`` and ``qid Q0 doc rank score tag``.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: a prime larger than any depth: (a + b*r) mod PRIME gives distinct ids for r < PRIME
_PRIME = 1_000_003
JUDGED_IN_RUN = 5
JUDGED_OUTSIDE = 3


@dataclass(frozen=True)
class BenchFiles:
    qrels: Path
    run: Path
    n_queries: int
    depth: int
    seed: int

    @property
    def n_rows(self) -> int:
        return self.n_queries * self.depth


def cache_dir() -> Path:
    """Where generated files are kept between runs (``$RAGMETER_BENCH_DATA`` overrides)."""
    root = os.environ.get("RAGMETER_BENCH_DATA")
    return Path(root) if root else Path(tempfile.gettempdir()) / "ragmeter-bench"


def bench_files(
    n_queries: int, depth: int, seed: int = 0, folder: Path | None = None
) -> BenchFiles:
    """Paths of the qrels and run for this size, generating them once."""
    folder = folder or cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"q{n_queries}-d{depth}-s{seed}"
    files = BenchFiles(folder / f"{stem}.qrels", folder / f"{stem}.run", n_queries, depth, seed)
    if not (files.qrels.is_file() and files.run.is_file()):
        _generate(files)
    return files


def _generate(files: BenchFiles) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc

    nq, depth = files.n_queries, files.depth
    if depth < JUDGED_IN_RUN:
        raise ValueError(f"depth must be at least {JUDGED_IN_RUN}")
    rng = np.random.default_rng(files.seed)
    qnames = pc.binary_join_element_wise("q", pa.array(np.arange(nq)).cast(pa.string()), "")

    # -- run: depth distinct items per query, scores strictly decreasing with rank --------------
    a = rng.integers(0, _PRIME, size=nq)
    b = rng.integers(1, _PRIME, size=nq)
    rank = np.arange(1, depth + 1)
    doc_num = (a[:, None] + b[:, None] * (rank[None, :] - 1)) % _PRIME  # nq x depth, distinct rows
    base = 20.0 + 10.0 * rng.random(nq)
    score = base[:, None] - 0.01 * rank[None, :] + 0.005 * rng.random((nq, depth))
    score = np.round(score, 6)
    q_rows = pa.array(np.repeat(np.arange(nq), depth))
    run = pa.table(
        {
            "qid": qnames.take(q_rows),
            "q0": pa.array(np.full(nq * depth, "Q0")),
            "doc": _ids("D", doc_num.ravel()),
            "rank": pa.array(np.tile(rank, nq)),
            "score": pa.array(score.ravel()),
            "tag": pa.array(np.full(nq * depth, "bench")),
        }
    )

    # -- qrels: judged items from the run (first one relevant) and unretrieved judged items -----
    picked = np.argsort(rng.random((nq, depth)), axis=1)[:, :JUDGED_IN_RUN]  # distinct ranks
    in_docs = np.take_along_axis(doc_num, picked, axis=1)
    in_grades = rng.choice(4, size=(nq, JUDGED_IN_RUN), p=[0.4, 0.3, 0.2, 0.1])
    in_grades[:, 0] = rng.integers(1, 4, size=nq)
    out_docs = np.arange(nq * JUDGED_OUTSIDE).reshape(nq, JUDGED_OUTSIDE)
    out_grades = rng.choice(4, size=(nq, JUDGED_OUTSIDE), p=[0.4, 0.3, 0.2, 0.1])
    per_q = JUDGED_IN_RUN + JUDGED_OUTSIDE
    docs = pa.chunked_array(
        [_ids("D", in_docs.ravel()), _ids("J", out_docs.ravel())]
    ).combine_chunks()
    # row q of the (nq x per_q) layout: its 5 in-run items, then its 3 unretrieved ones
    idx = np.concatenate(
        [
            np.arange(nq)[:, None] * JUDGED_IN_RUN + np.arange(JUDGED_IN_RUN),
            nq * JUDGED_IN_RUN
            + np.arange(nq)[:, None] * JUDGED_OUTSIDE
            + np.arange(JUDGED_OUTSIDE),
        ],
        axis=1,
    ).ravel()
    grades = np.concatenate([in_grades.ravel(), out_grades.ravel()])[idx]
    qrels = pa.table(
        {
            "qid": qnames.take(pa.array(np.repeat(np.arange(nq), per_q))),
            "iter": pa.array(np.zeros(nq * per_q, dtype=np.int64)),
            "doc": docs.take(pa.array(idx)),
            "rel": pa.array(grades.astype(np.int64)),
        }
    )
    _write(run, files.run)
    _write(qrels, files.qrels)


def _ids(prefix: str, nums: np.ndarray):  # -> pa.Array
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.binary_join_element_wise(prefix, pa.array(nums).cast(pa.string()), "")


def _write(table, path: Path) -> None:  # table: pa.Table
    from pyarrow import csv

    tmp = path.with_suffix(path.suffix + ".part")
    opts = csv.WriteOptions(
        include_header=False, delimiter=" ", quoting_style="none", batch_size=1 << 16
    )
    csv.write_csv(table, tmp, write_options=opts)
    tmp.replace(path)
