"""Scoring a run larger than memory in chunks of queries, with the numbers of one pass.

Every metric of the engine is a per-query value and the means are taken over queries in sorted
order, so a run can be scored a slice of queries at a time: the labelled queries (sorted, as
the engine sorts them) are cut into ``query_chunks`` contiguous ranges; the run file is streamed
once (``io._trec_chunks``: checked block by block, bad lines named by file, line and field) and
each row is written to the Arrow file of its query's chunk; each chunk is then read back, its
duplicates handled as ``read_run`` handles them (with their true line numbers) and scored on
the qrels of its queries. Concatenated in chunk order, the per-query values are the very array
a single pass computes, so every mean is the same to the last bit.

Peak memory is the qrels plus about one chunk of the run and its scoring; the spill costs one
write and one read of the run's three columns (in a temporary folder, ``workdir`` or the
system's). A run given in memory (or as JSON Lines, which is read whole) is only split, which
still bounds the scoring's own peak.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._errors import UsageError
from ..io import Qrels, Run, flat
from ._evaluation import ColumnDetails, Evaluation
from ._spec import Metric

_SCHEMA = pa.schema(
    [("qid", pa.string()), ("doc", pa.string()), ("score", pa.float64()), ("line", pa.int64())]
)


def evaluate_chunked(
    qrels: Any,
    run: Any,
    ms: list[Metric],
    *,
    query_chunks: int,
    missing: str = "zero",
    ties: str = "trec",
    duplicates: str = "best",
    run_name: str | None = None,
    config: Mapping[str, Any] | None = None,
    workdir: str | os.PathLike[str] | None = None,
    **extra: Any,
) -> Evaluation:
    """``evaluate(qrels, run, ms)`` computed ``query_chunks`` slices of queries at a time.

    ``run`` may be a TREC run path (streamed, never held whole) or anything ``to_run`` takes;
    ``extra`` (golden_version, slices, splits) goes to the Evaluation as ``evaluate`` passes it."""
    from ..io._duplicates import check_policy
    from ..io.convert import refuse_empty, to_qrels

    if isinstance(query_chunks, bool) or not isinstance(query_chunks, int) or query_chunks < 1:
        raise UsageError(f"query_chunks must be a whole number >= 1, got {query_chunks!r}")
    check_policy(duplicates)
    q = to_qrels(qrels)
    refuse_empty(qrels, q)
    labelled = sorted({*pc.unique(flat(q.qid)).to_pylist(), *q.empty_queries})
    n = max(1, min(query_chunks, len(labelled)))
    value_set = pa.array(labelled, type=pa.string())

    def chunk_of(qid: pa.Array) -> np.ndarray:
        idx = pc.index_in(qid, value_set=value_set).fill_null(-1).to_numpy(zero_copy_only=False)
        return np.where(idx >= 0, idx * n // max(len(labelled), 1), -1)

    q_chunk = chunk_of(flat(q.qid))
    # queries labelled with no judgement go to their chunk by name (they have no row)
    q_empty = _by_chunk(q.empty_queries, chunk_of)
    with tempfile.TemporaryDirectory(prefix="ragmeter-chunks-", dir=workdir) as tmp:
        ids = _Ids(labelled)
        parts, name = _split(run, chunk_of, n, Path(tmp), duplicates, ids)
        judged = pc.unique(flat(q.doc))
        results = []
        for k, part in enumerate(parts):
            rows = pa.array(np.flatnonzero(q_chunk == k))
            q_k = Qrels(
                qid=q.qid.take(rows),
                doc=q.doc.take(rows),
                rel=np.asarray(q.rel)[rows],
                empty_queries=q_empty.get(k, ()),
            )
            r_k = part()
            ids.see(r_k)
            ids.items(r_k, judged)
            results.append(_score_part(q_k, r_k, ms, missing, ties))
    name = run_name or name
    warned = ids.check(q, name)
    return _merge(results, ms, name, missing, ties, config, {**extra, "warnings": warned})


def _score_part(q: Qrels, r: Run, ms: list[Metric], missing: str, ties: str) -> dict[str, Any]:
    """One chunk through the engine. Its id-space warning is about this chunk only, so it is
    silenced here; ``_Ids`` gives the whole run's."""
    import warnings

    from ._score import _score

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*item id\(s\) the run retrieves is judged")
        return _score(q, r, ms, missing, ties)  # type: ignore[arg-type]


class _Ids:
    """The id-space checks of ``evaluate`` (no run query labelled: an error; no retrieved item
    judged: a warning), gathered chunk by chunk; ids are kept only while nothing matched."""

    def __init__(self, labelled: list[str]) -> None:
        self.labelled = labelled
        self.any_query = False
        self.unlabelled: list[pa.Array] = []
        self.any_item: bool | None = None
        self.docs: list[pa.Array] = []
        self._judged: pa.Array | None = None

    def unmatched(self, qid: pa.Array) -> None:
        if not self.any_query and len(qid):
            self.unlabelled.append(pc.unique(qid))

    def see(self, r: Run) -> None:
        if len(r.qid) or r.empty_queries:  # a labelled query, answered (empty: still answered)
            self.any_query, self.unlabelled = True, []

    def check(self, q: Qrels, name: str) -> tuple[str, ...]:
        """Raise when no run query is labelled; the item-id warning (issued and returned)."""
        from ..io import check_item_ids, check_query_ids

        src = q.source or ""
        qrels_name = "the qrels" if src.startswith("<") or not src else f"the qrels {src}"
        if not self.any_query and self.unlabelled:
            run_qids = pc.unique(pa.chunked_array(self.unlabelled)).to_pylist()
            check_query_ids(run_qids, self.labelled, run=name, labels=qrels_name, warn_some=False)
        if not self.docs:
            return ()
        message = check_item_ids(pa.chunked_array(self.docs), q.doc, run=name, qrels=qrels_name)
        return () if message is None else (message,)

    def items(self, r: Run, judged: pa.Array) -> None:
        if self.any_item or not len(r.doc):
            return
        if pc.any(pc.is_in(r.doc, value_set=judged)).as_py():
            self.any_item, self.docs = True, []
        else:
            self.docs.append(pc.unique(r.doc))


