"""Answers that can be written: text that encodes as UTF-8, whatever the backend returned.

A Python ``str`` may hold a lone surrogate (``"\\ud800"``: a user's function can return one, and
``json.loads`` makes one from a server's ``"\\ud800"`` escape). Such text cannot be written as
UTF-8: not to ``answers.jsonl``, not to the answer cache, not to the store. Written as it is, it
killed the run after every answer had been made.

The rule: an answer whose text (or a citation) is not valid text is that question's recorded
error, ``"the answer is not valid text: ..."``, counted like any failed generation and never
cached; the run goes on. The answer is not repaired: a replaced character would be an answer
the generator never gave. An error message (ours or a backend's) is repaired instead, its lone
surrogates replaced by U+FFFD: it describes a failure, it is not measured.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ._protocol import Generation

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def text_problem(text: str, what: str = "the answer") -> str | None:
    """Why ``text`` cannot be recorded as ``what``, or None."""
    bad = _SURROGATE.search(text)
    if bad is None:
        return None
    return (
        f"{what} is not valid text: it holds a lone surrogate U+{ord(bad.group()):04X} at "
        f"character {bad.start()}, which no UTF-8 file can hold"
    )


def generation_problem(g: Generation) -> str | None:
    """Why the generation ``g`` cannot be written, or None."""
    why = text_problem(g.text)
    if why is not None:
        return why
    for what, items in (("a citation", g.citations), ("a citation", g.unknown_citations)):
        for item in items:
            why = text_problem(item, what)
            if why is not None:
                return why
    return None


def checked(g: Generation) -> Generation:
    """``g``, or, when its answer cannot be written, the failed generation that says why; a
    lone surrogate in an error message becomes U+FFFD (the message describes, it is not an
    answer)."""
    why = generation_problem(g)
    if why is not None:
        return Generation(g.question_id, "", (), dict(g.usage), g.seconds, False, why)
    if g.error is not None and _SURROGATE.search(g.error):
        return replace(g, error=_SURROGATE.sub("\ufffd", g.error))
    return g
