"""The comparison view's model: a :class:`~ragmeter.paired.Comparison` (stored, or computed now
by :func:`ragmeter.workflows.compare.compare_runs` on the stored evaluations, the numbers
``ragmeter compare`` prints) laid out for the page, with the bootstrap distribution its interval
came from (the workflow's: the lab draws no bootstrap of its own)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypedDict
from urllib.parse import quote

from .._errors import UsageError
from .._interval import interval_text
from .._pvalue import format_p
from ._charts import Spec, bootstrap_histogram_spec
from ._views import TemplateVariables

if TYPE_CHECKING:  # pragma: no cover
    from ..metrics import Evaluation, Metric
    from ..paired import Comparison, PairedStats, PPIInterval
    from ..store import RunRecord, Store
    from ..workflows.compare import BootstrapDistribution, CompareOutcome

#: the bootstrap histogram: at most this many bars (pre-binned here, not in the browser)
MAX_BINS = 40


def question_url(golden: str | None, qid: str) -> str | None:
    """The question view's URL; None without a golden-set version (nothing to look it up in)."""
    if not golden:
        return None
    return f"/question?golden={quote(golden, safe='')}&qid={quote(qid, safe='')}"


# -- which metric a pair of stored runs is compared on ------------------------------------------
@dataclass(frozen=True)
class PairChoice:
    """What two stored runs can be compared on. ``metric``: the default (None when there is
    none); ``note``: ``ragmeter run``'s words when the runs share no k or budget (the same rule,
    :func:`ragmeter.experiments._table.shared_metric`), with each run's cutoff; ``shared``: the
    metrics both evaluations carry (any of them can be asked for), ``headroom`` among them."""

    base: int
    cand: int
    base_name: str
    cand_name: str
    metric: str | None
    note: str | None = None
    #: the note is ``ragmeter run``'s: the runs' recorded cutoffs share no k or budget
    no_shared_cutoff: bool = False
    shared: tuple[str, ...] = ()
    headroom: frozenset[str] = field(default_factory=frozenset)
    #: the experiment's headline metric as the baseline run recorded it (None: not recorded)
    headline: str | None = None
    #: ``--db URL`` for the report's command lines (set by the report; the lab links instead)
    db: str = ""

    def is_headline(self, metric: str | None) -> bool:
        """True when ``metric`` is the experiment's headline (a page labels any other)."""
        return metric is not None and metric == self.headline

    @property
    def possible(self) -> list[PossibleComparison]:
        """The comparisons that can still be made: metric, whether it is headroom (not
        quality), the lab's URL and the command line (``_pair_note.html`` reads them)."""
        return [
            PossibleComparison(
                metric=m,
                headroom=m in self.headroom,
                url=f"/compare?base={self.base}&cand={self.cand}&metric={quote(m, safe='@')}",
                command=f"ragmeter compare {self.base} {self.cand} -m {shlex.quote(m)}"
                + (f" {self.db}" if self.db else ""),
            )
            for m in self.shared
        ]


@dataclass(frozen=True)
class PossibleComparison:
    """A comparison two runs with no default metric can still be asked for."""

    metric: str
    headroom: bool
    url: str
    command: str


class NoSharedMetric(UsageError):
    """Two stored runs have no metric to compare on by default; ``choice`` says why and what
    can be compared instead (the lab and the report show it as a note, not as a failure)."""

    def __init__(self, choice: PairChoice) -> None:
        self.choice = choice
        shared = ", ".join(choice.shared) or "none"
        super().__init__(
            f"run {choice.cand} ('{choice.cand_name}') against run {choice.base} "
            f"('{choice.base_name}'): {choice.note}; metrics both runs carry: {shared}"
        )


@dataclass(frozen=True)
class _StoredCutoffs:
    k: int | None
    budget: int | None


