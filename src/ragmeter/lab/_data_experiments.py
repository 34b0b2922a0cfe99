"""The experiments view's model: every experiment and its runs, filtered, with the selection
ledger's count and its optimism sentence per golden-set version."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._views import TemplateVariables

if TYPE_CHECKING:  # pragma: no cover
    from ..store import AnswerSetRow, ComparisonRow, JudgeValidationRow, RunRecord, Store
    from ._data_trends import Trend

#: headline metrics per run (those at the token budget first, as ``ragmeter runs list``)
HEADLINE = 3


def headline(metrics: Mapping[str, float | None], n: int = HEADLINE) -> list[tuple[str, Any]]:
    """A run's first ``n`` metrics, those at the token budget first (variants are compared at
    an equal budget): the same choice as ``ragmeter runs list``."""
    names = sorted(metrics, key=lambda k: "budget=" not in k)[:n]
    return [(k, metrics[k]) for k in names]


def when(value: Any) -> str:
    """A stored time (UTC) to the minute."""
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M UTC")


def declared_headline(config: Mapping[str, Any] | None) -> str | None:
    """The experiment's headline metric as ``ragmeter run`` recorded it with the run
    (``config["resolved"]["headline"]``: the file's ``headline``, else its default); None for a
    run recorded before experiments had one, or not by ``ragmeter run``."""
    from ..workflows.compare import recorded_headline

    return recorded_headline(config)


def compare_metric(metrics: Mapping[str, Any], declared: str | None = None) -> str | None:
    """The metric a comparison against the baseline is made on by default: the experiment's
    headline (``declared``, :func:`declared_headline`) when the run carries it; else AllR at
    the budget (the evidence reaches the prompt, at equal cost), else the first headline
    metric."""
    if declared is not None and declared in metrics:
        return declared
    for k in metrics:
        if k.startswith("AllR@budget="):
            return k
    heads = headline(metrics, 1)
    return heads[0][0] if heads else None


def selection_sentence(n_variants: int, estimate: Any = None, at: int | None = None) -> str:
    """'12 variants compared on this version: the best one's lead is optimistic', with the
    simulated optimism ``ragmeter compare`` printed for the latest comparison that had one."""
    if n_variants <= 1:
        return (
            f"{n_variants} variant compared on this version: no selection among variants yet"
            if n_variants == 1
            else "no comparison counted on this version yet"
        )
    text = f"{n_variants} variants compared on this version: the best one's lead is optimistic"
    if estimate is not None:
        where = f"as comparison {at} printed it, " if at is not None else ""
        text += f"; {where}{estimate.describe()}"
    return text


@dataclass(frozen=True)
class LedgerLine:
    """One golden version's selection ledger: its counts and the optimism sentence."""

    version: str
    n_comparisons: int
    n_variants: int
    variants: list[str]
    sentence: str


def ledger_by_version(store: Store) -> dict[str, LedgerLine]:
    """Per golden version: the ledger's counts and the sentence."""
    from ..workflows.experiment import ledger_by_version as read_ledger

    return {
        v.version: LedgerLine(
            version=v.version,
            n_comparisons=v.summary.n_comparisons,
            n_variants=v.summary.n_variants,
            variants=list(v.summary.variants),
            sentence=selection_sentence(v.summary.n_variants, v.estimate, v.comparison_id),
        )
        for v in read_ledger(store)
    }


@dataclass(frozen=True)
class RunRow:
    """One stored run in its experiment's table."""

    id: int
    name: str
    label: str | None
    status: str
    is_baseline: bool
    golden_version: str | None
    finished: str
    headline: list[tuple[str, Any]]
    changes: list[str]
    message: str | None
    has_ranked: bool
    #: the comparison with its experiment's baseline (None: nothing to compare)
    compare_url: str | None
    #: what makes it an unfair test against that baseline: the "changing k" trap
    warnings: list[str] = field(default_factory=list)


def context_warning(r: RunRecord, base: RunRecord | None) -> str | None:
    """``ragmeter run``'s "changing k" warning for the stored run ``r`` against its
    experiment's baseline ``base`` (:func:`ragmeter.paired.context_trap`), from what every
    stored experiment run keeps: its settings and measured context tokens, so runs stored
    before ragmeter checked it are checked too; a run without measured tokens is not."""
    from ..paired import context_trap

    if base is None or base.id == r.id or r.status != "finished":
        return None

    def config(x: RunRecord) -> dict[str, Any]:
        settings = x.config.get("settings")
        return {
            "settings": dict(settings) if isinstance(settings, Mapping) else {},
            "context_tokens": x.context_tokens,
        }

    return context_trap(config(base), config(r))


def run_row(
    r: RunRecord, baseline_of: Mapping[str, int], records: Mapping[int, RunRecord] | None = None
) -> RunRow:
    base = baseline_of.get(r.experiment)
    metric = compare_metric(r.metrics, declared_headline(r.config))
    warning = None if base is None or records is None else context_warning(r, records.get(base))
    return RunRow(
        id=r.id,
        name=r.name,
        label=r.label,
        status=r.status,
        is_baseline=r.is_baseline,
        golden_version=r.golden_version,
        finished=when(r.finished_at or r.started_at),
        headline=headline(r.metrics),
        changes=list(r.changes),
        message=r.message,
        has_ranked=r.has_ranked,
        compare_url=None
        if base is None or base == r.id or metric is None or r.status != "finished"
        # /compare picks the metric both runs share (the candidate's own may be at a k the
        # baseline was not scored at)
        else f"/compare?base={base}&cand={r.id}",
        warnings=[] if warning is None else [warning],
    )


@dataclass(frozen=True)
class ExperimentGroup:
    name: str
    runs: list[RunRow] = field(default_factory=list)


@dataclass(frozen=True)
class StoredComparisonLine:
    """A stored comparison as the list shows it: the stored row and when it was made."""

    row: ComparisonRow
    created: str

    @classmethod
    def of(cls, c: ComparisonRow) -> StoredComparisonLine:
        return cls(c, when(c.created_at))


@dataclass(frozen=True)
class ExperimentsPage(TemplateVariables):
    """Everything ``experiments.html`` shows (its top-level variables)."""

    filters: dict[str, str | None]
    options: dict[str, list[str]]
    groups: list[ExperimentGroup]
    n_runs: int
    n_all: int
    ledger: list[LedgerLine]
    comparisons: list[StoredComparisonLine]
    answer_sets: list[AnswerSetRow]
    judges: list[JudgeValidationRow]
    #: each shown experiment's headline over time (:mod:`._data_trends`)
    trends: dict[str, Trend] = field(default_factory=dict)


def experiments_context(
    store: Store,
    *,
    experiment: str | None = None,
    golden: str | None = None,
    status: str | None = None,
) -> ExperimentsPage:
    """Everything the experiments page shows, built from the store alone."""
    from ._data_stored import answer_sets, judge_validations
    from ._data_trends import trends

    everything = store.runs()
    shown = [
        r
        for r in everything
        if (experiment is None or r.experiment == experiment)
        and (golden is None or r.golden_version == golden)
        and (status is None or r.status == status)
    ]
    baseline_of: dict[str, int] = {}
    for r in everything:  # newest first: the newest finished baseline of each experiment
        if r.is_baseline and r.status == "finished":
            baseline_of.setdefault(r.experiment, r.id)
    records = {r.id: r for r in everything}
    groups: list[ExperimentGroup] = []
    for r in shown:
        if not groups or groups[-1].name != r.experiment:
            groups.append(ExperimentGroup(r.experiment))
        groups[-1].runs.append(run_row(r, baseline_of, records))
    ledger = ledger_by_version(store)
    versions = list(dict.fromkeys([*(r.golden_version or "" for r in everything), *ledger]))
    return ExperimentsPage(
        filters={"experiment": experiment, "golden": golden, "status": status},
        options={
            "experiment": sorted({r.experiment for r in everything}),
            "golden": sorted({r.golden_version for r in everything if r.golden_version}),
            "status": sorted({r.status for r in everything}),
        },
        groups=groups,
        n_runs=len(shown),
        n_all=len(everything),
        ledger=[ledger[v] for v in versions if v in ledger],
        comparisons=[StoredComparisonLine.of(c) for c in store.comparisons()[:50]],
        answer_sets=answer_sets(store),
        judges=judge_validations(store),
        trends=trends(store, [g.name for g in groups]),
    )
