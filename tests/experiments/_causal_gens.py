"""Constructed generators whose true cause per question is known, for the causal-table test
(tests/experiments/test_causal_generators.py).

``answer(question, passages)`` has the shape of ``examples/fare-rules/generators/extractive.py``.
Each question gets one behaviour from a plan, a JSON file the test writes and names in the
environment variable :data:`PLAN_ENV`: ``{question text: {"behaviour", "right", "key",
"spans"}}`` with ``right`` the golden reference answer (so the answer check calls it correct),
``key`` the text of the question's highest-graded evidence span and ``spans`` the texts of all
its spans. The behaviours:

- ``grounded`` (a): right only when the key evidence text is in one of its passages;
- ``ignores_context`` (b): ignores its context and answers wrong;
- ``memory`` (c): right whatever its context, none at all included;
- ``noise_sensitive`` (d): right only when the key evidence text is in its context AND every
  passage holds some evidence span's text (a passage without evidence throws it off).

Anything not right is :data:`WRONG`, a sentence with no value and no abstention in it. A right
answer cites the passage holding the key evidence text when there is one (so the value check
finds its value where it is cited).
"""

from __future__ import annotations

import json
import os
from typing import Any

PLAN_ENV = "RAGMETER_TEST_CAUSAL_PLAN"
WRONG = "The answer is the blue banana."
BEHAVIOURS = ("grounded", "ignores_context", "memory", "noise_sensitive")


def _plan() -> dict[str, dict[str, Any]]:
    with open(os.environ[PLAN_ENV], encoding="utf-8") as f:
        plan: dict[str, dict[str, Any]] = json.load(f)
    return plan


def grounded(entry: dict[str, Any], texts: list[str]) -> bool:
    """The key evidence text is in one of the passages."""
    return any(entry["key"] in t for t in texts)


def clean(entry: dict[str, Any], texts: list[str]) -> bool:
    """Every passage holds the text of some evidence span."""
    return all(any(s in t for s in entry["spans"]) for t in texts)


def right_under(behaviour: str, entry: dict[str, Any], texts: list[str]) -> bool:
    """Whether ``behaviour`` answers right given passages with these texts."""
    if behaviour == "memory":
        return True
    if behaviour == "ignores_context":
        return False
    if behaviour == "grounded":
        return grounded(entry, texts)
    if behaviour == "noise_sensitive":
        return grounded(entry, texts) and clean(entry, texts)
    raise ValueError(f"unknown behaviour {behaviour!r}")


def answer(question: str, passages: list[Any]) -> str | tuple[str, list[str]]:
    entry = _plan()[question]
    texts = [p.text for p in passages]
    if not right_under(entry["behaviour"], entry, texts):
        return WRONG
    cite = [p.id for p in passages if entry["key"] and entry["key"] in p.text][:1]
    return (entry["right"], cite) if cite else entry["right"]