def _cutoffs(run: RunRecord) -> _StoredCutoffs | None:
    """A stored run's prompt cutoffs as ``ragmeter run`` recorded them; None for a run that
    names neither (not an experiment's variant: the rule does not apply)."""
    from ._context import settings_of

    settings = settings_of(run)

    def whole(key: str) -> int | None:
        value = settings.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    k, budget = whole("k"), whole("budget")
    return None if k is None and budget is None else _StoredCutoffs(k, budget)


def cutoff_text(cut: _StoredCutoffs) -> str:
    parts = ([f"k = {cut.k}"] if cut.k is not None else []) + (
        [f"budget = {cut.budget:,} tokens"] if cut.budget is not None else []
    )
    return ", ".join(parts)


def _experiment_metrics(names: list[str], cut: _StoredCutoffs, documents: bool) -> list[Metric]:
    """The experiment's metrics as ``ragmeter run`` lists them, from what a run recorded (its
    prompt metrics, see ``Experiment.prompt_metrics``): a metric at the run's own k or budget
    is that metric without its cutoff when the run has it at each of its cutoffs; any other
    (the headroom, an explicit cutoff such as ``RR@3`` beside a budget) keeps its own, which the
    rule skips."""
    from ..metrics import parse

    parsed = []
    for name in names:
        try:
            parsed.append(parse(name))
        except UsageError:
            continue
    have = set(parsed)
    out: list[Metric] = []
    for m in parsed:
        if (m.k is not None and m.k == cut.k) or (m.budget is not None and m.budget == cut.budget):
            bare = m.at()
            wanted = [bare.at(cut.k)] if cut.k is not None else []
            if cut.budget is not None and "span" in bare.info.levels and not documents:
                wanted.append(bare.at(budget=cut.budget))
            if all(w in have for w in wanted):
                m = bare
        if m not in out:
            out.append(m)
    return out


def _resolved(run: RunRecord) -> Mapping[str, Any]:
    """``config["resolved"]`` of a run ``ragmeter run`` recorded (empty for any other)."""
    config = run.config if isinstance(run.config, Mapping) else {}
    found = config.get("resolved")
    return found if isinstance(found, Mapping) else {}


def _cutoff_of(name: str | None) -> tuple[int | None, int | None] | None:
    from ..metrics import parse

    try:
        m = parse(name) if name else None
    except UsageError:
        return None
    return None if m is None else (m.k, m.budget)


def pair_choice(
    store: Store, base: int, cand: int, a: Evaluation, b: Evaluation, level: str | None
) -> PairChoice:
    """The default metric for stored runs ``base`` and ``cand`` (evaluations ``a`` and ``b``).

    The experiment's headline (``headline`` in its file, recorded with each run) when both
    runs carry it: the metric ``ragmeter run``'s paired table, the demo and the report read.
    Otherwise runs ``ragmeter run`` recorded follow its rule: the first span metric at the
    budget, else the k, both share; none is "no shared k or budget with the baseline" (the
    comparison table's words). Where run compares at the budget, the lab keeps its preference
    for AllR there (:func:`compare_metric`). Runs without recorded cutoffs are compared on
    :func:`compare_metric`'s choice when both carry it."""
    from ..experiments import NO_SHARED_CUTOFF, shared_metric
    from ._data_experiments import compare_metric, declared_headline

    rb, rc = store.run(int(base)), store.run(int(cand))
    names_a = [str(m) for m in a.metrics]
    names_b = {str(m) for m in b.metrics}
    shared = tuple(n for n in names_a if n in names_b)
    resolved = [_resolved(r) for r in (rb, rc)]
    headroom = frozenset(x["headroom"] for x in resolved if isinstance(x.get("headroom"), str))
    head = declared_headline(rb.config)
    choice = PairChoice(int(base), int(cand), rb.name, rc.name, None, shared=shared,
                        headroom=headroom, headline=head)  # fmt: skip
    if head is not None and head in shared:
        return replace(choice, metric=head)
    preferred = compare_metric(dict.fromkeys(names_a)) if names_a else None
    cb, cc = _cutoffs(rb), _cutoffs(rc)
    if cb is not None and cc is not None:
        # the experiment's metrics in its own order: the baseline's recorded prompt metrics
        # (``run`` writes them), else its evaluation's columns
        listed = resolved[0].get("metrics")
        if not (isinstance(listed, list) and all(isinstance(x, str) for x in listed)):
            listed = names_a
        documents = (level or (rb.config or {}).get("level")) == "document"
        m = shared_metric(_experiment_metrics(listed, cb, documents), cb, cc, documents=documents)
        if m is None:
            note = (
                f"{NO_SHARED_CUTOFF} ({rb.name} at {cutoff_text(cb)}, {rc.name} at "
                f"{cutoff_text(cc)})"
            )
            return replace(choice, note=note, no_shared_cutoff=True)
        # run's metric; the lab's one preference (AllR at the budget) where run compares
        allr = (
            preferred is not None
            and preferred.startswith("AllR@budget=")
            and preferred in shared
            and _cutoff_of(preferred) == (m.k, m.budget)
        )
        preferred = preferred if allr else str(m)
    if preferred is None or preferred not in shared:
        what = f"{preferred} was not computed for run '{rc.name}'" if preferred else "no metric"
        return replace(choice, note=f"no default metric to compare on: {what}")
    return replace(choice, metric=preferred)


