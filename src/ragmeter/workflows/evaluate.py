"""Score runs (``ragmeter eval``): runs of item ids against qrels through
:func:`ragmeter.metrics.evaluate`, runs of chunk ids against span labels through
:func:`ragmeter.labels.evaluate_spans_files`, and record the evaluations in the store when
asked. The command line parses its options, calls :func:`score_runs` (and :func:`record`) and
renders the :class:`~ragmeter.metrics.Evaluation` records it gets back.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from .._errors import UsageError
from ..metrics import NO_MEAN  # how a table prints "no mean" (one text everywhere)

if TYPE_CHECKING:  # pragma: no cover
    from ..metrics import Evaluation, Missing, Ties  # Missing, Ties: the accepted strings
    from ..store import Store

__all__ = [
    "DEFAULT_METRICS",
    "ID_SPACE_WARNING",
    "NO_MEAN",
    "Scored",
    "evaluation_notes",
    "record",
    "score_runs",
]

#: the metrics scored on qrels when none are named
DEFAULT_METRICS = "nDCG@10,RR@10,R@100,P@5,AP"
#: the start of the id-space warning's text (ragmeter.io.check_item_ids): kept in the
#: Evaluation (its ``warnings``) and said after the results, not while reading
ID_SPACE_WARNING = r".*: none of the \d+ item id\(s\) the run retrieves is judged"

#: ``status(text)``: a context shown while a file is read and scored (a spinner on a terminal)
Status = Callable[[str], AbstractContextManager[object]]


@dataclass(frozen=True)
class Scored:
    """The evaluations of one ``eval`` job, each with the run file it scored (what the store
    records as its source)."""

    evaluations: list[Evaluation]
    run_files: list[Path]


def score_runs(
    paths: Sequence[str | os.PathLike[str]],
    *,
    metrics: str | None = None,
    missing: str = "zero",
    ties: str = "trec",
    duplicates: str = "best",
    golden: str | os.PathLike[str] | None = None,
    chunks: str | os.PathLike[str] | None = None,
    corpus: str | os.PathLike[str] | None = None,
    k: str | None = None,
    budget: str | None = None,
    cover: float = 0.5,
    query_chunks: int | None = None,
    status: Status | None = None,
    duplicates_fix: str | None = None,
) -> Scored:
    """Score the runs ``paths`` names: with ``golden`` or ``chunks``, every path is a run of
    chunk ids scored on span labels (``metrics`` default ``R,Hit,AllR,RR`` at every ``k`` and
    ``budget``); else ``paths[0]`` is the qrels and the rest are runs (``metrics`` default
    :data:`DEFAULT_METRICS`; ``query_chunks=N`` streams each TREC run in N slices of queries,
    with the same numbers). A duplicate-row error suggests ``duplicates_fix`` when given."""
    from ..io import DuplicateRowsError

    try:
        if golden is not None or chunks is not None:
            return _span_scores(
                paths, metrics, golden, chunks, corpus, k, budget, cover, missing, ties, duplicates
            )
        if k is not None or budget is not None:
            raise UsageError("--k and --budget apply to span labels; give --golden and --chunks")
        return _item_scores(paths, metrics, missing, ties, duplicates, query_chunks, status)
    except DuplicateRowsError as e:
        if duplicates_fix is None:
            raise
        raise e.spelled(duplicates_fix) from None


def record(store: Store, scored: Scored) -> list[int]:
    """Record each evaluation as a finished run (``ragmeter runs list`` shows them); returns
    their run ids, in order."""
    return [
        store.record_evaluation(e, source=str(p))
        for e, p in zip(scored.evaluations, scored.run_files, strict=True)
    ]


def _span_scores(
    paths: Sequence[str | os.PathLike[str]],
    metrics: str | None,
    golden: str | os.PathLike[str] | None,
    chunks: str | os.PathLike[str] | None,
    corpus: str | os.PathLike[str] | None,
    k: str | None,
    budget: str | None,
    cover: float,
    missing: str,
    ties: str,
    duplicates: str,
) -> Scored:
    if golden is None or chunks is None:
        raise UsageError("span-level scoring needs both --golden and --chunks")
    from ..labels import evaluate_spans_files

    evals = evaluate_spans_files(
        paths,
        metrics=metrics,
        golden=golden,
        chunks=chunks,
        corpus=corpus,
        k=k,
        budget=budget,
        cover=cover,
        # the strings as typed: the scorer refuses any other value (UsageError)
        missing=cast("Missing", missing),
        ties=cast("Ties", ties),
        duplicates=duplicates,
    )
    return Scored(evaluations=evals, run_files=[Path(p) for p in paths])


def _item_scores(
    paths: Sequence[str | os.PathLike[str]],
    metrics: str | None,
    missing: str,
    ties: str,
    duplicates: str,
    query_chunks: int | None,
    status: Status | None,
) -> Scored:
    from ..io import to_qrels
    from ..metrics import evaluate, parse_list

    shown: Status = status or (lambda _text: contextlib.nullcontext())
    ms = parse_list(metrics or DEFAULT_METRICS)  # refused before any file is read
    if len(paths) < 2:
        raise UsageError("give QRELS and at least one RUN (or --golden G --chunks C RUN ...)")
    # the library picks the reader (TREC or JSON Lines) from the file, as ragmeter.evaluate does
    with shown(f"reading {paths[0]}"):
        qrels = to_qrels(paths[0])
    evals: list[Evaluation] = []
    for p in paths[1:]:
        with shown(f"reading and scoring {p}"), warnings.catch_warnings():
            # an id-space mismatch is kept in the Evaluation and said after the results
            warnings.filterwarnings("ignore", message=ID_SPACE_WARNING)
            evals.append(
                evaluate(
                    qrels,
                    p,  # query_chunks=N: a TREC run is streamed, never read whole
                    ms,
                    # the strings as typed: evaluate() refuses any other value (UsageError)
                    missing=cast("Missing", missing),
                    ties=cast("Ties", ties),
                    duplicates=duplicates,
                    query_chunks=query_chunks,
                    run_name=str(p),
                    config={"qrels": str(paths[0])},
                )
            )
    return Scored(evaluations=evals, run_files=[Path(p) for p in paths[1:]])


def evaluation_notes(evals: Sequence[Evaluation]) -> list[str]:
    """What a reader of the scores must know, per run (``ragmeter eval``'s table caption): a
    run none of whose item ids is judged, labelled queries missing from it (counted as 0 or
    skipped) and queries without a relevant item, the golden-set version, the effective k at
    each token budget."""
    notes = []
    for e in evals:
        if e.warnings:
            notes.append(
                f"{e.run}: no item id of the run is in the qrels: every score is 0 "
                "(see the warning)"
            )
        if e.n_missing or e.n_no_relevant:
            notes.append(
                f"{e.run}: {e.n_missing} labelled queries missing from the run (counted as "
                f"{'0' if e.config.get('missing', 'zero') == 'zero' else 'skipped'}), "
                f"{e.n_no_relevant} queries with no relevant item excluded"
            )
        if e.golden_version:
            notes.append(f"{e.run}: golden set {e.golden_version}")
        for budget, eff in (e.config.get("effective_k") or {}).items():
            notes.append(
                f"{e.run}: effective k at budget {budget}: min {eff.get('min')}, "
                f"median {eff.get('median')}, max {eff.get('max')}"
            )
    return notes
