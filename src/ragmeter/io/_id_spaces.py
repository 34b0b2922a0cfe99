"""Do a run and its labels name the same things? A run scored against labels that share none of
its query ids, or none of its item ids, scores 0 everywhere, which looks like a bad retriever
rather than the wrong file. These checks make that loud.

- query ids: when no query of the run is a labelled query, there is nothing to score (an
  error); when only some questions of a golden set are, the others are ignored, and a warning
  counts them and shows a few (qrels often judge a subset of a run's queries: no warning).
- item ids: when no item the run retrieves is judged in the qrels, the run and the qrels use two
  id spaces (typically chunk ids against document qrels): a warning says so and how to fix it,
  and the Evaluation keeps it (``Evaluation.warnings``) for the CLI to print after the results.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import pyarrow as pa
import pyarrow.compute as pc

from .._errors import InputError
from ._tables import Qrels, Run, flat
from ._trec_format import warn

SHOWN = 3


def _some(ids: Iterable[str]) -> str:
    items = sorted(ids)
    shown = ", ".join(repr(x) for x in items[:SHOWN])
    return shown + (", ..." if len(items) > SHOWN else "")


def check_query_ids(
    run_qids: Collection[str],
    labelled: Collection[str],
    *,
    run: str,
    labels: str,
    warn_some: bool = True,
) -> None:
    """InputError when no run query is labelled; a RagmeterWarning when some are not (unless
    ``warn_some`` is False: a qrels file often judges a subset of the run's queries).

    ``labels`` names the labels in messages ("the golden set", "the qrels")."""
    if not run_qids or not labelled:
        return
    known = set(labelled)
    unknown = [q for q in run_qids if q not in known]
    if len(unknown) == len(run_qids):
        raise InputError(
            f"none of the run's {len(run_qids)} query id(s) is a query of {labels} (run: "
            f"{_some(run_qids)}; {labels}: {_some(known)}): was the run made for other "
            "questions, or are the ids spelled differently?",
            path=run,
            field="qid",
        )
    if not unknown or not warn_some:
        return
    warn(
        f"{run}: {len(unknown)} of the run's {len(run_qids)} query id(s) are not queries of "
        f"{labels} and are ignored (e.g. {_some(unknown)})"
    )


def check_item_ids(run_docs: pa.Array, qrels_docs: pa.Array, *, run: str, qrels: str) -> str | None:
    """The message of a RagmeterWarning (issued, and returned so an Evaluation can keep it)
    when no item the run retrieves is judged in the qrels; None when some item is."""
    if len(run_docs) == 0 or len(qrels_docs) == 0:
        return None
    retrieved = pc.unique(flat(run_docs))
    judged = pc.unique(flat(qrels_docs))
    if pc.any(pc.is_in(retrieved, value_set=judged)).as_py():
        return None
    ids = retrieved.to_pylist()
    message = (
        f"{run}: none of the {len(retrieved)} item id(s) the run retrieves is judged in {qrels} "
        f"(run: {_some(ids)}; qrels: {_some(judged.to_pylist())}), so every score is 0: the "
        "two name items differently."
    )
    chunk = _chunk_of_judged(ids, set(judged.to_pylist()))
    if chunk is not None:
        message += (
            f" The run's ids are chunk ids of judged documents (e.g. {chunk[0]!r} of {chunk[1]!r})."
        )
    message += (
        " Score a run of chunk ids on span labels (ragmeter eval --golden G --chunks C RUN), "
        "against chunk qrels (ragmeter labels export --golden G --chunks C -o chunks.qrels), "
        'or on documents: level = "document" in the experiment writes document_run.trec, '
        "ragmeter.labels.rollup_run rolls a run up in Python"
    )
    warn(message)
    return message


def _chunk_of_judged(ids: list[str], judged: set[str]) -> tuple[str, str] | None:
    """The first retrieved id of the form ``doc#start-end`` (a chunk id) whose ``doc`` is
    judged, with that document; None when no retrieved id is."""
    for x in ids:
        doc, sep, span = x.rpartition("#")
        if sep and doc in judged and _is_span(span):
            return x, doc
    return None


def _is_span(text: str) -> bool:
    start, sep, end = text.partition("-")
    return bool(sep) and start.isdigit() and end.isdigit()


def check_run_against_qrels(
    qrels: Qrels, run: Run, *, run_name: str | None = None
) -> tuple[str, ...]:
    """Both checks for a run scored against item qrels (what ``ragmeter eval`` does); returns
    the warnings issued about the run's item ids (the Evaluation keeps them)."""
    name = run_name or run.name or "the run"
    src = qrels.source or ""
    qrels_name = "the qrels" if src.startswith("<") or not src else f"the qrels {src}"
    # a query named with no row (``{qid: {}}`` in a dict) is named all the same
    run_qids = list(dict.fromkeys([*pc.unique(flat(run.qid)).to_pylist(), *run.empty_queries]))
    labelled = list(dict.fromkeys([*pc.unique(flat(qrels.qid)).to_pylist(), *qrels.empty_queries]))
    check_query_ids(run_qids, labelled, run=name, labels=qrels_name, warn_some=False)
    message = check_item_ids(run.doc, qrels.doc, run=name, qrels=qrels_name)
    return () if message is None else (message,)