def compute(
    store: Store,
    base: int,
    cand: int,
    metric: str | None,
    *,
    level: str | None = None,
    n_resamples: int = 5000,
    seed: int = 0,
    intersect: bool = False,
) -> tuple[CompareOutcome, PairChoice]:
    """``ragmeter compare BASE CAND -m METRIC`` on stored runs, through the compare workflow,
    without counting it in the ledger (a page view changes nothing); the ledger's current count
    gives the selection estimate. Without a metric, :func:`pair_choice` picks it and raises
    :class:`NoSharedMetric` when there is none. Returns the workflow's outcome (the comparison,
    the metric used, the bootstrap distribution) and the pair's choice."""
    from ..workflows.compare import CompareOptions, LedgerUse, compare_runs
    from ..workflows.refs import RunRef

    choices: list[PairChoice] = []

    def choose(a: Evaluation, b: Evaluation) -> str:
        choice = pair_choice(store, base, cand, a, b, level)
        choices.append(choice)
        if metric is not None:
            return metric
        if choice.metric is None:
            raise NoSharedMetric(choice)
        return choice.metric

    out = compare_runs(
        RunRef.stored(int(base), level),
        RunRef.stored(int(cand), level),
        choose,
        store=store,
        options=CompareOptions(n_resamples=n_resamples, seed=seed, intersect=intersect),
        ledger=LedgerUse(estimate_from=store.ledger),
        distribution=True,
    )
    return out, choices[0]


class Bin(TypedDict):
    """One bar of the bootstrap histogram (the chart's data row)."""

    x0: float
    x1: float
    count: int


@dataclass(frozen=True)
class Histogram(TemplateVariables):
    """The resampled means the interval is the percentiles of, binned."""

    bins: list[Bin]
    percentile_ci: tuple[float, float] | None
    method: str | None = None


def histogram(dist: BootstrapDistribution | None) -> Histogram:
    """The resampled means the interval is the percentiles of (the workflow's distribution),
    binned: a few distinct values become one bar each."""
    if dist is None:
        return Histogram([], None)
    bins = [Bin(x0=b.x0, x1=b.x1, count=b.count) for b in dist.bins(MAX_BINS)]
    return Histogram(bins, dist.interval(), dist.method)


@dataclass(frozen=True)
class TrafficRow:
    """One slice of the weighted difference, as the page prints it."""

    slice: str
    n: int
    golden: str
    traffic: str
    ratio: str
    diff: str
    weighted: str


