"""The report's sections as typed view models (frozen dataclasses), built from a
:class:`~ragmeter.store.Store` without HTTP (the runs and what the store holds for them come
from :mod:`ragmeter.workflows.report`): each run's lab at its own k (stored means, per-question
values, ranked lists with the labelled evidence marked), each run against the baseline, a
sweep, the diagnosis and the newest judge validation. Every number is the stored one or
computed by the same view-model function the lab's page uses (and so by the same library call
the command line makes: ``ragmeter runs show``, ``compare``, ``sweep``, ``diagnose``,
``judge validate``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .._errors import NotFoundError, RagmeterError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ..diagnosis import Diagnosis
    from ..store import JudgeValidationRow, RunRecord, Store
    from ._data_comparison import ComparisonView, PairChoice
    from ._data_diagnosis import DiagnosisView
    from ._data_judges import JudgeView
    from ._data_sweeps import SweepView
    from ._ranked_list import QuestionList

#: questions whose ranked lists a run section embeds; beyond it the report says how many it left
#: out (the per-question table still lists every question)
MAX_RANKED_QUESTIONS = 200
#: passages shown per ranked list (at least the prompt's and one past the cutoff)
SHOWN_ITEMS = 6


# -- the lab at a run's k -----------------------------------------------------------------------
@dataclass(frozen=True)
class ReportCard:
    """One metric's stored mean for a run at its own cutoff."""

    key: str
    label: str
    metric: str
    value: float | None
    headroom: bool
    unavailable: str | None


@dataclass(frozen=True)
class ReportQuestion:
    """One question of a run section: its values and, for the first questions, its ranked list
    (``anchor``: its in-page id)."""

    id: str
    anchor: str
    values: dict[str, float | None]
    list: QuestionList | None
    question: str | None


@dataclass(frozen=True)
class RunSection:
    """One run at its own prompt cutoff, as the lab page shows it."""

    id: int
    anchor: str
    name: str
    experiment: str
    is_baseline: bool
    golden_version: str | None
    cutoff: str
    cards: list[ReportCard]
    metric_keys: list[str]
    names: dict[str, str]
    questions: list[ReportQuestion]
    left_out: int
    problem: str | None
    n_questions: int


def run_section(
    store: Store, run: RunRecord, cache: dict[Any, Any], anchors: Callable[[int, str], str]
) -> RunSection:
    """One run at its own prompt cutoff, as the lab page shows it (the lab's own recomputation
    from the stored ranked lists: the numbers ``ragmeter eval`` prints at that cutoff): metric
    cards, the per-question values, each question's ranked list with the evidence marked."""
    from ._context import settings_of
    from ._prepared import prepared_run
    from ._ranked_list import question_list
    from ._recompute import HEADROOM, LABELS, METRICS, PromptCutoff, scores

    prepared = prepared_run(store, run.id, cache)
    cutoff = PromptCutoff.of_settings(settings_of(run))
    sc = scores(prepared, cutoff)
    keys = [k for k in (*METRICS, HEADROOM) if k in sc.names]
    cards = [
        ReportCard(key=k, label=LABELS.get(k, k), metric=sc.names[k], value=sc.means.get(k),
                   headroom=k == HEADROOM, unavailable=sc.unavailable.get(k))
        for k in keys
    ]  # fmt: skip
    questions = []
    for i, qid in enumerate(sc.qids):
        q = prepared.ctx.golden.by_id.get(qid)
        questions.append(
            ReportQuestion(
                id=qid,
                anchor=anchors(run.id, qid),
                values={k: sc.value(k, qid) for k in keys},
                list=question_list(prepared, cutoff, qid, limit=SHOWN_ITEMS)
                if i < MAX_RANKED_QUESTIONS
                else None,
                question=q.question if q is not None else None,
            )
        )
    return RunSection(
        id=run.id,
        anchor=f"run-{run.id}",
        name=run.name,
        experiment=run.experiment,
        is_baseline=run.is_baseline,
        golden_version=run.golden_version,
        cutoff=cutoff.label,
        cards=cards,
        metric_keys=keys,
        names=dict(sc.names),
        questions=questions,
        left_out=max(0, len(questions) - MAX_RANKED_QUESTIONS),
        problem=prepared.problem,
        n_questions=len(questions),
    )


# -- against the baseline -----------------------------------------------------------------------
@dataclass(frozen=True)
class ComparisonSection:
    """One run against the report's baseline: the comparison view's model (``c``), or
    ``ragmeter run``'s note and the comparisons still possible (``pair``), or the ``error``."""

    base: int
    cand: int
    anchor: str
    base_name: str
    cand_name: str
    error: str | None = None
    pair: PairChoice | None = None
    c: ComparisonView | None = None


