"""Repeats of one comparison: which questions are fixed or broken in *every* repeat, and which
change their verdict from repeat to repeat (flaky).

A generator sampled with another seed, or a judge asked again, may give another verdict on the
same question. With ``R`` repeats of both variants (repeat ``r`` of the baseline paired with
repeat ``r`` of the candidate), a question is

- **stably fixed** when it went from 0 to 1 in every repeat, **stably broken** when it went from
  1 to 0 in every repeat (``ragmeter gate --stable`` counts only these);
- **flaky** on one side when its verdict is not the same in every repeat of that side.

Only questions scored in every repeat of both sides count as stable; a question missing from a
repeat is never stable. Values are 0/1 verdicts (any other value: a change is ``b != a``, a fix
a rise and a break a fall, as the gate counts losses for a metric that is not binary).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import UsageError

__all__ = ["StableChanges", "flaky_questions", "stable_changes"]


@dataclass(frozen=True)
class StableChanges:
    """The questions fixed / broken in every one of ``n_repeats`` repeats, and the questions
    whose verdict changed across repeats on either side (``flaky``), each in question order."""

    n_repeats: int
    fixed: tuple[str, ...]
    broken: tuple[str, ...]
    flaky: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_repeats": self.n_repeats,
            "stable_fixed": len(self.fixed),
            "stable_broken": len(self.broken),
            "stable_fixed_ids": list(self.fixed),
            "stable_broken_ids": list(self.broken),
            "flaky": list(self.flaky),
        }


def flaky_questions(repeats: Sequence[Mapping[str, float | None]]) -> tuple[str, ...]:
    """The questions whose value is not the same in every repeat that scored them (a question
    scored in one repeat only is not flaky: there is nothing to disagree with), in the order
    they first appear."""
    seen: dict[str, set[float]] = {}
    for values in repeats:
        for qid, v in values.items():
            if v is not None:
                seen.setdefault(qid, set()).add(float(v))
    return tuple(q for q, vs in seen.items() if len(vs) > 1)


def stable_changes(
    baseline: Sequence[Mapping[str, float | None]],
    candidate: Sequence[Mapping[str, float | None]],
    questions: Sequence[str] | None = None,
) -> StableChanges:
    """Pair repeat ``r`` of ``baseline`` with repeat ``r`` of ``candidate`` (``{qid: value}``
    each; None or absent: not scored) and keep the questions fixed (broken) in every repeat.
    ``questions`` restricts (and orders) the questions looked at. UsageError when the two sides
    have different numbers of repeats, or none."""
    if len(baseline) != len(candidate):
        raise UsageError(
            f"the baseline has {len(baseline)} repeat(s) and the candidate {len(candidate)}: "
            "run both with the same repeat"
        )
    if not baseline:
        raise UsageError("no repeat to compare")
    order = list(questions) if questions is not None else list(dict.fromkeys(baseline[0]))
    fixed: list[str] = []
    broken: list[str] = []
    for q in order:
        pairs: list[tuple[float, float]] = []
        for b, c in zip(baseline, candidate, strict=True):
            bv, cv = b.get(q), c.get(q)
            if bv is None or cv is None:
                break
            pairs.append((float(bv), float(cv)))
        else:
            if all(cv > bv for bv, cv in pairs):
                fixed.append(q)
            elif all(cv < bv for bv, cv in pairs):
                broken.append(q)
    wanted = set(order)
    flaky = dict.fromkeys(
        q for side in (baseline, candidate) for q in flaky_questions(side) if q in wanted
    )
    ranked = {q: i for i, q in enumerate(order)}
    return StableChanges(
        len(baseline),
        tuple(fixed),
        tuple(broken),
        tuple(sorted(flaky, key=lambda q: ranked[q])),
    )
