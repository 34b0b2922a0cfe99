"""The diagnosis view's model: ``ragmeter diagnose`` on what the store holds. The answers come
from a stored answer set, the evidence verdicts from the retrieval run that fed them (its stored
ranked lists scored at the prompt k and a large k, exactly as ``diagnose --run --k --large-k``
scores the run file), and the answers are checked against the same prompt contexts."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._errors import NotFoundError, UsageError
from ._data_comparison import QuestionLink, question_url

if TYPE_CHECKING:
    from ..diagnosis import CausalTable, Diagnosis, TableCell
    from ..store import AnswerSetRow, RunRecord, Store
    from ..workflows.diagnose import Ablations


def pick_run(store: Store, answers: Mapping[str, Any], run_id: int | None) -> RunRecord | None:
    """The retrieval run a stored answer set came from
    (:func:`ragmeter.workflows.diagnose.run_for_answers`)."""
    from ..workflows.diagnose import run_for_answers

    return run_for_answers(store, answers, run_id)


@dataclass(frozen=True)
class AnswersShown:
    """The stored answer set a diagnosis reads."""

    id: int
    name: str
    golden_version: str | None
    source: str | None
    n_answers: int


@dataclass(frozen=True)
class DiagnosedRun:
    """The retrieval run the answers came from, at the prompt cut and the large k."""

    id: int
    name: str
    k: int | None
    budget: int | None
    large_k: int


@dataclass(frozen=True)
class Cell:
    """One cell of the retrieval-by-answer table, with its questions."""

    key: str
    title: str
    reading: str
    count: int
    bad: bool
    largest: bool
    questions: list[QuestionLink]


@dataclass(frozen=True)
class Step:
    question: str
    status: str
    detail: str


@dataclass(frozen=True)
class NextExperiment:
    change: str
    metric: str
    comparison: str
    refutation: str
    alternative: str | None
    assumption: str | None


@dataclass(frozen=True)
class AnswerSummary:
    correct: Any
    n_scored: Any
    ok: Any
    ok_known: Any
    ok_rate: Any
    support_unknown: Any
    faithful_but_wrong: Any
    cites_outside_context: Any


@dataclass(frozen=True)
class CauseView:
    """One row of the causal table: a proven cause or a group reported apart."""

    key: str
    title: str
    basis: str  # "proven" or "apart"
    count: int
    rule: str
    bad: bool
    largest: bool
    questions: list[QuestionLink]


@dataclass(frozen=True)
class CrossRow:
    """An inferred cell of the retrieval-by-answer table and what its questions proved to be."""

    cell: str
    label: str
    n: int
    proven: str


@dataclass(frozen=True)
class SourceRun:
    """A context source of the causal table and the stored run whose answers it read."""

    source: str
    run: int | None
    name: str


@dataclass(frozen=True)
class CausalView:
    """The causal section (``ragmeter diagnose --experiment``'s): the proven causes and what is
    reported apart, the inferred cells against the proven causes, the oracle ceiling and what
    named the failing link."""

    sources: list[SourceRun]
    causes: list[CauseView]
    cross: list[CrossRow]
    ceiling: str | None
    basis: str
    left_out: list[str]
    command: str
    #: the causal table's dict (``--format json``'s ``causal``)
    table: dict[str, Any]


@dataclass(frozen=True)
class DiagnosisView:
    """Everything ``_diagnosis_body.html`` shows (``d``)."""

    answers: AnswersShown
    run: DiagnosedRun
    command: str
    evidence_label: str
    cells: dict[str, Cell]
    n: int
    largest: str
    excluded: int
    steps: list[Step]
    notes: list[str]
    failing_link: str
    experiment: NextExperiment
    summary: AnswerSummary
    diagnosis: dict[str, Any]
    #: the causal table of the run's context ablations (None without any)
    causal: CausalView | None = None


def diagnosis_context(
    store: Store,
    answers_id: int,
    *,
    run_id: int | None = None,
    large_k: int | None = None,
    cache: MutableMapping[Any, Any] | None = None,
) -> DiagnosisView:
    from ..workflows.answers import stored_answer_set
    from ..workflows.diagnose import (
        PromptRun,
        categories,
        diagnose,
        largest_bad_line,
        stored_ablations,
    )
    from ._context import settings_of
    from ._data_stored import answer_set
    from ._prepared import prepared_run
    from ._recompute import PromptCutoff

    aset = answer_set(store, answers_id)
    run = pick_run(store, aset, run_id)
    if run is None:
        raise NotFoundError(
            f"answer set {answers_id} has no stored retrieval run on golden set "
            f"{aset.golden_version or '(none)'} to read its evidence from"
        )
    source = str(((aset.report.get("generation") or {}).get("context") or {}).get("source", ""))
    if source and source != "retrieved":
        raise UsageError(_ablation_note(store, aset.id, run, source))
    prepared = prepared_run(store, run.id, cache)
    if not prepared.has_chunking:
        raise UsageError(
            f"run {run.id}'s chunking cannot be rebuilt here ({prepared.problem or 'no chunker'}):"
            " the answers' chunk citations and contexts need it"
        )
    cut = PromptCutoff.of_settings(settings_of(run))
    k, budget = cut.k, cut.budget
    big = int(large_k) if large_k else int(prepared.ctx.headroom_k)
    # the context ablations of the run's experiment, when this is its retrieved baseline's
    # newest answer set: the same causal table `ragmeter diagnose --experiment` prints
    ablations = stored_ablations(store, run)
    if ablations is not None and ablations.runs.get("retrieved") != run.id:
        ablations = None
    if ablations is not None and _newest_set(store, run.id) != aset.id:
        ablations = None
    resolved = (run.config or {}).get("resolved") or {}
    # the prompt cut as `diagnose --k` / `--budget` takes it (k when the run has one, as the
    # answers' contexts), and recall read at that cut, as the command reads it
    result = diagnose(
        golden=prepared.ctx.golden,
        corpus=prepared.ctx.corpus,
        chunking=prepared.chunking,
        answers=stored_answer_set(aset),
        run=PromptRun(prepared.run, run.name, k, budget, big),
        golden_version=aset.golden_version,
        ablations=ablations,
        # every metric the run measured, with ablations or without (as `diagnose --run FILE`
        # reads them from the config.json beside the file): a next experiment may name any
        metrics=measured_metrics(resolved),
    )
    d, table, report, version = result.diagnosis, result.table, result.report, result.golden_version
    assert table is not None and report is not None  # a run and answers always give both

    def cell(c: TableCell) -> Cell:
        ids = list(table.ids[c.key])
        return Cell(
            key=c.key,
            title=c.title,
            reading=c.reading,
            count=len(ids),
            bad=c.bad,
            largest=table.largest_bad is not None and table.largest_bad.key == c.key,
            questions=[QuestionLink(q, question_url(version, q)) for q in ids],
        )

    cells = {c.key: cell(c) for c in categories()}
    summary = report.summary()
    e = d.experiment
    return DiagnosisView(
        answers=AnswersShown(aset.id, aset.name, aset.golden_version, aset.source, aset.n_answers),
        run=DiagnosedRun(run.id, run.name, k, budget, big),
        command=_command(store, run, k, budget, big, aset),
        evidence_label=table.evidence_label,
        cells=cells,
        n=table.n,
        largest=largest_bad_line(table),
        excluded=len(table.excluded),
        steps=[Step(s.question, s.status, s.detail) for s in d.steps],
        notes=list(d.notes),
        failing_link=d.failing_link or "none",
        experiment=NextExperiment(
            change=e.change,
            metric=e.metric,
            comparison=e.comparison,
            refutation=e.refutation,
            alternative=e.alternative,
            assumption=e.assumption,
        ),
        summary=AnswerSummary(
            correct=summary["correct"],
            n_scored=summary["n_scored"],
            ok=summary["ok"],
            ok_known=summary["ok_known"],
            ok_rate=summary["ok_rate"],
            support_unknown=summary["correct_support_unknown"],
            faithful_but_wrong=summary["faithful_but_wrong"],
            cites_outside_context=summary["cites_outside_context"],
        ),
        diagnosis=d.to_dict(),
        causal=None
        if result.causal is None
        else _causal_view(result.causal, result.ablations, d, run, version),
    )


def measured_metrics(resolved: Mapping[str, Any]) -> list[str] | None:
    """The metrics a run measured, as its config records them (``resolved.metrics``); None
    when it records none (a run imported from bare files)."""
    metrics = resolved.get("metrics")
    if isinstance(metrics, list) and metrics and all(isinstance(m, str) for m in metrics):
        return list(metrics)
    return None


def _ablation_note(store: Store, answers_id: int, run: RunRecord, source: str) -> str:
    """Why an ablation's answer set has no retrieval-by-answer diagnosis, and where its causal
    table is: on the diagnosis of its experiment's retrieved baseline."""
    file = (run.config or {}).get("experiment")
    bases = [
        r.id
        for r in store.runs(golden_version=run.golden_version, status="finished")
        if r.is_baseline and file is not None and (r.config or {}).get("experiment") == file
    ]
    sets = {a.id: a.run_id for a in store.answer_sets() if a.run_id in bases}
    newest = max(sets) if sets else None
    where = (
        f"the causal table is on the diagnosis of its baseline, run {sets[newest]} "
        f"(answer set {newest})"
        if newest is not None
        else "the causal table is on its retrieved baseline's diagnosis"
    )
    return (
        f"answer set {answers_id} (run {run.id}, {run.name}) was answered with the context "
        f"source '{source}', not with the passages its run retrieved, so the "
        f"retrieval-by-answer table does not apply to it; {where}"
    )


def _newest_set(store: Store, run_id: int) -> int | None:
    """The newest answer set stored for the run ``run_id``."""
    ids = [a.id for a in store.answer_sets() if a.run_id == run_id]
    return max(ids) if ids else None


def _causal_view(
    causal: CausalTable,
    ablations: Ablations | None,
    d: Diagnosis,
    run: RunRecord,
    version: str | None,
) -> CausalView:
    from ..diagnosis import CAUSE_INFO
    from ..workflows.diagnose import basis_line, cause_rows, ceiling_line, cross_lines

    largest = causal.largest_proven_bad()
    causes = [
        CauseView(
            key=r.key,
            title=r.title,
            basis=r.basis,
            count=r.count,
            rule=r.rule,
            bad=r.basis == "proven" and CAUSE_INFO[r.key].bad,
            largest=r.key == largest,
            questions=[QuestionLink(q, question_url(version, q)) for q in r.ids],
        )
        for r in cause_rows(causal, ablations)
    ]
    sources = [
        SourceRun(s, (ablations.runs.get(s) if ablations else None), name)
        for s, name in (ablations.variants.items() if ablations else ())
    ]
    from ._commands import has_run_file, quoted

    experiment = (run.config or {}).get("experiment")
    file = quoted(experiment) if experiment else "EXPERIMENT.toml"
    # `diagnose --experiment` reads the files `ragmeter run` wrote: when they are gone (the demo
    # writes none), the run that writes them again (from its caches) comes first
    rerun = [] if has_run_file(run) else [f"ragmeter run {file} --no-store"]
    return CausalView(
        sources=sources,
        causes=causes,
        cross=[CrossRow(*row) for row in cross_lines(causal)],
        ceiling=ceiling_line(causal),
        basis=basis_line(d),
        left_out=list(ablations.left_out) if ablations else [],
        command="\n".join([*rerun, f"ragmeter diagnose --experiment {file}"]),
        table=causal.to_dict(),
    )


def _command(
    store: Store,
    run: RunRecord,
    k: int | None,
    budget: int | None,
    big: int,
    aset: Mapping[str, Any],
) -> str:
    """The ``ragmeter diagnose`` lines that print these numbers from the files, runnable as
    printed (:mod:`._commands`)."""
    from ._commands import answers_file, run_files

    f = run_files(store, run)
    cut = f"--k {k}" if k is not None else f"--budget {budget}"
    steps = list(f.steps)
    answers = answers_file(store, int(aset["id"]), aset.get("source"), steps)
    return "\n".join(
        [
            *steps,
            f"ragmeter diagnose --golden {f.golden} --corpus {f.corpus} --chunks {f.chunks} "
            f"--run {f.run} {cut} --large-k {big} --answers {answers}",
        ]
    )


@dataclass(frozen=True)
class DiagnosisList:
    """``/diagnosis`` without an answer set: the stored ones to pick from."""

    answer_sets: list[AnswerSetRow]


def diagnosis_list_context(store: Store) -> DiagnosisList:
    from ._data_stored import answer_sets

    return DiagnosisList(answer_sets(store))
