"""Scoring one qrels + run pair into the engine's columns (the work behind
:func:`ragmeter.metrics.evaluate`, also run chunk by chunk by ``_chunked``): rank, join grades,
run the kernels, gather per-query details."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _compiled
from .._errors import UsageError
from ..io import Qrels, Run, check_run_against_qrels
from ..io._tables import doc_hashes_of, qid_starts_of
from . import _join
from . import _kernels as K
from ._evaluation import ColumnDetails
from ._join import Groups, group_runs, join_grades, ranked_grades
from ._ranking import Ranked, Ties, rank_run
from ._spec import Metric

Missing = Literal["zero", "skip"]


def _score(
    q: Qrels,
    run: Run,
    ms: list[Metric],
    missing: Missing,
    ties: Ties,
    run_name: str | None = None,
) -> dict[str, Any]:
    """Columnar from end to end: one string hashed per query (``group_runs``), the grade join on
    integer keys (``join_grades``), no Python loop or dict over queries or rows."""
    # -- which queries are scored -----------------------------------------------------------
    rel = np.asarray(q.rel, dtype=np.int64)
    qg = group_runs(q.qid, qid_starts_of(q))  # qrels rows -> qrels query (dictionary position)
    qq_dict = qg.dictionary
    n_dict = len(qq_dict)
    has_rel = qg.any_per_value(rel >= 1)
    by_id = pc.sort_indices(qq_dict).to_numpy()  # byte order of UTF-8 = code point order
    rel_pos = by_id[has_rel[by_id]]  # dictionary positions of the scored queries, sorted
    with_rel = qq_dict.take(pa.array(rel_pos)).to_pylist()
    no_relevant = qq_dict.take(pa.array(by_id[~has_rel[by_id]])).to_pylist()
    if q.empty_queries:  # labelled with no judgement: no relevant item, as all-grade-0 lines
        no_relevant = sorted({*no_relevant, *q.empty_queries})
    code_of_dict = np.full(n_dict + 1, -1, dtype=np.int32)  # [-1] -> -1 (not a qrels query)
    code_of_dict[rel_pos] = np.arange(rel_pos.size, dtype=np.int32)

    rg = group_runs(run.qid, qid_starts_of(run))
    rq_dict = rg.dictionary
    in_qrels = _positions_in(rq_dict, qq_dict)
    id_warnings: tuple[str, ...] = ()
    named = len(rq_dict) + len(run.empty_queries), n_dict + len(q.empty_queries)
    if all(named) and not bool((in_qrels >= 0).any()):
        id_warnings = check_run_against_qrels(q, run, run_name=run_name)  # raises: none shared
    scored = code_of_dict[in_qrels]  # run query (dictionary position) -> scored-query code
    qrels_code = qg.rows(code_of_dict)  # qrels row -> scored-query code (-1: not scored)
    answered = np.zeros(len(with_rel), dtype=bool)  # in the run with an empty ranking
    if run.empty_queries:
        at = _positions_in(pa.array(run.empty_queries, pa.string()), qq_dict)
        codes = code_of_dict[at]
        answered[codes[codes >= 0]] = True
    missing_ids, sel, query_ids, lengths, grades, matched = _grades(
        q, run, rg, scored, qrels_code, rel, with_rel, answered, ms, missing, ties
    )
    del rg
    nq = len(query_ids)
    if not matched and len(run.score) and rel.size and not id_warnings:
        id_warnings = check_run_against_qrels(q, run, run_name=run_name)  # no item judged?

    # Judged items of each scored query (for |rel| and the ideal DCG).
    qrow_of_code = np.full(len(with_rel) + 1, -1, dtype=np.int64)  # [-1] -> -1
    qrow_of_code[sel] = np.arange(nq)
    del qrels_code
    inputs = _judged(grades, qg, qrow_of_code[code_of_dict], rel, nq)
    del qg
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
        "warnings": id_warnings,
    }


def _judged(
    grades: np.ndarray, qg: Groups, row_of_value: np.ndarray, rel: np.ndarray, nq: int
) -> K.RankInputs:
    """The kernels' inputs: the ranked ``grades`` and the judged items of each scored query
    (``row_of_value``: the query row of each qrels query, -1 when not scored), counted per
    grade in one compiled pass when the qrels are large, list each query's rows together and
    their grades span few values; else listed (``RankInputs`` counts them if it can)."""
    span = int(rel.max()) - int(rel.min()) + 1 if rel.size else 0
    if (
        qg.starts is not None
        and qg.lengths is not None
        and 0 < span < K.COUNTED_GRADES
        and rel.size >= _join.COMPILED_MIN_ROWS  # one threshold for every compiled step
        and _compiled.available()
    ):
        from ._counts_kernel import counts_kernel

        lo = int(rel.min())
        counts = np.zeros((nq, span), dtype=np.int64)
        counts_kernel(qg.starts, qg.lengths, row_of_value[qg.codes], rel, lo, counts)
        empty = np.zeros(0, dtype=np.int64)
        return K.RankInputs(grades, empty, empty, nq, counts, lo)
    j_row_all = qg.rows(row_of_value)
    keep = j_row_all >= 0
    return K.RankInputs(grades, j_row_all[keep], rel[keep], nq)


def _positions_in(values: pa.Array, dictionary: pa.Array) -> np.ndarray:
    """Position of each of ``values`` in ``dictionary`` (-1: absent); both hold distinct ids.
    When the run lists its queries in the order the qrels do (often: both written from one
    question list), the answer is the identity, found by comparing the two arrays' bytes."""
    if len(values) == len(dictionary) and values.equals(dictionary):
        return np.arange(len(values), dtype=np.int64)
    return pc.index_in(values, value_set=dictionary).fill_null(-1).to_numpy(zero_copy_only=False)


