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

from typing import Any, Iterable, Literal, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._errors import UsageError
from ..evaluation import Evaluation
from ..io._tables import Qrels, Run
from . import _kernels as K
from ._ranking import Ranked, Ties, _encode, rank_run
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
    ranked = rank_run(r, ties=ties)
    table = _score(q, ranked, ms, missing)
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
        slices={k: tuple(v) for k, v in (slices or {}).items()},
        splits=dict(splits or {}),
        details=table["details"],
    )


def _score(q: Qrels, ranked: Ranked, ms: list[Metric], missing: Missing) -> dict[str, Any]:
    # -- which queries are scored -----------------------------------------------------------
    qq_idx, qq_dict = _encode(q.qid)
    rel = np.asarray(q.rel, dtype=np.int64)
    qrels_qids = np.asarray(qq_dict.to_pylist(), dtype=object)
    has_rel = np.bincount(qq_idx[rel >= 1], minlength=len(qrels_qids)) > 0
    with_rel = set(qrels_qids[has_rel].tolist())
    no_relevant = sorted(set(qrels_qids.tolist()) - with_rel)
    run_pos = {qid: i for i, qid in enumerate(ranked.qids.tolist())}
    missing_ids = sorted(x for x in with_rel if x not in run_pos)
    query_ids = sorted(with_rel) if missing == "zero" else sorted(x for x in with_rel if x in run_pos)
    nq = len(query_ids)

    # -- per scored query: its rows in the ranked run and its judged items -------------------
    qrels_pos = {qid: i for i, qid in enumerate(qrels_qids.tolist())}
    q_in_qrels = np.fromiter((qrels_pos[x] for x in query_ids), dtype=np.int64, count=nq)
    q_in_run = np.fromiter((run_pos.get(x, -1) for x in query_ids), dtype=np.int64, count=nq)
    lengths = np.where(q_in_run >= 0, ranked.lengths[np.maximum(q_in_run, 0)], 0)
    depth = _needed_depth(ms, int(lengths.max()) if nq else 0)
    take = np.minimum(lengths, depth)

    # Row/column of every kept run row in the padded (nq x depth) matrix.
    row = np.repeat(np.arange(nq), take)
    col = np.arange(row.size) - np.repeat(np.cumsum(take) - take, take)
    src = ranked.starts[np.maximum(q_in_run, 0)][row] + col
    codes = ranked.doc_codes[src].astype(np.int64)

    # Grade of each kept row: join (query, doc) against the qrels on integer keys.
    grades_flat = _join_grades(q, qq_idx, rel, qrels_pos, query_ids, ranked, row, codes)
    grades = np.zeros((nq, depth), dtype=np.int64)
    grades[row, col] = grades_flat

    # Judged items per scored query (for |rel| and the ideal DCG).
    qrow_of_qrels = np.full(len(qrels_qids), -1, dtype=np.int64)
    qrow_of_qrels[q_in_qrels] = np.arange(nq)
    j_row = qrow_of_qrels[qq_idx]
    keep = j_row >= 0
    j_row, j_rel = j_row[keep], rel[keep]

    values = np.zeros((nq, len(ms)))
    cache: dict[Any, np.ndarray] = {}
    for j, m in enumerate(ms):
        values[:, j] = _metric(m, grades, j_row, j_rel, nq, cache)

    first = K.reciprocal_rank(grades >= 1, None)
    first_rank = np.where(first > 0, np.rint(1.0 / np.where(first > 0, first, 1.0)), 0).astype(int)
    details = {
        qid: {"first_rank": int(fr) if fr else None, "n_retrieved": int(n)}
        for qid, fr, n in zip(query_ids, first_rank.tolist(), lengths.tolist())
    }
    return {
        "query_ids": query_ids,
        "values": values,
        "missing_ids": missing_ids if missing == "zero" else missing_ids,
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
    rel: np.ndarray,
    qrels_pos: dict[str, int],
    query_ids: list[str],
    ranked: Ranked,
    row: np.ndarray,
    codes: np.ndarray,
) -> np.ndarray:
    """Grade of each (scored query ``row``, run doc ``codes``) pair; 0 when unjudged."""
    ndict = max(len(ranked.doc_dictionary), 1)
    # qrels rows -> (scored query row, doc code in the run's dictionary)
    scored_row = np.full(len(qrels_pos), -1, dtype=np.int64)
    if query_ids:
        scored_row[[qrels_pos[x] for x in query_ids]] = np.arange(len(query_ids))
    j_row = scored_row[qq_idx]
    doc = q.doc.combine_chunks() if isinstance(q.doc, pa.ChunkedArray) else q.doc
    j_code = pc.index_in(doc, value_set=ranked.doc_dictionary).fill_null(-1).to_numpy(
        zero_copy_only=False
    ).astype(np.int64)
    ok = (j_row >= 0) & (j_code >= 0)
    j_key = j_row[ok] * ndict + j_code[ok]
    j_rel = rel[ok]
    order = np.argsort(j_key, kind="stable")
    j_key, j_rel = j_key[order], j_rel[order]
    r_key = row * ndict + codes
    pos = np.searchsorted(j_key, r_key)
    pos_c = np.minimum(pos, max(len(j_key) - 1, 0))
    found = (pos < len(j_key)) & (j_key[pos_c] == r_key) if len(j_key) else np.zeros(len(r_key), bool)
    return np.where(found, j_rel[pos_c] if len(j_key) else 0, 0)


