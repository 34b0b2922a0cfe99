"""Context-token budgets: how many ranked chunks fit, and which comparisons are fair.

Context assembly under a budget B (the rule every ``@budget=B`` metric uses): take the ranked
chunks in order while the running total of their ``n_tokens`` stays within B; stop at the first
chunk that does not fit (later, smaller chunks are not used to fill the gap, because a
generator's context is the top of the list, not a knapsack). The number of chunks taken is the
query's *effective k*; it can be 0 when the first chunk alone exceeds B.

Fairness: two variants are compared fairly when their context tokens (chunk tokens x k, or
measured tokens) differ by at most ``tolerance`` (default 10 %) of the larger one:
``|t_a - t_b| <= tolerance * max(t_a, t_b)``. For example, 300-token chunks at k=12 and
900-token chunks at k=4 both send about 3,600 tokens (fair); 300 x 4 against 900 x 4 sends a
third of the text (unfair).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._errors import UsageError

#: largest relative difference of context tokens for a fair comparison.
DEFAULT_TOLERANCE = 0.10


def assemble(chunk_tokens: Sequence[int] | np.ndarray, budget: int) -> int:
    """Effective k of one ranked list: leading chunks whose running token total is <= budget."""
    cs = np.cumsum(np.asarray(chunk_tokens, dtype=np.int64))
    return int(np.searchsorted(cs, budget, side="right"))


def effective_k(tokens: np.ndarray, starts: np.ndarray, budget: int) -> np.ndarray:
    """Effective k of many ranked lists at once.

    ``tokens`` holds the ranked chunks' token counts of every list back to back; list ``i`` owns
    ``tokens[starts[i]:starts[i+1]]`` (CSR layout). Returns one int64 per list.
    """
    tokens = np.asarray(tokens, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.diff(starts)
    if tokens.size == 0:
        return np.zeros(len(lengths), dtype=np.int64)
    cs = np.cumsum(tokens)
    base = np.where(starts[:-1] > 0, cs[np.maximum(starts[:-1] - 1, 0)], 0)
    within = cs - np.repeat(base, lengths)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    # token counts are >= 0, so `within` never decreases inside a list: the fits form a prefix
    return np.bincount(owner[within <= budget], minlength=len(lengths)).astype(np.int64)


def k_summary(ks: np.ndarray) -> dict[str, float]:
    """``{"min", "median", "max"}`` of effective k over queries (zeros when there are none)."""
    if len(ks) == 0:
        return {"min": 0, "median": 0.0, "max": 0}
    return {"min": int(ks.min()), "median": float(np.median(ks)), "max": int(ks.max())}


@dataclass(frozen=True)
class ContextSetting:
    """One retrieval setting as the generator sees it: chunks of ``chunk_tokens`` tokens, top k."""

    chunk_tokens: float
    k: int
    name: str = ""

    def __post_init__(self) -> None:
        if self.chunk_tokens <= 0 or self.k < 1:
            raise UsageError(
                f"a variant needs chunk tokens > 0 and k >= 1, got {self.chunk_tokens} x {self.k}"
            )
        if not self.name:
            object.__setattr__(self, "name", f"{_num(self.chunk_tokens)} x {self.k}")

    @property
    def context_tokens(self) -> float:
        """Tokens the generator receives: chunk tokens x k."""
        return self.chunk_tokens * self.k

    @classmethod
    def parse(cls, text: str) -> ContextSetting:
        """``"300x4"`` (or ``"300 x 4"``): 300-token chunks at k=4."""
        m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*[xX*]\s*([0-9]+)\s*", text)
        if not m:
            raise UsageError(f"bad variant '{text}': expected CHUNK_TOKENSxK, e.g. 300x12")
        return cls(float(m[1]), int(m[2]))


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.1f}"


def is_fair(
    a: ContextSetting | float, b: ContextSetting | float, tolerance: float = DEFAULT_TOLERANCE
) -> bool:
    """True when the context tokens of ``a`` and ``b`` differ by at most ``tolerance`` of the
    larger (see the module docstring)."""
    if not 0 <= tolerance < 1:
        raise UsageError(f"tolerance must be in [0, 1), got {tolerance}")
    ta = a.context_tokens if isinstance(a, ContextSetting) else float(a)
    tb = b.context_tokens if isinstance(b, ContextSetting) else float(b)
    return abs(ta - tb) <= tolerance * max(ta, tb) + 1e-9


@dataclass(frozen=True)
class BudgetRow:
    """One line of a budget table: a variant, its context tokens, and how it compares."""

    variant: ContextSetting
    baseline: str
    context_tokens: float
    ratio_to_baseline: float
    fair_with_baseline: bool
    #: the other variants within tolerance of this one
    fair_with: tuple[str, ...]
    #: the variants listed before this one (baseline excluded) within tolerance of it
    fair_with_earlier: tuple[str, ...] = ()

    @property
    def is_baseline(self) -> bool:
        return self.variant.name == self.baseline

    @property
    def verdict(self) -> str:
        """Plain-language fairness, read top to bottom as the design source's table reads: each
        row against the baseline, and a row that misses the baseline against the rows above it
        (900 x 4 after 300 x 4: "no: 3.0x the context tokens"; 300 x 12 after both: "yes,
        against 900 x 4")."""
        if self.is_baseline:
            return "baseline"
        if self.fair_with_baseline:
            return f"yes, against {self.baseline}"
        ratio = f"{self.ratio_to_baseline:.1f}x"
        if self.fair_with_earlier:
            return (
                f"yes, against {', '.join(self.fair_with_earlier)}; not against "
                f"{self.baseline} ({ratio} its context tokens)"
            )
        return f"no: {ratio} the context tokens of {self.baseline}"


def budget_table(
    variants: Sequence[ContextSetting | str], tolerance: float = DEFAULT_TOLERANCE
) -> list[BudgetRow]:
    """Context tokens of each variant and which pairs compare fairly; the first is the baseline.

    ``fair_with`` lists every *other* variant within ``tolerance``; ``fair_with_earlier`` those
    of them listed before the row (the baseline aside), which is what the verdict names.
    """
    vs = [v if isinstance(v, ContextSetting) else ContextSetting.parse(v) for v in variants]
    if not vs:
        raise UsageError("give at least one variant, e.g. 300x4")
    names = [v.name for v in vs]
    if len(set(names)) != len(names):
        raise UsageError(f"variants must differ, got {', '.join(names)}")
    base = vs[0]
    return [
        BudgetRow(
            v,
            base.name,
            v.context_tokens,
            v.context_tokens / base.context_tokens,
            is_fair(v, base, tolerance),
            tuple(w.name for w in vs if w is not v and is_fair(v, w, tolerance)),
            tuple(w.name for w in vs[1:i] if is_fair(v, w, tolerance)),
        )
        for i, v in enumerate(vs)
    ]


def format_budget_table(rows: Sequence[BudgetRow]) -> str:
    """The budget table as markdown (one row per variant, with the ratio to the baseline)."""
    lines = [
        "| Chunk size | k | Context tokens | vs baseline | Fair comparison? |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {_num(r.variant.chunk_tokens)} tokens | {r.variant.k} | "
            f"{r.context_tokens:,.0f} | {r.ratio_to_baseline:.2f}x | {r.verdict} |"
        )
    return "\n".join(lines)