def _needed_depth(ms: list[Metric], max_len: int) -> int:
    if any(m.k is None for m in ms):
        return max_len
    return min(max_len, max(m.k or 0 for m in ms))


def _grades(
    q: Qrels,
    run: Run,
    rg: Groups,
    scored: np.ndarray,
    qrels_code: np.ndarray,
    rel: np.ndarray,
    with_rel: list[str],
    answered: np.ndarray,
    ms: list[Metric],
    missing: Missing,
    ties: Ties,
) -> tuple[list[str], np.ndarray, list[str], np.ndarray, np.ndarray, int]:
    """The ranked grades of the kept queries, with what :func:`_selected` tells about them:
    (missing ids, kept positions, kept ids, run lengths, the padded grades, judged count).

    When each run query is one stretch, the lengths come without ranking and a compiled pass
    may rank and join at once (``ranked_grades``); else ``rank_run`` then the join."""
    if rg.starts is not None and rg.lengths is not None:
        block_code = scored[rg.codes]
        live = block_code >= 0
        lengths_all = np.bincount(block_code[live], rg.lengths[live], len(with_rel))
        missing_ids, sel, query_ids, lengths, depth = _selected(
            with_rel, lengths_all.astype(np.int64), answered, ms, missing
        )
        fused = ranked_grades(
            rg, block_code, run.score, ties, len(with_rel), depth, run.doc, qrels_code, q.doc,
            rel, _grade_type(rel), doc_hashes_of(run), doc_hashes_of(q),
        )  # fmt: skip
        if fused is not None:  # every scored query's row; keep the selected ones
            grades, matched = fused
            grades = grades if sel.size == len(with_rel) else grades[sel]
            return missing_ids, sel, query_ids, lengths, grades, matched
    codes = rg.rows(scored)  # run row -> scored-query code (-1: none)
    ranked = rank_run(run, ties=ties, qids=with_rel, codes=codes)
    missing_ids, sel, query_ids, lengths, depth = _selected(
        with_rel, ranked.lengths, answered, ms, missing
    )
    grades, matched = _ranked_matrix(q, qrels_code, codes, run, rel, ranked, sel, lengths, depth)
    return missing_ids, sel, query_ids, lengths, grades, matched


