"""The lab's view models: what each page's template reads, as typed records.

The functions that build them (:mod:`._lab_page`, :mod:`._data_question`, :mod:`._data_slider`)
are pure functions of a store, so the report builds the same pages without HTTP. The other pages'
models sit beside their data functions (``_data_comparison``, ``_data_sweeps``,
``_data_diagnosis``, ``_data_judges``, ``_data_experiments``, ``_report_data``, ``_report``,
``_jobs``, ``views/jobs``); the stored listings are the store's own records. Templates read
the fields as attributes (``view.cards``, ``row.values[key]``); Jinja finds an attribute
before an item, so a template never needs to know a record from a mapping. A page whose fields
are its template's top-level variables (:class:`LabPage`) is also a read-only mapping of them:
``page(request, "lab.html", **model)``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ..store import RunRecord
    from ._charts import Spec
    from ._ranked_list import Piece, QuestionList
    from ._recompute import PromptCutoff


class TemplateVariables(Mapping[str, Any]):
    """A dataclass whose fields are a template's top-level variables: read-only, as a mapping
    of field name to value (``**model`` passes them to :func:`~._render.page`)."""

    def __getitem__(self, key: str) -> Any:
        if key not in self._names():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def _names(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self))  # type: ignore[arg-type]


# -- the lab page (/lab) ---------------------------------------------------------------------
@dataclass(frozen=True)
class BaselineChoice:
    """A run the "compare against" control offers."""

    id: int
    text: str


@dataclass(frozen=True)
class NotRun:
    """A method x chunking combination with no stored run: the form that starts it as a job."""

    method: str | None
    chunking: str | None
    experiment: str
    #: a run of the experiment the job is planned from (None: none to plan from)
    any_run: int | None
    #: why no job can be started (said in place of the form); None when one can
    job_problem: str | None


@dataclass(frozen=True)
class MetricCard:
    """One metric's mean for the run, with the baseline's and the change when compared."""

    key: str
    name: str  # as the CLI prints it: R@4
    label: str  # Recall
    value: float | None
    base: float | None
    delta: float | None
    unavailable: str | None
    headroom: bool


@dataclass(frozen=True)
class Movement:
    """Gained and lost questions on one metric against the baseline (the comparison's rules);
    ``url`` opens the table filtered to each kind (``SHOWS``)."""

    key: str
    name: str
    gained: int
    lost: int
    fixed: int | None
    broken: int | None
    mean_delta: float | None
    url: dict[str, str]


@dataclass(frozen=True)
class QuestionRow:
    """One row of the per-question table; ``detail`` is its ranked list(s) when inlined (the
    report), else None (the lab loads it on demand from ``url``)."""

    qid: str
    question: str
    values: dict[str, float | None]
    base: float | None
    delta: float | None
    marks: list[str]
    url: str
    detail: QuestionModel | None = None
    #: the golden set's slices of the question
    slices: tuple[str, ...] = ()
    #: the row as CSV fields (the page's download and ``/lab/questions.csv`` alike)
    csv: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class EffectiveK:
    """How many chunks a token budget admits per question."""

    min: int
    median: float
    max: int


@dataclass(frozen=True)
class RunView:
    """The chosen run at the cutoff: metric cards, what moved against the baseline and one page
    of the per-question table."""

    run: RunRecord
    method: str
    chunking: str
    names: dict[str, str]
    cards: list[MetricCard]
    summary: list[Movement]
    rows: list[QuestionRow]
    total: int
    n_questions: int
    no_relevant: int
    missing: int
    page: int
    pages: int
    first: int
    last: int
    prev_url: str | None
    next_url: str | None
    sort: str
    sort_url: dict[str, str]
    show_url: dict[str, str]
    show: str
    compared: bool
    effective_k: EffectiveK | None
    unavailable_budget: str | None
    #: the golden set's slices (the table's slice filter), the chosen one and the text searched
    slices: list[str] = field(default_factory=list)
    slice: str | None = None
    search: str = ""
    #: each question that moved as a sorted bar (a Vega-Lite spec), None without a baseline
    chart: dict[str, Any] | None = None
    #: the CSV header of the table and the URL of every row the filter keeps, as CSV
    csv_head: list[str] = field(default_factory=list)
    csv_url: str = ""


@dataclass(frozen=True)
class LabPage(TemplateVariables):
    """Everything ``lab.html`` shows: the controls' choices, the chosen run's view, or the
    combination not run yet."""

    experiments: list[str]
    methods: list[str]
    chunkings: list[str]
    baselines: list[BaselineChoice]
    #: the page's URL parameters (every link keeps them)
    params: dict[str, Any]
    form_k: int
    form_budget: int
    #: None on the page a bad request's message is shown on
    cutoff: PromptCutoff | None
    metric: str
    metrics: list[tuple[str, str]]
    sorts: Mapping[str, str]
    shows: Mapping[str, str]
    run: RunRecord | None
    base_run: RunRecord | None
    not_run: NotRun | None = None
    problem: str | None = None
    notes: list[str] = field(default_factory=list)
    view: RunView | None = None
    #: the run the URL named cannot be shown (interrupted, failed, running, no ranked lists):
    #: why, said above the experiment's page shown instead
    unshown: str | None = None


# -- one question's ranked lists (/lab/question and the table's rows) ------------------------
@dataclass(frozen=True)
class RunList:
    """One run's ranked list of the question, with the run it belongs to."""

    list: QuestionList
    run: RunRecord
    method: str
    chunking: str
    baseline: bool


@dataclass(frozen=True)
class QuestionModel:
    """One question's ranked list(s) at the cutoff: the run's, then the baseline's."""

    qid: str
    main: QuestionList
    lists: list[RunList]
    #: the same lists with every retrieved chunk (None: all are shown already)
    all_url: str | None
    keys: tuple[str, ...]


# -- the question page (/question) -----------------------------------------------------------
@dataclass(frozen=True)
class RunShown:
    id: int
    name: str
    baseline: bool
    experiment: str


@dataclass(frozen=True)
class RunQuestionList:
    """A stored run's ranked list of the question (cut around the evidence)."""

    run: RunShown
    l: QuestionList  # noqa: E741 (the template's name)
    problem: str | None


@dataclass(frozen=True)
class SpanShown:
    index: int  # from 1, as the page numbers evidence
    start: int
    end: int
    grade: int
    required: bool


@dataclass(frozen=True)
class Window:
    """A document around its evidence spans: the marked excerpt and the whole text marked."""

    start: int
    end: int
    before: bool  # text is cut before the excerpt
    after: bool  # and after it
    pieces: tuple[Piece, ...]
    full: tuple[Piece, ...]


@dataclass(frozen=True)
class DocumentShown:
    """An evidence document: its spans inside the document's text (``window``), or, when the
    corpus is not available, the spans' own ``texts``."""

    doc: str
    spans: list[SpanShown]
    window: Window | None
    texts: list[str | None] = field(default_factory=list)

    @property
    def missing(self) -> bool:
        return self.window is None


@dataclass(frozen=True)
class Citation:
    label: str  # doc:start-end, or the cited chunk
    text: str | None
    evidence_doc: bool


@dataclass(frozen=True)
class StoredAnswer:
    """One stored answer to the question, with its citations and ``answers check``'s row."""

    set: int
    variant: str
    answer: Any
    abstained: Any
    citations: list[Citation]
    context: Any
    #: the answer's row of the stored check report (JSON as recorded), None when unchecked
    check: Mapping[str, Any] | None


@dataclass(frozen=True)
class JudgeLabel:
    """A judge's label for the question in a stored judge validation."""

    validation: int
    judge: str
    label: Any
    human: Any
    run: Any
    order: Any


@dataclass(frozen=True)
class QuestionPage:
    """One golden question across every stored run, answer and judge label."""

    golden_version: str
    qid: str
    question: str
    answer: str | None
    answerable: bool
    slices: list[str]
    split: str | None
    documents: list[DocumentShown]
    lists: list[RunQuestionList]
    problems: list[str]
    answers: list[StoredAnswer]
    judged: list[JudgeLabel]


# -- the slider (/slider) --------------------------------------------------------------------
@dataclass(frozen=True)
class SliderPage:
    """The rank curve: one labelled passage moved down the list, each metric at k."""

    k: int
    depth: int
    setup: str
    metrics: list[str]
    #: :meth:`ragmeter.explain.RankCurve.to_dict` (the page's JSON)
    curve: dict[str, Any]
    spec: Spec
    #: the curve's first row (the passage at rank 1)
    first: dict[str, Any]
