"""A headline weighted to traffic: the paired difference post-stratified by slice.

The golden set's slice shares are not the traffic's (``ragmeter golden compare-traffic`` measures
by how much), so its unweighted mean difference answers "how much better on questions like
these", not "how much better for the users". Post-stratification re-weights it: with strata s,
golden counts n_s, per-slice mean paired difference d_s (over the n_s questions of the stratum)
and traffic shares w_s (summing to 1),

    estimate = sum_s w_s d_s

Intervals, at the comparison's confidence c:

- **stratified paired bootstrap** (the one shown): each resample draws n_s questions with
  replacement *within* each stratum (a drawn question brings both its outcomes), takes the
  weighted sum of the stratum means, and the (1 - c)/2 and (1 + c)/2 percentiles of B such sums
  bound the interval. One ``numpy.random.default_rng(seed)`` feeds the strata in name order,
  each drawn as :func:`~ragmeter.paired._bootstrap.resample_means` draws one group;
- **normal**: ``estimate +- z sqrt(sum_s w_s^2 var_s / n_s)`` with ``var_s`` the stratum's sample
  variance (ddof 1); None when a weighted stratum has a single question.

Rules (each one is a test):

- **Strata are the golden set's slice labels** (``Question.slices``, carried by an evaluation as
  ``Evaluation.slices``), matched by name to the traffic's slices: the log field ``field``
  (default ``slice``; a string, or a list of strings of which the first is taken), or the shares
  given as ``slice=share,...``. A slice with share 0 is no traffic and no stratum.
- **A question in several strata counts in the first of them its golden record lists** (its
  primary slice): post-stratification needs each question in exactly one stratum, and golden
  questions often carry several slices (``fees``, ``changes``). How many questions this affected
  is reported (``several``). A log line listing several slices counts in its first, likewise.
- **A question in no stratum** (none of its slices is in the traffic) carries no weight; how many
  is reported (``left_out``). Log lines without the field are left out of the shares and counted
  (``unsliced``).
- **A traffic slice with no golden question counted in it is an error naming it**: what was not
  measured cannot be re-weighted. Unless its share is below ``floor`` (default
  :data:`DEFAULT_FLOOR`, 1% of the traffic): then it is dropped, the other shares are rescaled to
  sum to 1, and the drop is reported (``dropped``).
- Given shares must be finite, non-negative, name each slice once, and sum to 1 within
  :data:`SUM_TOLERANCE` (then they are rescaled to exactly 1); a share of a slice no compared
  question carries is the error above. A log yields shares of line counts (repeats count: a
  question asked 100 times is 100 times the traffic, as in ``golden compare-traffic``).
- Which slices carry the weight: per stratum its golden share n_s / N (N: questions in strata),
  traffic share w_s, their ratio, d_s and the contribution w_s d_s, largest traffic share first;
  and the effective sample size ``1 / sum_s (w_s^2 / n_s)`` (Kish): N when the weights match the
  golden shares, fewer the more traffic leans on a few thin slices. A weighted stratum under
  :data:`~ragmeter.paired._slices.SMALL_SLICE` questions is noted: its bootstrap spread is
  optimistic.

With shares equal to the golden shares and every question in one stratum, the estimate is the
unweighted mean difference.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .._errors import InputError, Problem, UsageError, ValidationError
from .._interval import interval_text
from .._numbers import MAX_RESAMPLES, number_in, whole
from .._numbers import seed as check_seed
from ._bootstrap import choose_method, percentile_interval, resample_means
from ._record import Record
from ._slices import SMALL_SLICE

if TYPE_CHECKING:  # pragma: no cover
    from ..data.traffic import TrafficLog

__all__ = [
    "DEFAULT_FLOOR",
    "SUM_TOLERANCE",
    "Traffic",
    "TrafficShares",
    "WeightedDifference",
    "WeightedSlice",
    "parse_shares",
    "shares_from_log",
    "weighted_compare",
]

#: a traffic slice with no golden question is dropped (not an error) below this share
DEFAULT_FLOOR = 0.01
#: given shares must sum to 1 within this
SUM_TOLERANCE = 1e-3
#: the log field slices are read from by default (as ``golden compare-traffic``)
DEFAULT_FIELD = "slice"


class Compared(Protocol):
    """What :func:`weighted_compare` reads of a :class:`~ragmeter.paired.Comparison`."""

    @property
    def query_ids(self) -> tuple[str, ...]: ...
    @property
    def deltas(self) -> np.ndarray: ...
    @property
    def n_resamples(self) -> int: ...
    @property
    def confidence(self) -> float: ...
    @property
    def seed(self) -> int | None: ...


@dataclass(frozen=True)
class TrafficShares:
    """Traffic shares by slice, and where they came from."""

    shares: Mapping[str, float]
    source: str  #: "given shares" or "log PATH"
    field: str | None = None  #: the log field read
    lines: int | None = None  #: log lines read
    unsliced: int = 0  #: log lines without the field (left out)
    several: int = 0  #: log lines listing several slices (counted in their first)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "field": self.field,
            "lines": self.lines,
            "lines_without_slice": self.unsliced,
            "lines_in_several_slices": self.several,
            "shares": dict(self.shares),
        }

    @classmethod
    def from_dict(
        cls, d: Mapping[str, Any], *, source: str | None = None, field: str | None = None
    ) -> TrafficShares:
        r = Record(d, what="traffic shares", at=field, source=source)
        shares = r.mapping("shares")
        return cls(
            {str(k): r.as_number(v, f"shares.{k}") for k, v in shares.items()},
            r.text("source"),
            r.optional_text("field"),
            r.optional_integer("lines"),
            r.integer("lines_without_slice"),
            r.integer("lines_in_several_slices"),
        )


def parse_shares(text: str, *, option: str = "--traffic-shares") -> TrafficShares:
    """``"a=0.5,b=0.3,c=0.2"`` as shares (checked by :func:`weighted_compare`: finite,
    non-negative, summing to 1). A malformed item is a :class:`UsageError` naming it."""
    shares: dict[str, float] = {}
    items = [t.strip() for t in str(text).split(",")]
    if not any(items):
        raise UsageError(f"{option} is empty: give slice=share pairs, e.g. 'fees=0.5,refunds=0.5'")
    for item in items:
        name, eq, value = item.rpartition("=")
        name = name.strip()
        if not eq:
            raise UsageError(f"{option}: '{item}' is not slice=share (e.g. 'fees=0.5')")
        if not name:
            raise UsageError(f"{option}: '{item}' names no slice (an empty slice name)")
        if name in shares:
            raise UsageError(f"{option}: slice '{name}' is given twice")
        try:
            share = float(value)
        except ValueError:
            raise UsageError(
                f"{option}: the share of '{name}' is not a number ('{value}')"
            ) from None
        shares[name] = share
    return TrafficShares(shares, "given shares")


def shares_from_log(log: TrafficLog, field: str = DEFAULT_FIELD) -> TrafficShares:
    """Shares of log lines by the slice in field ``field`` (a string, or a list of strings
    whose first is taken); lines without it are left out and counted. Any other value is an
    error naming file, line and field."""
    counts: dict[str, int] = {}
    problems: list[Problem] = []
    unsliced = several = 0
    for line in log.lines:
        value = line.record.get(field)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            names = list(dict.fromkeys(v for v in value if v))
            several += len(names) > 1
            value = names[0] if names else None
        if value is None or value == "":
            unsliced += 1
            continue
        if not isinstance(value, str):
            problems.append(
                Problem(
                    f"expected a slice name or a list of them (got {type(value).__name__})",
                    log.source,
                    line.line,
                    field,
                )
            )
            continue
        counts[value] = counts.get(value, 0) + 1
    if problems:
        raise ValidationError(problems, what=f"log {log.source}")
    sliced = sum(counts.values())
    if sliced == 0:
        raise InputError(
            f"no log line has a slice in field '{field}' (--traffic-field names another)",
            path=log.source,
        )
    shares = {k: counts[k] / sliced for k in sorted(counts, key=lambda k: (-counts[k], k))}
    return TrafficShares(shares, f"log {log.source}", field, len(log), unsliced, several)


@dataclass(frozen=True)
class Traffic:
    """Where the traffic shares come from: a question log (``log``, its slice ``field``) or
    shares given (``"a=0.5,b=0.5"``, a mapping or shares already read); exactly one.
    ``floor``: see the module docstring."""

    log: str | os.PathLike[str] | None = None
    shares: str | Mapping[str, float] | TrafficShares | None = None
    field: str = DEFAULT_FIELD
    log_format: str | None = None
    floor: float = DEFAULT_FLOOR

    def load(self) -> TrafficShares:
        """Read the log or parse the shares (errors name the file, line and field)."""
        number_in("the traffic floor", self.floor, 0.0, 1.0, open_high=True)
        if (self.log is None) == (self.shares is None):
            raise UsageError(
                "give the traffic as a log (--traffic) or as shares (--traffic-shares): one of "
                "the two"
            )
        if self.log is not None:
            from ..data import read_log

            return shares_from_log(read_log(self.log, self.log_format), self.field)
        if isinstance(self.shares, TrafficShares):
            return self.shares
        if isinstance(self.shares, str):
            return parse_shares(self.shares)
        return TrafficShares(dict(self.shares or {}), "given shares")


@dataclass(frozen=True)
class WeightedSlice:
    """One stratum: its golden questions, its share of them and of the traffic, its mean."""

    name: str
    n: int  #: compared questions counted in this stratum
    golden_share: float  #: n / N, N the questions in strata
    traffic_share: float  #: w, after dropping unmeasured slices under the floor
    mean_delta: float  #: d: mean paired difference of its questions

    @property
    def contribution(self) -> float:
        return self.traffic_share * self.mean_delta

    @property
    def ratio(self) -> float:
        """traffic share / golden share: above 1, the traffic leans on this slice more."""
        return self.traffic_share / self.golden_share

    def to_dict(self) -> dict[str, Any]:
        return {
            "slice": self.name,
            "n": self.n,
            "golden_share": self.golden_share,
            "traffic_share": self.traffic_share,
            "weight_ratio": self.ratio,
            "mean_delta": self.mean_delta,
            "contribution": self.contribution,
        }

    @classmethod
    def from_record(cls, r: Record) -> WeightedSlice:
        return cls(
            r.text("slice"),
            r.integer("n", low=1),
            r.number("golden_share"),
            r.number("traffic_share"),
            r.number("mean_delta"),
        )


@dataclass(frozen=True)
class WeightedDifference:
    """The paired difference re-weighted to traffic shares, beside the unweighted one."""

    estimate: float
    ci: tuple[float, float]  #: stratified paired bootstrap (the interval shown)
    normal_ci: tuple[float, float] | None  #: estimate +- z sqrt(sum w^2 var / n)
    unweighted: float  #: mean difference over every compared question
    confidence: float
    n_resamples: int
    seed: int | None
    slices: tuple[WeightedSlice, ...]  #: largest traffic share first
    n_questions: int  #: compared questions
    left_out: tuple[str, ...] = ()  #: compared questions in no stratum (no weight)
    several: int = 0  #: questions in several strata, counted in their first listed
    dropped: Mapping[str, float] = field(default_factory=dict)  #: unmeasured slices < floor
    floor: float = DEFAULT_FLOOR
    traffic: TrafficShares | None = None
    notes: tuple[str, ...] = ()

    @property
    def n_weighted(self) -> int:
        return sum(s.n for s in self.slices)

    @property
    def effective_n(self) -> float:
        """Kish's effective sample size ``1 / sum_s (w_s^2 / n_s)``."""
        return 1.0 / sum(s.traffic_share**2 / s.n for s in self.slices if s.traffic_share > 0)

    @property
    def ci_text(self) -> str:
        return interval_text(*self.ci)

    @property
    def carried_by(self) -> tuple[WeightedSlice, ...]:
        """The fewest slices, largest share first, holding at least 80% of the traffic."""
        out: list[WeightedSlice] = []
        total = 0.0
        for s in self.slices:
            if total >= 0.8 - 1e-12:
                break
            out.append(s)
            total += s.traffic_share
        return tuple(out)

    def headline(self) -> str:
        """One line: the weighted figure, its interval, and the unweighted one beside it."""
        return (
            f"Weighted to traffic ({self.traffic.source if self.traffic else 'given shares'}): "
            f"{self.estimate:+.3f}, {self.confidence:.0%} interval {self.ci_text} (stratified "
            f"paired bootstrap, {len(self.slices)} slices, {self.n_weighted} questions); "
            f"unweighted {self.unweighted:+.3f}"
        )

    def weight_line(self) -> str:
        """Which slices carry the weight, and the effective sample size."""
        parts = [
            f"{s.name} {s.traffic_share:.0%} of traffic vs {s.golden_share:.0%} of questions"
            for s in self.carried_by
        ]
        return (
            "Weight carried by " + "; ".join(parts) + f". Effective sample size "
            f"{self.effective_n:.1f} of {self.n_weighted} questions."
        )

    def to_markdown(self) -> str:
        """A section for a CI job page (the gate's markdown): the headline, the slices by
        weight, the notes."""
        lines = [
            "### Weighted to traffic (reported, not gated)",
            "",
            self.headline() + ".",
            "",
            "| slice | n | golden share | traffic share | ratio | diff | weighted |",
            "|---|---|---|---|---|---|---|",
            *(
                f"| {s.name} | {s.n} | {s.golden_share:.1%} | {s.traffic_share:.1%} | "
                f"x{s.ratio:.2f} | {s.mean_delta:+.3f} | {s.contribution:+.3f} |"
                for s in self.slices
            ),
            "",
            self.weight_line(),
        ]
        lines += [f"> note: {n}" for n in self.notes]
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "ci": list(self.ci),
            "interval_method": "stratified paired bootstrap (percentile)",
            "normal_ci": None if self.normal_ci is None else list(self.normal_ci),
            "unweighted": self.unweighted,
            "confidence": self.confidence,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "n_questions": self.n_questions,
            "n_weighted": self.n_weighted,
            "effective_n": self.effective_n,
            "slices": [s.to_dict() for s in self.slices],
            "carried_by": [s.name for s in self.carried_by],
            "left_out": list(self.left_out),
            "in_several_slices": self.several,
            "dropped": dict(self.dropped),
            "floor": self.floor,
            "traffic": None if self.traffic is None else self.traffic.to_dict(),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(
        cls, d: Mapping[str, Any], *, source: str | None = None, field: str | None = None
    ) -> WeightedDifference:
        """Rebuild from :meth:`to_dict` output (derived keys are recomputed); a bad record
        raises an ``InputError`` naming the field (``field``: its path in an outer record)."""
        r = Record(d, what="weighted difference", at=field, source=source)

        def pair(key: str) -> tuple[float, float]:
            v = r.items(key)
            if len(v) != 2:
                r.fail(key, f"must be a list of two numbers [low, high], got {len(v)} value(s)")
            return (r.as_number(v[0], f"{key}[0]"), r.as_number(v[1], f"{key}[1]"))

        rows = tuple(
            WeightedSlice.from_record(r.child(v, f"{r.name('slices')}[{i}]", what="slice"))
            for i, v in enumerate(r.items("slices"))
        )
        traffic = r.raw("traffic", None)
        return cls(
            estimate=r.number("estimate"),
            ci=pair("ci"),
            normal_ci=None if r.raw("normal_ci", None) is None else pair("normal_ci"),
            unweighted=r.number("unweighted"),
            confidence=r.number("confidence"),
            n_resamples=r.integer("n_resamples", low=1),
            seed=r.optional_integer("seed"),
            slices=rows,
            n_questions=r.integer("n_questions"),
            left_out=r.texts("left_out", []),
            several=r.integer("in_several_slices"),
            dropped={
                str(k): r.as_number(v, f"dropped.{k}") for k, v in r.mapping("dropped").items()
            },
            floor=r.number("floor"),
            traffic=None
            if traffic is None
            else TrafficShares.from_dict(traffic, source=source, field=r.name("traffic")),
            notes=r.texts("notes", []),
        )


