"""Compare two scored runs question by question: ``compare(baseline, candidate, metric)``.

Rules (each one is a test):

- Both inputs are :class:`~ragmeter.metrics._evaluation.Evaluation` records or plain
  ``{qid: value}`` mappings. The metric picks the column of an Evaluation. Two mappings may
  instead hold a plain outcome that is not a registry metric (e.g. ``"answer correct"``): then
  ``Comparison.metric`` is None and ``Comparison.outcome`` names what was compared (``label`` is
  either one as text, the ``metric`` field of ``to_dict``).
- Binary outcomes (fixed / broken counted): the metric is declared binary in the registry
  (``Hit``, ``AllR``); or, when the label is not a registry metric, every value is 0 or 1. A
  registry metric that is not binary (``R@5``) never reports fixed / broken, whatever its values,
  so the meaning of a field does not change with the data.
- Runs scored on different golden-set versions are refused (``VersionMismatchError``) when both
  carry one; when only one does, a warning says the sets cannot be checked.
- Questions present in only one run are an error listing them (the runs were not scored on the
  same questions); with ``intersect=True`` the common questions are compared and a warning names
  how many were dropped.
- Different context budgets or effective k (read from the configs) make an unfair test: a
  warning, or ``UsageError`` with ``strict=True``. Every differing setting is listed, grouped
  into changes by :func:`~ragmeter.paired.changes` (the one rule ``ragmeter run`` uses too), with
  a warning when there is more than one change (one change per run).
- Per-slice sign-test p-values are also Holm-adjusted over the slices (``SliceResult.p_adjusted``,
  ``sign_test_p_holm`` in ``to_dict``): with many slices some small p-values turn up by chance.
  The overall figure and the splits are not adjusted.
- Warnings are issued as :class:`~ragmeter._errors.RagmeterWarning` and also kept in
  ``Comparison.warnings`` for reports.
"""

from __future__ import annotations

import functools
import math
import numbers
import warnings as _warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import InputError, RagmeterWarning, UsageError, VersionMismatchError
from .._numbers import MAX_RESAMPLES, number_in, whole
from .._numbers import seed as check_seed
from .._pvalue import p_is
from ..metrics import Evaluation, Metric, parse
from ._bootstrap import Method
from ._changes import Change, changes, fairness_problems, several_note
from ._comparison_record import comparison_fields
from ._configdiff import SettingDiff, config_diff
from ._ppi import PPIInterval
from ._record import Record
from ._selection import SelectionEstimate
from ._slices import SMALL_NOTE, PairedStats, paired_stats, slice_groups, split_groups
from ._tests import RandomisationTest, holm, randomisation_test
from ._weighted import WeightedDifference

Scores = Evaluation | Mapping[str, float]


@dataclass(frozen=True)
class Mover:
    """One question whose value changed, with its first relevant rank before and after."""

    qid: str
    baseline: float
    candidate: float
    delta: float
    rank_before: int | None = None
    rank_after: int | None = None
    slices: tuple[str, ...] = ()

    def change_text(self, binary: bool) -> str:
        """What changed, as the movers tables print it: fixed / broken for a binary outcome,
        else the signed difference."""
        if binary:
            return "fixed" if self.delta > 0 else "broken"
        return f"{self.delta:+.4f}"

    @property
    def ranks_text(self) -> str:
        """The first relevant rank before and after (``3 -> 1``; ``-`` where there is none)."""
        before, after = ("-" if r is None else str(r) for r in (self.rank_before, self.rank_after))
        return f"{before} -> {after}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "qid": self.qid,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "delta": self.delta,
            "rank_before": self.rank_before,
            "rank_after": self.rank_after,
            "slices": list(self.slices),
        }

    @classmethod
    def from_dict(
        cls, d: Mapping[str, Any], *, source: str | None = None, field: str | None = None
    ) -> Mover:
        """Rebuild from :meth:`to_dict` output; a bad record raises an ``InputError`` naming
        the field (``field`` is this record's path inside an outer one)."""
        r = Record(d, what="mover", at=field, source=source)
        return cls(
            qid=r.text("qid"),
            baseline=r.number("baseline"),
            candidate=r.number("candidate"),
            delta=r.number("delta"),
            rank_before=r.optional_integer("rank_before", low=None),
            rank_after=r.optional_integer("rank_after", low=None),
            slices=r.texts("slices", []),
        )


