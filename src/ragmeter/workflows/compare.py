"""Compare two runs: ``ragmeter compare``, the comparison inside ``ragmeter gate`` and the lab's
comparison page, written once.

:func:`compare_runs` reads the two sides (:mod:`.refs`), compares them with
:func:`ragmeter.paired.compare`, counts the comparison in a selection ledger or only reads the
ledger's count for the selection estimate (:class:`LedgerUse`), and, when asked, keeps the
bootstrap distribution the interval came from (:class:`BootstrapDistribution`, the lab's
histogram: the means ``compare`` drew, not drawn again). :func:`record` stores the comparison
with the stored runs it read; :func:`stored_comparison` reads one back with its distribution.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .._errors import RagmeterWarning, UsageError
from .refs import LoadedPair, RunRef, Scoring, load_pair

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ..metrics import Evaluation
    from ..paired import Comparison, Ledger, PPIInterval, Traffic, WeightedDifference
    from ..store import Store
    from ._human_labels import LabelFiles

__all__ = [
    "BootstrapDistribution",
    "CompareOptions",
    "CompareOutcome",
    "HistogramBin",
    "LedgerUse",
    "MetricChoice",
    "StoredComparison",
    "check_ledger_file",
    "compare_pair",
    "compare_runs",
    "ledger_for",
    "record",
    "recorded_headline",
    "stored_comparison",
    "with_human_labels",
]

#: the metric to compare on: its text, None (the one metric both sides carry), or a choice made
#: once both sides are read (the lab's default for two stored runs)
MetricChoice = str | None | Callable[["Evaluation", "Evaluation"], str]


def recorded_headline(config: object) -> str | None:
    """The experiment's headline metric as ``ragmeter run`` recorded it with a run
    (``config["resolved"]["headline"]``: the file's ``headline``, else its default); None for a
    run recorded before experiments had one, or not by ``ragmeter run``."""
    resolved = config.get("resolved") if isinstance(config, Mapping) else None
    found = resolved.get("headline") if isinstance(resolved, Mapping) else None
    return found if isinstance(found, str) and found else None


def _headline_of_pair(store: Store | None, pair: LoadedPair) -> str | None:
    """Two stored runs of one experiment with no --metric: the experiment's headline, when
    both were scored on it (any other pair: None, and ``compare`` asks for a metric)."""
    a, b = pair.stored_ids
    if store is None or a is None or b is None:
        return None
    ra, rb = store.run(a), store.run(b)
    if ra.experiment != rb.experiment:
        return None
    head = recorded_headline(ra.config)
    carried = {str(m) for m in pair.baseline.metrics} & {str(m) for m in pair.candidate.metrics}
    return head if head is not None and head in carried else None


@dataclass(frozen=True)
class CompareOptions:
    """How the two sides are compared (``ragmeter compare``'s options, the same defaults)."""

    n_resamples: int = 5000
    seed: int = 0
    confidence: float = 0.95
    randomisation: bool = False
    strict: bool = False
    intersect: bool = False
    max_movers: int = 10


@dataclass(frozen=True)
class LedgerUse:
    """What the comparison does with a selection ledger.

    ``count_in``: record the comparison there (a JSONL path or a :class:`~ragmeter.paired.Ledger`,
    the store's included) and attach the selection estimate and its warning, as
    :func:`ragmeter.paired.compare` does. ``estimate_from``: count nothing, but attach the
    estimate for the number of variants that ledger has seen on the golden-set version (a page
    view changes nothing). Neither: no ledger at all."""

    count_in: Ledger | Path | None = None
    estimate_from: Ledger | None = None


def ledger_for(
    store: Store | None, ledger: Path | None = None, *, no_ledger: bool = False
) -> Ledger | Path | None:
    """The ledger a command counts its comparison in: none with ``no_ledger``; the file named;
    else the store's (nothing for a read-only store: it cannot be written), or the default JSONL
    ledger without a store."""
    if no_ledger:
        return None
    if ledger is not None:
        return ledger
    if store is None:
        from ..paired import DEFAULT_LEDGER

        return DEFAULT_LEDGER
    return None if store.read_only else store.ledger


def check_ledger_file(ledger: Path) -> None:
    """Before any work: an existing ``--ledger`` must be a selection ledger (the entry is
    appended before the ledger is read back, so a wrong file would get a JSON line added to its
    end). UsageError naming the file and what is wrong with it otherwise."""
    from .._errors import InputError
    from ..paired import Ledger as LedgerFile

    if ledger.is_file():
        try:
            LedgerFile(ledger).entries()
        except InputError as exc:
            raise UsageError(
                f"--ledger {ledger} is not a selection ledger ({exc}); name a ledger file or a "
                "new one"
            ) from None


@dataclass(frozen=True)
class HistogramBin:
    """One bar of the bootstrap histogram: resampled means in [x0, x1)."""

    x0: float
    x1: float
    count: int


@dataclass(frozen=True)
class BootstrapDistribution:
    """The resampled mean differences a comparison's interval is the percentiles of (its seed,
    resamples and method), and the method they were drawn with."""

    means: npt.NDArray[np.float64]
    method: str
    confidence: float

    @classmethod
    def of(cls, c: Comparison) -> BootstrapDistribution | None:
        """The distribution of comparison ``c``'s overall interval; None without questions.

        The means ``compare(keep_means=True)`` kept on ``c`` when it has them (the very draws
        the interval came from); else (a comparison read back from the store or a file) drawn
        again with its seed, resamples and method, which gives the same draws for a seeded
        comparison."""
        from ..paired import bootstrap_means

        if c.n == 0:
            return None
        if c.bootstrap_means is not None:
            return cls(c.bootstrap_means, c.bootstrap_method, c.confidence)
        means, used = bootstrap_means(
            c.deltas,
            n_resamples=c.n_resamples,
            seed=c.seed,
            method=c.bootstrap_method,  # type: ignore[arg-type]  # the method the interval used
        )
        return cls(means, used, c.confidence)

    def interval(self) -> tuple[float, float]:
        """The percentile interval of the means at the comparison's confidence."""
        from ..paired import percentile_interval

        return percentile_interval(self.means, self.confidence)

    def matches(self, ci: tuple[float, float]) -> bool:
        """The percentile interval is ``ci`` (to 1e-12): the distribution is the interval's."""
        import numpy as np

        return bool(np.allclose(self.interval(), ci, rtol=0, atol=1e-12))

    def bins(self, max_bins: int) -> list[HistogramBin]:
        """The means binned: up to ``max_bins`` distinct values become one bar each (centred on
        the value, as wide as the smallest gap), more are cut into ``max_bins`` equal bars."""
        import numpy as np

        values, counts = np.unique(np.round(self.means, 12), return_counts=True)
        if len(values) <= max_bins:
            step = float(np.min(np.diff(values))) if len(values) > 1 else 0.01
            return [
                HistogramBin(float(v) - step / 2, float(v) + step / 2, int(n))
                for v, n in zip(values, counts, strict=True)
            ]
        cnt, edges = np.histogram(self.means, bins=max_bins)
        return [
            HistogramBin(float(edges[i]), float(edges[i + 1]), int(cnt[i])) for i in range(len(cnt))
        ]


@dataclass(frozen=True)
class CompareOutcome:
    """A comparison of two runs, what it compared and, when asked, its bootstrap distribution."""

    comparison: Comparison
    base: RunRef
    cand: RunRef
    #: the metric compared as asked or chosen (None: the one both sides carry)
    metric: str | None
    distribution: BootstrapDistribution | None = None
    #: the difference weighted to traffic shares (``traffic=``; :mod:`ragmeter.paired._weighted`)
    traffic: WeightedDifference | None = None
    #: the paired prediction-powered interval (``human_labels=``; also on ``comparison.ppi``)
    ppi: PPIInterval | None = None

    @property
    def stored_ids(self) -> tuple[int | None, int | None]:
        """The stored runs compared (None for a side read or scored from a file)."""
        return self.base.stored_id, self.cand.stored_id


def compare_pair(
    pair: LoadedPair,
    metric: MetricChoice = None,
    *,
    options: CompareOptions | None = None,
    ledger: LedgerUse | None = None,
    distribution: bool = False,
    traffic: Traffic | None = None,
) -> CompareOutcome:
    """Compare two sides already read. Warnings are kept in ``Comparison.warnings`` (for the
    interface to show), not issued. ``traffic``: also weigh the difference to traffic shares by
    the sides' golden slices (:func:`ragmeter.paired.weighted_compare`)."""
    from ..paired import compare

    opts = options or CompareOptions()
    use = ledger or LedgerUse()
    chosen = metric(pair.baseline, pair.candidate) if callable(metric) else metric
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RagmeterWarning)  # kept in Comparison.warnings
        c = compare(
            pair.baseline,
            pair.candidate,
            chosen,
            n_resamples=opts.n_resamples,
            seed=opts.seed,
            confidence=opts.confidence,
            randomisation=opts.randomisation,
            strict=opts.strict,
            intersect=opts.intersect,
            max_movers=opts.max_movers,
            ledger=use.count_in,
            keep_means=distribution,
        )
    if use.count_in is None and use.estimate_from is not None:
        c = _with_estimate(c, use.estimate_from, opts.seed)
    dist = BootstrapDistribution.of(c) if distribution else None
    weighted = None if traffic is None else _weigh(c, pair, traffic)
    if weighted is not None:  # recorded with the comparison: the lab shows it
        c = replace(c, traffic=weighted)
    return CompareOutcome(c, pair.base, pair.cand, chosen, dist, traffic=weighted)


def _weigh(c: Comparison, pair: LoadedPair, traffic: Traffic) -> WeightedDifference:
    """``c`` weighted to ``traffic`` by the golden slices both sides record (baseline's first)."""
    from ..paired import weighted_compare

    slices: dict[str, tuple[str, ...]] = {}
    for side in (pair.baseline, pair.candidate):
        for q, names in side.slices.items():
            slices[q] = tuple(dict.fromkeys((*slices.get(q, ()), *names)))
    return weighted_compare(c, slices, traffic)


def _with_estimate(c: Comparison, ledger: Ledger, seed: int) -> Comparison:
    """``c`` with the selection estimate for the variants ``ledger`` has counted on its golden
    version (nothing recorded)."""
    n, sel = ledger.selection_estimate(
        c.golden_version, c.baseline_values, c.candidate_values, seed=seed
    )
    if sel is None:
        return c
    return replace(c, selection=sel, n_variants_tried=n)


def compare_runs(
    base: str | RunRef,
    cand: str | RunRef,
    metric: MetricChoice = None,
    *,
    store: Store | None = None,
    scoring: Scoring | None = None,
    options: CompareOptions | None = None,
    ledger: LedgerUse | None = None,
    distribution: bool = False,
    traffic: Traffic | None = None,
    human_labels: Sequence[str | Path] = (),
) -> CompareOutcome:
    """Read ``base`` and ``cand`` (:func:`~.refs.load_pair`: stored runs, evaluation files, or
    run files scored against ``scoring``) and compare them (:func:`compare_pair`).
    ``human_labels``: labels files of human verdicts on both sides (:mod:`._human_labels`): the
    compared values are the judge's, and the paired prediction-powered interval is added."""
    from ..io.outcomes import is_outcome_file
    from ._human_labels import load_label_files

    labels = load_label_files(human_labels) if human_labels else ()  # before any resampling
    if traffic is not None:  # the log or shares first: their errors come before any resampling
        traffic = _loaded(traffic)

    texts = [r.text if isinstance(r, RunRef) else r for r in (base, cand)]
    if not (scoring and scoring.given) and all(is_outcome_file(t) for t in texts):
        if metric is not None:
            raise UsageError(
                "outcome files (.csv, .jsonl) carry their own value per question: drop --metric"
            )
        if traffic is not None:
            raise UsageError(
                "outcome files carry no slices to weight to traffic: compare evaluations of a "
                "golden set whose questions name their slices"
            )
        out = compare_outcome_files(
            texts[0], texts[1], options=options, ledger=ledger, distribution=distribution
        )
        return with_human_labels(out, labels, options)
    scored_on = metric if isinstance(metric, str) else None
    pair = load_pair(base, cand, metric=scored_on, scoring=scoring, store=store)
    if metric is None:  # stored runs of one experiment: its headline
        metric = _headline_of_pair(store, pair)
    out = compare_pair(
        pair, metric, options=options, ledger=ledger, distribution=distribution, traffic=traffic
    )
    return with_human_labels(out, labels, options)


def with_human_labels(
    out: CompareOutcome,
    files: Sequence[str | Path] | LabelFiles,
    options: CompareOptions | None = None,
) -> CompareOutcome:
    """``out`` with the paired prediction-powered interval (:func:`ragmeter.paired.ppi_compare`)
    from human verdicts in ``files`` (one file whose lines name their run, or the baseline's then
    the candidate's; or those files already read), on the comparison and on the outcome; ``out``
    itself without files."""
    from ..paired import ppi_compare
    from ._human_labels import LabelFiles, load_label_files

    if not isinstance(files, LabelFiles):
        if not files:
            return out
        files = load_label_files(files)
    opts = options or CompareOptions()
    c = out.comparison
    humans = files.sides((c.baseline, c.candidate))
    humans.check(c.query_ids)
    ppi = ppi_compare(
        dict(zip(c.query_ids, c.baseline_values.tolist(), strict=True)),
        dict(zip(c.query_ids, c.candidate_values.tolist(), strict=True)),
        humans.baseline,
        humans.candidate,
        confidence=opts.confidence,
        n_resamples=opts.n_resamples,
        seed=opts.seed,
    )
    return replace(out, comparison=replace(c, ppi=ppi), ppi=ppi)


def _loaded(traffic: Traffic) -> Traffic:
    """``traffic`` with its log read or its shares parsed (errors name the file and line)."""
    return replace(traffic, log=None, shares=traffic.load())


def compare_outcome_files(
    base: str,
    cand: str,
    *,
    options: CompareOptions | None = None,
    ledger: LedgerUse | None = None,
    distribution: bool = False,
) -> CompareOutcome:
    """Compare two per-question outcome files (:mod:`ragmeter.io.outcomes`: CSV or JSON Lines
    of question id and a 0/1 or numeric value), question by question, as the design source's
    hands-on lab hands them: fixed, broken, the paired bootstrap interval and the sign test."""
    from ..io.outcomes import read_outcomes
    from ..paired import compare

    opts = options or CompareOptions()
    use = ledger or LedgerUse()
    a, b = read_outcomes(base), read_outcomes(cand)
    name = a.column if a.column == b.column else f"{a.column} / {b.column}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RagmeterWarning)  # kept in Comparison.warnings
        c = compare(
            a.values,
            b.values,
            outcome=name,
            n_resamples=opts.n_resamples,
            seed=opts.seed,
            confidence=opts.confidence,
            randomisation=opts.randomisation,
            intersect=opts.intersect,
            max_movers=opts.max_movers,
            ledger=use.count_in,
            names=(Path(base).stem, Path(cand).stem),
            keep_means=distribution,
        )
    dist = BootstrapDistribution.of(c) if distribution else None
    return CompareOutcome(
        c, RunRef(base, "evaluation", path=Path(base)), RunRef(cand, "evaluation", path=Path(cand)),
        None, dist,
    )  # fmt: skip


def record(store: Store, outcome: CompareOutcome) -> int | None:
    """Store the comparison with the stored runs it read; its id, or None when the store is
    read-only here (compared all the same, neither stored nor counted)."""
    if store.read_only:
        return None
    base_id, cand_id = outcome.stored_ids
    return store.record_comparison(outcome.comparison, baseline_run=base_id, candidate_run=cand_id)


@dataclass(frozen=True)
class StoredComparison:
    """A comparison read back from the store, the runs it compared (when stored) and the
    bootstrap distribution of its interval."""

    comparison_id: int
    comparison: Comparison
    baseline_run: int | None
    candidate_run: int | None
    distribution: BootstrapDistribution | None


def stored_comparison(store: Store, comparison_id: int) -> StoredComparison:
    """Stored comparison ``comparison_id`` (``ragmeter compare`` recorded it)."""
    cid = int(comparison_id)
    c = store.comparison(cid)
    row = next((r for r in store.comparisons() if r.id == cid), None)
    return StoredComparison(
        cid,
        c,
        None if row is None else row.baseline_run_id,
        None if row is None else row.candidate_run_id,
        BootstrapDistribution.of(c),
    )
