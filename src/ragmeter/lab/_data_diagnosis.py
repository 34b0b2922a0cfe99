"""The diagnosis view's model: ``ragmeter diagnose`` on what the store holds. The answers come
from a stored answer set, the evidence verdicts from the retrieval run that fed them (its stored
ranked lists scored at the prompt k and a large k, exactly as ``diagnose --run --k --large-k``
scores the run file), and the answers are checked against the same prompt contexts."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from .._errors import NotFoundError, UsageError
from ._data_comparison import question_url


def pick_run(store: Any, answers: dict[str, Any], run_id: int | None) -> Any | None:
    """The retrieval run the answers came from: ``run_id``; else the answer set's run; else the
    finished run of its golden version whose name matches the answer set's variant (exactly,
    then as a prefix either way: ``rerank`` -> ``reranker``); else that version's baseline."""
    if run_id is not None:
        return store.run(int(run_id))
    if answers.get("run_id"):
        return store.run(int(answers["run_id"]))
    runs = [
        r
        for r in store.runs(golden_version=answers.get("golden_version"), status="finished")
        if r.has_ranked
    ]
    name = str(answers.get("name") or "").lower()
    for test in (
        lambda r: r.name.lower() == name,
        lambda r: (
            bool(name) and (r.name.lower().startswith(name) or name.startswith(r.name.lower()))
        ),
        lambda r: r.is_baseline,
    ):
        found = [r for r in runs if test(r)]
        if found:
            return found[0]
    return None


def diagnosis_context(
    store: Any,
    answers_id: int,
    *,
    run_id: int | None = None,
    large_k: int | None = None,
    cache: MutableMapping[Any, Any] | None = None,
) -> dict[str, Any]:
    from ..answers._schema import Answer, AnswerSet
    from ..answers.contexts import prompt_contexts
    from ..answers.report import check_answers
    from ..diagnosis import pick_recall
    from ..diagnosis._diagnose import (
        diagnose,
        evidence_from_evaluation,
        recall_from_evaluation,
    )
    from ..diagnosis._table import CELLS, OTHER, table_from_report
    from ..labels import evaluate_spans
    from ..metrics import Metric
    from ._context import settings_of
    from ._data_stored import answer_set
    from ._prepared import prepared_run
    from ._recompute import Cutoff

    aset = answer_set(store, answers_id)
    run = pick_run(store, aset, run_id)
    if run is None:
        raise NotFoundError(
            f"answer set {answers_id} has no stored retrieval run on golden set "
            f"{aset.get('golden_version') or '(none)'} to read its evidence from"
        )
    prepared = prepared_run(store, run.id, cache)
    if not prepared.has_chunking:
        raise UsageError(
            f"run {run.id}'s chunking cannot be rebuilt here ({prepared.problem or 'no chunker'}):"
            " the answers' chunk citations and contexts need it"
        )
    golden, chunking, corpus = prepared.ctx.golden, prepared.chunking, prepared.ctx.corpus
    cut0 = Cutoff.of_settings(settings_of(run))
    k, budget = cut0.k, cut0.budget
    big = int(large_k) if large_k else int(prepared.ctx.headroom_k)
    answers = AnswerSet(
        tuple(Answer.model_validate(a) for a in aset["answers"]),
        str(aset["name"]),
        aset.get("source"),
    )
    scores = prepared.run
    allr = Metric("AllR")
    # the prompt cut as `diagnose --k` takes it (k when the run has one, as the answers' contexts)
    cut = allr.at(k=k) if k is not None else allr.at(budget=budget)
    ev = evaluate_spans(golden, chunking, scores, [cut, allr.at(k=big)], run_name=run.name)
    contexts = prompt_contexts(scores, chunking, k=k, budget=None if k else budget)
    report = check_answers(answers, golden, corpus=corpus, chunks=chunking, contexts=contexts)
    prompt = pick_recall([ev], None, "prompt")
    headroom = pick_recall([ev], None, "headroom")
    assert prompt is not None
    table = table_from_report(
        evidence_from_evaluation(*prompt),
        report,
        evidence_label=f"evidence in the prompt context ({prompt[1]} = 1)",
    )
    d = diagnose(
        table=table,
        prompt_recall=recall_from_evaluation(*prompt),
        headroom_recall=recall_from_evaluation(*headroom) if headroom else None,
        report=report,
        golden_version=aset.get("golden_version") or report.golden_version,
        split="tune",
    )
    version = aset.get("golden_version") or report.golden_version

    def cell(c: Any) -> dict[str, Any]:
        ids = list(table.ids[c.key])
        return {
            "key": c.key,
            "title": c.title,
            "reading": c.reading,
            "count": len(ids),
            "bad": c.bad,
            "largest": table.largest_bad is not None and table.largest_bad.key == c.key,
            "questions": [{"qid": q, "url": question_url(version, q)} for q in ids],
        }

    cells = {c.key: cell(c) for c in (*CELLS, *OTHER)}
    lb = table.largest_bad
    ties = "".join(
        f", tied with {c.title} (ties go down the chain)" for c in table.tied_with_largest
    )
    summary = report.summary()
    e = d.experiment
    return {
        "answers": {k: aset[k] for k in ("id", "name", "golden_version", "source", "n_answers")},
        "run": {"id": run.id, "name": run.name, "k": k, "budget": budget, "large_k": big},
        "command": _command(run, k, budget, big, aset),
        "evidence_label": table.evidence_label,
        "cells": cells,
        "n": table.n,
        "largest": f"largest bad cell: {lb.title} ({table.count(lb.key)} of {table.n}){ties}"
        if lb
        else "no bad cell has any question",
        "excluded": len(table.excluded),
        "steps": [
            {"question": s.question, "status": s.status, "detail": s.detail} for s in d.steps
        ],
        "notes": list(d.notes),
        "failing_link": d.failing_link or "none",
        "experiment": {
            "change": e.change,
            "metric": e.metric,
            "comparison": e.comparison,
            "refutation": e.refutation,
            "alternative": e.alternative,
            "assumption": e.assumption,
        },
        "summary": {
            "correct": summary["correct"],
            "n_scored": summary["n_scored"],
            "ok": summary["ok"],
            "ok_known": summary["ok_known"],
            "ok_rate": summary["ok_rate"],
            "support_unknown": summary["correct_support_unknown"],
            "faithful_but_wrong": summary["faithful_but_wrong"],
            "cites_outside_context": summary["cites_outside_context"],
        },
        "diagnosis": d.to_dict(),
    }


def _command(run: Any, k: int | None, budget: int | None, big: int, aset: dict[str, Any]) -> str:
    """The ``ragmeter diagnose`` line that prints these numbers from the files."""
    from ._context import settings_of

    cfg = dict(run.config or {})
    chunker = settings_of(run).get("chunker") or "CHUNKER"
    cut = f"--k {k}" if k is not None else f"--budget {budget}"
    corpus = cfg.get("corpus", "CORPUS")
    return (
        f"ragmeter chunk {corpus} -c {chunker} -o chunks.jsonl\n"
        f"ragmeter diagnose --golden {cfg.get('golden', 'GOLDEN')} --corpus {corpus} "
        f"--chunks chunks.jsonl --run {cfg.get('run_file', 'RUN')} {cut} --large-k {big} "
        f"--answers {aset.get('source') or 'ANSWERS'}"
    )


def diagnosis_list_context(store: Any) -> dict[str, Any]:
    from ._data_stored import answer_sets

    return {"answer_sets": answer_sets(store)}
