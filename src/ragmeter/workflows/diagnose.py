"""Diagnose: which link of the RAG chain fails, and ONE next experiment to run.

One pipeline for ``ragmeter diagnose`` (files) and the lab's diagnosis view (a stored answer set
and the run that fed it): score the retrieval run at the prompt cut (k or token budget) and at
a large k, check the answers against the same prompt contexts, build the retrieval-by-answer
table from the evidence verdicts and the answer checks (or take the table as counts or a
file), and walk the "where to look first" path (:func:`ragmeter.diagnosis.diagnose`). The
interfaces parse their input, call :func:`diagnose` and render the :class:`DiagnoseResult`.

:func:`run_for_answers` names the stored run an answer set came from (the lab's default).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import UsageError

if TYPE_CHECKING:
    from ..answers import AnswerReport, AnswerSet
    from ..chunking import Chunking
    from ..data import Corpus, GoldenSet
    from ..diagnosis import Diagnosis, RetrievalAnswerTable, TableCell, Thresholds
    from ..io import Run
    from ..metrics import Evaluation
    from ..store import RunRecord, Store

__all__ = [
    "DiagnoseResult",
    "PromptRun",
    "categories",
    "diagnose",
    "largest_bad_line",
    "run_for_answers",
    "score_prompt_run",
]


@dataclass(frozen=True)
class PromptRun:
    """The retrieval run that built the prompts: its ranked lists (a TREC/JSONL run file or a
    :class:`~ragmeter.io.Run`), named ``name``, cut at ``k`` or at ``budget`` tokens (exactly
    one), and the ``large_k`` of the headroom check."""

    ranked: str | Run
    name: str
    k: int | None
    budget: int | None
    large_k: int


@dataclass(frozen=True)
class DiagnoseResult:
    """What a diagnosis found: the path and next experiment (``diagnosis``), the
    retrieval-by-answer table it read (None without one), the answers report (None without
    answers), and the golden version the experiment is written for."""

    diagnosis: Diagnosis
    table: RetrievalAnswerTable | None
    report: AnswerReport | None
    golden_version: str | None

    def to_dict(self) -> dict[str, Any]:
        """``ragmeter diagnose --format json``: the diagnosis, with the answers' summary and
        their faithful-but-wrong cases when answers were checked."""
        out = self.diagnosis.to_dict()
        if self.report is not None:
            out["answers"] = self.report.summary()
            out["faithful_but_wrong"] = [f.to_dict() for f in self.report.faithful_but_wrong]
        return out


def score_prompt_run(golden: GoldenSet, chunking: Chunking, run: PromptRun) -> Evaluation:
    """Span AllR of ``run`` at the prompt cut (first) and at its large k (last; one metric when
    they are the same). Span labels give R, Hit, RR and AllR (nDCG needs chunk qrels)."""
    if (run.k is None) == (run.budget is None):
        raise UsageError("give the prompt's --k or its --budget (exactly one)")
    from ..labels import evaluate_spans
    from ..metrics import Metric

    allr = Metric("AllR")
    cut = allr.at(k=run.k) if run.k is not None else allr.at(budget=run.budget)
    metrics = [cut, allr.at(k=run.large_k)]
    return evaluate_spans(golden, chunking, run.ranked, metrics, run_name=run.name)


def diagnose(
    *,
    golden: GoldenSet | None = None,
    corpus: Corpus | None = None,
    chunking: Chunking | None = None,
    answers: AnswerSet | Path | None = None,
    run: PromptRun | None = None,
    evaluations: Sequence[Evaluation] = (),
    prompt_metric: str | None = None,
    headroom_metric: str | None = None,
    counts: Sequence[int] | None = None,
    table_file: Path | None = None,
    golden_version: str | None = None,
    split: str = "tune",
    thresholds: Thresholds | None = None,
) -> DiagnoseResult:
    """Walk recall at a large k -> recall at the prompt -> faithful and correct -> slices with
    whatever is given, and name the failing link and ONE next experiment.

    - ``run``: scored at its prompt cut and large k (needs ``golden`` and ``chunking``); its
      prompt contexts are the context of every answer that carries none. Its prompt cut is the
      recall read at the prompt, its large k the headroom (``prompt_metric`` /
      ``headroom_metric`` still choose); ``evaluations`` alone are read by rank cutoff
      (smallest / largest).
    - ``evaluations``: further per-question evaluations to read recall from.
    - ``answers``: an answer set, or an answers file read against ``golden``; checked for
      correctness and faithfulness.
    - The table: ``counts`` (working, generation_failure, from_memory, retrieval_failure
      [, cites_outside_context [, support_unknown]]), else ``table_file``, else built from the
      evidence at the prompt and the answers report.
    - ``golden_version``: the version the experiment names; default the golden set's, else the
      first evaluation's.
    """
    from ..answers.contexts import prompt_contexts
    from ..answers.report import check_answers
    from ..data import golden_version_of
    from ..diagnosis import diagnose as walk
    from ..diagnosis import (
        evidence_from_evaluation,
        pick_recall,
        recall_from_evaluation,
        table_from_counts,
        table_from_file,
        table_from_report,
    )

    evals = list(evaluations)
    contexts = None
    if run is not None:
        if golden is None or chunking is None:
            raise UsageError("--run needs --golden and --chunks to score spans")
        scored = score_prompt_run(golden, chunking, run)
        evals.append(scored)
        # the run was scored at the prompt (k or budget) and at the large k: say which is which
        # (recall at a budget has no rank cutoff, so picking by cutoff would read AllR@large_k
        # as the prompt's recall)
        prompt_metric = prompt_metric or str(scored.metrics[0])
        if len(scored.metrics) > 1:  # k equal to the large k: no headroom to measure
            headroom_metric = headroom_metric or str(scored.metrics[-1])
        # answers that carry no `context` are checked against what this run put in the prompt
        contexts = prompt_contexts(run.ranked, chunking, k=run.k, budget=run.budget)

    report = None
    if answers is not None:
        if golden is None:
            raise UsageError("--answers needs --golden")
        if isinstance(answers, Path):
            from ..answers import load_answers

            answers = load_answers(answers, golden=golden)
        report = check_answers(answers, golden, corpus=corpus, chunks=chunking, contexts=contexts)
    prompt = pick_recall(evals, prompt_metric, "prompt") if evals else None
    headroom = pick_recall(evals, headroom_metric, "headroom") if evals else None
    version = (
        golden_version
        or (golden_version_of(golden) if golden is not None else None)
        or next((e.golden_version for e in evals if e.golden_version), None)
    )

    table = None
    if counts is not None:
        optional = ("cites_outside_context", "support_unknown")[: len(counts) - 4]
        extra = dict(zip(optional, counts[4:], strict=True))
        table = table_from_counts(*counts[:4], **extra)
    elif table_file is not None:
        table = table_from_file(table_file)
    elif prompt is not None and report is not None:
        table = table_from_report(
            evidence_from_evaluation(*prompt),
            report,
            evidence_label=f"evidence in the prompt context ({prompt[1]} = 1)",
        )
    d = walk(
        table=table,
        prompt_recall=recall_from_evaluation(*prompt) if prompt else None,
        headroom_recall=recall_from_evaluation(*headroom) if headroom else None,
        report=report,
        golden_version=version,
        split=split,
        thresholds=thresholds,
    )
    return DiagnoseResult(d, table, report, version)


def categories() -> tuple[TableCell, ...]:
    """The table's four cells, then the two categories outside them, in the order shown."""
    from ..diagnosis import OTHER_CATEGORIES, TABLE_CELLS

    return (*TABLE_CELLS, *OTHER_CATEGORIES)


def largest_bad_line(table: RetrievalAnswerTable) -> str:
    """The table's largest bad cell (the link it names), with any cell tied with it."""
    lb = table.largest_bad
    if lb is None:
        return "no bad cell has any question"
    ties = "".join(
        f", tied with {c.title} (ties go down the chain)" for c in table.tied_with_largest
    )
    return f"largest bad cell: {lb.title} ({table.count(lb.key)} of {table.n}){ties}"


def run_for_answers(
    store: Store, answers: Mapping[str, Any], run_id: int | None
) -> RunRecord | None:
    """The stored retrieval run a stored answer set came from: ``run_id``; else the answer
    set's run; else the finished run of its golden version whose name matches the answer set's
    variant (exactly, then as a prefix either way: ``rerank`` -> ``reranker``); else that
    version's baseline. None when there is none."""
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

    def exact(r: RunRecord) -> bool:
        return r.name.lower() == name

    def prefix(r: RunRecord) -> bool:
        return bool(name) and (r.name.lower().startswith(name) or name.startswith(r.name.lower()))

    def baseline(r: RunRecord) -> bool:
        return r.is_baseline

    for test in (exact, prefix, baseline):
        found = [r for r in runs if test(r)]
        if found:
            return found[0]
    return None
