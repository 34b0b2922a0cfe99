"""Selection optimism: how much the best of N equally good variants is flattered by being picked.

Every variant tried on the same golden set is another noisy draw of the same true score, so the
best observed score rises with the number of variants even when none is better. This module
estimates that rise by simulation.

Model. A variant's value on question i is ``low_i + (high_i - low_i) * X_i`` with independent
``X_i ~ Bernoulli(p_i)``; every variant has the same ``p``, so all are equally good and their
true score is ``T = mean(low + (high - low) * p)``. One *search* draws N variants, picks the one
with the highest mean on the golden set (its tuning score) and re-scores that winner on a fresh
draw (its fresh score, an unbiased estimate of T). Over S seeded searches:

    optimism = mean over searches of the winner's tuning score - T

Two uses:
- :func:`best_of_n` with per-question success chances (``low = 0, high = 1``): the RAG
  evaluation lesson's illustration, 150 questions (half easy, 30% medium, 20% hard) with chances
  0.95 / 0.60 / 0.20 (true rate 0.5 * 0.95 + 0.3 * 0.60 + 0.2 * 0.20 = 0.695), 30 variants, 300
  searches: the winner averages about 0.755 when picked, about 0.695 on fresh questions, an
  optimism of about +0.059.
- :func:`optimism_from_pair` on this golden set: two runs compared question by question define
  variants "as different from each other as these two, and no better": on question i a variant
  scores the baseline's or the candidate's value with chance 1/2 each (the null hypothesis of the
  paired randomisation test). Concordant questions never move; only the discordant ones do.

Questions with the same ``(high - low, p)`` are pooled, so a search draws one Binomial per pool
instead of one Bernoulli per question (exact, same distribution). When pools are so many that
``S * N * pools`` exceeds :data:`EXACT_LIMIT`, each variant's score is drawn from the normal
distribution with the exact mean and variance instead (the sum of many small independent terms).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import UsageError
from .._numbers import seed as check_seed
from ._record import Record

#: Binomial draws allowed per simulation before the normal approximation is used.
EXACT_LIMIT = 20_000_000
#: Searches simulated per block (bounds memory).
_BLOCK = 64

#: The seed's illustration: share of questions and chance of a correct answer per difficulty.
SEED_DIFFICULTY = {"easy": (0.50, 0.95), "medium": (0.30, 0.60), "hard": (0.20, 0.20)}


@dataclass(frozen=True)
class SelectionEstimate:
    """Simulated selection bias of the best of ``n_variants`` equally good variants."""

    n_variants: int
    n_questions: int
    n_searches: int
    seed: int | None
    true_score: float
    best_tuning_score: float
    fresh_score: float
    approximate: bool

    @property
    def optimism(self) -> float:
        """Mean tuning score of the picked winner minus the true score of every variant."""
        return self.best_tuning_score - self.true_score

    def to_dict(self) -> dict[str, object]:
        return {
            "n_variants": self.n_variants,
            "n_questions": self.n_questions,
            "n_searches": self.n_searches,
            "seed": self.seed,
            "true_score": self.true_score,
            "best_tuning_score": self.best_tuning_score,
            "fresh_score": self.fresh_score,
            "optimism": self.optimism,
            "approximate": self.approximate,
        }

    @classmethod
    def from_dict(
        cls, d: Mapping[str, Any], *, source: str | None = None, field: str | None = None
    ) -> SelectionEstimate:
        """Rebuild from :meth:`to_dict` output (``optimism`` is derived and not read); a bad
        record raises an ``InputError`` naming the field."""
        r = Record(d, what="selection estimate", at=field, source=source)
        return cls(
            n_variants=r.integer("n_variants", low=1),
            n_questions=r.integer("n_questions", low=1),
            n_searches=r.integer("n_searches", low=1),
            seed=r.nullable_integer("seed"),
            true_score=r.number("true_score"),
            best_tuning_score=r.number("best_tuning_score"),
            fresh_score=r.number("fresh_score"),
            approximate=r.flag("approximate"),
        )

    def describe(self) -> str:
        return (
            f"the best of {self.n_variants} equally good variants scores about "
            f"{self.optimism:+.3f} above its true value on these {self.n_questions} questions "
            f"(simulated, {self.n_searches} searches)"
        )


def seed_difficulty_chances(n_questions: int = 150) -> np.ndarray:
    """Per-question chances of the RAG evaluation lesson's illustration: 50% easy, 30% medium,
    20% hard."""
    out: list[float] = []
    for share, chance in SEED_DIFFICULTY.values():
        out += [chance] * round(share * n_questions)
    return np.asarray(out[:n_questions], dtype=np.float64)


def _pools(span: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group questions that can move by (span, p): returns spans, chances and pool sizes."""
    moving = (span != 0) & (p > 0) & (p < 1)
    keys = np.stack([span[moving], p[moving]], axis=1)
    if len(keys) == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    uniq, sizes = np.unique(keys, axis=0, return_counts=True)
    return uniq[:, 0], uniq[:, 1], sizes