@dataclass(frozen=True)
class TrafficView:
    """The difference weighted to traffic, when the comparison carries it (``--traffic``):
    the headline and weight lines as ``ragmeter compare`` prints them, one row per slice."""

    estimate: str
    ci: str
    headline: str
    weight_line: str
    rows: list[TrafficRow]
    notes: list[str]

    @classmethod
    def of(cls, c: Comparison) -> TrafficView | None:
        w = c.traffic
        if w is None:
            return None
        rows = [
            TrafficRow(
                s.name,
                s.n,
                f"{s.golden_share:.1%}",
                f"{s.traffic_share:.1%}",
                f"x{s.ratio:.2f}",
                f"{s.mean_delta:+.3f}",
                f"{s.contribution:+.3f}",
            )
            for s in w.slices
        ]
        return cls(
            f"{w.estimate:+.4f}", w.ci_text, w.headline(), w.weight_line(), rows, list(w.notes)
        )


@dataclass(frozen=True)
class StatsRow:
    """One row of the overall / splits / slices table."""

    label: str
    n: int
    base: float
    cand: float
    delta: float
    ci: str
    wlt: str
    fixed_broken: str | None
    p: str
    holm: str | None
    small: bool


def _row(label: str, s: PairedStats, holm: float | None = None, small: bool = False) -> StatsRow:
    return StatsRow(
        label=label,
        n=s.n,
        base=s.baseline_mean,
        cand=s.candidate_mean,
        delta=s.mean_delta,
        ci=s.ci_text,
        wlt=f"{s.wins}/{s.losses}/{s.ties}",
        fixed_broken=None if s.fixed is None else f"{s.fixed}/{s.broken}",
        p=format_p(s.sign_test_p),
        holm=None if holm is None else f"{holm:.3g}",
        small=small,
    )


@dataclass(frozen=True)
class QuestionLink:
    """A question id, linked to the question view when the golden set is known."""

    qid: str
    url: str | None


@dataclass(frozen=True)
class MoverRow:
    """One of the biggest movers, formatted as ``ragmeter compare`` prints it."""

    qid: str
    url: str | None
    change: str
    baseline: str
    candidate: str
    ranks: str
    slices: str


@dataclass(frozen=True)
class Check:
    """A yes/no line of "Is it a fair test?" with its text."""

    ok: bool
    text: str = ""
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ConfigDiff:
    key: str
    baseline: str
    candidate: str


@dataclass(frozen=True)
class PPIRow:
    """One of the three intervals of a comparison made with human verdicts."""

    name: str
    n: int
    estimate: str
    interval: str
    width: str

    @classmethod
    def rows(cls, p: PPIInterval) -> list[PPIRow]:
        return [
            cls(name, e.n, f"{e.estimate:+.3f}", interval_text(e.lo, e.hi), f"{e.width:.3f}")
            for name, e in p.rows
        ]


@dataclass(frozen=True)
class ComparisonView(TemplateVariables):
    """Everything the comparison page shows (``c`` in ``comparison.html`` and
    ``_report_comparison.html``); also a read-only mapping of its fields."""

    stored_id: int | None
    base_run: int | None
    cand_run: int | None
    baseline: str
    candidate: str
    metric: str
    binary: bool
    golden_version: str | None
    n: int
    mean_delta: float
    delta_text: str
    ci: tuple[float, float]
    ci_text: str
    confidence: str
    wins: int
    losses: int
    ties: int
    fixed: int | None
    broken: int | None
    fixed_ids: list[QuestionLink]
    broken_ids: list[QuestionLink]
    sign_p: str
    verdict: str
    verdict_line: str
    bootstrap: str
    rows: list[StatsRow]
    slice_note: str | None
    any_small: bool
    movers: list[MoverRow]
    has_ranks: bool
    changes: list[str]
    one_change: Check
    fairness: Check
    config_diff: list[ConfigDiff]
    warnings: list[str]
    selection: str | None
    histogram: Histogram
    histogram_spec: Spec | None
    histogram_matches: bool
    #: ``ragmeter run``'s note, for runs that share no k or budget (set by
    #: :func:`live_comparison_context`)
    cutoff_note: str | None = None
    #: "the experiment's headline", or "not the headline (...)" naming it (None: the runs
    #: recorded no headline)
    headline_note: str | None = None
    #: the ``ragmeter compare`` line that prints the same numbers, runnable as printed (its
    #: ``--db`` names the lab's store; set by :func:`live_comparison_context`)
    command: str | None = None
    #: the difference weighted to traffic, when the stored comparison carries it
    traffic: TrafficView | None = None
    #: the prediction-powered interval and the judge-only and human-only ones, when the
    #: comparison was made with human verdicts (``ragmeter compare --human-labels``)
    ppi: list[PPIRow] | None = None
    ppi_note: str | None = None