def _split(
    run: Any, chunk_of: Any, n: int, folder: Path, duplicates: str, ids: _Ids
) -> tuple[list[Any], str]:
    """Loaders of each chunk's run (deduplicated) and the run's name."""
    from ..io import is_jsonl_path

    if isinstance(run, (str, os.PathLike)) and not is_jsonl_path(run):
        return _spill(Path(run), chunk_of, n, folder, duplicates, ids)
    from ..io.convert import refuse_empty, to_run

    r = to_run(run, duplicates=duplicates)
    refuse_empty(run, r)
    chunk = chunk_of(flat(r.qid))
    ids.unmatched(flat(r.qid).filter(pa.array(chunk < 0)))
    empty = _by_chunk(r.empty_queries, chunk_of)

    def part(k: int) -> Any:
        rows = pa.array(np.flatnonzero(chunk == k))
        return lambda: Run(
            qid=r.qid.take(rows),
            doc=r.doc.take(rows),
            score=np.asarray(r.score)[rows.to_numpy()],
            name=r.name,
            empty_queries=empty.get(k, ()),
        )

    return [part(k) for k in range(n)], r.name


def _by_chunk(qids: tuple[str, ...], chunk_of: Any) -> dict[int, tuple[str, ...]]:
    """``{chunk: the ids of qids in it}`` (ids of no chunk are left out)."""
    out: dict[int, tuple[str, ...]] = {}
    if qids:
        for qid, k in zip(qids, chunk_of(pa.array(qids, pa.string())).tolist(), strict=True):
            if k >= 0:
                out[k] = (*out.get(k, ()), qid)
    return out


def _spill(
    path: Path, chunk_of: Any, n: int, folder: Path, duplicates: str, ids: _Ids
) -> tuple[list[Any], str]:
    from ..io._trec_chunks import run_blocks

    src, blocks = run_blocks(path)
    files = [folder / f"chunk-{k}.arrow" for k in range(n)]
    writers = [pa.ipc.new_file(str(f), _SCHEMA) for f in files]
    try:
        for b in blocks:
            chunk = chunk_of(b.qid)
            ids.unmatched(b.qid.filter(pa.array(chunk < 0)))
            order = np.argsort(chunk, kind="stable")  # rows grouped by chunk, file order kept
            bounds = np.searchsorted(chunk[order], np.arange(-1, n + 1))
            for k in range(n):
                rows = order[bounds[k + 1] : bounds[k + 2]]
                if len(rows):
                    idx = pa.array(rows)
                    writers[k].write_batch(
                        pa.record_batch(
                            [b.qid.take(idx), b.doc.take(idx), b.score[rows], b.line[rows]],
                            schema=_SCHEMA,
                        )
                    )
    finally:
        for w in writers:
            w.close()

    def part(f: Path) -> Any:
        return lambda: _load(f, src.display, duplicates)

    return [part(f) for f in files], src.display


def _load(f: Path, display: str, duplicates: str) -> Run:
    from ..io._duplicates import Table, dedupe_run

    with pa.memory_map(str(f)) as source:
        t = pa.ipc.open_file(source).read_all()
    f.unlink()  # the chunk is in memory now: free its disk space early
    line = t.column("line").to_numpy()
    table = Table(
        t.column("qid").combine_chunks(),
        t.column("doc").combine_chunks(),
        t.column("score").to_numpy(),
    )
    table = dedupe_run(table, policy=duplicates, source=display, line_of=lambda rows: line[rows])
    return Run(qid=table.qid, doc=table.doc, score=table.value, name=display)


def _merge(
    results: list[dict[str, Any]],
    ms: list[Metric],
    name: str,
    missing: str,
    ties: str,
    config: Mapping[str, Any] | None,
    extra: Mapping[str, Any],
) -> Evaluation:
    query_ids = [x for r in results for x in r["query_ids"]]
    values = np.concatenate([r["values"] for r in results]) if results else np.zeros((0, len(ms)))
    columns: dict[str, list[Any]] = {"first_rank": [], "n_retrieved": []}
    for r in results:
        for key in columns:
            columns[key].extend(r["details"]._columns[key])
    cfg = {"ties": ties, "missing": missing, "level": "item"}
    cfg.update(config or {})
    return Evaluation(
        run=name,
        metrics=tuple(ms),
        query_ids=tuple(query_ids),
        values=values,
        missing_ids=tuple(x for r in results for x in r["missing_ids"]),
        no_relevant_ids=tuple(x for r in results for x in r["no_relevant_ids"]),
        config=cfg,
        details=ColumnDetails(
            query_ids,
            {k: np.asarray(v) for k, v in columns.items()},
            none_when_zero=("first_rank",),
        ),
        **extra,
    )
