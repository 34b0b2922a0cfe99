"""Paired prediction-powered interval: a model judge on every question, humans on a subset.

A model judge scores both variants on all N compared questions; humans also judged both
variants' answers on a subset L of n of those questions. Per question i:

- ``J_i = judge(candidate_i) - judge(baseline_i)`` on all N questions (``J_L``: on L);
- ``H_i = human(candidate_i) - human(baseline_i)`` on the n labelled questions.

The quantity wanted is the mean human difference ``theta = E[H]`` over questions like these. The
judge-only mean ``mean_N(J)`` is precise but biased by whatever the judge gets wrong differently
for the two variants (a judge that favours longer answers, say); the human-only mean
``mean_L(H)`` is unbiased but rests on n questions. Prediction-powered inference (Angelopoulos,
Bates, Fannjiang, Jordan, Zrnic 2023), in its tuned PPI++ form (Angelopoulos, Duchi, Zrnic
2023), uses the judge everywhere and corrects it with the human-minus-judge residuals on L:

    theta_hat = lambda * mean_N(J) + mean_L(H - lambda * J_L)

which is ``mean_L(H) + lambda * (mean_N(J) - mean_L(J_L))``: unbiased for every fixed lambda,
because L is a random part of the N questions, so ``mean_N(J)`` and ``mean_L(J_L)`` have the
same expectation. ARES does this per system; here it is done on the paired difference.

Variance. The labelled questions are *part of* the N questions (not a separate unlabelled set,
as in the papers), so with sigma_H^2 = Var(H), sigma_J^2 = Var(J) and c = Cov(H, J):

    Var(theta_hat) = sigma_H^2 / n + (1/n - 1/N) * (lambda^2 sigma_J^2 - 2 lambda c)

(Var(mean_N J) = sigma_J^2/N, Cov(mean_N J, mean_L J) = sigma_J^2/N, Cov(mean_L H, mean_N J) =
c/N.) It is smallest at ``lambda* = c / sigma_J^2``, clipped to [0, 1]: 0 when the judge says
nothing about the humans (the interval falls back to the human-only one), 1 when the judge moves
one for one with them. The papers' disjoint form (unlabelled set U = N minus L, of N - n
questions) is the same estimator: ``theta_hat = mean_L(H) + lambda' (mean_U(J) - mean_L(J))``
with ``lambda' = lambda (N - n)/N``, whose PPI++ optimum ``c / ((1 + n/(N - n)) sigma_J^2)`` is
exactly ``lambda* (N - n)/N``; so the two agree, and the variance above is the papers'
``lambda'^2 sigma_J^2/(N - n) + Var(H - lambda' J)/n`` written for the nested sets.

sigma_J^2 is estimated on all N questions, sigma_H^2 and c on L (ddof = 1). The interval is
normal: ``theta_hat +- z * se`` with z the ``(1 + confidence)/2`` normal quantile and se the
square root of the variance above (never below sigma_H^2 / N, what a judge that agreed with the
humans on every question would give: sampling noise in the estimated c can otherwise push the
plug-in below it). Estimating lambda on the same data costs nothing asymptotically; the
simulation in tests/paired/test_paired_ppi.py checks the coverage at N = 400, n = 100.

Beside it, for reading: the judge-only interval (paired percentile bootstrap of J over the N
questions: the comparison's own interval when the judge values are what was compared) and the
human-only interval (paired percentile bootstrap of H over L), same seed and resamples.

Assumptions. (1) L is drawn at random from the compared questions (uniformly, or at least
independently of how the judge errs). If humans labelled, say, only the questions the judge
found hard, the residuals on L do not represent the rest and theta_hat is biased by however the
judge's error differs there; the interval then covers the truth less often than it says. Label
a random sample (``ragmeter label`` draws one). (2) Both variants' answers to a labelled
question are judged by humans. (3) At least :data:`MIN_LABELLED` labelled questions: the normal
interval and the variance estimates need some.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import UsageError
from .._numbers import MAX_RESAMPLES, number_in, whole
from .._numbers import seed as check_seed
from ._bootstrap import bootstrap_interval
from ._record import Record

#: the fewest labelled questions (both variants labelled) the interval is computed from
MIN_LABELLED = 10
#: how each interval is computed (``Estimate.method``)
NORMAL = "normal (PPI++)"
BOOTSTRAP = "paired bootstrap"


@dataclass(frozen=True)
class Estimate:
    """One of the three intervals: its estimate of the mean difference, its bounds, how many
    questions it rests on and how it was computed."""

    estimate: float
    lo: float
    hi: float
    n: int
    method: str

    @property
    def width(self) -> float:
        return self.hi - self.lo

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "lo": self.lo,
            "hi": self.hi,
            "width": self.width,
            "n": self.n,
            "method": self.method,
        }

    @classmethod
    def from_dict(
        cls, d: Mapping[str, Any], *, source: str | None = None, field: str | None = None
    ) -> Estimate:
        r = Record(d, what="interval", at=field, source=source)
        return cls(
            estimate=r.number("estimate"),
            lo=r.number("lo"),
            hi=r.number("hi"),
            n=r.integer("n"),
            method=r.text("method"),
        )


@dataclass(frozen=True)
class PPIInterval:
    """A paired prediction-powered interval with the judge-only and human-only ones beside it.

    ``ppi``: the prediction-powered interval (N questions judged, n labelled); ``judge``: the
    judge-only interval on the N questions; ``human``: the human-only interval on the n labelled
    ones. ``lam``: the tuned weight lambda (0: the judge was no help, 1: the judge counted in
    full); ``judge_bias``: ``mean_L(J - H)``, by how much the judge's difference exceeded the
    humans' on the labelled questions; ``se``: the standard error of the PPI estimate."""

    ppi: Estimate
    judge: Estimate
    human: Estimate
    lam: float
    se: float
    judge_bias: float
    confidence: float
    n_resamples: int
    seed: int | None

    @property
    def n(self) -> int:
        """N: the compared questions (all judged)."""
        return self.judge.n

    @property
    def n_labelled(self) -> int:
        """n: the questions humans labelled on both sides."""
        return self.human.n

    @property
    def rows(self) -> tuple[tuple[str, Estimate], ...]:
        """The three intervals with their names, in the order reports show them."""
        return (
            ("prediction-powered", self.ppi),
            ("judge only", self.judge),
            ("human only", self.human),
        )

    @property
    def line(self) -> str:
        """One sentence on how much the judge helped."""
        gain = 1 - self.ppi.width / self.human.width if self.human.width > 0 else 0.0
        return (
            f"lambda = {self.lam:.2f} over N = {self.n} judged and n = {self.n_labelled} "
            f"human-labelled questions; the judge's difference exceeded the humans' by "
            f"{self.judge_bias:+.3f} on the labelled ones; the interval is "
            f"{abs(gain):.0%} {'narrower' if gain >= 0 else 'wider'} than human-only"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "ppi": self.ppi.to_dict(),
            "judge_only": self.judge.to_dict(),
            "human_only": self.human.to_dict(),
            "lambda": self.lam,
            "se": self.se,
            "judge_bias": self.judge_bias,
            "n": self.n,
            "n_labelled": self.n_labelled,
            "confidence": self.confidence,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
        }

    @classmethod
    def from_dict(
        cls, d: Mapping[str, Any], *, source: str | None = None, field: str | None = None
    ) -> PPIInterval:
        """Rebuild from :meth:`to_dict` output (``n`` and ``n_labelled`` are read from the
        intervals); a bad record raises an ``InputError`` naming the field."""
        r = Record(d, what="prediction-powered interval", at=field, source=source)

        def est(key: str) -> Estimate:
            at = r.name(key)
            return Estimate.from_dict(r.mapping(key), source=source, field=at)

        return cls(
            ppi=est("ppi"),
            judge=est("judge_only"),
            human=est("human_only"),
            lam=r.number("lambda"),
            se=r.number("se"),
            judge_bias=r.number("judge_bias"),
            confidence=r.number("confidence"),
            n_resamples=r.integer("n_resamples", low=1),
            seed=r.nullable_integer("seed"),
        )