def comparison_context(
    c: Comparison,
    dist: BootstrapDistribution | None,
    *,
    stored_id: int | None = None,
    base_run: int | None = None,
    cand_run: int | None = None,
) -> ComparisonView:
    """Everything the comparison page shows, from a Comparison and its bootstrap distribution."""
    hist = histogram(dist)
    rows = [_row("all", c.overall)]
    for name, sr in c.splits.items():
        rows.append(_row(f"split {name}" + (" (held out)" if name == "heldout" else ""), sr.stats))
    for name, sr in c.slices.items():
        rows.append(
            _row(f"slice {name}" + (" *" if sr.small else ""), sr.stats, sr.p_adjusted, sr.small)
        )
    v = c.golden_version

    def links(ids: Sequence[str] | None) -> list[QuestionLink]:
        return [QuestionLink(q, question_url(v, q)) for q in (ids or ())]

    movers = [
        MoverRow(
            qid=m.qid,
            url=question_url(v, m.qid),
            change=m.change_text(c.binary),
            baseline=f"{m.baseline:.4f}",
            candidate=f"{m.candidate:.4f}",
            ranks=m.ranks_text,
            slices=", ".join(m.slices),
        )
        for m in c.movers
    ]
    n_changes = len(c.changes)
    return ComparisonView(
        stored_id=stored_id,
        base_run=base_run,
        cand_run=cand_run,
        baseline=c.baseline,
        candidate=c.candidate,
        metric=c.label,
        binary=c.binary,
        golden_version=v,
        n=c.n,
        mean_delta=c.mean_delta,
        delta_text=f"{c.mean_delta:+.4f}",
        ci=c.ci,
        ci_text=c.overall.ci_text,
        confidence=f"{c.confidence:.0%}",
        wins=c.wins,
        losses=c.losses,
        ties=c.ties,
        fixed=c.fixed,
        broken=c.broken,
        fixed_ids=links(c.fixed_ids),
        broken_ids=links(c.broken_ids),
        sign_p=format_p(c.sign_test_p),
        verdict=c.verdict,
        verdict_line=c.verdict_line,
        bootstrap=c.method_line,
        rows=rows,
        slice_note=c.slice_note,
        any_small=any(sr.small for sr in c.slices.values()),
        movers=movers,
        has_ranks=c.movers_have_ranks,
        changes=[str(ch) for ch in c.changes],
        one_change=Check(
            n_changes == 1,
            "one change: " + str(c.changes[0])
            if n_changes == 1
            else "no setting differs between the two runs"
            if n_changes == 0
            else f"{n_changes} changes ({', '.join(ch.name for ch in c.changes)}): with more "
            "than one change per run the comparison cannot say which change caused the "
            "difference",
        ),
        fairness=Check(not c.fairness, problems=list(c.fairness)),
        config_diff=[ConfigDiff(d.key, str(d.baseline), str(d.candidate)) for d in c.config_diff],
        warnings=list(c.warnings),
        selection=c.selection_line,
        histogram=hist,
        histogram_spec=(
            bootstrap_histogram_spec(hist.bins, ci=c.ci, mean_delta=c.mean_delta, label=c.label)
            if hist.bins
            else None
        ),
        histogram_matches=dist is not None and dist.matches(c.ci),
        traffic=TrafficView.of(c),
        ppi=None if c.ppi is None else PPIRow.rows(c.ppi),
        ppi_note=None
        if c.ppi is None
        else f"{c.ppi.line}. {c.ppi.ppi.method}; judge only "
        f"and human only: {c.ppi.judge.method}, {c.ppi.confidence:.0%}",
    )


