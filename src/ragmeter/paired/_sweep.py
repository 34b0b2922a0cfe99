"""k-sweeps: a metric for several runs at every cutoff in a range, and where the winner changes.

Which retriever is "better" can depend on k: one that ranks what it finds near the top but misses
some queries wins recall at small k, one that finds almost everything lower down wins from some
k on. A sweep evaluates every run at every cutoff (ranks k, or token budgets with span labels),
names the leader at each cutoff (``None`` for a tie within 1e-12) and summarises the segments,
e.g. "A leads R@k for k < 11, B from k = 11".

Span labels (``sweep_spans``) sweep token budgets as well as ranks, each run with its own
chunking, so chunk sizes are compared at equal context budgets.

Recall at a large k (default 100) is reported apart, labelled *pool headroom*: it says the
evidence is somewhere in the candidate pool (what a reranker could still bring up), never that the
generator could see it. Quality is the metric at the k the generator receives.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .._errors import NotFoundError, UsageError
from .._numbers import MAX_CUTOFFS, whole
from ..metrics import Metric, parse

Kind = Literal["k", "budget"]
_TIE = 1e-12

HEADROOM_NOTE = (
    "pool headroom: the evidence is in the candidate pool, not in the prompt; not quality"
)


def base_metric(text: str | Metric) -> Metric:
    """The metric to sweep, with or without a cutoff (``"R"``, ``"nDCG(gain=exp)"``, ``"P@5"``);
    the sweep replaces the cutoff (``P``, which needs one, is read as ``P@1``)."""
    return parse(text, default_k=1)


def _at(metric: Metric, kind: Kind, cutoff: int) -> Metric:
    return metric.at(budget=cutoff) if kind == "budget" else metric.at(cutoff)


def parse_cutoffs(text: str, *, cap: int | None = None) -> list[int]:
    """``"1..20"``, ``"1-20"``, ``"1,3,5,10"``, a stepped range ``"400..2000:400"`` or a mix
    (``"1..5,10,20"``) -> sorted cutoffs.

    ``cap`` (a run's depth) cuts every range there: past the last retrieved item no rank-level
    value changes except P's, so ``1..100000000`` on 8-item lists is ``1..8``; a cutoff given
    alone is kept. Without a cap, or after it, more than :data:`MAX_CUTOFFS` cutoffs are refused;
    ranges are counted, never expanded, before that check."""
    return _parse_cutoffs(text, cap)[0]


def _parse_cutoffs(text: str, cap: int | None) -> tuple[list[int], bool]:
    """:func:`parse_cutoffs`, and whether a range was cut at ``cap``."""
    capped = False
    pieces: list[tuple[int, int, int]] = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            continue
        span, colon, step_text = piece.partition(":")
        lo, sep, hi = span.partition("..")
        if not sep:
            lo, sep, hi = span.partition("-")
        try:
            a = int(lo)
            b = int(hi) if sep else a
            step = int(step_text) if colon else 1
        except ValueError:
            raise UsageError(
                f"cannot read cutoffs '{text}': use e.g. 1..20, 1,3,5,10 or 400..2000:400"
            ) from None
        if a < 1 or b < a or step < 1:
            raise UsageError(f"cutoff range '{piece}' must run upwards from 1 or more")
        if cap is not None and sep and b > cap:
            b, capped = max(a, cap), True
        pieces.append((a, b, step))
    if not pieces:
        raise UsageError("no cutoff given")
    if sum((b - a) // step + 1 for a, b, step in pieces) > MAX_CUTOFFS:
        raise UsageError(
            f"cutoffs '{text}' name more than {MAX_CUTOFFS:,} cutoffs; a sweep scores at most "
            f"{MAX_CUTOFFS:,} (a k range is capped at the runs' depth)"
        )
    out: set[int] = set()
    for a, b, step in pieces:
        out.update(range(a, b + 1, step))
    return sorted(out), capped


def _cutoffs(ks: str | Iterable[int], cap: int | None, kind: Kind) -> tuple[list[int], str | None]:
    """The cutoffs of a sweep and a note when a range was capped at ``cap`` (the runs' depth)."""
    if isinstance(ks, str):
        cuts, capped = _parse_cutoffs(ks, cap)
        note = (
            f"{kind} range capped at {cap}, the deepest list the runs retrieved (past it "
            "only P@k changes, falling as 1/k)"
            if capped
            else None
        )
        return cuts, note
    got = list(itertools.islice(ks, MAX_CUTOFFS + 1))
    if len(got) > MAX_CUTOFFS:
        raise UsageError(
            f"a sweep scores at most {MAX_CUTOFFS:,} cutoffs; give a range as text ('1..N') to "
            "have it capped at the runs' depth"
        )
    cuts = sorted({whole("a cutoff", k, low=1) for k in got})
    if not cuts:
        raise UsageError("cutoffs must be positive integers")
    return cuts, None


@dataclass(frozen=True)
class Segment:
    """A stretch of consecutive cutoffs with one leader (None: tied)."""

    leader: str | None
    first: int
    last: int


@dataclass(frozen=True)
class Sweep:
    """Means of one metric for several runs across cutoffs.

    ``metric`` is the swept metric at the first cutoff; :meth:`metric_at` gives it at any.
    """

    metric: Metric
    kind: Kind
    cutoffs: tuple[int, ...]
    runs: tuple[str, ...]
    values: np.ndarray  # (runs, cutoffs)
    n_queries: int | None = None
    headroom_k: int | None = None
    headroom: Mapping[str, float] = field(default_factory=dict)
    #: what the sweep changed in what was asked (e.g. a k range capped at the runs' depth)
    notes: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``R@k``, ``nDCG(gain=exp)@k`` or ``R@budget``."""
        return self.metric.stem + ("@k" if self.kind == "k" else "@budget")

    def metric_at(self, cutoff: int) -> Metric:
        """The swept metric at one cutoff (a rank k or a token budget, by ``kind``)."""
        return _at(self.metric, self.kind, cutoff)

    def to_frame(self):  # -> pandas.DataFrame
        """One row per run (index ``run``), one column per cutoff (named ``k`` or ``budget``),
        the metric's means; ``.stack()`` is the long form of ``ragmeter sweep --format csv``.
        pandas is the ``pandas`` extra."""
        from .._extras import require

        pd = require("pandas", "DataFrame output")
        return pd.DataFrame(
            self.values,
            index=pd.Index(list(self.runs), name="run"),
            columns=pd.Index(list(self.cutoffs), name="k" if self.kind == "k" else "budget"),
        )

    @property
    def headroom_metric(self) -> Metric | None:
        """Recall at the headroom k (None when it was left out)."""
        return None if self.headroom_k is None else Metric("R", self.headroom_k)

    def at(self, run: str, cutoff: int) -> float:
        if run not in self.runs:
            raise NotFoundError(f"no run '{run}' in this sweep; it has {', '.join(self.runs)}")
        if cutoff not in self.cutoffs:
            raise NotFoundError(
                f"no cutoff {cutoff} in this sweep; it has {', '.join(map(str, self.cutoffs))}"
            )
        return float(self.values[self.runs.index(run), self.cutoffs.index(cutoff)])

    @property
    def leaders(self) -> list[str | None]:
        out: list[str | None] = []
        for col in self.values.T:
            best = col.max()
            top = np.flatnonzero(col >= best - _TIE)
            out.append(self.runs[int(top[0])] if len(top) == 1 else None)
        return out

    @property
    def segments(self) -> list[Segment]:
        segs: list[Segment] = []
        for c, lead in zip(self.cutoffs, self.leaders, strict=True):
            if segs and segs[-1].leader == lead:
                segs[-1] = Segment(lead, segs[-1].first, c)
            else:
                segs.append(Segment(lead, c, c))
        return segs

    @property
    def crossovers(self) -> list[tuple[int, str | None, str | None]]:
        """``(cutoff, previous leader, new leader)`` wherever the leader changes."""
        segs = self.segments
        return [(b.first, a.leader, b.leader) for a, b in itertools.pairwise(segs)]

    def summary(self) -> str:
        """Where the winner changes, in words."""
        v = "k" if self.kind == "k" else "budget"
        segs = self.segments
        who = [s.leader if s.leader is not None else "no run (tie)" for s in segs]
        if len(segs) == 1:
            return (
                f"{who[0]} leads {self.label} at every {v} from {segs[0].first} to {segs[0].last}"
            )
        parts = [f"{who[0]} leads {self.label} for {v} < {segs[1].first}"]
        for s, w, nxt in zip(segs[1:-1], who[1:-1], segs[2:], strict=True):
            parts.append(f"{w} for {s.first} <= {v} < {nxt.first}")
        parts.append(f"{who[-1]} from {v} = {segs[-1].first}")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.label,
            "kind": self.kind,
            "cutoffs": list(self.cutoffs),
            "n_queries": self.n_queries,
            "values": {
                r: dict(zip(map(str, self.cutoffs), row.tolist(), strict=True))
                for r, row in zip(self.runs, self.values, strict=True)
            },
            "leaders": dict(zip(map(str, self.cutoffs), self.leaders, strict=True)),
            "crossovers": [{"at": c, "from": a, "to": b} for c, a, b in self.crossovers],
            "summary": self.summary(),
            "headroom": None
            if not self.headroom
            else {
                "metric": str(self.headroom_metric),
                "values": dict(self.headroom),
                "note": HEADROOM_NOTE,
            },
            "notes": list(self.notes),
        }


def sweep_values(
    values: Mapping[str, Sequence[float]],
    cutoffs: Sequence[int],
    metric: str | Metric,
    *,
    kind: Kind = "k",
    n_queries: int | None = None,
    headroom_k: int | None = None,
    headroom: Mapping[str, float] | None = None,
    notes: Sequence[str] = (),
) -> Sweep:
    """Build a :class:`Sweep` from means already computed (``{run: [value at each cutoff]}``)."""
    runs = tuple(values)
    if len(runs) < 1:
        raise UsageError("a sweep needs at least one run")
    arr = np.asarray([list(values[r]) for r in runs], dtype=np.float64)
    if arr.shape != (len(runs), len(cutoffs)):
        raise UsageError("every run needs one value per cutoff")
    cuts = tuple(int(c) for c in cutoffs)
    base = base_metric(metric)
    return Sweep(
        _at(base, kind, cuts[0]) if cuts else base,
        kind,
        cuts,
        runs,
        arr,
        n_queries,
        headroom_k,
        dict(headroom or {}),
        tuple(notes),
    )


def sweep(
    qrels: Any,
    runs: Mapping[str, Any] | Iterable[Any],
    metric: str | Metric = "R",
    ks: str | Iterable[int] = range(1, 21),
    *,
    headroom_k: int | None = 100,
    **evaluate_kw: Any,
) -> Sweep:
    """Evaluate every run at every k in ``ks`` with the metric engine (rank-level labels).

    ``runs`` maps names to anything ``ragmeter.evaluate`` reads (a Run, a dict-of-dicts, a path),
    or is a sequence of them named by their own names. ``ks`` is cutoffs, or their text
    (``"1..20"``, :func:`parse_cutoffs`) whose ranges are capped at the runs' depth (said in
    ``Sweep.notes``); at most :data:`MAX_CUTOFFS`. ``headroom_k`` adds ``R@headroom_k`` as pool
    headroom (None: leave it out).
    """
    from ..io.convert import to_run
    from ..metrics import evaluate

    base = base_metric(metric)
    named = list(runs.items()) if isinstance(runs, Mapping) else [(None, r) for r in runs]
    named = [(name, to_run(r)) for name, r in named]
    cutoffs, note = _cutoffs(ks, max((_depth(r) for _, r in named), default=0) or None, "k")
    ms = [base.at(k) for k in cutoffs]
    head = Metric("R", headroom_k) if headroom_k else None
    values: dict[str, list[float]] = {}
    headroom: dict[str, float] = {}
    n_queries = None
    for name, run in named:
        ev = evaluate(qrels, run, [*ms, head] if head else ms, run_name=name, **evaluate_kw)
        if ev.run in values:
            raise UsageError(f"two runs are named '{ev.run}'; give them distinct names")
        values[ev.run] = [ev.mean(m) for m in ms]
        if head is not None:
            headroom[ev.run] = ev.mean(head)
        n_queries = ev.n_queries
    return sweep_values(
        values,
        cutoffs,
        base,
        kind="k",
        n_queries=n_queries,
        headroom_k=headroom_k if head else None,
        headroom=headroom,
        notes=[note] if note else [],
    )


def _depth(run: Any) -> int:
    """The longest list of one query in a run (what a k range is capped at)."""
    from ..io import dictionary_codes

    if not len(run):
        return 0
    codes, _ = dictionary_codes(run.qid)
    return int(np.bincount(codes).max())


def sweep_spans(
    golden: Any,
    runs: Mapping[str, tuple[Any, Any]],
    metric: str | Metric = "R",
    cutoffs: str | Iterable[int] = (400, 800, 1200, 1600, 2000),
    *,
    kind: Kind = "budget",
    headroom_k: int | None = 100,
    cover: float | None = None,
) -> Sweep:
    """Evaluate runs of chunk ids against span labels at every token budget (``kind="budget"``)
    or rank k (``kind="k"``); ``runs`` maps a name to ``(chunking, run)``, so each run is scored
    against its own chunking (span-level metrics: R, Hit, AllR, RR). ``cutoffs`` as text: a k
    range is capped at the runs' depth, as in :func:`sweep`."""
    from ..io.convert import to_run
    from ..labels import DEFAULT_COVER, evaluate_spans

    base = base_metric(metric)
    runs = {name: (chunking, to_run(run)) for name, (chunking, run) in runs.items()}
    depth = max((_depth(r) for _, r in runs.values()), default=0) or None
    cuts, note = _cutoffs(cutoffs, depth if kind == "k" else None, kind)
    ms = [_at(base, kind, c) for c in cuts]
    head = Metric("R", headroom_k) if headroom_k else None
    values: dict[str, list[float]] = {}
    headroom: dict[str, float] = {}
    n_queries = None
    for name, (chunking, run) in runs.items():
        ev = evaluate_spans(
            golden,
            chunking,
            run,
            [*ms, head] if head else ms,
            cover=DEFAULT_COVER if cover is None else cover,
            run_name=name,
        )
        values[name] = [ev.mean(m) for m in ms]
        if head is not None:
            headroom[name] = ev.mean(head)
        n_queries = ev.n_queries
    return sweep_values(
        values,
        cuts,
        base,
        kind=kind,
        n_queries=n_queries,
        headroom_k=headroom_k if head else None,
        headroom=headroom,
        notes=[note] if note else [],
    )
