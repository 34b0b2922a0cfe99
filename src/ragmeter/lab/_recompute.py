"""Recompute a stored run's metrics at any cutoff k or token budget, from its ranked lists.

The lab's k and budget controls land here. Nothing is re-implemented: the stored ranked lists
become a run again and go through the very functions ``ragmeter run`` and ``ragmeter eval``
score with, so every number equals what the command line prints for that cutoff:

- R@k, AllR@k, RR@k (MRR) and the headroom recall R@headroom_k on the span labels:
  :func:`ragmeter.labels.evaluate_spans` (the runner's span level, ``eval --golden --chunks``);
- nDCG@k (graded) on the chunk qrels derived from the spans, by the metric engine:
  :func:`ragmeter.labels.chunk_qrels` + :func:`ragmeter.metrics._engine.evaluate` (the runner's
  chunk level, ``labels export`` + ``eval QRELS RUN``);
- at ``level = "document"``, every metric on the run rolled up to documents against document
  qrels, as the runner scores that level.

Which questions gained and lost against a baseline uses the paired comparison's own rules: a
change beyond ``TIE_TOLERANCE`` is a win or a loss, and fixed / broken (0 -> 1, 1 -> 0) are
counted for binary metrics only. A whole recomputation takes 20-45 ms for 1,000 questions at
depth 50 and under 200 ms for 10,000 (two cores); the last few cutoffs of each run are kept.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._errors import UsageError
from ..metrics import REGISTRY

if TYPE_CHECKING:  # pragma: no cover
    from ..metrics import Metric
    from ._prepared import PreparedRun

#: the lab's metrics, in the order the cards and columns show them: the registry's headline ones
METRICS: tuple[str, ...] = tuple(m.name for m in REGISTRY.values() if m.headline)
#: the key of the headroom recall (R at the experiment's headroom k)
HEADROOM = "headroom"
#: what the cards and columns call them: the registry's display names
LABELS = {**{name: REGISTRY[name].label for name in METRICS}, HEADROOM: "Headroom"}
#: results kept per (run, cutoff)
MAX_CACHED_SCORES = 64


# -- the cutoff ------------------------------------------------------------------------------
@dataclass(frozen=True)
class PromptCutoff:
    """A prompt cutoff: the top ``k`` chunks, or what fits in ``budget`` tokens."""

    k: int | None = None
    budget: int | None = None

    def __post_init__(self) -> None:
        if (self.k is None) == (self.budget is None):
            raise UsageError("give a cutoff k or a token budget (one of them)")
        if self.k is not None and not 1 <= self.k <= 10_000:
            raise UsageError(f"k must be between 1 and 10000, got {self.k}")
        if self.budget is not None and not 1 <= self.budget <= 10_000_000:
            raise UsageError(f"the token budget must be between 1 and 10000000, got {self.budget}")

    def at(self, name: str) -> Metric:
        from ..metrics import Metric

        return Metric(name, self.k) if self.k is not None else Metric(name, budget=self.budget)

    @property
    def label(self) -> str:
        return f"k = {self.k}" if self.k is not None else f"budget = {self.budget:,} tokens"

    @property
    def query(self) -> dict[str, int]:
        """The URL parameters of this cutoff."""
        return {"k": self.k} if self.k is not None else {"budget": int(self.budget or 0)}

    @classmethod
    def of_settings(cls, settings: Mapping[str, Any]) -> PromptCutoff:
        """A variant's own cutoff: its k, else its budget, else k = 4."""
        if settings.get("k"):
            return cls(k=int(settings["k"]))
        if settings.get("budget"):
            return cls(budget=int(settings["budget"]))
        return cls(k=4)


