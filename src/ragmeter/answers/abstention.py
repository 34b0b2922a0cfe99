"""Abstention: the right answer to an unanswerable question is no answer.

Per question (``answerable`` comes from the golden set, ``abstained`` from the answers file or,
when absent, :func:`ragmeter.answers._schema.looks_abstained`):

=============  ===========  ==========================================
answerable     abstained    verdict
=============  ===========  ==========================================
False          True         correct (a right abstention)
False          False        wrong (answered the unanswerable)
True           True         wrong (a false abstention)
True           False        decided by correctness against the reference
=============  ===========  ==========================================

Reported as its own slice: abstention rate on unanswerable questions (higher is better) and
false-abstention rate on answerable ones (lower is better).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


def abstention_verdict(answerable: bool, abstained: bool) -> tuple[bool | None, str]:
    """``(correct, reason)``; ``correct`` is None when correctness must decide."""
    if not answerable:
        return (
            (True, "abstained on an unanswerable question")
            if abstained
            else (False, "answered an unanswerable question")
        )
    if abstained:
        return False, "abstained on an answerable question"
    return None, ""


@dataclass(frozen=True)
class AbstentionSummary:
    """Counts behind the abstention slice."""

    n_unanswerable: int
    abstained_unanswerable: int
    n_answerable: int
    abstained_answerable: int

    @property
    def abstention_rate(self) -> float | None:
        """Share of unanswerable questions abstained on (None without such questions)."""
        return self.abstained_unanswerable / self.n_unanswerable if self.n_unanswerable else None

    @property
    def false_abstention_rate(self) -> float | None:
        """Share of answerable questions abstained on."""
        return self.abstained_answerable / self.n_answerable if self.n_answerable else None

    def to_dict(self) -> dict[str, object]:
        return {
            "n_unanswerable": self.n_unanswerable,
            "abstained_unanswerable": self.abstained_unanswerable,
            "abstention_rate": self.abstention_rate,
            "n_answerable": self.n_answerable,
            "abstained_answerable": self.abstained_answerable,
            "false_abstention_rate": self.false_abstention_rate,
        }


def summarize_abstention(pairs: Iterable[tuple[bool, bool]]) -> AbstentionSummary:
    """From ``(answerable, abstained)`` per question."""
    pairs = list(pairs)
    unans = [ab for ans, ab in pairs if not ans]
    ans = [ab for a, ab in pairs if a]
    return AbstentionSummary(len(unans), sum(unans), len(ans), sum(ans))
