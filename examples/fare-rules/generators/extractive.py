"""A stand-in generator with no model: copies the first sentence that holds a number from the
first passage of its context that has one, and cites that passage.

It reads the passages in the order the prompt gives them, so the context order changes its
answers: a fast, offline, deterministic way to see what a context-order experiment reports
(``generation-extractive.toml``). It is not a model, and its answers are not evidence about
any model.
"""

from __future__ import annotations

import re

ABSTAIN = "I cannot find the answer in the provided passages."


def answer(question: str, passages: list) -> tuple[str, list[str]] | str:
    """``(sentence, [passage id])``, or the abstention sentence when no passage has a number."""
    for p in passages:
        for sentence in re.split(r"(?<=[.!?])\s+", p.text):
            if re.search(r"\d", sentence):
                return sentence.strip(), [p.id]
    return ABSTAIN