# -- scores at one cutoff --------------------------------------------------------------------
@dataclass(frozen=True)
class RunScores:
    """Per question and overall values of the lab's metrics for one run at one cutoff.

    ``values[key]`` is a float64 array aligned with ``qids`` (NaN where a metric is not
    available); ``names[key]`` the metric as the CLI prints it (``R@4``, ``nDCG@4``,
    ``R@20`` for the headroom). ``effective_k`` (budget only) is the per-question number of
    chunks the budget admits.
    """

    run_id: int
    cutoff: PromptCutoff
    qids: tuple[str, ...]
    names: dict[str, str]
    values: dict[str, np.ndarray]
    means: dict[str, float | None]
    unavailable: dict[str, str]
    no_relevant_ids: tuple[str, ...]
    missing_ids: tuple[str, ...]
    effective_k: np.ndarray | None
    _index: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def index(self, qid: str) -> int | None:
        if not self._index and self.qids:
            self._index.update({q: i for i, q in enumerate(self.qids)})
        return self._index.get(qid)

    def value(self, key: str, qid: str) -> float | None:
        i = self.index(qid)
        if i is None or key not in self.values:
            return None
        x = float(self.values[key][i])
        return None if np.isnan(x) else x

    def prompt_size(self, qid: str) -> int | None:
        """How many ranked chunks reach the prompt for ``qid`` (k, or the budget's fill)."""
        if self.cutoff.k is not None:
            return self.cutoff.k
        i = self.index(qid)
        if i is None or self.effective_k is None:
            return None
        return int(self.effective_k[i])


def scores(prepared: PreparedRun, cutoff: PromptCutoff) -> RunScores:
    """The run's metrics at ``cutoff`` (kept per run: the last few cutoffs are reused)."""
    with prepared._lock:
        found = prepared._scores.get(cutoff)
        if found is not None:
            prepared._scores.move_to_end(cutoff)
            return found
    result = _score(prepared, cutoff)
    with prepared._lock:
        prepared._scores[cutoff] = result
        while len(prepared._scores) > MAX_CACHED_SCORES:
            prepared._scores.popitem(last=False)
    return result


