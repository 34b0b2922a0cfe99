"""Span-level metrics: score a ranked list of chunks against evidence labelled as spans.

Definitions (also in docs/metrics.md). For a question with evidence spans and a ranked list of
chunks of one chunking:

- a chunk *covers* a span by the fraction of the span's characters it contains;
- a span is *found* within a cutoff when the UNION of the characters of the chunks ranked
  within the cutoff covers at least ``cover`` of the span (default 0.5). Union, not sum:
  characters held by two overlapping chunks count once;
- a span's *found rank* is the smallest cutoff at which it is found (infinite if never);
- the cutoff is ``k`` (``R@5``), the whole list (``R``), or the effective k of a token budget
  (``R@budget=1200``: chunks taken in rank order while their running token total fits; see
  ``_budget.assemble``).

Per question, over the spans with grade >= ``rel`` (default 1):

- ``R@k``    = spans found / spans (0 when the question has no span of that grade);
- ``Hit@k``  = 1 if some span is found, else 0;
- ``RR@k``   = 1 / (smallest found rank) if some span is found within k, else 0;
- ``AllR@k`` = 1 if every required span (``Question.required_spans()``) is found, else 0;
  a question whose spans are all marked ``required: false`` needs any one span (= ``Hit@k``).

Questions without evidence (unanswerable) are excluded and listed in ``no_relevant_ids``;
questions absent from the run score 0 (``missing="zero"``) or are dropped (``"skip"``); run
queries that are not golden questions are ignored.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._errors import InputError, RagmeterWarning, UsageError
from ..data import golden_version_of
from ..io import check_query_ids, dictionary_codes
from ..io import flat as _flat
from ..metrics import REGISTRY, ColumnDetails, Evaluation, Metric, parse_list
from ..metrics._kernels import SpanInputs, per_group_min
from ._budget import effective_k, k_summary
from ._mapping import Overlaps, SpanTable
from ._span_mapping import SpanMapping, span_mapping

DEFAULT_METRICS = "R,Hit,AllR,RR"
DEFAULT_COVER = 0.5


def check_cover(cover: float) -> float:
    """``cover`` as a float in (0, 1], or UsageError."""
    try:
        value = float(cover)
    except (TypeError, ValueError):
        raise UsageError(f"cover must be a number in (0, 1], got {cover!r}") from None
    if not 0 < value <= 1:
        raise UsageError(f"cover must be in (0, 1] (share of a span's characters), got {cover}")
    return value


def span_metric_list(
    metrics: str | Iterable[str | Metric] | None = None,
    k: Iterable[int] = (),
    budgets: Iterable[int] = (),
) -> list[Metric]:
    """Metrics for span-level scoring: each given metric (default ``R,Hit,AllR,RR``) at every
    ``k`` and every budget; a metric that already carries a cutoff is kept as written."""
    ms = parse_list(metrics or DEFAULT_METRICS)
    ks, bs = list(k), list(budgets)
    if not ks and not bs:
        return ms
    out: list[Metric] = []
    for m in ms:
        if m.k is not None or m.budget is not None:
            variants = [m]
        else:
            variants = [m.at(x) for x in ks] + [m.at(budget=b) for b in bs]
        out.extend(v for v in variants if v not in out)
    return out


def found_ranks(
    pairs: Overlaps, ranks: np.ndarray, span_len: np.ndarray, cover: float
) -> np.ndarray:
    """For each span, the smallest rank r such that the union of the span characters held by
    the chunks ranked <= r covers at least ``cover`` of the span (inf when never).

    ``ranks[i]`` is the rank of ``pairs.chunk[i]`` in the ranked list of the span's question
    (0 when not retrieved).
    """
    out = np.full(len(span_len), np.inf)
    hit = ranks > 0
    span, rank, lo, hi = pairs.span[hit], ranks[hit], pairs.lo[hit], pairs.hi[hit]
    order = np.lexsort((rank, span))
    span, rank, lo, hi = span[order], rank[order], lo[order], hi[order]
    need = cover * span_len - 1e-9
    if not len(span):
        return out
    # A span whose best-ranked chunk covers enough on its own is found at that rank (numpy, the
    # usual case); the union walk below handles spans whose coverage is assembled from several
    # chunks, one Python step per pair of those spans only.
    bounds = np.flatnonzero(np.r_[True, span[1:] != span[:-1], True])
    heads = bounds[:-1]
    alone = (hi[heads] - lo[heads]) >= need[span[heads]]
    out[span[heads[alone]]] = rank[heads[alone]]
    for g0, g1 in zip(heads[~alone].tolist(), bounds[1:][~alone].tolist(), strict=True):
        s = int(span[g0])
        covered: list[tuple[int, int]] = []
        for i in range(g0, g1):
            covered = _union_insert(covered, int(lo[i]), int(hi[i]))
            if sum(b - a for a, b in covered) >= need[s]:
                out[s] = rank[i]
                break
    return out


def _union_insert(intervals: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    """Disjoint sorted intervals with ``[lo, hi)`` merged in."""
    out: list[tuple[int, int]] = []
    for a, b in intervals:
        if b < lo or a > hi:
            out.append((a, b))
        else:
            lo, hi = min(lo, a), max(hi, b)
    out.append((lo, hi))
    out.sort()
    return out


def evaluate_spans(
    golden: Any,
    chunking: Any,
    run: Any,
    metrics: str | Iterable[str | Metric] = DEFAULT_METRICS,
    *,
    cover: float = DEFAULT_COVER,
    ties: Literal["trec", "given"] = "trec",
    missing: Literal["zero", "skip"] = "zero",
    run_name: str | None = None,
    mapping: SpanMapping | None = None,
) -> Evaluation:
    """Score a run of chunk ids against a golden set's evidence spans (see the module docstring).

    ``golden`` is a GoldenSet (or a list of Questions), ``chunking`` the Chunking whose chunk
    ids the run ranks, ``run`` a Run, a path or a dict ``{qid: {chunk_id: score}}``. The result
    records the chunking, its tokenizer, ``cover``, the budgets and their effective k per query
    (``details[qid]["effective_k"]``, min/median/max in ``config["effective_k"]``).
    ``mapping``: :func:`~ragmeter.labels.span_mapping` of these golden and chunking objects,
    when several runs are scored on them (the run-independent work is then done once).
    """
    from ..metrics import rank_run

    cover = check_cover(cover)
    if missing not in ("zero", "skip"):
        raise UsageError(f"missing must be 'zero' or 'skip', got '{missing}'")
    ms = parse_list(metrics)
    for m in ms:
        if "span" not in m.info.levels:
            *names, last = (i.name for i in REGISTRY.values() if "span" in i.levels)
            raise UsageError(
                f"{m} is not a span-level metric (span labels give {', '.join(names)} and "
                f"{last}); score P and nDCG within one chunking with chunk qrels: ragmeter "
                "labels export"
            )
    if mapping is None:
        mapping = span_mapping(golden, chunking)
    else:
        mapping.check_for(golden, chunking)
    r = _to_run(run)
    chunk_of_row = _chunk_rows(r, chunking)

    # -- which questions are scored (Arrow and numpy: no Python step per question; the
    #    questions, their spans and overlaps are the mapping's when the run answers them all) --
    golden_ids = mapping.question_array
    run_q = _RunQueries(r.qid)
    if not pc.all(pc.is_in(run_q.ids, value_set=golden_ids)).as_py():
        # a run for other questions would score 0 everywhere: refuse it; warn for some strays
        check_query_ids(
            run_q.ids.to_pylist(), mapping.spans.question_ids, run=run_name or r.name,
            labels="the golden set",
        )  # fmt: skip
    in_run = pc.is_in(golden_ids, value_set=run_q.ids).to_numpy(zero_copy_only=False)
    if r.empty_queries:  # answered with an empty ranking: in the run (scored 0), not missing
        answered = pc.is_in(golden_ids, value_set=pa.array(r.empty_queries, pa.string()))
        in_run = in_run | answered.to_numpy(zero_copy_only=False)
    has_ev = mapping.has_evidence
    no_relevant = _ids_at(golden_ids, mapping.sorted_rows(~has_ev))
    missing_ids = _ids_at(golden_ids, mapping.sorted_rows(has_ev & ~in_run))
    scored = mapping.scored(has_ev if missing == "zero" else has_ev & in_run)
    scored_ids, spans, kept, pairs = scored.ids, scored.spans, scored.kept, scored.pairs
    nq = len(scored_ids)
    _warn_unchunked(spans, chunking, mapping.extent[kept])

    # -- ranked chunks of each scored question (CSR: question i owns starts[i]:starts[i+1]) -----
    ranked = rank_run(r, ties=ties, qids=scored_ids, codes=run_q.codes(scored.id_array))
    starts, lengths = ranked.starts, ranked.lengths
    chunks_ranked = chunk_of_row[ranked.rows]

    # -- found rank of every span: rank of each overlapping chunk in its question's list -------
    ranks = _pair_ranks(chunks_ranked, starts, scored.pair_question, pairs.chunk, len(chunking))
    found = found_ranks(pairs, ranks, spans.length, cover)

    # -- metric values --------------------------------------------------------------------------
    budgets = sorted({m.budget for m in ms if m.budget is not None})
    tokens = chunking.n_tokens[chunks_ranked] if budgets else np.zeros(0, dtype=np.int64)
    eff = {b: effective_k(tokens, starts, b) for b in budgets}
    values = np.zeros((nq, len(ms)))
    for j, m in enumerate(ms):
        if m.budget is not None:
            cutoff = eff[m.budget].astype(np.float64)
        else:
            cutoff = np.full(nq, np.inf if m.k is None else float(m.k))
        inputs = SpanInputs(spans.question, spans.grade, spans.required, found, cutoff, nq)
        values[:, j] = _kernel(m)(inputs, m)

    first = per_group_min(spans.question, found, nq)
    details = SpanDetails(
        spans.question_ids,
        {
            "first_rank": np.where(np.isfinite(first), first, 0).astype(np.int64),
            "n_retrieved": lengths,
        },
        {str(b): eff[b] for b in budgets},
    )
    config: dict[str, Any] = {
        "level": "span",
        "chunking": chunking.name,
        "tokenizer": chunking.tokenizer,
        "cover": cover,
        "budgets": budgets,
        "ties": ties,
        "missing": missing,
        "n_spans": len(spans),
    }
    if budgets:
        # over the questions the run answers (a missing question has no context to assemble)
        config["effective_k"] = {str(b): k_summary(eff[b][lengths > 0]) for b in budgets}
    return Evaluation(
        run=run_name or r.name,
        metrics=tuple(ms),
        query_ids=tuple(scored_ids),
        values=values,
        missing_ids=tuple(missing_ids),
        no_relevant_ids=tuple(no_relevant),
        golden_version=golden_version_of(golden),
        config=config,
        slices=dict(mapping.slices),
        splits=dict(mapping.splits),
        details=details,
    )


def _kernel(m: Metric) -> Any:
    kernel = m.info.span_kernel
    if kernel is None:  # pragma: no cover - evaluate_spans refuses rank-only metrics first
        raise UsageError(f"{m} cannot be computed on span labels")
    return kernel


def _pair_ranks(
    chunks_ranked: np.ndarray,
    starts: np.ndarray,
    pair_question: np.ndarray,
    pair_chunk: np.ndarray,
    n_chunks: int,
) -> np.ndarray:
    """The rank of chunk ``pair_chunk[i]`` in question ``pair_question[i]``'s ranked list
    (``chunks_ranked``, CSR by ``starts``), 0 when it is not in that list.

    Only the ranked rows whose chunk overlaps some span can match: they are looked up, as
    (question, chunk) keys, unique within a ranked list (a run lists a chunk once per query).
    """
    out = np.zeros(len(pair_chunk), dtype=np.int64)
    if not len(pair_chunk) or not len(chunks_ranked):
        return out
    overlapping = np.zeros(max(n_chunks, 1), dtype=bool)
    overlapping[pair_chunk] = True
    at = np.flatnonzero(overlapping[chunks_ranked])
    if not len(at):
        return out
    question = np.searchsorted(starts, at, side="right") - 1
    nc = max(n_chunks, 1)
    keys = question * nc + chunks_ranked[at]
    order = np.argsort(keys, kind="stable")
    keys, rank = keys[order], (at - starts[question] + 1)[order]
    wanted = pair_question * nc + pair_chunk
    where = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return np.where(keys[where] == wanted, rank[where], 0)


class _RunQueries:
    """The query ids of a run, encoded once: ``ids`` (each distinct id in order of first
    appearance, a null too: what ``pc.unique`` gives) and the code of each row in them."""

    def __init__(self, qid: Any) -> None:
        flat = _flat(qid)
        n = len(flat)
        heads = None
        if n > 1 and not flat.null_count:
            # a run lists each query's rows together: hash one id per block of equal ids
            # (the codes are the same as hashing every row's)
            change = pc.not_equal(flat.slice(1), flat.slice(0, n - 1))
            heads = np.flatnonzero(np.r_[True, change.to_numpy(zero_copy_only=False)])
        if heads is not None and 2 * len(heads) <= n:
            encoded = pc.dictionary_encode(flat.take(pa.array(heads, type=pa.int64())))
            self._indices = np.repeat(encoded.indices.to_numpy(), np.diff(np.r_[heads, n]))
        else:
            encoded = pc.dictionary_encode(flat, null_encoding="encode")
            self._indices = encoded.indices.to_numpy()
        self.ids = encoded.dictionary

    def codes(self, scored: pa.Array) -> np.ndarray:
        """Position of each row's query in ``scored`` (-1: none, a null id too), as
        ``query_codes`` gives it, with one lookup per distinct query instead of one per row."""
        position = pc.index_in(self.ids, value_set=scored).fill_null(-1)
        position = position.to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
        return position[self._indices]


def _chunk_rows(r: Any, chunking: Any) -> np.ndarray:
    """Chunk index of every run row; InputError when an item is not a chunk of ``chunking``."""
    docs = _flat(r.doc)
    if hasattr(chunking, "rows_of"):  # hashed in Arrow, no Python object per id
        rows = chunking.rows_of(docs)
    else:
        codes, dictionary = dictionary_codes(docs)
        rows = chunking.index_of(dictionary.to_pylist())[codes]
    bad = np.flatnonzero(rows < 0)
    unknown = pc.unique(docs.take(pa.array(bad))).to_pylist() if len(bad) else []
    if unknown:
        shown = ", ".join(repr(u) for u in unknown[:3])
        raise InputError(
            f"{len(unknown)} item id(s) of the run are not chunks of chunking "
            f"'{chunking.name}' (e.g. {shown}); score a run of the chunk ids in that chunk file",
            path=r.name,
            field="doc",
        )
    return rows


def _to_run(run: Any):  # -> Run
    from ..io import Run

    if isinstance(run, Run):
        return run
    try:
        from ..io.convert import refuse_empty, to_run
    except ImportError:  # pragma: no cover - the io package ships it
        raise UsageError("pass the run as ragmeter.io Run") from None
    r = to_run(run)
    refuse_empty(run, r)  # an empty dict or table: nothing to score, as an empty file
    return r


def _warn_unchunked(spans: SpanTable, chunking: Any, extent: np.ndarray) -> None:
    unchunked = np.flatnonzero(extent < 0)
    lost = sorted({spans.doc[i] for i in unchunked.tolist()})
    if lost:
        n = len(unchunked)
        warnings.warn(
            f"{n} evidence span(s) point at {len(lost)} document(s) with no chunk in chunking "
            f"'{chunking.name}' (e.g. {lost[0]!r}); they can never be found. Was the chunking "
            "made from another corpus?",
            RagmeterWarning,
            stacklevel=3,
        )


class SpanDetails(ColumnDetails):
    """Per-question details of a span evaluation, built on access: ``first_rank`` (None when
    no span is found), ``n_retrieved`` and, with budgets, ``effective_k`` per budget."""

    def __init__(
        self,
        query_ids: Sequence[str],
        columns: Mapping[str, np.ndarray],
        effective: Mapping[str, np.ndarray],
    ) -> None:
        super().__init__(query_ids, columns, none_when_zero=("first_rank",))
        self._effective = {b: np.asarray(v).tolist() for b, v in effective.items()}

    def __getitem__(self, qid: str) -> Mapping[str, Any]:
        d = dict(super().__getitem__(qid))
        if self._effective:
            i = self._index[qid]
            d["effective_k"] = {b: int(v[i]) for b, v in self._effective.items()}
        return d


def _ids_at(ids: pa.Array, rows: np.ndarray) -> list[str]:
    """``ids[rows]`` as Python strings."""
    return ids.take(pa.array(rows, type=pa.int64())).to_pylist() if len(rows) else []
