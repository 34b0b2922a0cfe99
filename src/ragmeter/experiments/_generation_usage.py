"""What generating a variant's answers spent: tokens, cost and attempts summed over the answers
made in this run, by the judge usage's rule (:mod:`ragmeter.answers.judges._usage`).

Each answer's ``usage`` is what its backend measured (``generations.jsonl`` keeps it per
answer): an OpenAI-compatible server's reported token counts, its cost with prices, attempts; a
local model's counted tokens; nothing from a python function. A count nobody measured is None
(null), never 0, here and in the sums:

- an answer made without token counts adds no token and no cost (its cost would be priced from
  0 tokens) and is counted in ``unknown_usage``, so the sums are a floor;
- when no answer had counts, the tokens (and the cost, with prices) are None;
- a cache hit spent nothing in this run and adds nothing; a failed answer is an error, not an
  unknown usage (what its rejected replies spent, when reported, is summed like any other).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ..generation import Generation

__all__ = ["TOKEN_KEYS", "generation_usage", "has_token_counts"]

#: an answer's usage keys that are only measured with its token counts (cost is priced from them)
TOKEN_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens", "cost_usd")


def has_token_counts(usage: Mapping[str, Any]) -> bool:
    """Whether an answer's usage holds its prompt and completion token counts (integers)."""
    return all(
        isinstance(usage.get(k), int) and not isinstance(usage.get(k), bool)
        for k in ("prompt_tokens", "completion_tokens")
    )


def generation_usage(generations: Iterable[Generation]) -> dict[str, Any]:
    """The numeric usage keys summed over the answers made in this run (see the module
    docstring); ``unknown_usage`` and None tokens (and cost, when any answer was priced) only
    when some answer had no counts."""
    made = [g for g in generations if not g.cached]
    out: dict[str, Any] = {}
    unknown = 0
    for g in made:
        counted = has_token_counts(g.usage)
        if not counted and g.error is None:
            unknown += 1
        for key, value in g.usage.items():
            if not counted and key in TOKEN_KEYS:
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out[key] = out.get(key, 0) + value
    if unknown:
        priced = any("cost_usd" in g.usage for g in made)
        for key in ("prompt_tokens", "completion_tokens", *("cost_usd",) * priced):
            out.setdefault(key, None)
        out["unknown_usage"] = unknown
    return out
