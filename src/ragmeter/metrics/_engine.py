"""The metric engine: labels + a run + metrics -> Evaluation, exact and vectorised.

Definitions follow trec_eval so that numbers equal trec_eval, pytrec_eval and ranx where they
agree (see docs/metrics.md for every rule):

- ranking: score descending, then item id descending (byte order), scores compared as 32-bit
  floats (``ties="trec"``); or each query's rows in the order given (``ties="given"``);
- a binary metric counts an item relevant when its grade >= ``rel`` (default 1);
- nDCG uses the grade itself as gain (trec_eval), ``gain=exp`` uses 2^g - 1, ``gains=...`` a map;
  the ideal DCG comes from ALL judged items of the query, cut at k; nDCG ignores ``rel``;
- averaging is per query first, then the mean; queries in the labels but absent from the run
  count as 0 (``missing="zero"``, trec_eval -c) or are dropped (``missing="skip"``); queries with
  no relevant item (grade >= 1) are excluded and reported; queries only in the run are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from .._errors import UsageError
from ..io._id_spaces import check_run_against_qrels
from ..io._tables import Qrels, Run, dictionary_codes
from . import _kernels as K
from ._evaluation import ColumnDetails, Evaluation
from ._ranking import Ties, query_codes, rank_run
from ._spec import Metric, parse_list

Missing = Literal["zero", "skip"]


def evaluate(
    qrels: Any,
    run: Any,
    metrics: str | Iterable[str | Metric],
    *,
    missing: Missing = "zero",
    ties: Ties = "trec",
    run_name: str | None = None,
    golden_version: str | None = None,
    config: Mapping[str, Any] | None = None,
    slices: Mapping[str, Iterable[str]] | None = None,
    splits: Mapping[str, str] | None = None,
) -> Evaluation:
    """Score ``run`` against ``qrels`` on ``metrics`` and keep every per-query value.

    ``qrels``/``run`` may be Qrels/Run, dict-of-dicts (``{qid: {doc: grade}}`` and
    ``{qid: {doc: score}}``), pandas DataFrames or paths to TREC/JSONL files.
    """
    from ..io.convert import to_qrels, to_run

    ms = parse_list(metrics)
    for m in ms:
        if m.budget is not None or "rank" not in m.info.levels:
            raise UsageError(
                f"{m} is a span-level metric: score it against span labels "
                "(ragmeter eval --golden G --chunks C, or ragmeter.labels.evaluate_spans)"
            )
    if missing not in ("zero", "skip"):
        raise UsageError(f"missing must be 'zero' or 'skip', got '{missing}'")
    q = to_qrels(qrels)
    r = to_run(run)
    check_run_against_qrels(q, r, run_name=run_name)  # ids that match nothing: loud, not 0.000
    table = _score(q, r, ms, missing, ties)
    cfg = {"ties": ties, "missing": missing, "level": "item"}
    cfg.update(config or {})
    return Evaluation(
        run=run_name or r.name,
        metrics=tuple(ms),
        query_ids=tuple(table["query_ids"]),
        values=table["values"],
        missing_ids=tuple(table["missing_ids"]),
        no_relevant_ids=tuple(table["no_relevant_ids"]),
        golden_version=golden_version,
        config=cfg,
        slices=_slice_names(slices),
        splits=dict(splits or {}),
        details=table["details"],
    )


def _slice_names(slices: Mapping[str, Iterable[str]] | None) -> dict[str, tuple[str, ...]]:
    """``{query: (slice, ...)}``; a bare string is refused, not split into one slice per letter
    (the golden set's ``slices`` field refuses it the same way)."""
    out: dict[str, tuple[str, ...]] = {}
    for qid, names in (slices or {}).items():
        if isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
            raise UsageError(
                f"slices[{qid!r}] must be a list of slice names, got {names!r}"
                + (f" (write [{names!r}] for one slice)" if isinstance(names, str) else "")
            )
        got = tuple(names)
        if not all(isinstance(n, str) and n for n in got):
            raise UsageError(f"slices[{qid!r}] must hold non-empty strings, got {list(got)!r}")
        out[qid] = got
    return out


def _score(q: Qrels, run: Run, ms: list[Metric], missing: Missing, ties: Ties) -> dict[str, Any]:
    # -- which queries are scored -----------------------------------------------------------
    qq_idx, qq_dict = dictionary_codes(q.qid)
    rel = np.asarray(q.rel, dtype=np.int64)
    qrels_qids = qq_dict.to_pylist()
    has_rel = np.bincount(qq_idx[rel >= 1], minlength=len(qrels_qids)) > 0
    with_rel = sorted(x for x, h in zip(qrels_qids, has_rel.tolist(), strict=True) if h)
    no_relevant = sorted(x for x, h in zip(qrels_qids, has_rel.tolist(), strict=True) if not h)
    codes = query_codes(run.qid, with_rel)
    ranked = rank_run(run, ties=ties, qids=with_rel, codes=codes)
    lengths_all = ranked.lengths
    missing_ids = [x for x, n in zip(with_rel, lengths_all.tolist(), strict=True) if n == 0]
    keep_q = np.ones(len(with_rel), bool) if missing == "zero" else lengths_all > 0
    sel = np.flatnonzero(keep_q)
    query_ids = [with_rel[i] for i in sel.tolist()]
    nq = len(query_ids)
    lengths = lengths_all[sel]
    depth = _needed_depth(ms, int(lengths.max()) if nq else 0)
    take = np.minimum(lengths, depth)

    # The padded (nq x depth) matrix of grades, in ranked order.
    grade_of_row = _join_grades(q, qq_idx, codes, with_rel, qrels_qids, run)
    if sel.size == len(with_rel) and nq and np.all(lengths == depth):
        # every query has exactly `depth` items (a common layout): a reshape, no scatter
        grades = grade_of_row[ranked.rows].reshape(nq, depth)
    else:
        itype = np.int32 if max(nq, depth) < 2**31 else np.int64
        row = np.repeat(np.arange(nq, dtype=itype), take)
        col = np.arange(row.size, dtype=np.int64) - np.repeat(np.cumsum(take) - take, take)
        grades = np.zeros((nq, depth), dtype=grade_of_row.dtype)
        grades[row, col] = grade_of_row[ranked.rows[ranked.starts[sel][row] + col]]
        del row, col
    del grade_of_row, ranked, codes

    # Judged items of each scored query (for |rel|, the ideal DCG and the grade join).
    qrow_of_qrels = np.full(len(qrels_qids), -1, dtype=np.int64)
    pos = {x: i for i, x in enumerate(qrels_qids)}
    qrow_of_qrels[[pos[x] for x in query_ids]] = np.arange(nq)
    j_row_all = qrow_of_qrels[qq_idx]
    keep = j_row_all >= 0
    j_row, j_rel = j_row_all[keep], rel[keep]

    inputs = K.RankInputs(grades, j_row, j_rel, nq)
    values = np.zeros((nq, len(ms)))
    for j, m in enumerate(ms):
        values[:, j] = _kernel(m)(inputs, m)

    first = K.reciprocal_rank(inputs.relevant(1), None)
    first_rank = np.where(first > 0, np.rint(1.0 / np.where(first > 0, first, 1.0)), 0).astype(int)
    details = ColumnDetails(
        query_ids,
        {"first_rank": first_rank, "n_retrieved": lengths},
        none_when_zero=("first_rank",),
    )
    return {
        "query_ids": query_ids,
        "values": values,
        "missing_ids": missing_ids,
        "no_relevant_ids": no_relevant,
        "details": details,
    }


def _needed_depth(ms: list[Metric], max_len: int) -> int:
    if any(m.k is None for m in ms):
        return max_len
    return min(max_len, max(m.k or 0 for m in ms))


def _join_grades(
    q: Qrels,
    qq_idx: np.ndarray,
    codes: np.ndarray,
    with_rel: list[str],
    qrels_qids: list[str],
    run: Run,
) -> np.ndarray:
    """Grade of every run row (0 when its (query, item) pair is unjudged).

    One hash join in Arrow's engine on (query code, item), with the hash table built on the
    (small) qrels side; only judged rows come back, so the run's item strings are never copied,
    sorted or re-encoded. ``codes`` are the run rows' positions in ``with_rel`` (-1: not scored).
    """
    n = len(run.score)
    rel = np.asarray(q.rel)
    lo, hi = (int(rel.min()), int(rel.max())) if rel.size else (0, 0)
    dtype = np.result_type(np.min_scalar_type(lo), np.min_scalar_type(hi), np.int8)
    out = np.zeros(n, dtype=dtype)
    if not n or not rel.size:
        return out
    pos = {x: i for i, x in enumerate(with_rel)}
    code_of_qrels_query = np.array([pos.get(x, -1) for x in qrels_qids], dtype=np.int32)
    row_type = np.int32 if n < 2**31 else np.int64
    left = pa.table(
        {"q": pa.array(codes), "doc": run.doc, "row": pa.array(np.arange(n, dtype=row_type))}
    )
    right = pa.table(
        {"q": pa.array(code_of_qrels_query[qq_idx]), "doc": q.doc, "rel": pa.array(rel)}
    )
    joined = left.join(right, keys=["q", "doc"], join_type="inner", use_threads=True)
    rows = joined.column("row").to_numpy()
    out[rows] = joined.column("rel").to_numpy()
    return out


def _kernel(m: Metric) -> Any:
    kernel = m.info.rank_kernel
    if kernel is None:  # pragma: no cover - evaluate() refuses span-only metrics first
        raise UsageError(f"{m} cannot be computed on item labels")
    return kernel