def _selected(
    with_rel: list[str],
    lengths_all: np.ndarray,
    answered: np.ndarray,
    ms: list[Metric],
    missing: Missing,
) -> tuple[list[str], np.ndarray, list[str], np.ndarray, int]:
    """(ids of scored queries absent from the run, positions of the queries kept, their ids,
    their run lengths, the depth the metrics need) from each scored query's run length.
    ``answered``: queries the run gives with an empty ranking: in the run (pytrec_eval's rule:
    it retrieved nothing and scores 0 under both policies), not missing."""
    present = (lengths_all > 0) | answered
    missing_ids = [with_rel[i] for i in np.flatnonzero(~present).tolist()]
    keep_q = np.ones(len(with_rel), bool) if missing == "zero" else present
    sel = np.flatnonzero(keep_q)
    query_ids = with_rel if sel.size == len(with_rel) else [with_rel[i] for i in sel.tolist()]
    lengths = lengths_all[sel]
    depth = _needed_depth(ms, int(lengths.max()) if len(query_ids) else 0)
    return missing_ids, sel, query_ids, lengths, depth


def _ranked_matrix(
    q: Qrels,
    qrels_code: np.ndarray,
    codes: np.ndarray,
    run: Run,
    rel: np.ndarray,
    ranked: Ranked,
    sel: np.ndarray,
    lengths: np.ndarray,
    depth: int,
) -> tuple[np.ndarray, int]:
    """The padded (queries ``sel`` x ``depth``) matrix of grades in ranked order, and how many
    of its items are judged."""
    nq = sel.size
    take = np.minimum(lengths, depth)
    if sel.size == len(ranked.qids) and nq and np.all(lengths == depth):
        # every query has exactly `depth` items (a common layout): a reshape, no scatter
        grades, matched = _join_grades(q, qrels_code, codes, run, rel, ranked.rows)
        return grades.reshape(nq, depth), matched
    itype = np.int32 if max(nq, depth) < 2**31 else np.int64
    row = np.repeat(np.arange(nq, dtype=itype), take)
    col = np.arange(row.size, dtype=np.int64) - np.repeat(np.cumsum(take) - take, take)
    in_depth, matched = _join_grades(
        q, qrels_code, codes, run, rel, ranked.rows[ranked.starts[sel][row] + col]
    )
    grades = np.zeros((nq, depth), dtype=in_depth.dtype)
    grades[row, col] = in_depth
    return grades, matched


def _grade_type(rel: np.ndarray) -> np.dtype:
    """The smallest SIGNED integer type holding every grade. Not ``min_scalar_type``: a grade
    >= 2^32 is uint64 there, and uint64 with int8 makes float64 grades, which round grades
    past 2^53 (R(rel=2^53+1) counted two items relevant of one: R = 2.0) and cannot index."""
    lo, hi = (int(rel.min()), int(rel.max())) if rel.size else (0, 0)
    for t in (np.int8, np.int16, np.int32):
        if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max:
            return np.dtype(t)
    return np.dtype(np.int64)


def _join_grades(
    q: Qrels,
    qrels_code: np.ndarray,
    codes: np.ndarray,
    run: Run,
    rel: np.ndarray,
    rows: np.ndarray,
) -> tuple[np.ndarray, int]:
    """(grade of each run row of ``rows``, 0 when its (query, item) pair is unjudged; how many
    are judged). ``codes``/``qrels_code``: each run/qrels row's scored-query code (-1: none)."""
    return join_grades(
        rows, codes, run.doc, qrels_code, q.doc, rel, _grade_type(rel), doc_hashes_of(run),
        doc_hashes_of(q),
    )  # fmt: skip


def _kernel(m: Metric) -> Any:
    kernel = m.info.rank_kernel
    if kernel is None:  # pragma: no cover - evaluate() refuses span-only metrics first
        raise UsageError(f"{m} cannot be computed on item labels")
    return kernel
