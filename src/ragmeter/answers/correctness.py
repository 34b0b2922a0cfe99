"""Correctness of an answer against the golden reference answer.

Three deterministic scores per answer, then one combined ``correct`` rule:

- ``exact``: SQuAD exact match after :func:`normalize_answer` (lower case, punctuation and the
  articles a/an/the removed, whitespace collapsed).
- ``f1``: SQuAD token F1 on the same normalised tokens:
  ``P = |common| / |answer tokens|``, ``R = |common| / |reference tokens|``, ``F1 = 2PR/(P+R)``
  with ``common`` the multiset intersection.
- ``value_match``: the reference's values (money, durations, percentages, dates, numbers; see
  :mod:`ragmeter.answers._values`) all appear in the answer, and the answer states no *other*
  value of a kind with a unit (money in the same currency, a duration in the same dimension, a
  percentage, a date) that the reference also uses. ``"$75"`` matches ``"75 USD"`` and
  ``"USD 75.00"``; ``"The fee is $75, not $100"`` does not match ``"$75"`` (it states $100 too).
  ``None`` when the reference holds no value.

Combined rule (``CORRECT_RULE``):
- a reference with values: ``correct = value_match`` (the number is the answer; wording is free);
- otherwise: ``correct = exact or contains or f1 >= 0.8``, where ``contains`` means the
  normalised reference appears as a contiguous token run inside the normalised answer (generated
  answers are sentences around a short reference);
- abstention overrides both (:mod:`ragmeter.answers.abstention`): on an unanswerable question
  only an abstention is correct; on an answerable one an abstention is wrong.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from dataclasses import dataclass

from ._values import Value, describe, extract_values

#: F1 at or above which a reference without values counts as matched.
F1_THRESHOLD = 0.8
CORRECT_RULE = (
    "reference with a number/money/duration/date: every reference value is in the answer and no "
    "conflicting value of the same unit; otherwise exact match, or the reference inside the "
    f"answer, or token F1 >= {F1_THRESHOLD}; on unanswerable questions only an abstention is "
    "correct, on answerable ones an abstention is wrong"
)
_PUNCT = set(string.punctuation) | set("‘’“”«»–—…")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_UNIT_KINDS = ("money", "duration", "percent", "date")


def normalize_answer(text: str) -> str:
    """SQuAD v1.1 normalisation: lower case, drop punctuation and articles, collapse spaces."""
    text = "".join(" " if ch in _PUNCT else ch for ch in text.lower())
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(answer: str, reference: str) -> bool:
    return normalize_answer(answer) == normalize_answer(reference)


def token_f1(answer: str, reference: str) -> float:
    """SQuAD token F1 (see module docstring); 1.0 when both normalise to nothing."""
    a, r = normalize_answer(answer).split(), normalize_answer(reference).split()
    if not a or not r:
        return float(a == r)
    common = sum((Counter(a) & Counter(r)).values())
    if common == 0:
        return 0.0
    p, rec = common / len(a), common / len(r)
    return 2 * p * rec / (p + rec)


def contains_reference(answer: str, reference: str) -> bool:
    """The normalised reference is a contiguous token run of the normalised answer."""
    a, r = normalize_answer(answer).split(), normalize_answer(reference).split()
    if not r:
        return False
    return any(a[i : i + len(r)] == r for i in range(len(a) - len(r) + 1))


@dataclass(frozen=True)
class ValueMatch:
    """How the answer's values line up with the reference's."""

    matched: bool
    missing: tuple[Value, ...]
    conflicting: tuple[Value, ...]

    def explain(self) -> str:
        parts = []
        if self.missing:
            parts.append("missing " + ", ".join(map(describe, self.missing)))
        if self.conflicting:
            parts.append("states " + ", ".join(map(describe, self.conflicting)))
        return "; ".join(parts) or "values match"


def value_match(answer: str, reference: str) -> ValueMatch | None:
    """Compare values (see module docstring); None when the reference holds no value."""
    ref = extract_values(reference)
    if not ref:
        return None
    ans = extract_values(answer)
    missing = tuple(sorted(ref - ans))
    ref_units = {(k, u) for k, u, _ in ref if k in _UNIT_KINDS}
    conflicting = tuple(sorted(v for v in ans - ref if (v[0], v[1]) in ref_units))
    return ValueMatch(not missing and not conflicting, missing, conflicting)


@dataclass(frozen=True)
class Correctness:
    """Correctness scores of one answer against its reference (abstention not applied here)."""

    exact: bool
    f1: float
    contains: bool
    value_match: bool | None
    correct: bool
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {
            "exact": self.exact,
            "f1": round(self.f1, 4),
            "contains": self.contains,
            "value_match": self.value_match,
            "correct": self.correct,
            "reason": self.reason,
        }


def score_correctness(answer: str, reference: str) -> Correctness:
    """All scores and the combined ``correct`` verdict of ``answer`` against ``reference``."""
    em, f1, inside = (
        exact_match(answer, reference),
        token_f1(answer, reference),
        contains_reference(answer, reference),
    )
    vm = value_match(answer, reference)
    if vm is not None:
        return Correctness(em, f1, inside, vm.matched, vm.matched, vm.explain())
    correct = em or inside or f1 >= F1_THRESHOLD
    if em:
        reason = "exact match"
    elif inside:
        reason = "reference inside the answer"
    else:
        reason = f"token F1 {f1:.2f} {'>=' if correct else '<'} {F1_THRESHOLD}"
    return Correctness(em, f1, inside, None, correct, reason)