def ppi_kernel(
    j_all: np.ndarray, j_lab: np.ndarray, h_lab: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(theta_hat, se, lambda)`` of the module docstring, over the last axis.

    ``j_all``: judge differences on the N questions; ``j_lab``, ``h_lab``: judge and human
    differences on the n labelled ones. Leading axes are independent problems (a simulation's
    seeds), so many are computed at once; plain 1-D arrays give 0-d results."""
    j_all, j_lab, h_lab = (np.asarray(x, dtype=np.float64) for x in (j_all, j_lab, h_lab))
    big_n, n = j_all.shape[-1], h_lab.shape[-1]
    var_j = j_all.var(axis=-1, ddof=1)
    var_h = h_lab.var(axis=-1, ddof=1)
    hc = h_lab - h_lab.mean(axis=-1, keepdims=True)
    jc = j_lab - j_lab.mean(axis=-1, keepdims=True)
    cov = (hc * jc).sum(axis=-1) / (n - 1)
    safe = np.where(var_j > 0, var_j, 1.0)
    lam = np.clip(np.where(var_j > 0, cov / safe, 0.0), 0.0, 1.0)
    theta = lam * j_all.mean(axis=-1) + (h_lab - lam[..., None] * j_lab).mean(axis=-1)
    var = var_h / n + (1.0 / n - 1.0 / big_n) * (lam**2 * var_j - 2.0 * lam * cov)
    se = np.sqrt(np.maximum(var, var_h / big_n))
    return theta, se, lam


def normal_quantile(confidence: float) -> float:
    """z with P(|Z| <= z) = ``confidence`` for a standard normal Z."""
    from scipy.stats import norm

    return float(norm.ppf((1.0 + confidence) / 2.0))


def ppi_compare(
    judge_baseline: Mapping[str, float],
    judge_candidate: Mapping[str, float],
    human_baseline: Mapping[str, float],
    human_candidate: Mapping[str, float],
    *,
    confidence: float = 0.95,
    n_resamples: int = 5000,
    seed: int | None = 0,
    min_labelled: int = MIN_LABELLED,
) -> PPIInterval:
    """The paired prediction-powered interval on ``candidate - baseline`` (module docstring).

    ``judge_*``: the judge's value of each side on every compared question (both mappings on the
    same questions); ``human_*``: the human verdict (1 correct, 0 not; any finite number) of each
    side on the labelled questions. Refused with a :class:`UsageError`: judge values on
    different questions, a labelled question that is not among the judged ones, a labelled
    question with only one side's human verdict, fewer than ``min_labelled`` labelled
    questions, and a value that is not a finite number."""
    number_in("confidence", confidence, 0.0, 1.0, open_low=True, open_high=True)
    whole("the number of resamples", n_resamples, low=1, high=MAX_RESAMPLES)
    check_seed(seed)
    whole("the fewest labelled questions", min_labelled, low=2)
    if set(judge_baseline) != set(judge_candidate):
        only = sorted(set(judge_baseline) ^ set(judge_candidate))
        raise UsageError(
            f"the judge values of the two sides are on different questions ({_shown(only)})"
        )
    qids = list(judge_baseline)
    one_side = sorted(set(human_baseline) ^ set(human_candidate))
    if one_side:
        q = one_side[0]
        has, lacks = ("baseline", "candidate") if q in human_baseline else ("candidate", "baseline")
        raise UsageError(
            f"{len(one_side)} labelled question(s) have one side's human verdict only "
            f"({_shown(one_side)}): '{q}' has the {has}'s but not the {lacks}'s; label both "
            "answers of a question, or drop it"
        )
    labelled = [q for q in human_baseline]
    unknown = sorted(set(labelled) - set(qids))
    if unknown:
        raise UsageError(
            f"{len(unknown)} labelled question(s) are not among the {len(qids)} compared "
            f"({_shown(unknown)}); label questions of the compared runs"
        )
    if len(labelled) < min_labelled:
        raise UsageError(
            f"a prediction-powered interval needs human verdicts on both sides for at least "
            f"{min_labelled} of the compared questions; got {len(labelled)} (label "
            f"{min_labelled - len(labelled)} more, drawn at random)"
        )
    ja = _array(judge_baseline, qids, "judge baseline")
    jb = _array(judge_candidate, qids, "judge candidate")
    ha = _array(human_baseline, labelled, "human baseline")
    hb = _array(human_candidate, labelled, "human candidate")
    j_all = jb - ja
    h_lab = hb - ha
    pos = {q: i for i, q in enumerate(qids)}
    j_lab = j_all[[pos[q] for q in labelled]]
    theta, se, lam = (float(x) for x in ppi_kernel(j_all, j_lab, h_lab))
    z = normal_quantile(confidence)
    boot = dict(n_resamples=n_resamples, seed=seed, confidence=confidence)
    jci = bootstrap_interval(j_all, **boot)  # type: ignore[arg-type]
    hci = bootstrap_interval(h_lab, **boot)  # type: ignore[arg-type]
    return PPIInterval(
        ppi=Estimate(theta, theta - z * se, theta + z * se, len(qids), NORMAL),
        judge=Estimate(float(j_all.mean()), jci.lo, jci.hi, len(qids), BOOTSTRAP),
        human=Estimate(float(h_lab.mean()), hci.lo, hci.hi, len(labelled), BOOTSTRAP),
        lam=lam,
        se=se,
        judge_bias=float((j_lab - h_lab).mean()),
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
    )


def _array(values: Mapping[str, float], qids: list[str], what: str) -> np.ndarray:
    out = np.empty(len(qids), dtype=np.float64)
    for i, q in enumerate(qids):
        v = values[q]
        if not isinstance(v, (int, float, np.integer, np.floating)):  # a bool is 0 or 1
            raise UsageError(f"{what} value of '{q}' must be a number, got {v!r}")
        if not math.isfinite(float(v)):
            raise UsageError(f"{what} value of '{q}' must be finite, got {v!r}")
        out[i] = float(v)
    return out


def _shown(ids: list[str], limit: int = 10) -> str:
    head = ", ".join(ids[:limit])
    return head + (f", ... {len(ids) - limit} more" if len(ids) > limit else "")