def stored_comparison_context(store: Store, comparison_id: int) -> ComparisonView:
    """A stored comparison (``ragmeter compare`` recorded it) as the page shows it."""
    from ..workflows.compare import stored_comparison

    found = stored_comparison(store, int(comparison_id))
    return comparison_context(
        found.comparison,
        found.distribution,
        stored_id=found.comparison_id,
        base_run=found.baseline_run,
        cand_run=found.candidate_run,
    )


def live_comparison_context(
    store: Store,
    base: int,
    cand: int,
    metric: str | None,
    level: str | None = None,
    **options: Any,
) -> ComparisonView:
    """``/compare?base=&cand=&metric=``: computed now on the stored evaluations (``options``:
    ``n_resamples``, ``seed``, ``intersect`` as ``ragmeter compare`` takes them). Without a
    metric and with none to default to, raises :class:`NoSharedMetric`. A comparison of runs
    that share no k or budget (on a metric asked for) carries ``ragmeter run``'s note."""
    if int(base) == int(cand):
        raise UsageError("pick two different runs to compare")
    found, choice = compute(store, base, cand, metric, level=level, **options)
    out = comparison_context(
        found.comparison, found.distribution, base_run=int(base), cand_run=int(cand)
    )
    return replace(
        out,
        cutoff_note=choice.note if choice.no_shared_cutoff else None,
        headline_note=headline_note(choice.headline, out.metric),
        command=compare_command(store, int(base), int(cand), out.metric),
    )


def compare_command(store: Store, base: int, cand: int, metric: str) -> str:
    """``ragmeter compare BASE CAND -m METRIC --no-ledger --db URL``: the page's numbers, and
    like the page it counts nothing in the selection ledger."""
    from ._commands import db_option, quoted

    return f"ragmeter compare {base} {cand} -m {quoted(metric)} --no-ledger {db_option(store)}"


def headline_note(headline: str | None, metric: str) -> str | None:
    """How a page labels the metric a comparison is shown on against the experiment's
    headline (None when no headline was recorded)."""
    if headline is None:
        return None
    if metric == headline:
        return "the experiment's headline metric"
    return f"not the headline (the experiment's headline is {headline})"


@dataclass(frozen=True)
class RunChoice:
    """A finished run the comparison and sweep forms offer."""

    id: int
    name: str
    experiment: str | None
    base: bool


@dataclass(frozen=True)
class CompareForm:
    """The comparison form: the runs and metrics it offers and what is chosen."""

    runs: list[RunChoice]
    metrics: list[str]
    base: int | str | None = None
    cand: int | str | None = None
    metric: str = ""


def default_pair(form: CompareForm) -> tuple[int, int] | None:
    """The pair ``/compare`` opens on when none is named: the newest experiment's baseline run
    against the newest other run of that experiment (without a baseline there, its two newest
    runs); None with fewer than two finished runs. Never the same run twice."""
    runs = form.runs  # newest first
    if len(runs) < 2:
        return None
    mine = [r for r in runs if r.experiment == runs[0].experiment]
    if len(mine) < 2:
        mine = runs
    base = next((r for r in mine if r.base), None)
    if base is None:
        return mine[1].id, mine[0].id
    cand = next(r for r in mine if r.id != base.id)
    return base.id, cand.id


def choices(store: Store) -> CompareForm:
    """What the comparison form offers: finished runs and their metrics."""
    runs = [r for r in store.runs() if r.status == "finished"]
    metrics = list(dict.fromkeys(m for r in runs for m in r.metrics))
    return CompareForm(
        runs=[RunChoice(r.id, r.name, r.experiment, r.is_baseline) for r in runs],
        metrics=metrics,
    )
