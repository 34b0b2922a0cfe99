"""Paired statistics on one group of questions, and the groups: slices and the held-out split.

For a group of n questions with baseline values a_i and candidate values b_i, ``d_i = b_i - a_i``:

- ``mean_delta = mean(d)``, with a paired percentile-bootstrap interval (``_bootstrap``);
- wins / losses / ties: ``d_i > 0`` / ``d_i < 0`` / ``|d_i| <= 1e-12`` (rounding noise of float
  metric values is not a change);
- for binary outcomes, fixed = questions with a_i = 0 and b_i = 1, broken = a_i = 1 and b_i = 0
  (then fixed = wins and broken = losses); for other metrics both are None;
- the exact two-sided sign test on wins vs losses (``_tests``).

A slice with fewer than :data:`SMALL_SLICE` questions is flagged: its numbers give a direction,
not proof.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._interval import interval_text
from ._bootstrap import BootstrapInterval, Method, bootstrap_interval
from ._record import Record
from ._tests import sign_test

#: Slices under this many questions "give a direction, not proof".
SMALL_SLICE = 10
SMALL_NOTE = "a direction, not proof"
#: Differences within this of zero are ties.
TIE_TOLERANCE = 1e-12


@dataclass(frozen=True)
class PairedStats:
    """Paired comparison statistics on one group of questions."""

    n: int
    baseline_mean: float
    candidate_mean: float
    mean_delta: float
    ci: tuple[float, float]
    wins: int
    losses: int
    ties: int
    sign_test_p: float
    fixed: int | None
    broken: int | None

    @property
    def small(self) -> bool:
        return self.n < SMALL_SLICE

    @property
    def ci_text(self) -> str:
        """The interval as every interface prints it: ``[+0.012, +0.083]``."""
        return interval_text(*self.ci)

    def verdict(self, candidate: str = "B") -> str:
        """Plain-words reading of the interval."""
        lo, hi = self.ci
        if self.n == 0:
            return "no questions to compare"
        if lo > 0:
            return f"{candidate} better on this golden set (interval excludes zero)"
        if hi < 0:
            return f"{candidate} worse on this golden set (interval excludes zero)"
        return "interval includes zero: consistent with no difference"

    def to_dict(self) -> dict[str, object]:
        return {
            "n": self.n,
            "baseline_mean": self.baseline_mean,
            "candidate_mean": self.candidate_mean,
            "mean_delta": self.mean_delta,
            "ci": list(self.ci),
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
            "sign_test_p": self.sign_test_p,
            "fixed": self.fixed,
            "broken": self.broken,
        }

    @classmethod
    def from_dict(
        cls, d: Mapping[str, Any], *, source: str | None = None, field: str | None = None
    ) -> PairedStats:
        """Rebuild from :meth:`to_dict` output (other keys are ignored, so a slice's or a
        comparison's record reads too). A bad record raises an ``InputError`` naming the field
        (``field`` is this record's path inside an outer one) and ``source``."""
        r = Record(d, what="paired statistics", at=field, source=source)
        ci = r.items("ci")
        if len(ci) != 2:
            r.fail("ci", f"must be a list of two numbers [low, high], got {len(ci)} value(s)")
        n = r.integer("n")
        wins, losses, ties = r.integer("wins"), r.integer("losses"), r.integer("ties")
        if wins + losses + ties != n:
            r.fail("n", f"wins + losses + ties ({wins + losses + ties}) must equal n ({n})")
        return cls(
            n=n,
            baseline_mean=r.number("baseline_mean"),
            candidate_mean=r.number("candidate_mean"),
            mean_delta=r.number("mean_delta"),
            ci=(r.as_number(ci[0], "ci[0]"), r.as_number(ci[1], "ci[1]")),
            wins=wins,
            losses=losses,
            ties=ties,
            sign_test_p=r.number("sign_test_p"),
            fixed=r.nullable_integer("fixed"),
            broken=r.nullable_integer("broken"),
        )


def paired_stats(
    baseline: np.ndarray,
    candidate: np.ndarray,
    *,
    binary: bool,
    n_resamples: int = 5000,
    seed: int | None = 0,
    confidence: float = 0.95,
    method: Method = "auto",
    keep_means: bool = False,
) -> tuple[PairedStats, BootstrapInterval]:
    """Statistics of ``candidate - baseline`` over paired arrays (see the module docstring).
    ``keep_means``: the returned interval also holds its resampled means
    (:attr:`BootstrapInterval.means`)."""
    a = np.asarray(baseline, dtype=np.float64)
    b = np.asarray(candidate, dtype=np.float64)
    d = b - a
    wins = int(np.sum(d > TIE_TOLERANCE))
    losses = int(np.sum(d < -TIE_TOLERANCE))
    fixed = broken = None
    if binary:
        fixed = int(np.sum((a == 0) & (b == 1)))
        broken = int(np.sum((a == 1) & (b == 0)))
    boot = bootstrap_interval(
        d,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        method=method,
        keep_means=keep_means,
    )
    n = len(d)
    stats = PairedStats(
        n=n,
        baseline_mean=float(a.mean()) if n else float("nan"),
        candidate_mean=float(b.mean()) if n else float("nan"),
        mean_delta=float(d.mean()) if n else float("nan"),
        ci=(boot.lo, boot.hi),
        wins=wins,
        losses=losses,
        ties=n - wins - losses,
        sign_test_p=sign_test(wins, losses),
        fixed=fixed,
        broken=broken,
    )
    return stats, boot


def slice_groups(
    query_ids: Sequence[str], *slice_maps: Mapping[str, Sequence[str]]
) -> dict[str, np.ndarray]:
    """Slice name -> positions in ``query_ids`` of its questions (slice names of both runs merged).

    Sorted by slice name; a question may sit in several slices.
    """
    if not any(slice_maps):
        return {}
    members: dict[str, list[int]] = {}
    for i, q in enumerate(query_ids):
        names: set[str] = set()
        for m in slice_maps:
            names.update(m.get(q, ()))
        for name in names:
            members.setdefault(name, []).append(i)
    return {k: np.asarray(members[k], dtype=np.intp) for k in sorted(members)}


def split_groups(query_ids: Sequence[str], *split_maps: Mapping[str, str]) -> dict[str, np.ndarray]:
    """Split name ("tune", "heldout", ...) -> positions of its questions; empty when no split is
    recorded. The first map that knows a question decides its split."""
    if not any(split_maps):
        return {}
    members: dict[str, list[int]] = {}
    for i, q in enumerate(query_ids):
        for m in split_maps:
            if q in m:
                members.setdefault(str(m[q]), []).append(i)
                break
    order = sorted(members, key=lambda s: (s != "tune", s != "heldout", s))
    return {k: np.asarray(members[k], dtype=np.intp) for k in order}