def _score(prepared: PreparedRun, cutoff: PromptCutoff) -> RunScores:
    from ..metrics import Metric, evaluate

    ctx = prepared.ctx
    unavailable = dict(prepared.unavailable)
    if cutoff.budget is not None and "budget" in unavailable:
        raise UsageError(unavailable["budget"])
    headroom = Metric("R", ctx.headroom_k)
    names: dict[str, str] = {}
    columns: dict[str, tuple[Any, Metric]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the run's notes were shown when it was scored
        if prepared.level == "document":  # every metric with a rank kernel, on documents
            keys = [key for key in METRICS if "rank" in REGISTRY[key].levels]
            wanted = [*(cutoff.at(key) for key in keys), headroom]
            ev = evaluate(
                prepared.qrels,
                prepared.run,
                list(dict.fromkeys(wanted)),
                run_name=ctx.run.name,
                slices=ctx.golden.slices,
                splits=ctx.golden.splits,
            )
            for key, m in zip((*keys, HEADROOM), wanted, strict=True):
                columns[key] = (ev, m)
            base = ev
        else:
            from ..labels import evaluate_spans

            # span metrics on the span labels, rank-only ones on the chunk qrels at k
            keys = [key for key in METRICS if "span" in REGISTRY[key].levels]
            ranked = [key for key in METRICS if key not in keys]
            span_ms = [*(cutoff.at(key) for key in keys), headroom]
            base = evaluate_spans(
                ctx.golden,
                prepared.chunking,
                prepared.run,
                list(dict.fromkeys(span_ms)),
                cover=ctx.cover,
                run_name=ctx.run.name,
            )
            for key, m in zip((*keys, HEADROOM), span_ms, strict=True):
                columns[key] = (base, m)
            if cutoff.k is None:
                for key in ranked:
                    unavailable[key] = f"{key} is defined at a fixed k, not at a token budget"
            elif prepared.qrels is not None and ranked:
                at_k = [Metric(key, cutoff.k) for key in ranked]
                ev = evaluate(prepared.qrels, prepared.run, at_k, run_name=ctx.run.name)
                for key, m in zip(ranked, at_k, strict=True):
                    columns[key] = (ev, m)
    qids = tuple(base.query_ids)
    values: dict[str, np.ndarray] = {}
    means: dict[str, float | None] = {}
    for key in (*METRICS, HEADROOM):
        if key not in columns:
            names[key] = f"{key}@{cutoff.k}" if cutoff.k is not None else key
            values[key] = np.full(len(qids), np.nan)
            means[key] = None
            unavailable.setdefault(key, f"{key} is not available for this run")
            continue
        ev, m = columns[key]
        names[key] = str(m)
        col = ev.values[:, ev.metrics.index(m)]
        if tuple(ev.query_ids) != qids:  # the chunk level scores the same questions, but align
            at = {q: i for i, q in enumerate(ev.query_ids)}
            col = np.array([col[at[q]] if q in at else np.nan for q in qids])
        values[key] = np.asarray(col, dtype=np.float64)
        means[key] = ev.aggregate.get(str(m))
    eff = None
    if cutoff.budget is not None:
        eff = np.array(
            [
                int(base.details.get(q, {}).get("effective_k", {}).get(str(cutoff.budget), 0))
                for q in qids
            ],
            dtype=np.int64,
        )
    return RunScores(
        run_id=prepared.run_id,
        cutoff=cutoff,
        qids=qids,
        names=names,
        values=values,
        means=means,
        unavailable=unavailable,
        no_relevant_ids=tuple(base.no_relevant_ids),
        missing_ids=tuple(base.missing_ids),
        effective_k=eff,
    )


# -- gained and lost against a baseline ------------------------------------------------------
@dataclass(frozen=True)
class Movement:
    """How one metric moved from the baseline run to this run, question by question, under the
    paired comparison's rules (``ragmeter compare``): a difference beyond its tie tolerance is
    a gain or a loss; fixed (0 -> 1) and broken (1 -> 0) exist for binary metrics only."""

    key: str
    metric: str
    binary: bool
    qids: tuple[str, ...]  # questions both runs scored, in this run's order
    baseline: np.ndarray
    candidate: np.ndarray
    gained: tuple[str, ...]
    lost: tuple[str, ...]
    fixed: tuple[str, ...] | None
    broken: tuple[str, ...] | None
    #: questions only one side scored (compare refuses them; the lab shows them apart)
    unpaired: tuple[str, ...]

    @property
    def delta(self) -> np.ndarray:
        delta: np.ndarray = self.candidate - self.baseline
        return delta

    @property
    def mean_delta(self) -> float | None:
        d = self.delta
        ok = ~np.isnan(d)
        return float(d[ok].mean()) if ok.any() else None

    def delta_of(self) -> dict[str, float]:
        return {q: float(x) for q, x in zip(self.qids, self.delta, strict=True) if not np.isnan(x)}


def movements(base: RunScores, cand: RunScores) -> dict[str, Movement]:
    """Per metric key, what moved between ``base`` and ``cand`` (both at the same cutoff)."""
    from ..metrics import parse
    from ..paired import TIE_TOLERANCE

    out: dict[str, Movement] = {}
    in_base = {q: i for i, q in enumerate(base.qids)}
    pairs = [(q, in_base[q], j) for j, q in enumerate(cand.qids) if q in in_base]
    unpaired = tuple(sorted(set(base.qids) ^ set(cand.qids)))
    qids = tuple(q for q, _, _ in pairs)
    bi = np.array([i for _, i, _ in pairs], dtype=np.int64)
    ci = np.array([j for _, _, j in pairs], dtype=np.int64)
    for key in (*METRICS, HEADROOM):
        a = base.values[key][bi] if len(bi) else np.zeros(0)
        b = cand.values[key][ci] if len(ci) else np.zeros(0)
        d = b - a
        ok = ~np.isnan(d)
        name = cand.names[key]
        binary = parse(name).binary
        gained = tuple(
            q for q, x, good in zip(qids, d, ok, strict=True) if good and x > TIE_TOLERANCE
        )
        lost = tuple(
            q for q, x, good in zip(qids, d, ok, strict=True) if good and x < -TIE_TOLERANCE
        )
        fixed = broken = None
        if binary:
            fixed = tuple(q for q, x, y in zip(qids, a, b, strict=True) if x == 0 and y == 1)
            broken = tuple(q for q, x, y in zip(qids, a, b, strict=True) if x == 1 and y == 0)
        out[key] = Movement(key, name, binary, qids, a, b, gained, lost, fixed, broken, unpaired)
    return out
