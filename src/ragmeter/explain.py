"""Explanations computed with the real metric engine: "slide the one answer passage down the list".

The RAG evaluation lesson's figure takes one query with one labelled passage (grade 2) among
nine non-relevant ones, moves that passage from rank 1 to rank 10 and recomputes recall@k,
reciprocal rank and nDCG@k at one cutoff. :func:`rank_curve` builds exactly those constructed
rankings and scores them with :func:`ragmeter.evaluate`, so the table a reader sees is the
engine's output, not a second implementation that could drift from it.

What the table shows (k = 5): recall only asks whether the passage is inside the cutoff (1 up
to rank 5, then 0); reciprocal rank falls fast (1/rank); nDCG falls slowly, because with a
single labelled passage ``nDCG@k = gain / log2(rank + 1) / gain = 1 / log2(rank + 1)`` inside
the cutoff (0.631 at rank 2, 0.5 at rank 3, 0.431 at rank 4) whatever the gain. Past the cutoff
all three are 0.

More labelled passages (``grades=(2, 1)``): the first grade is the passage that moves; the
others are labelled too, so they count in recall's denominator and in nDCG's ideal ordering
(which uses ALL labelled passages). They sit at ``others_at`` in the list without the moving
passage (the moving passage is taken out and put back at each rank, so items at or below that
rank shift down by one), or, by default, are not retrieved at all: then recall@k tops out at
1/R and nDCG@k below 1, which is the point of an honest ideal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._errors import UsageError

__all__ = ["RankCurve", "RankCurveRow", "rank_curve"]

#: id of the passage that moves; other labelled passages are "labelled-2", "labelled-3", ...
MOVING = "moving"
_GAINS = {"exp": "2^g - 1", "linear": "g"}


@dataclass(frozen=True)
class RankCurveRow:
    """The metrics when the moving passage sits at ``rank``; ``values`` follow the curve's
    ``metrics`` order."""

    rank: int
    values: tuple[float, ...]
    #: 1 / log2(rank + 1): the nDCG discount at this rank, printed beside nDCG for reference.
    discount: float


@dataclass(frozen=True)
class RankCurve:
    """One constructed query, the moving passage at every rank 1..depth, metrics at cutoff k."""

    k: int
    depth: int
    grades: tuple[int, ...]
    others_at: tuple[int, ...] | None
    gain: str
    metrics: tuple[str, ...]
    rows: tuple[RankCurveRow, ...]

    def column(self, metric: str) -> dict[int, float]:
        """``{rank: value}`` of one metric (its canonical name, e.g. ``"RR@5"``)."""
        from .metrics import parse

        name = str(parse(metric))
        if name not in self.metrics:
            raise UsageError(f"{metric} is not on this curve; it has {', '.join(self.metrics)}")
        j = self.metrics.index(name)
        return {r.rank: r.values[j] for r in self.rows}

    @property
    def setup(self) -> str:
        """One sentence saying what was constructed, for captions and JSON."""
        n_other = len(self.grades) - 1
        n_nonrel = self.depth - 1 - (len(self.others_at) if self.others_at else 0)
        text = (
            f"one query; a passage of grade {self.grades[0]} moves from rank 1 to "
            f"{self.depth} among {_count(n_nonrel, 'non-relevant passage')}"
        )
        if n_other:
            grades = ", ".join(map(str, self.grades[1:]))
            if self.others_at:
                where = (
                    f"at rank {', '.join(map(str, self.others_at))} of the other "
                    "passages (one rank lower while the moving passage is above)"
                )
            else:
                where = "labelled but not retrieved"
            text += f"; {_count(n_other, 'more labelled passage')} of grade {grades}, {where}"
        return text + f"; cutoff k = {self.k}; nDCG gain {_GAINS[self.gain]}"

    def to_dict(self) -> dict[str, Any]:
        """A plain JSON record: the setup and one row per rank with every metric."""
        return {
            "k": self.k,
            "depth": self.depth,
            "grades": list(self.grades),
            "others_at": list(self.others_at) if self.others_at else None,
            "gain": self.gain,
            "gain_formula": _GAINS[self.gain],
            "setup": self.setup,
            "metrics": list(self.metrics),
            "rows": [
                {
                    "rank": r.rank,
                    **dict(zip(self.metrics, r.values, strict=True)),
                    "discount": r.discount,
                }
                for r in self.rows
            ],
        }

    def to_frame(self):  # -> pandas.DataFrame
        """The rows as a pandas DataFrame (index: rank; columns: the metrics, then discount)."""
        from ._extras import require

        pd = require("pandas", "DataFrame output")
        return pd.DataFrame(
            [[*r.values, r.discount] for r in self.rows],
            index=pd.Index([r.rank for r in self.rows], name="rank"),
            columns=[*self.metrics, "discount"],
        )


def rank_curve(
    k: int = 5,
    grades: Sequence[int] = (2,),
    *,
    depth: int = 10,
    others_at: Sequence[int] | None = None,
    gain: str = "exp",
) -> RankCurve:
    """Slide one labelled passage from rank 1 to ``depth`` and score R@k, RR@k and nDCG@k.

    ``grades[0]`` is the moving passage's grade; further grades are more labelled passages,
    placed at ``others_at`` (1-based ranks in the list without the moving passage) or, when
    ``others_at`` is None, not retrieved. ``gain`` is nDCG's gain: ``"exp"`` (2^g - 1, the
    lesson's form, default) or ``"linear"`` (g, trec_eval's); it appears in the metric's name.
    """
    from .metrics import evaluate

    k, depth, grades_t, others = _check(k, depth, grades, others_at, gain)
    ndcg = f"nDCG(gain={gain})@{k}" if gain == "exp" else f"nDCG@{k}"
    metrics = (f"R@{k}", f"RR@{k}", ndcg)
    labelled = {MOVING: grades_t[0]}
    labelled.update({f"labelled-{i + 2}": g for i, g in enumerate(grades_t[1:])})
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for rank in range(1, depth + 1):
        qid = f"rank-{rank:04d}"
        qrels[qid] = labelled
        ranking = _background(depth, others)
        ranking.insert(rank - 1, MOVING)
        # distinct descending scores: the engine's order is exactly this list
        run[qid] = {doc: float(depth - i) for i, doc in enumerate(ranking)}
    e = evaluate(qrels, run, list(metrics), run_name="rank curve")
    names = tuple(str(m) for m in e.metrics)
    rows = tuple(
        RankCurveRow(rank, tuple(float(v) for v in e.values[i]), 1.0 / math.log2(rank + 1))
        for i, rank in enumerate(range(1, depth + 1))
    )
    return RankCurve(k, depth, grades_t, others, gain, names, rows)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _background(depth: int, others_at: tuple[int, ...] | None) -> list[str]:
    """The list without the moving passage: depth - 1 items, labelled ones at ``others_at``."""
    items = [f"nonrelevant-{i + 1:02d}" for i in range(depth - 1)]
    for j, pos in enumerate(others_at or ()):
        items[pos - 1] = f"labelled-{j + 2}"
    return items


def _check(
    k: Any, depth: Any, grades: Sequence[int], others_at: Sequence[int] | None, gain: str
) -> tuple[int, int, tuple[int, ...], tuple[int, ...] | None]:
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise UsageError(f"k must be a positive integer, got {k!r}")
    if not isinstance(depth, int) or isinstance(depth, bool) or not 1 <= depth <= 1000:
        raise UsageError(f"depth must be an integer from 1 to 1000, got {depth!r}")
    g = tuple(grades)
    if not g or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in g):
        raise UsageError(
            f"grades must be integers >= 1 (a grade 0 passage is not relevant), "
            f"the moving passage's first; got {list(g)}"
        )
    if gain not in _GAINS:
        raise UsageError(f"gain must be 'exp' (2^g - 1) or 'linear' (g), got '{gain}'")
    if others_at is None:
        return k, depth, g, None
    o = tuple(others_at)
    if len(o) != len(g) - 1:
        raise UsageError(
            f"others_at gives {len(o)} rank(s) for {len(g) - 1} other labelled "
            "passage(s): give one rank for each grade after the first"
        )
    if len(set(o)) != len(o) or not all(isinstance(x, int) and 1 <= x <= depth - 1 for x in o):
        raise UsageError(
            f"others_at must be distinct ranks from 1 to {depth - 1} (the list "
            f"without the moving passage), got {list(o)}"
        )
    return k, depth, g, o or None