def _simulate(
    low: np.ndarray,
    high: np.ndarray,
    p: np.ndarray,
    n_variants: int,
    n_searches: int,
    seed: int | None,
) -> SelectionEstimate:
    if n_variants < 1 or n_searches < 1:
        raise UsageError("the number of variants and of searches must be positive")
    check_seed(seed)
    n = len(low)
    if n == 0:
        raise UsageError("selection optimism needs at least one question")
    if np.any((p < 0) | (p > 1)) or not np.all(np.isfinite(p)):
        raise UsageError("chances must lie between 0 and 1")
    span = high - low
    base = float(low.mean())
    true = float((low + span * p).mean())
    spans, chances, sizes = _pools(span, p)
    rng = np.random.default_rng(seed)
    approximate = n_searches * (n_variants + 1) * len(sizes) > EXACT_LIMIT
    if approximate:
        sd = float(np.sqrt(np.sum(sizes * chances * (1 - chances) * spans**2))) / n
        tuning = true + sd * rng.standard_normal((n_searches, n_variants))
        fresh = true + sd * rng.standard_normal(n_searches)
        best = tuning.max(axis=1)
    else:
        best = np.empty(n_searches)
        fresh = np.empty(n_searches)
        for start in range(0, n_searches, _BLOCK):
            s = min(_BLOCK, n_searches - start)
            # column 0..N-1: the N variants on the golden set; column N: the fresh re-score.
            k = rng.binomial(sizes, chances, size=(s, n_variants + 1, len(sizes)))
            scores = base + (k @ spans) / n
            best[start : start + s] = scores[:, :n_variants].max(axis=1)
            fresh[start : start + s] = scores[:, n_variants]
    return SelectionEstimate(
        n_variants, n, n_searches, seed, true, float(best.mean()), float(fresh.mean()), approximate
    )


def best_of_n(
    chances: np.ndarray | list[float],
    n_variants: int,
    *,
    n_searches: int = 300,
    seed: int | None = 0,
) -> SelectionEstimate:
    """Optimism of the best of ``n_variants`` variants with the same per-question ``chances``
    of a correct answer (binary outcomes)."""
    p = np.asarray(chances, dtype=np.float64)
    return _simulate(np.zeros_like(p), np.ones_like(p), p, n_variants, n_searches, seed)


def optimism_from_pair(
    baseline: np.ndarray,
    candidate: np.ndarray,
    n_variants: int,
    *,
    n_searches: int = 300,
    seed: int | None = 0,
) -> SelectionEstimate:
    """Optimism of the best of ``n_variants`` variants that, question by question, score the
    baseline's or the candidate's value with chance 1/2 each (see the module docstring)."""
    a = np.asarray(baseline, dtype=np.float64)
    b = np.asarray(candidate, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise UsageError("baseline and candidate values must be paired one-dimensional arrays")
    return _simulate(
        np.minimum(a, b), np.maximum(a, b), np.full(len(a), 0.5), n_variants, n_searches, seed
    )