def comparison_section(
    store: Store,
    base: RunRecord,
    cand: RunRecord,
    link: Callable[[int, str], str | None],
    metric: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> ComparisonSection:
    """The comparison view's model for ``cand`` against ``base`` (``ragmeter compare BASE CAND``
    on the stored evaluations, counted in no ledger; on ``metric`` when given, as ``gate``
    asked, with its ``options``); ``link(run_id, qid)`` gives a question's in-page ``#anchor``
    or None (then it prints as text). Runs that share no k or budget get ``ragmeter run``'s
    note and the comparisons still possible (``pair``) instead of a comparison."""
    from ._commands import db_option
    from ._data_comparison import NoSharedMetric, live_comparison_context

    out = ComparisonSection(base.id, cand.id, f"cmp-{cand.id}", base.name, cand.name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c = live_comparison_context(store, base.id, cand.id, metric, **(options or {}))
    except NoSharedMetric as exc:  # its command lines name the store, as every other line
        return replace(out, pair=replace(exc.choice, db=db_option(store)))
    except RagmeterError as exc:  # one pair that cannot be compared is said in its section
        return replace(out, error=str(exc))
    c = replace(
        c,
        fixed_ids=[replace(q, url=link(cand.id, q.qid)) for q in c.fixed_ids],
        broken_ids=[replace(q, url=link(cand.id, q.qid)) for q in c.broken_ids],
        movers=[replace(q, url=link(cand.id, q.qid)) for q in c.movers],
    )
    return replace(out, c=c)


# -- sweep --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SweepSection:
    """The report's sweep (``s``), or the ``error`` that stopped it; ``other_version``: the
    runs left out, scored on another golden-set version."""

    s: SweepView | None
    error: str | None
    other_version: list[int]


def sweep_section(
    store: Store, runs: Sequence[RunRecord], cache: dict[Any, Any]
) -> SweepSection | None:
    """The sweeps view's model (``/sweeps?runs=...`` with its defaults: recall over token budgets
    when the runs' chunkings differ, else over k) for the report's runs that have ranked lists
    and share the first such run's golden set: the report and the lab draw the same sweep, and
    both are ``ragmeter sweep``'s numbers."""
    from ._data_sweeps import sweeps_context

    ranked = [r for r in runs if r.has_ranked]
    if not ranked:
        return None
    version = ranked[0].golden_version
    usable = [r for r in ranked if r.golden_version == version]
    other = [r.id for r in ranked if r.golden_version != version]
    try:
        return SweepSection(
            sweeps_context(store, [r.id for r in usable], metric="R", cache=cache), None, other
        )
    except (UsageError, NotFoundError) as exc:
        try:  # a token budget needs every run's chunking; k does not
            s = sweeps_context(store, [r.id for r in usable], metric="R", kind="k", cache=cache)
        except (UsageError, NotFoundError):
            return SweepSection(None, str(exc), other)
        return SweepSection(s, None, other)


# -- diagnosis ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class DiagnosisSection:
    """One reported run's diagnosis: the diagnosis view's model (``d``, its in-page ids
    prefixed ``pre``) for its newest answer set, or the retrieval steps alone
    (``recall_only``), or the ``error`` that stopped it."""

    run: int
    name: str
    answers: Mapping[str, Any] | None = None
    pre: str = ""
    d: DiagnosisView | None = None
    error: str | None = None
    recall_only: Diagnosis | None = None


def diagnosis_sections(
    store: Store,
    runs: Sequence[RunRecord],
    cache: dict[Any, Any],
    link: Callable[[int, str], str | None],
) -> list[DiagnosisSection]:
    """One diagnosis per reported run an answer set is stored for (its newest; the diagnosis
    view's model, ``ragmeter diagnose --answers``: the retrieval-by-answer grid, the steps and
    the next experiment), in the report's run order; the baseline without an answer set gets the
    retrieval steps alone. ``link(run_id, qid)`` is a cell question's in-page ``#anchor`` or
    None (the question then prints as text: no link may leave the file)."""
    from ..workflows.report import answered_runs
    from ._data_diagnosis import diagnosis_context

    order = {r.id: i for i, r in enumerate(runs)}
    found: dict[int, DiagnosisSection] = {}
    for pair in answered_runs(store, runs):
        run, a = pair.run, pair.answers.to_dict()
        entry = DiagnosisSection(run.id, run.name, answers=a, pre=f"a{int(a['id'])}-")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                d = diagnosis_context(store, int(a["id"]), run_id=run.id, cache=cache)
        except (UsageError, NotFoundError) as exc:
            entry = replace(entry, error=str(exc))
        else:
            cells = {
                key: replace(
                    c, questions=[replace(q, url=link(run.id, q.qid)) for q in c.questions]
                )
                for key, c in d.cells.items()
            }
            causal = d.causal
            if causal is not None:  # the causal table's questions link inside the file too
                causes = [
                    replace(c, questions=[replace(q, url=link(run.id, q.qid)) for q in c.questions])
                    for c in causal.causes
                ]
                causal = replace(causal, causes=causes)
            entry = replace(entry, d=replace(d, cells=cells, causal=causal))
        found[run.id] = entry
    base = runs[0]
    if base.id not in found:
        steps = recall_diagnosis(store, base)
        if steps is not None:
            found[base.id] = steps
    return [found[rid] for rid in sorted(found, key=order.__getitem__)]


def recall_diagnosis(store: Store, run: RunRecord) -> DiagnosisSection | None:
    """The diagnosis section of ``run`` without answers: the retrieval steps of the path and
    the one next experiment (:func:`ragmeter.workflows.report.retrieval_diagnosis`)."""
    from ..workflows.report import retrieval_diagnosis

    d = retrieval_diagnosis(store, run)
    if d is None:
        return None
    return DiagnosisSection(run.id, run.name, recall_only=d)


# -- judge validation ---------------------------------------------------------------------------
@dataclass(frozen=True)
class JudgeSection:
    """The newest judge validation of the reported golden sets (``j``) and the older ones."""

    j: JudgeView
    older: list[JudgeValidationRow]


def judge_section(store: Store, versions: Sequence[str | None]) -> JudgeSection | None:
    """The newest stored judge validation that labels questions of the reported golden sets
    (the judge view's model: confusion matrix, kappa, per-class agreement, order flips) and a
    line for each older such one (:func:`ragmeter.workflows.report.judge_validations_for`)."""
    from ..workflows.report import judge_validations_for
    from ._data_judges import judge_context

    found = judge_validations_for(store, versions, lambda vid: judge_context(store, vid))
    if found is None:
        return None
    return JudgeSection(found.newest, list(found.older))