def _shown(names: Sequence[str], limit: int = 10) -> str:
    more = f", ... ({len(names)} in all)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _check_shares(shares: Mapping[str, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, share in shares.items():
        if not isinstance(name, str) or not name.strip():
            raise UsageError("traffic shares: an empty slice name")
        try:
            value = float(share)
        except (TypeError, ValueError):
            raise UsageError(f"traffic shares: the share of '{name}' is not a number") from None
        if not math.isfinite(value):
            raise UsageError(f"traffic shares: the share of '{name}' is not finite ({value})")
        if value < 0:
            raise UsageError(f"traffic shares: the share of '{name}' is negative ({value:g})")
        out[name] = value
    total = sum(out.values())
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise UsageError(
            f"traffic shares must sum to 1 (within {SUM_TOLERANCE:g}), they sum to {total:.6g}"
        )
    return {k: v / total for k, v in out.items() if v > 0}


def weighted_compare(
    diffs: Compared | Mapping[str, float],
    slices: Mapping[str, Sequence[str]],
    traffic: TrafficShares | Traffic | Mapping[str, float],
    *,
    floor: float | None = None,
    n_resamples: int | None = None,
    seed: int | None = None,
    confidence: float | None = None,
) -> WeightedDifference:
    """The paired difference post-stratified to ``traffic`` (module docstring for the rules).

    ``diffs``: a :class:`~ragmeter.paired.Comparison` (its questions, differences, resamples,
    seed and confidence are used unless given) or ``{question_id: candidate - baseline}``.
    ``slices``: each question's golden slice labels, in its record's order
    (``Evaluation.slices``). ``traffic``: shares by slice (a mapping, :class:`TrafficShares`),
    or a :class:`Traffic` to read them from a log. ``seed``: the comparison's, else 0.
    """
    if not isinstance(diffs, Mapping):  # a Comparison (not imported: it records this module)
        qids = list(diffs.query_ids)
        d = np.asarray(diffs.deltas, dtype=np.float64)
        n_resamples = diffs.n_resamples if n_resamples is None else n_resamples
        confidence = diffs.confidence if confidence is None else confidence
        seed = diffs.seed if seed is None else seed
    else:
        seed = 0 if seed is None else seed
        qids = list(diffs)
        d = np.array([float(diffs[q]) for q in qids], dtype=np.float64)
    n_resamples = 5000 if n_resamples is None else n_resamples
    confidence = 0.95 if confidence is None else confidence
    whole("the number of resamples", n_resamples, low=1, high=MAX_RESAMPLES)
    number_in("confidence", confidence, 0.0, 1.0, open_low=True, open_high=True)
    check_seed(seed)
    if isinstance(traffic, Traffic):
        floor = traffic.floor if floor is None else floor
        traffic = traffic.load()
    floor = DEFAULT_FLOOR if floor is None else floor
    number_in("the traffic floor", floor, 0.0, 1.0, open_high=True)
    source = traffic if isinstance(traffic, TrafficShares) else None
    shares = _check_shares(traffic.shares if isinstance(traffic, TrafficShares) else traffic)
    if not np.all(np.isfinite(d)):
        raise UsageError("paired differences must be finite numbers")
    if not qids:
        raise UsageError("no questions to weight")
    if not any(slices.get(q) for q in qids):
        raise UsageError(
            "no compared question carries a slice: weighting to traffic needs runs scored on a "
            "golden set whose questions name their slices"
        )

    # each question in its first listed slice that is a stratum (module docstring)
    members: dict[str, list[int]] = {}
    left_out: list[str] = []
    several = 0
    carried: set[str] = set()
    for i, q in enumerate(qids):
        own = list(dict.fromkeys(slices.get(q, ())))
        carried.update(own)
        strata = [s for s in own if s in shares]
        if not strata:
            left_out.append(q)
            continue
        several += len(strata) > 1
        members.setdefault(strata[0], []).append(i)

    dropped: dict[str, float] = {}
    for name, share in shares.items():
        if name in members:
            continue
        if share < floor:
            dropped[name] = share
            continue
        why = (
            "no compared question carries it"
            if name not in carried
            else "each of its questions counts in a slice listed before it"
        )
        raise UsageError(
            f"traffic slice '{name}' ({share:.1%} of the traffic) has no golden question "
            f"({why}): what was not measured cannot be re-weighted. Add questions of that slice, "
            f"or leave it out of the shares (only slices under {floor:.1%} are dropped by "
            f"themselves); the golden slices: {_shown(sorted(carried))}"
        )
    kept = {k: v for k, v in shares.items() if k in members}
    total = sum(kept.values())
    w = {k: v / total for k, v in kept.items()}

    order = sorted(members)  # the random stream's order: by name
    n_in = sum(len(members[k]) for k in order)
    rng = np.random.default_rng(seed)
    boot = np.zeros(n_resamples, dtype=np.float64)
    variance = 0.0
    notes: list[str] = []
    rows: list[WeightedSlice] = []
    for name in order:
        ds = d[np.asarray(members[name], dtype=np.intp)]
        boot += w[name] * resample_means(ds, n_resamples, rng, choose_method(ds, n_resamples))
        variance += (
            w[name] ** 2 * (float(np.var(ds, ddof=1)) if len(ds) > 1 else math.nan) / len(ds)
        )
        rows.append(WeightedSlice(name, len(ds), len(ds) / n_in, w[name], float(ds.mean())))
    rows.sort(key=lambda s: (-s.traffic_share, s.name))
    estimate = float(sum(s.contribution for s in rows))
    lo, hi = percentile_interval(boot, confidence)
    normal = None
    if math.isfinite(variance):
        half = NormalDist().inv_cdf((1 + confidence) / 2) * math.sqrt(variance)
        normal = (estimate - half, estimate + half)

    small = [s.name for s in rows if s.n < SMALL_SLICE]
    if small:
        notes.append(
            f"weighted slices under {SMALL_SLICE} questions ({_shown(small)}): their spread is "
            "read from few questions, so the weighted interval is optimistic"
        )
    if dropped:
        notes.append(
            f"{sum(dropped.values()):.1%} of the traffic ({_shown(sorted(dropped))}) has no golden "
            f"question and is under the {floor:.1%} floor: left out, the other shares rescaled"
        )
    if several:
        notes.append(
            f"{several} question(s) sit in several traffic slices: each counts in its first listed"
        )
    if left_out:
        notes.append(
            f"{len(left_out)} of {len(qids)} question(s) are in no traffic slice and carry "
            "no weight"
        )
    if source is not None and source.unsliced:
        notes.append(f"{source.unsliced} log line(s) have no slice and were left out of the shares")
    return WeightedDifference(
        estimate=estimate,
        ci=(lo, hi),
        normal_ci=normal,
        unweighted=float(d.mean()),
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        slices=tuple(rows),
        n_questions=len(qids),
        left_out=tuple(left_out),
        several=several,
        dropped=dropped,
        floor=floor,
        traffic=source,
        notes=tuple(notes),
    )
