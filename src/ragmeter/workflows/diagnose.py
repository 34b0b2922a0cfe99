"""Diagnose: which link of the RAG chain fails, and ONE next experiment to run.

One pipeline for ``ragmeter diagnose`` (files) and the lab's diagnosis view (a stored answer set
and the run that fed it): score the retrieval run at the prompt cut (k or token budget) and at
a large k, check the answers against the same prompt contexts, build the retrieval-by-answer
table from the evidence verdicts and the answer checks (or take the table as counts or a
file), and walk the "where to look first" path (:func:`ragmeter.diagnosis.diagnose`). The
interfaces parse their input, call :func:`diagnose` and render the :class:`DiagnoseResult`.

:func:`run_for_answers` names the stored run an answer set came from (the lab's default).

Context ablations make the diagnosis causal (:mod:`ragmeter.diagnosis._causal`): variants that
differ from a retrieved baseline only in ``context.source`` ("oracle", "none",
"oracle+distractors") answer every question again, and the answer correctness per source gives
each question a proven cause. :class:`Ablations` holds those outcomes, read three ways with one
rule: from an experiment's written outputs (:func:`diagnose_experiment`, ``ragmeter diagnose
--experiment``), from a result just run (:func:`result_ablations`, ``ragmeter run``) and from the
store (:func:`stored_ablations`, the lab and the report). :func:`diagnose` turns them into the
causal table against its own retrieval-by-answer table, so every interface shows the same
numbers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import UsageError

if TYPE_CHECKING:
    from ..answers import AnswerReport, AnswerSet
    from ..chunking import Chunking
    from ..data import Corpus, GoldenSet
    from ..diagnosis import CausalTable, Diagnosis, RetrievalAnswerTable, TableCell, Thresholds
    from ..experiments import ExperimentResult
    from ..io import Run
    from ..metrics import Evaluation
    from ..store import RunRecord, Store

__all__ = [
    "SOURCE_CHANGE",
    "Ablations",
    "CauseRow",
    "DiagnoseResult",
    "PromptRun",
    "basis_line",
    "categories",
    "causal_of",
    "cause_rows",
    "ceiling_line",
    "cross_lines",
    "diagnose",
    "diagnose_experiment",
    "largest_bad_line",
    "ran_line",
    "result_ablations",
    "run_for_answers",
    "score_prompt_run",
    "signed",
    "stored_ablations",
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
    #: the causal table of the context ablations (None without any)
    causal: CausalTable | None = None
    #: where the ablations' outcomes came from (None without any)
    ablations: Ablations | None = None

    def to_dict(self) -> dict[str, Any]:
        """``ragmeter diagnose --format json``: the diagnosis, with the answers' summary and
        their faithful-but-wrong cases when answers were checked, and the causal table with
        the ablation variants it read when there are ablations."""
        out = self.diagnosis.to_dict()
        if self.report is not None:
            out["answers"] = self.report.summary()
            out["faithful_but_wrong"] = [f.to_dict() for f in self.report.faithful_but_wrong]
        if self.causal is not None:
            out.setdefault("causal", self.causal.to_dict())
        if self.ablations is not None:
            out["ablations"] = self.ablations.to_dict()
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
    ablations: Ablations | None = None,
    metrics: Sequence[str] | None = None,
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
    - ``ablations``: answer correctness under each context source (:class:`Ablations`): the
      causal table (each question's cell of the table above as its observed cell) names the
      failing link from its proven cells (``Diagnosis.basis``); ``metrics``, the metrics the
      experiment measured (default: those of ``evaluations``), are the ones its next
      experiment may name.
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
    causal = None if ablations is None else causal_of(ablations, table)
    d = walk(
        table=table,
        prompt_recall=recall_from_evaluation(*prompt) if prompt else None,
        headroom_recall=recall_from_evaluation(*headroom) if headroom else None,
        report=report,
        golden_version=version,
        split=split,
        thresholds=thresholds,
        causal=causal,
        # without a list, the evaluations given are what was measured (the report's stored run)
        metrics=list(metrics)
        if metrics is not None
        else [str(m) for e in evaluations for m in e.metrics] or None,
    )
    return DiagnoseResult(d, table, report, version, causal, ablations)


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


# -- context ablations: the causal table --------------------------------------------------------
#: the one change an ablation variant makes against the retrieved baseline (the one-change rule's
#: name for it, ``ragmeter.paired``)
SOURCE_CHANGE = "context.source"
#: the context source of the baseline an ablation is compared with
RETRIEVED = "retrieved"


@dataclass(frozen=True)
class Ablations:
    """Answer correctness per question under each context source: the retrieved baseline and
    the variants that change only ``context.source`` (the input of
    :func:`ragmeter.diagnosis.causal_table`), and what was read to get it."""

    #: source -> the variant that ran it (the baseline for "retrieved"), retrieved first
    variants: Mapping[str, str]
    #: source -> {question id: answer correct (the answer check's verdict)}; answerable only
    outcomes: Mapping[str, Mapping[str, bool | None]]
    #: questions the golden set marks unanswerable (reported apart)
    unanswerable: tuple[str, ...]
    #: answerable questions that got no oracle passage (no labelled span): reported apart
    no_oracle_passage: tuple[str, ...]
    #: ablation variants not read, each with why ("oracle2: a second 'oracle' variant")
    left_out: tuple[str, ...] = ()
    #: source -> the stored run it came from (the lab; empty for files)
    runs: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "variants": dict(self.variants),
            "runs": dict(self.runs),
            "unanswerable": list(self.unanswerable),
            "no_oracle_passage": list(self.no_oracle_passage),
            "left_out": list(self.left_out),
        }


def causal_of(ablations: Ablations, table: RetrievalAnswerTable | None = None) -> CausalTable:
    """The causal table of ``ablations``; each question's observed cell is its cell of
    ``table`` (the baseline's retrieval-by-answer table), when given."""
    from ..diagnosis import causal_table

    observed = None
    if table is not None:
        observed = {q: key for key, ids in table.ids.items() for q in ids}
    return causal_table(
        ablations.outcomes,
        unanswerable=ablations.unanswerable,
        observed=observed,
        no_oracle_passage=ablations.no_oracle_passage,
    )


def _pick_ablations(
    candidates: Sequence[tuple[str, str, Sequence[str]]],
) -> tuple[dict[str, str], list[str]]:
    """From ``(name, source, changes)`` of the variants (file order, baseline left out): the
    variant read for each ablation source (the first that changes only the source) and the
    ablation variants left out, each with why."""
    picked: dict[str, str] = {}
    left: list[str] = []
    for name, source, changes in candidates:
        if source == RETRIEVED:
            continue
        if tuple(changes) != (SOURCE_CHANGE,):
            left.append(
                f"{name}: changes more than the context source ({', '.join(changes)}), so its "
                "outcomes prove nothing about the context alone"
            )
        elif source in picked:
            left.append(f"{name}: a second '{source}' variant ({picked[source]} is read)")
        else:
            picked[source] = name
    return picked, left


def _report_outcomes(
    checks: Sequence[Mapping[str, Any]],
) -> tuple[dict[str, bool | None], list[str]]:
    """Answer correct per answerable question, and the unanswerable questions, from the answer
    checks as dicts (``AnswerCheck.to_dict()``: what the store keeps)."""
    outcomes: dict[str, bool | None] = {}
    apart: list[str] = []
    for c in checks:
        if c.get("answerable", True):
            got = c.get("correct")
            outcomes[str(c["id"])] = None if got is None else bool(got)
        else:
            apart.append(str(c["id"]))
    return outcomes, apart


def _checked_outcomes(report: AnswerReport) -> tuple[dict[str, bool | None], list[str]]:
    """:func:`_report_outcomes` of an answer report."""
    checks = [{"id": c.id, "answerable": c.answerable, "correct": c.correct} for c in report.checks]
    return _report_outcomes(checks)


def _ablations(
    baseline: str,
    picked: Mapping[str, str],
    left: Sequence[str],
    reports: Mapping[str, tuple[dict[str, bool | None], list[str]]],
    no_oracle: Mapping[str, Sequence[str]],
    runs: Mapping[str, int] | None = None,
) -> Ablations:
    """:class:`Ablations` from each variant's (outcomes, unanswerable) by variant name."""
    order = [RETRIEVED, *picked]
    names = {RETRIEVED: baseline, **picked}
    unanswerable = sorted({q for src in order for q in reports[names[src]][1]})
    # an unanswerable question has no oracle passage by definition: counted once, as unanswerable
    blank = sorted(
        {q for name in picked.values() for q in no_oracle.get(name, ())} - set(unanswerable)
    )
    return Ablations(
        variants={s: names[s] for s in order},
        outcomes={s: reports[names[s]][0] for s in order},
        unanswerable=tuple(unanswerable),
        no_oracle_passage=tuple(blank),
        left_out=tuple(left),
        runs=dict(runs or {}),
    )


def result_ablations(result: ExperimentResult) -> Ablations | None:
    """The ablations of an experiment just run (``ragmeter run``): None when its baseline
    generated no answers or no variant changes only the context source."""
    base = result.baseline
    if base.answers is None or base.settings.source != RETRIEVED:
        return None
    done = [v for v in result.variants if v.answers is not None and not v.is_baseline]
    picked, left = _pick_ablations([(v.name, v.settings.source, v.changes) for v in done])
    if not picked:
        return None
    by_name = {v.name: v for v in result.variants}
    reports = {
        n: _checked_outcomes(by_name[n].answers.report) for n in (base.name, *picked.values())
    }
    no_oracle = {
        n: list(by_name[n].answers.to_dict().get("no_oracle_passage") or ())
        for n in picked.values()
    }
    return _ablations(base.name, picked, left, reports, no_oracle)


def diagnose_experiment(
    path: str | os.PathLike[str],
    *,
    thresholds: Thresholds | None = None,
    large_k: int | None = None,
    split: str = "tune",
    allow_outside: bool = False,
) -> DiagnoseResult:
    """``ragmeter diagnose --experiment FILE``: the diagnosis of the experiment's baseline
    (source "retrieved") from what ``ragmeter run FILE`` wrote (its answers, chunks and ranked
    run, scored at the baseline's prompt k, else its budget, and at ``large_k``, default the
    file's ``headroom_k``), made causal by the variants that change only ``context.source``
    (their answers checked as the run checked them). Outputs missing or written by another
    version of the file: a :class:`UsageError` naming the command to run."""
    import json

    from ..answers import load_answers
    from ..answers.report import check_answers
    from ..chunking import load_chunking
    from ..experiments import effective_changes, load_experiment, slug
    from .answers import load_inputs

    exp_path = Path(path)
    exp = load_experiment(exp_path, warn=False, allow_outside=allow_outside)
    rerun = f"run `ragmeter run {exp_path}` first"
    base = exp.baseline
    if exp.level == "document" or exp.beir is not None:
        raise UsageError(
            f"{exp_path}: a document-level experiment has no span labels, so its answers cannot "
            "be diagnosed per evidence span; diagnose its runs with `ragmeter diagnose --eval`"
        )
    if not base.settings.generates:
        raise UsageError(
            f"{exp_path}: the experiment generates no answers (no [generator]), so there is "
            "nothing to diagnose past retrieval; compare its runs with `ragmeter compare`"
        )

    def folder_of(name: str) -> Path:
        folder = exp.output / slug(name)
        for f in ("answers.jsonl", "chunks.jsonl", "answer_check.json"):
            if not (folder / f).is_file():
                raise UsageError(
                    f"{exp_path}: variant '{name}' has no {f} in {folder} yet: {rerun}"
                )
        return folder

    settings = {v.name: v.settings for v in exp.all_variants}

    def written(name: str) -> dict[str, Any]:
        """The variant's answer_check.json, refused when its context is not the file's."""
        check = json.loads((folder_of(name) / "answer_check.json").read_text(encoding="utf-8"))
        got = dict(check.get("context") or {})
        got.setdefault("source", RETRIEVED)  # written before context sources existed
        want = settings[name].context_spec().to_dict()
        for key, value in want.items():
            if got.get(key) != value:
                raise UsageError(
                    f"{exp_path}: the outputs of variant '{name}' were written with context "
                    f"{key} {got.get(key)!r}, and the file now says {value!r}: run `ragmeter "
                    f"run {exp_path}` again"
                )
        return dict(check)

    folder = folder_of(base.name)
    written(base.name)
    inputs = load_inputs(exp.golden, exp.corpus, folder / "chunks.jsonl")
    golden, corpus = inputs.golden, inputs.corpus
    candidates = [
        (v.name, v.settings.source, effective_changes(base.settings, v.settings))
        for v in exp.variants
        if v.settings.generates
    ]
    picked, left = _pick_ablations(candidates)
    ablations = None
    if picked:
        reports: dict[str, tuple[dict[str, bool | None], list[str]]] = {}
        no_oracle: dict[str, list[str]] = {}
        for name in (base.name, *picked.values()):
            check = written(name)
            no_oracle[name] = list(check.get("no_oracle_passage") or ())
            f = folder_of(name)
            chunks = (
                inputs.chunking
                if name == base.name
                else load_chunking(f / "chunks.jsonl", corpus=corpus)
            )
            answers = load_answers(f / "answers.jsonl", golden=golden)
            reports[name] = _checked_outcomes(
                check_answers(answers, golden, corpus=corpus, chunks=chunks)
            )
        ablations = _ablations(base.name, picked, left, reports, no_oracle)
    config = (
        json.loads((folder / "config.json").read_text(encoding="utf-8"))
        if (folder / "config.json").is_file()
        else {}
    )
    run_file = Path(config.get("run_file") or folder / "run.trec")
    if not run_file.is_file():
        raise UsageError(f"{exp_path}: the baseline's ranked run {run_file} is missing: {rerun}")
    s = base.settings
    k = s.k
    budget = None if k is not None else s.budget
    return diagnose(
        golden=golden,
        corpus=corpus,
        chunking=inputs.chunking,
        answers=folder / "answers.jsonl",
        run=PromptRun(str(run_file), base.name, k, budget, large_k or exp.headroom_k),
        split=split,
        thresholds=thresholds,
        ablations=ablations,
        metrics=[str(m) for m in exp.prompt_metrics(s)],
    )


def stored_ablations(store: Store, run: RunRecord) -> Ablations | None:
    """The ablations of the stored experiment ``run`` belongs to (the lab, the report): the
    finished runs of the same experiment file and golden version, the newest per variant name
    (one of ``run``'s own invocation first), whose newest answer set records its generation
    context; the retrieved one is the baseline. None when ``run`` is no retrieved baseline or
    no run of its experiment changes only the context source."""
    file = (run.config or {}).get("experiment")
    if not run.is_baseline or file is None:
        return None
    sets: dict[int, int] = {}
    for a in store.answer_sets(golden_version=run.golden_version):  # newest last: keep it
        if a.run_id is not None and (a.run_id not in sets or a.id > sets[a.run_id]):
            sets[a.run_id] = a.id
    siblings = [
        r
        for r in store.runs(golden_version=run.golden_version, status="finished")
        if (r.config or {}).get("experiment") == file and r.id in sets
    ]
    chosen: dict[str, RunRecord] = {}
    for r in sorted(siblings, key=lambda r: (r.invocation == run.invocation, r.id)):
        chosen[r.name] = r  # the last wins: the run's own invocation, else the newest
    chosen[run.name] = run
    if run.id not in sets:
        return None
    stored = {name: store.answer_set(sets[r.id]) for name, r in chosen.items()}

    def source(name: str) -> str:
        ctx = (stored[name].report.get("generation") or {}).get("context") or {}
        return str(ctx.get("source", RETRIEVED))

    if source(run.name) != RETRIEVED:
        return None
    others = [r for r in sorted(chosen.values(), key=lambda r: r.id) if r.id != run.id]
    picked, left = _pick_ablations([(r.name, source(r.name), r.changes) for r in others])
    if not picked:
        return None
    reports = {
        n: _report_outcomes(stored[n].report.get("answers") or ())
        for n in (run.name, *picked.values())
    }
    no_oracle = {
        n: list((stored[n].report.get("generation") or {}).get("no_oracle_passage") or ())
        for n in picked.values()
    }
    runs = {s: chosen[n].id for s, n in {RETRIEVED: run.name, **picked}.items()}
    return _ablations(run.name, picked, left, reports, no_oracle, runs)


# -- the causal section as every interface shows it ----------------------------------------------
@dataclass(frozen=True)
class CauseRow:
    """One row of the causal section: a proven cause, or a group reported apart."""

    key: str
    title: str
    basis: str  # "proven" or "apart"
    count: int
    rule: str
    ids: tuple[str, ...]


def cause_rows(causal: CausalTable, ablations: Ablations | None = None) -> list[CauseRow]:
    """The proven causes (bad ones first, in the order a tie between them is broken), then what
    is reported apart: unanswerable questions, answerable ones without an oracle passage (their
    oracle answers had no evidence to read) and the unknown ones."""
    from ..diagnosis import CAUSE_INFO, CAUSES
    from ..diagnosis import CAUSES_APART as APART

    def row(key: str, basis: str) -> CauseRow:
        info = CAUSE_INFO[key]
        return CauseRow(
            key, info.title, basis, causal.count(key), info.rule, tuple(causal.ids(key))
        )

    bad_first = sorted(CAUSES, key=lambda k: not CAUSE_INFO[k].bad)
    rows = [row(k, "proven") for k in bad_first]
    for k in APART:
        rows.append(row(k, "apart"))
        if k == "unanswerable" and ablations is not None and ablations.no_oracle_passage:
            blank = ablations.no_oracle_passage
            rows.append(
                CauseRow(
                    "no_oracle_passage",
                    "no oracle passage",
                    "apart",
                    len(blank),
                    "answerable, but no labelled span to build the oracle context from (their "
                    "oracle answers are not read as evidence)",
                    tuple(blank),
                )
            )
    return rows


#: the plural of a cause's title after a count ("4 proven generation failures")
_PLURAL = {"retrieval_failure": "s", "generation_failure": "s"}


def cross_lines(causal: CausalTable) -> list[tuple[str, str, int, str]]:
    """Each inferred cell of the retrieval-by-answer table with what its questions proved to
    be: ``(cell key, "retrieval failure (inferred, 14)", 14, "10 proven retrieval failures, 4
    proven generation failures")``."""
    from ..diagnosis import CAUSE_INFO

    titles = {c.key: c.title for c in categories()}
    out = []
    for cell, causes in causal.cross().items():
        n = sum(causes.values())
        parts = [
            f"{c} {CAUSE_INFO[k].title}{_PLURAL.get(k, '') if c != 1 else ''}"
            for k, c in sorted(causes.items(), key=lambda kc: -kc[1])
            if c
        ]
        out.append(
            (cell, f"{titles.get(cell, cell)} (inferred, {n})", n, ", ".join(parts) or "none")
        )
    return out


def signed(x: float, digits: int = 2) -> str:
    """``x`` with its sign and ``digits`` decimals, more when fewer would round it to zero, so
    the side of zero always shows (``+0.004``, not ``+0.00``)."""
    if x == 0:
        return "0.00"
    for d in range(digits, 7):
        if round(x, d) != 0:
            return f"{x:+.{d}f}"
    return f"{x:+.1e}"


def ceiling_line(causal: CausalTable) -> str | None:
    """The oracle ceiling in words: what a perfect retriever would buy at this budget, with its
    paired interval; None without an oracle run."""
    c = causal.ceiling
    if c is None:
        return None
    lo, hi = c.ci
    return (
        f"a perfect retriever at this budget: {signed(c.mean_delta)} answer-correct rate "
        f"[{signed(lo)}, {signed(hi)}] (fixed {c.fixed}, broken {c.broken}, {c.n} answerable "
        f"questions)"
    )


def basis_line(d: Diagnosis) -> str:
    """Which basis named the failing link, and with what."""
    basis, causal = d.basis, d.causal
    if d.failing_link is None or basis is None:
        return "no failing link named"
    if basis == "proven" and causal is not None:
        from ..diagnosis import CAUSE_INFO

        key = causal.largest_proven_bad()
        what = f" (largest: {CAUSE_INFO[key].title}, {causal.count(key)})" if key else ""
        return f"the failing link is named by the proven causes{what}"
    if causal is None:
        return "the failing link is named by the inferred cells (no context ablation was run)"
    return "the failing link is named by the inferred cells (no ablation proved a bad cause)"


def ran_line(causal: CausalTable, ablations: Ablations | None) -> str:
    """The context sources run, each with its variant when the names differ: ``retrieved
    (baseline "rank"), oracle, none``."""
    if ablations is None:
        return ", ".join(causal.sources)
    return ", ".join(s if n == s else f"{s} (variant '{n}')" for s, n in ablations.variants.items())