def _metric(
    m: Metric,
    grades: np.ndarray,
    j_row: np.ndarray,
    j_rel: np.ndarray,
    nq: int,
    cache: dict[Any, np.ndarray],
) -> np.ndarray:
    if m.name == "nDCG":
        gkey = ("gain", m.gain, m.gains)
        if gkey not in cache:
            cache[gkey] = _gain_array(m, grades)
            cache[("ideal",) + gkey[1:]] = _ideal(_gain_array(m, j_rel), j_row, nq)
        return K.ndcg(cache[gkey], cache[("ideal",) + gkey[1:]], m.k)
    rkey = ("rel", m.rel)
    if rkey not in cache:
        cache[rkey] = grades >= m.rel
        cache[("num_rel", m.rel)] = np.bincount(j_row[j_rel >= m.rel], minlength=nq)
    relm, num_rel = cache[rkey], cache[("num_rel", m.rel)]
    if m.name == "P":
        return K.precision(relm, m.k)  # type: ignore[arg-type]
    if m.name == "R":
        return K.recall(relm, num_rel, m.k)
    if m.name == "Hit":
        return K.hit(relm, m.k)
    if m.name == "RR":
        return K.reciprocal_rank(relm, m.k)
    if m.name == "AP":
        return K.average_precision(relm, num_rel, m.k)
    if m.name == "Rprec":
        return K.r_precision(relm, num_rel)
    raise UsageError(f"{m} cannot be computed on item labels")  # pragma: no cover - registry guards


def _gain_array(m: Metric, grades: np.ndarray) -> np.ndarray:
    """Gain of each grade under the metric's gain rule; grades <= 0 give 0 (as trec_eval)."""
    g = np.asarray(grades)
    if m.gains is not None:
        out = np.where(g > 0, g, 0).astype(np.float64)
        for grade, gain in m.gains:
            out[g == grade] = gain
        return out
    if m.gain == "exp":
        return np.where(g > 0, np.exp2(np.maximum(g, 0).astype(np.float64)) - 1.0, 0.0)
    return np.where(g > 0, g, 0).astype(np.float64)


def _ideal(gains: np.ndarray, j_row: np.ndarray, nq: int) -> np.ndarray:
    """Per query: the gains of all its judged items, sorted descending, zero padded."""
    keep = gains > 0
    rows, g = j_row[keep], gains[keep]
    order = np.lexsort((-g, rows))
    rows, g = rows[order], g[order]
    counts = np.bincount(rows, minlength=nq)
    width = int(counts.max()) if nq and counts.size else 0
    out = np.zeros((nq, width))
    col = np.arange(rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
    out[rows, col] = g
    return out
