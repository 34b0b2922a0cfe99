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

import itertools
import warnings
from collections.abc import Iterable
from typing import Any, Literal

import numpy as np
import pyarrow.compute as pc

from .._errors import InputError, RagmeterWarning, UsageError
from ..io._id_spaces import check_query_ids
from ..io._tables import dictionary_codes
from ..io._tables import flat as _flat
from ..metrics import Metric, parse_list
from ..metrics._evaluation import Evaluation
from ..metrics._kernels import SpanInputs, per_group_min
from ._budget import effective_k, k_summary
from ._mapping import Overlaps, SpanTable, check_spans_within_chunking, map_spans, questions_of

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
    # One chunk covering enough on its own settles most spans; the union walk below handles
    # spans whose coverage is assembled from several chunks.
    bounds: list[int] = (
        np.flatnonzero(np.r_[True, span[1:] != span[:-1], True]).tolist() if len(span) else []
    )
    for g0, g1 in itertools.pairwise(bounds):
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
) -> Evaluation:
    """Score a run of chunk ids against a golden set's evidence spans (see the module docstring).

    ``golden`` is a GoldenSet (or a list of Questions), ``chunking`` the Chunking whose chunk
    ids the run ranks, ``run`` a Run, a path or a dict ``{qid: {chunk_id: score}}``. The result
    records the chunking, its tokenizer, ``cover``, the budgets and their effective k per query
    (``details[qid]["effective_k"]``, min/median/max in ``config["effective_k"]``).
    """
    from ..metrics._ranking import rank_run

    cover = check_cover(cover)
    if missing not in ("zero", "skip"):
        raise UsageError(f"missing must be 'zero' or 'skip', got '{missing}'")
    ms = parse_list(metrics)
    for m in ms:
        if "span" not in m.info.levels:
            raise UsageError(
                f"{m} is not a span-level metric (span labels give R, Hit, RR and AllR); score "
                "P and nDCG within one chunking with chunk qrels: ragmeter labels export"
            )
    questions = questions_of(golden)
    check_spans_within_chunking(golden, chunking)
    r = _to_run(run)
    chunk_of_row = _chunk_rows(r, chunking)

    # -- which questions are scored -------------------------------------------------------------
    in_run = set(pc.unique(_flat(r.qid)).to_pylist())
    # a run for other questions would score 0 everywhere: refuse it; warn for some strays
    check_query_ids(
        in_run, [q.id for q in questions], run=run_name or r.name, labels="the golden set"
    )
    with_ev = [q for q in questions if q.evidence]
    no_relevant = sorted(q.id for q in questions if not q.evidence)
    missing_ids = sorted(q.id for q in with_ev if q.id not in in_run)
    scored = sorted((q for q in with_ev if missing == "zero" or q.id in in_run), key=lambda q: q.id)
    nq = len(scored)
    spans = SpanTable.from_questions(scored)
    _warn_unchunked(spans, chunking)

    # -- ranked chunks of each scored question (CSR: question i owns starts[i]:starts[i+1]) -----
    ranked = rank_run(r, ties=ties, qids=[q.id for q in scored])
    starts, lengths = ranked.starts, ranked.lengths
    row = np.repeat(np.arange(nq), lengths)
    pos = np.arange(row.size) - np.repeat(starts[:-1], lengths)
    chunks_ranked = chunk_of_row[ranked.rows]

    # -- found rank of every span: rank of each overlapping chunk in its question's list -------
    pairs = map_spans(spans, chunking)
    nc = max(len(chunking), 1)
    ranks = _lookup(
        row * nc + chunks_ranked, pos + 1, spans.question[pairs.span] * nc + pairs.chunk
    )
    found = found_ranks(pairs, ranks, spans.length, cover)

    # -- metric values --------------------------------------------------------------------------
    budgets = sorted({m.budget for m in ms if m.budget is not None})
    tokens = chunking.n_tokens[chunks_ranked] if row.size else np.zeros(0, dtype=np.int64)
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
    details = {}
    for i, q in enumerate(scored):
        d: dict[str, Any] = {
            "first_rank": int(first[i]) if np.isfinite(first[i]) else None,
            "n_retrieved": int(lengths[i]),
        }
        if budgets:
            d["effective_k"] = {str(b): int(eff[b][i]) for b in budgets}
        details[q.id] = d
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
        query_ids=tuple(q.id for q in scored),
        values=values,
        missing_ids=tuple(missing_ids),
        no_relevant_ids=tuple(no_relevant),
        golden_version=_version(golden),
        config=config,
        slices={q.id: tuple(q.slices) for q in questions},
        splits={q.id: q.split for q in questions},
        details=details,
    )


def _kernel(m: Metric) -> Any:
    kernel = m.info.span_kernel
    if kernel is None:  # pragma: no cover - evaluate_spans refuses rank-only metrics first
        raise UsageError(f"{m} cannot be computed on span labels")
    return kernel


def _lookup(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """``values`` at the position of each ``wanted`` key in ``keys`` (unique); 0 when absent."""
    if len(keys) == 0:
        return np.zeros(len(wanted), dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return np.where(keys[at] == wanted, values[at], 0)


def _chunk_rows(r: Any, chunking: Any) -> np.ndarray:
    """Chunk index of every run row; InputError when an item is not a chunk of ``chunking``."""
    codes, enc_dictionary = dictionary_codes(r.doc)
    dictionary = enc_dictionary.to_pylist()
    chunk_of_code = chunking.index_of(dictionary)
    unknown = [d for d, c in zip(dictionary, chunk_of_code.tolist(), strict=True) if c < 0]
    if unknown:
        shown = ", ".join(repr(u) for u in unknown[:3])
        raise InputError(
            f"{len(unknown)} item id(s) of the run are not chunks of chunking "
            f"'{chunking.name}' (e.g. {shown}); score a run of the chunk ids in that chunk file",
            path=r.name,
            field="doc",
        )
    return chunk_of_code[codes]


def _to_run(run: Any):  # -> Run
    from ..io._tables import Run

    if isinstance(run, Run):
        return run
    try:
        from ..io.convert import to_run
    except ImportError:  # pragma: no cover - the io package ships it
        raise UsageError("pass the run as ragmeter.io Run") from None
    return to_run(run)


def _version(golden: Any) -> str | None:
    try:
        return getattr(golden, "version", None)
    except (UsageError, InputError):
        return None


def _warn_unchunked(spans: SpanTable, chunking: Any) -> None:
    docs = set(chunking.doc)
    lost = sorted({d for d in spans.doc if d not in docs})
    if lost:
        n = sum(d not in docs for d in spans.doc)
        warnings.warn(
            f"{n} evidence span(s) point at {len(lost)} document(s) with no chunk in chunking "
            f"'{chunking.name}' (e.g. {lost[0]!r}); they can never be found. Was the chunking "
            "made from another corpus?",
            RagmeterWarning,
            stacklevel=3,
        )
