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
    from ..diagnosis import TableCell
    from ..store import AnswerSetRow, RunRecord, Store


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


def diagnosis_context(
    store: Store,
    answers_id: int,
    *,
    run_id: int | None = None,
    large_k: int | None = None,
    cache: MutableMapping[Any, Any] | None = None,
) -> DiagnosisView:
    from ..workflows.answers import stored_answer_set
    from ..workflows.diagnose import PromptRun, categories, diagnose, largest_bad_line
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
    prepared = prepared_run(store, run.id, cache)
    if not prepared.has_chunking:
        raise UsageError(
            f"run {run.id}'s chunking cannot be rebuilt here ({prepared.problem or 'no chunker'}):"
            " the answers' chunk citations and contexts need it"
        )
    cut = PromptCutoff.of_settings(settings_of(run))
    k, budget = cut.k, cut.budget
    big = int(large_k) if large_k else int(prepared.ctx.headroom_k)
    # the prompt cut as `diagnose --k` / `--budget` takes it (k when the run has one, as the
    # answers' contexts), and recall read at that cut, as the command reads it
    result = diagnose(
        golden=prepared.ctx.golden,
        corpus=prepared.ctx.corpus,
        chunking=prepared.chunking,
        answers=stored_answer_set(aset),
        run=PromptRun(prepared.run, run.name, k, budget, big),
        golden_version=aset.golden_version,
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
        command=_command(run, k, budget, big, aset),
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
    )


def _command(
    run: RunRecord, k: int | None, budget: int | None, big: int, aset: Mapping[str, Any]
) -> str:
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


@dataclass(frozen=True)
class DiagnosisList:
    """``/diagnosis`` without an answer set: the stored ones to pick from."""

    answer_sets: list[AnswerSetRow]


def diagnosis_list_context(store: Store) -> DiagnosisList:
    from ._data_stored import answer_sets

    return DiagnosisList(answer_sets(store))