@dataclass(frozen=True)
class SliceResult:
    """Paired statistics on the questions of one slice (or split).

    ``p_adjusted`` is the sign-test p-value Holm-adjusted over all the comparison's slices
    (None for a split, which is not adjusted).
    """

    name: str
    stats: PairedStats
    p_adjusted: float | None = None

    @property
    def small(self) -> bool:
        return self.stats.small

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, **self.stats.to_dict(), "small": self.small}
        if self.p_adjusted is not None:
            d["sign_test_p_holm"] = self.p_adjusted
        if self.small:
            d["note"] = SMALL_NOTE
        return d

    @classmethod
    def from_dict(
        cls, d: Mapping[str, Any], *, source: str | None = None, field: str | None = None
    ) -> SliceResult:
        """Rebuild from :meth:`to_dict` output (``small`` and ``note`` are derived, not read);
        a bad record raises an ``InputError`` naming the field."""
        r = Record(d, what="slice", at=field, source=source)
        p = r.raw("sign_test_p_holm", None)
        return cls(
            name=r.text("name"),
            stats=PairedStats.from_dict(d, source=source, field=field),
            p_adjusted=None if p is None else r.number("sign_test_p_holm"),
        )


@dataclass(frozen=True)
class Comparison:
    """Candidate vs baseline on one metric, question by question.

    ``overall`` holds the headline statistics; ``n``, ``mean_delta``, ``ci``, ``wins``, ``losses``,
    ``ties``, ``sign_test_p``, ``fixed`` and ``broken`` read from it.
    """

    baseline: str
    candidate: str
    #: the registry metric compared; None for a plain outcome (see ``outcome``)
    metric: Metric | None
    binary: bool
    query_ids: tuple[str, ...]
    baseline_values: np.ndarray
    candidate_values: np.ndarray
    overall: PairedStats
    confidence: float
    n_resamples: int
    seed: int | None
    bootstrap_method: str
    golden_version: str | None = None
    slices: Mapping[str, SliceResult] = field(default_factory=dict)
    splits: Mapping[str, SliceResult] = field(default_factory=dict)
    fixed_ids: tuple[str, ...] | None = None
    broken_ids: tuple[str, ...] | None = None
    improved: tuple[Mover, ...] = ()
    worsened: tuple[Mover, ...] = ()
    randomisation: RandomisationTest | None = None
    config_diff: tuple[SettingDiff, ...] = ()
    changes: tuple[Change, ...] = ()
    fairness: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    selection: SelectionEstimate | None = None
    n_variants_tried: int | None = None
    #: how per-slice p-values were adjusted: (method, number of slices); None without slices
    slice_adjustment: tuple[str, int] | None = None
    #: what the values are when they are not a registry metric, e.g. "answer correct"
    outcome: str | None = None
    #: the paired prediction-powered interval, when human verdicts were given (``_ppi``);
    #: recorded by :meth:`to_dict` under ``ppi`` only when present
    ppi: PPIInterval | None = None
    #: the difference weighted to traffic shares, when asked (``_weighted``); recorded by
    #: :meth:`to_dict` under ``traffic`` only when present
    traffic: WeightedDifference | None = None
    #: the overall interval's resampled means, kept when asked (``compare(keep_means=True)``:
    #: the lab's histogram); not recorded by :meth:`to_dict` (so None once read back) and not
    #: part of the comparison's equality
    bootstrap_means: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def label(self) -> str:
        """What was compared, as text: the metric's canonical string, or the outcome."""
        return str(self.metric) if self.metric is not None else (self.outcome or "value")

    @property
    def slice_note(self) -> str:
        """The line saying how slice p-values were adjusted ("" without slices)."""
        if self.slice_adjustment is None:
            return ""
        method, n = self.slice_adjustment
        return (
            f"per-slice p-values {method.capitalize()}-adjusted over {n} slices (the "
            "overall and split figures are not adjusted)"
        )

    # -- headline fields ---------------------------------------------------------------------
    @property
    def n(self) -> int:
        return self.overall.n

    @property
    def mean_delta(self) -> float:
        return self.overall.mean_delta

    @property
    def ci(self) -> tuple[float, float]:
        return self.overall.ci

    @property
    def wins(self) -> int:
        return self.overall.wins

    @property
    def losses(self) -> int:
        return self.overall.losses

    @property
    def ties(self) -> int:
        return self.overall.ties

    @property
    def sign_test_p(self) -> float:
        return self.overall.sign_test_p

    @property
    def fixed(self) -> int | None:
        return self.overall.fixed

    @property
    def broken(self) -> int | None:
        return self.overall.broken

    @property
    def deltas(self) -> np.ndarray:
        d: np.ndarray = self.candidate_values - self.baseline_values
        return d

    @property
    def verdict(self) -> str:
        return self.overall.verdict(self.candidate)

    @property
    def movers(self) -> tuple[Mover, ...]:
        """The improved movers, then the worsened ones."""
        return (*self.improved, *self.worsened)

    @property
    def movers_have_ranks(self) -> bool:
        """Some mover has a first relevant rank (the runs carried ranks)."""
        return any(m.rank_before is not None or m.rank_after is not None for m in self.movers)

    @property
    def verdict_line(self) -> str:
        """The verdict with its numbers, as ``ragmeter compare`` and the lab print it."""
        return (
            f"Verdict: {self.verdict}. Difference {self.mean_delta:+.4f}, "
            f"{self.confidence:.0%} interval {self.overall.ci_text}, sign test p "
            f"{p_is(self.sign_test_p)}."
        )

    @property
    def method_line(self) -> str:
        """How the interval and the p-value were computed (the table's caption)."""
        return (
            f"paired percentile bootstrap, {self.n_resamples} resamples, seed {self.seed} "
            f"({self.bootstrap_method}); exact two-sided sign test, ties dropped"
        )

    @property
    def selection_line(self) -> str | None:
        """How many variants the ledger has seen on the golden set, with the selection
        estimate when there is one; None when no ledger was read."""
        if self.n_variants_tried is None:
            return None
        return (
            f"Selection: {self.n_variants_tried} variant(s) tried on golden set "
            f"{self.golden_version or '(unversioned)'}"
            + (f"; {self.selection.describe()}." if self.selection else ".")
        )

    @property
    def per_question(self) -> dict[str, dict[str, float]]:
        return {
            q: {"baseline": a, "candidate": b, "delta": b - a}
            for q, a, b in zip(
                self.query_ids,
                self.baseline_values.tolist(),
                self.candidate_values.tolist(),
                strict=True,
            )
        }

    def to_frame(self) -> Any:  # pandas.DataFrame (the optional pandas extra)
        """One row per question (index ``query``): ``baseline``, ``candidate``, ``delta`` =
        candidate - baseline, the rows of ``ragmeter compare --format csv``; the headline
        statistics stay attributes. pandas is the ``pandas`` extra."""
        from .._extras import require

        pd = require("pandas", "DataFrame output")
        per = self.per_question
        return pd.DataFrame(
            [[r["baseline"], r["candidate"], r["delta"]] for r in per.values()],
            index=pd.Index(list(per), name="query"),
            columns=["baseline", "candidate", "delta"],
        )

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        """The header and one row per question of ``ragmeter compare --format csv`` (six
        decimals, the delta signed)."""
        rows: list[list[object]] = [
            [q, f"{r['baseline']:.6f}", f"{r['candidate']:.6f}", f"{r['delta']:+.6f}"]
            for q, r in self.per_question.items()
        ]
        return ["question", "baseline", "candidate", "delta"], rows

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready record (the shape ``ragmeter compare --format json`` prints)."""
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "metric": self.label,
            "outcome": self.outcome,
            "binary": self.binary,
            "golden_version": self.golden_version,
            **self.overall.to_dict(),
            "confidence": self.confidence,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "bootstrap_method": self.bootstrap_method,
            "verdict": self.verdict,
            "fixed_ids": None if self.fixed_ids is None else list(self.fixed_ids),
            "broken_ids": None if self.broken_ids is None else list(self.broken_ids),
            "randomisation": None if self.randomisation is None else self.randomisation.to_dict(),
            "splits": {k: v.to_dict() for k, v in self.splits.items()},
            "slices": {k: v.to_dict() for k, v in self.slices.items()},
            "slice_p_adjustment": None
            if self.slice_adjustment is None
            else {"method": self.slice_adjustment[0], "n_slices": self.slice_adjustment[1]},
            "movers": {
                "improved": [m.to_dict() for m in self.improved],
                "worsened": [m.to_dict() for m in self.worsened],
            },
            "config_diff": [d.to_dict() for d in self.config_diff],
            "changes": [ch.to_dict() for ch in self.changes],
            "fairness": list(self.fairness),
            "warnings": list(self.warnings),
            "n_variants_tried": self.n_variants_tried,
            "selection": None if self.selection is None else self.selection.to_dict(),
            **({} if self.ppi is None else {"ppi": self.ppi.to_dict()}),
            **({} if self.traffic is None else {"traffic": self.traffic.to_dict()}),
            "per_query": self.per_question,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, source: str | None = None) -> Comparison:
        """Rebuild from :meth:`to_dict` output, its exact inverse (also after a JSON round
        trip): the questions and values come from ``per_query``, derived keys (``verdict``,
        ``delta``, ...) are recomputed. A record that is not one raises an ``InputError``
        naming the field at fault and ``source`` (where the record came from)."""
        fields = comparison_fields(
            d, source=source, mover=Mover.from_dict, slice_result=SliceResult.from_dict
        )
        return cls(**fields)

    def __repr__(self) -> str:
        lo, hi = self.ci
        return (
            f"Comparison({self.candidate!r} vs {self.baseline!r} on {self.label}: n={self.n}, "
            f"delta={self.mean_delta:+.4f}, ci=[{lo:+.4f}, {hi:+.4f}], "
            f"W/L/T={self.wins}/{self.losses}/{self.ties}, p={self.sign_test_p:.3g})"
        )


# -- inputs --------------------------------------------------------------------------------------
def _resolve_metric(
    metric: Metric | str | None, outcome: str | None, sides: Sequence[Scores]
) -> tuple[Metric | None, str | None]:
    """The registry metric compared, or (None, the outcome's name) for plain values.

    A string is parsed as a metric; for two mappings, text that is not a metric names the
    outcome (``"answer correct"``). Evaluations always need a metric (their column).
    """
    evals = [s for s in sides if isinstance(s, Evaluation)]
    if outcome is not None:
        if evals or metric is not None:
            raise UsageError(
                "outcome= names plain {question_id: value} outcomes; an Evaluation "
                "is compared on a metric"
            )
        return None, outcome
    if metric is None:
        if not evals:
            return None, "value"
        choices = evals[0].metrics
        if len(choices) != 1 or any(e.metrics != choices for e in evals):
            raise UsageError(_name_the_metric(evals))
        return choices[0], None
    try:
        return parse(metric), None
    except UsageError:
        if evals or isinstance(metric, Metric):
            raise
        return None, metric


def _name_the_metric(evals: Sequence[Evaluation]) -> str:
    """What to say when no metric is given: the metrics EVERY side carries (only those can be
    compared; a variant that changed k carries its own R@k), the headroom ones marked."""
    shared = [m for m in evals[0].metrics if all(m in e.metrics for e in evals)]
    if not shared:
        sides = "; ".join(f"'{e.run}' carries {', '.join(map(str, e.metrics))}" for e in evals)
        return f"the runs carry no metric in common, so none can be compared ({sides})"
    named = [f"{m} (headroom, not quality)" if _headroom(m, evals) else str(m) for m in shared]
    return f"name the metric to compare (both runs carry: {', '.join(named)})"


def _headroom(m: Metric, evals: Sequence[Evaluation]) -> bool:
    """``m`` is recall past every side's prompt: each side records its prompt cutoff (its
    config's ``settings``, as ``ragmeter run`` writes them) and ``m`` is R at a larger k than
    any of them puts in the prompt. Whether the evidence is in the candidate pool, not whether
    the answer can use it: never the quality a change is judged on."""
    if m.name != "R" or m.k is None or m.budget is not None:
        return False
    ks = []
    for e in evals:
        settings = e.config.get("settings") if isinstance(e.config, Mapping) else None
        if not isinstance(settings, Mapping):
            return False
        k, budget = settings.get("k"), settings.get("budget")
        if not any(isinstance(x, int) and not isinstance(x, bool) for x in (k, budget)):
            return False  # no recorded prompt cutoff: nothing says what the prompt holds
        if isinstance(k, int) and not isinstance(k, bool):
            ks.append(k)
    return all(m.k > k for k in ks)


def _values(side: Scores, metric: Metric | None, role: str) -> tuple[str, dict[str, float]]:
    if isinstance(side, Evaluation):
        if metric is None:
            raise UsageError("name the metric to compare")
        return side.run, side.column(metric)
    if not isinstance(side, Mapping):
        raise UsageError(
            f"the {role} must be an Evaluation or a {{question_id: value}} mapping, "
            f"got {type(side).__name__}"
        )
    # A value is a number (a bool counts as 0 or 1), never text: float("0.5") would accept a
    # string that is almost surely a mistake. Every registry metric lies in [0, 1], so a named
    # metric bounds the values; a plain outcome (no metric) may be any finite number.
    values = list(side.values())
    if set(map(type, values)) <= {float} and set(map(type, side)) <= {str}:
        # the usual case checked in numpy; anything else (or a bad value) takes the loop below,
        # which names the offending questions
        arr = np.fromiter(values, dtype=np.float64, count=len(values))
        good = np.isfinite(arr) if metric is None else (arr >= 0.0) & (arr <= 1.0)
        if good.all():
            return role, dict(side)
    out: dict[str, float] = {}
    bad: list[str] = []
    for q, v in side.items():
        f = _number(v)
        if f is None or (metric is not None and not 0.0 <= f <= 1.0):
            bad.append(f"{q} ({v!r})")
            continue
        out[str(q)] = f
    if bad:
        must = "numbers in [0, 1] (every metric lies there)" if metric else "finite numbers"
        raise UsageError(f"the {role} values must be {must}; not for question {_shown(bad)}")
    return role, out


def _number(value: Any) -> float | None:
    """``value`` as a finite float, or None when it is not a real number (text, None) or is
    NaN, infinite or too large for a float."""
    if type(value) is float:  # the common case, without the slower abstract-class check
        return value if math.isfinite(value) else None
    if not isinstance(value, numbers.Real):
        return None
    try:
        f = float(value)
    except (OverflowError, TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _shown(ids: Sequence[str], limit: int = 10) -> str:
    text = ", ".join(ids[:limit])
    return text + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _align(
    a: dict[str, float],
    b: dict[str, float],
    names: tuple[str, str],
    intersect: bool,
    notes: list[str],
) -> tuple[str, ...]:
    if a and a.keys() == b.keys():  # the usual case, compared as sets without a Python loop
        return tuple(a)
    only_a = [q for q in a if q not in b]
    only_b = [q for q in b if q not in a]
    if only_a or only_b:
        parts = []
        if only_a:
            parts.append(f"{len(only_a)} only in {names[0]} ({_shown(only_a)})")
        if only_b:
            parts.append(f"{len(only_b)} only in {names[1]} ({_shown(only_b)})")
        if not intersect:
            raise InputError(
                "the runs were not scored on the same questions: "
                + "; ".join(parts)
                + ". Score both on the same golden set, or pass intersect=True (--intersect) to "
                "compare the common questions only"
            )
        notes.append("compared only the questions both runs have; dropped " + "; ".join(parts))
    qids = tuple(q for q in a if q in b)
    if not qids:
        raise InputError("the runs have no question in common")
    return qids


def _ranks(side: Scores, qid: str) -> int | None:
    if not isinstance(side, Evaluation):
        return None
    r = side.details.get(qid, {}).get("first_rank")
    return int(r) if isinstance(r, (int, float)) and not isinstance(r, bool) else None


def _movers(
    qids: tuple[str, ...],
    a: np.ndarray,
    b: np.ndarray,
    sides: tuple[Scores, Scores],
    slices: Mapping[str, Sequence[str]],
    limit: int,
) -> tuple[tuple[Mover, ...], ...]:
    d = b - a

    def mover(i: int) -> Mover:
        q = qids[i]
        return Mover(
            q,
            float(a[i]),
            float(b[i]),
            float(d[i]),
            _ranks(sides[0], q),
            _ranks(sides[1], q),
            tuple(slices.get(q, ())),
        )

    def largest(idx: np.ndarray) -> tuple[Mover, ...]:
        # largest change first; the question id breaks ties so the order is stable. Only the
        # `limit` largest (and every question tied with the last of them) are sorted in Python:
        # a 100,000-question comparison shows ten movers, not a sort of all of them.
        size = np.abs(d[idx])
        if len(idx) > limit > 0:
            cut = np.partition(size, len(idx) - limit)[len(idx) - limit]
            idx = idx[size >= cut]
        elif limit == 0:
            return ()
        order = sorted(idx.tolist(), key=lambda i: (-abs(d[i]), qids[i]))
        return tuple(mover(i) for i in order[:limit])

    return largest(np.flatnonzero(d > 1e-12)), largest(np.flatnonzero(d < -1e-12))


def _golden_version(
    sides: tuple[Scores, Scores], names: tuple[str, str], notes: list[str]
) -> str | None:
    va, vb = (s.golden_version if isinstance(s, Evaluation) else None for s in sides)
    if va is not None and vb is not None and va != vb:
        raise VersionMismatchError(
            f"'{names[0]}' was scored on golden set version {va} and '{names[1]}' on {vb}; "
            "score both runs on the same frozen version before comparing them"
        )
    if (va is None) != (vb is None) and any(isinstance(s, Evaluation) for s in sides):
        missing = names[0] if va is None else names[1]
        notes.append(
            f"'{missing}' carries no golden-set version, so the two runs cannot be "
            "checked to share one"
        )
    return va if va is not None else vb


# -- the entry point -----------------------------------------------------------------------------
def compare(
    baseline: Scores,
    candidate: Scores,
    metric: Metric | str | None = None,
    *,
    outcome: str | None = None,
    n_resamples: int = 5000,
    seed: int | None = 0,
    confidence: float = 0.95,
    method: Method = "auto",
    strict: bool = False,
    intersect: bool = False,
    randomisation: bool = False,
    max_movers: int = 10,
    ledger: Any = None,
    selection_searches: int = 300,
    names: tuple[str, str] | None = None,
    keep_means: bool = False,
) -> Comparison:
    """Compare ``candidate`` against ``baseline`` on ``metric``, question by question.

    ``metric`` is a :class:`~ragmeter.metrics.Metric` or its string; ``outcome`` instead names
    plain ``{qid: value}`` outcomes that are no registry metric (``"answer correct"``).

    A mapping's values must be numbers (a bool is 0 or 1; text is refused) and finite; with a
    registry metric they must also lie in [0, 1], where every metric lies. A plain outcome (no
    metric, or ``outcome=``) may be any finite number. A bad value is a :class:`UsageError`
    naming the question id.

    ``ledger`` (a path or :class:`~ragmeter.paired.Ledger`) counts this comparison in a local
    ledger and, when several variants were tried on the golden-set version, attaches the
    simulated optimism of the best of that many equally good variants (``selection``).
    ``names`` overrides the two run names (mappings are otherwise "baseline" and "candidate").
    ``keep_means`` keeps the resampled means of the overall interval on the comparison
    (``Comparison.bootstrap_means``, not serialised): the distribution the interval is the
    percentiles of, without drawing it again.
    """
    # numbers first, before any file is read (one rule and message for each: ragmeter._numbers)
    check_seed(seed)
    whole("the number of resamples", n_resamples, low=1, high=MAX_RESAMPLES)
    number_in("confidence", confidence, 0.0, 1.0, open_low=True, open_high=True)
    whole("the number of movers (--movers)", max_movers, low=0)
    sides = (baseline, candidate)
    m, what = _resolve_metric(metric, outcome, sides)
    label = str(m) if m is not None else str(what)
    (name_a, va), (name_b, vb) = (
        _values(s, m, r) for s, r in zip(sides, ("baseline", "candidate"), strict=True)
    )
    if names is not None:
        name_a, name_b = map(str, names)
    names = (name_a, name_b)
    notes: list[str] = []
    version = _golden_version(sides, names, notes)
    qids = _align(va, vb, names, intersect, notes)
    a = np.fromiter(map(va.__getitem__, qids), dtype=np.float64, count=len(qids))
    b = np.fromiter(map(vb.__getitem__, qids), dtype=np.float64, count=len(qids))

    if m is not None:
        binary = m.binary
        if binary:
            odd = [
                q
                for q, x, y in zip(qids, a, b, strict=True)
                if x not in (0.0, 1.0) or y not in (0.0, 1.0)
            ]
            if odd:
                raise InputError(
                    f"{m} is a binary metric but these questions have values other "
                    f"than 0 and 1: {_shown(odd)}"
                )
    else:
        binary = bool(np.all(np.isin(a, (0.0, 1.0))) and np.all(np.isin(b, (0.0, 1.0))))

    configs = [s.config if isinstance(s, Evaluation) else {} for s in sides]
    diffs = tuple(config_diff(configs[0], configs[1]))
    found = changes(configs[0], configs[1])
    fairness = tuple(fairness_problems(configs[0], configs[1], m, found))
    if fairness and strict:
        raise UsageError("not a fair test: " + "; ".join(fairness))
    notes += [f"not a fair test: {p}" for p in fairness]
    several = several_note(found)
    if several is not None:
        notes.append(several)

    stats_of = functools.partial(
        paired_stats,
        binary=binary,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        method=method,
    )
    overall, boot = stats_of(a, b, keep_means=keep_means)
    slice_maps = [s.slices for s in sides if isinstance(s, Evaluation)]
    split_maps = [s.splits for s in sides if isinstance(s, Evaluation)]
    slice_stats = {
        k: stats_of(a[idx], b[idx])[0] for k, idx in slice_groups(qids, *slice_maps).items()
    }
    adjusted = holm([st.sign_test_p for st in slice_stats.values()])
    slices = {
        k: SliceResult(k, st, p) for (k, st), p in zip(slice_stats.items(), adjusted, strict=True)
    }
    splits = {
        k: SliceResult(k, stats_of(a[idx], b[idx])[0])
        for k, idx in split_groups(qids, *split_maps).items()
    }
    small = [k for k, s in slices.items() if s.small]
    if small:
        notes.append(f"slices under 10 questions give a direction, not proof: {_shown(small)}")

    merged_slices: dict[str, tuple[str, ...]] = {}
    for mp in slice_maps:
        for q, in_slices in mp.items():
            merged_slices[q] = tuple(dict.fromkeys((*merged_slices.get(q, ()), *in_slices)))
    improved, worsened = _movers(qids, a, b, sides, merged_slices, max_movers)
    fixed_ids = broken_ids = None
    if binary:
        fixed_ids = tuple(qids[i] for i in np.flatnonzero((a == 0) & (b == 1)).tolist())
        broken_ids = tuple(qids[i] for i in np.flatnonzero((a == 1) & (b == 0)).tolist())

    rand = randomisation_test(b - a, seed=seed) if randomisation else None

    selection = None
    n_variants = None
    if ledger is not None:
        from ._ledger import Ledger

        book = ledger if isinstance(ledger, Ledger) else Ledger(ledger)
        book.record(
            golden_version=version,
            metric=label,
            baseline=name_a,
            candidate=name_b,
            baseline_config=configs[0],
            candidate_config=configs[1],
            n=len(qids),
            mean_delta=overall.mean_delta,
            ci=overall.ci,
        )
        n_variants, selection = book.selection_estimate(
            version, a, b, n_searches=selection_searches, seed=seed
        )
        if selection is not None:
            notes.append(
                f"{n_variants} variants have been tried on golden set version "
                f"{version or '(none)'}: {selection.describe()}; read the winner's "
                "margin with that in mind and confirm it on held-out questions"
            )

    for note in notes:
        _warnings.warn(note, RagmeterWarning, stacklevel=2)
    return Comparison(
        baseline=name_a,
        candidate=name_b,
        metric=m,
        outcome=what,
        binary=binary,
        query_ids=qids,
        baseline_values=a,
        candidate_values=b,
        overall=overall,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        bootstrap_method=boot.method,
        golden_version=version,
        slices=slices,
        splits=splits,
        fixed_ids=fixed_ids,
        broken_ids=broken_ids,
        improved=improved,
        worsened=worsened,
        randomisation=rand,
        config_diff=diffs,
        changes=tuple(found),
        fairness=fairness,
        warnings=tuple(notes),
        selection=selection,
        n_variants_tried=n_variants,
        slice_adjustment=("holm", len(slices)) if slices else None,
        bootstrap_means=boot.means,
    )
