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
from typing import Any

from .._errors import UsageError
from ._evaluation import Evaluation
from ._ranking import Ties
from ._score import Missing, _score
from ._spec import Metric, parse_list

__all__ = ["Missing", "evaluate"]


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
    query_chunks: int | None = None,
    duplicates: str = "best",
) -> Evaluation:
    """Score ``run`` against ``qrels`` on ``metrics`` and keep every per-query value.

    ``qrels``/``run`` may be Qrels/Run, dict-of-dicts (``{qid: {doc: grade}}`` and
    ``{qid: {doc: score}}``), pandas DataFrames or paths to TREC/JSONL files.
    ``query_chunks=N`` scores N slices of queries one after another (a TREC run path is then
    streamed, never held whole): the same numbers, a bounded peak (``_chunked``).
    ``duplicates`` is the rule for a document ranked twice for one query in a run file or table
    (``"best"``: the best-scored row is kept, with a warning; ``"error"``: refused).
    """
    from ..io.convert import refuse_empty, to_qrels, to_run

    ms = parse_list(metrics)
    for m in ms:
        if m.budget is not None or "rank" not in m.info.levels:
            raise UsageError(
                f"{m} is a span-level metric: score it against span labels "
                "(ragmeter eval --golden G --chunks C, or ragmeter.labels.evaluate_spans)"
            )
    if missing not in ("zero", "skip"):
        raise UsageError(f"missing must be 'zero' or 'skip', got '{missing}'")
    if query_chunks is not None:
        from ._chunked import evaluate_chunked

        return evaluate_chunked(
            qrels, run, ms, query_chunks=query_chunks, missing=missing, ties=ties,
            duplicates=duplicates, run_name=run_name, config=config, golden_version=golden_version,
            slices=_slice_names(slices), splits=dict(splits or {}),
        )  # fmt: skip
    q = to_qrels(qrels)
    r = to_run(run, duplicates=duplicates)
    refuse_empty(qrels, q)  # nothing to score: refused as an empty file is
    refuse_empty(run, r)
    # ids that match nothing are loud, not 0.000 (check_run_against_qrels, run by _score when no
    # query or no judged item is in common: the exact checks cost a hash of every id)
    table = _score(q, r, ms, missing, ties, run_name)
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
        warnings=table["warnings"],
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
