"""Pure, vectorised rank-metric kernels over padded (queries x depth) arrays.

Inputs shared by every kernel:

- ``grades``: int array (n_queries x depth), the judged grade of the item at each rank
  (0 for unjudged, judged non-relevant, and padding past the end of a query's list);
- ``num_rel``: int array (n_queries,), how many judged items have grade >= the threshold;
- ``ideal``: float array (n_queries x R_max), each query's judged gains sorted descending and
  zero-padded (the ideal order of ALL judged items, not only retrieved ones).

A cutoff ``k`` larger than ``depth`` behaves as if the lists were padded with non-relevant items.
No kernel loops over queries in Python.

:class:`RankInputs` and :class:`SpanInputs` carry those arrays to the kernel each registry entry
names (``MetricInfo.rank_kernel`` / ``span_kernel``), computing a threshold's relevance mask or a
gain rule's gains once for every metric that shares it. :func:`gain_values` is the one rule that
turns grades into nDCG gains.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .._errors import UsageError


class Options(Protocol):
    """What a kernel reads of a metric: its cutoff and options (a ``Metric`` has them all)."""

    @property
    def k(self) -> int | None: ...

    @property
    def rel(self) -> int: ...

    @property
    def gain(self) -> str: ...

    @property
    def gains(self) -> tuple[tuple[int, float], ...] | None: ...


def gain_values(
    grades: Any,
    gain: str = "linear",
    gains: tuple[tuple[int, float], ...] | None = None,
    shift: int | np.ndarray = 0,
) -> np.ndarray:
    """The gain of each grade: the grade itself (``linear``, trec_eval's default), ``2^g - 1``
    (``exp``), or a ``(grade, gain)`` map whose missing grades keep their own value. Grades <= 0
    always give 0 (a gain map names grades >= 1 only; the metric grammar refuses others).

    ``shift`` divides every gain by ``2^shift`` (exactly: a power of two), computed without ever
    forming the unscaled gain, so ``2^1024 - 1`` never overflows to infinity. It is one number,
    or an integer array broadcast against ``grades`` (one shift per query: a column for a
    queries x depth matrix); nDCG is a ratio of one query's gains, so the same shift on both
    sides of that query leaves it unchanged (:func:`query_shifts` picks it)."""
    g = np.asarray(grades)
    pos = g > 0
    if gain == "exp" and gains is None:
        # 2^(g - shift) - 2^-shift == (2^g - 1) / 2^shift, in int64 so huge grades stay exact
        e = np.where(pos, g, 0).astype(np.int64) - shift
        below = np.exp2(-np.asarray(shift, dtype=np.float64))
        return np.where(pos, np.exp2(e.astype(np.float64)) - below, 0.0)
    out = np.where(pos, g, 0).astype(np.float64)
    if gains is not None:
        for grade, value in gains:
            out[g == grade] = value
    return np.ldexp(out, -np.asarray(shift, dtype=np.int64)) if np.any(shift) else out


#: gains above 2^this are scaled down before summing (sums of up to 2^60 such gains stay finite)
_SAFE_EXPONENT = 960


def gain_exponents(
    grades: Any, gain: str = "linear", gains: tuple[tuple[int, float], ...] | None = None
) -> np.ndarray:
    """Per grade, the binary exponent of its unscaled gain (``frexp``'s: ``gain < 2^e``; 0 for
    a gain of 0), found without forming the gain: ``2^g - 1`` has exponent ``g``."""
    g = np.asarray(grades)
    if gain == "exp" and gains is None:
        return np.where(g > 0, g, 0).astype(np.int64)
    return np.frexp(gain_values(g, gain, gains))[1].astype(np.int64)


def gain_shift(
    judged: Any, gain: str = "linear", gains: tuple[tuple[int, float], ...] | None = None
) -> int:
    """The power of two :func:`gain_values` divides by so that no gain of the ``judged`` grades,
    nor any sum of them, overflows a float: 0 (no scaling, the usual case) unless the largest
    gain exceeds ``2^960`` (``gain=exp`` on a grade >= 961, or a map with a gain near 1e308).
    The grades of ONE query: a shift chosen from other queries' grades would scale this
    query's small gains down to 0 (:func:`query_shifts` gives each query its own)."""
    e = gain_exponents(judged, gain, gains)
    top = int(e.max()) if e.size else 0
    return top if top > _SAFE_EXPONENT else 0


def query_shifts(exponents: np.ndarray, row: np.ndarray, nq: int) -> np.ndarray:
    """Per query row 0..nq-1: the shift of :func:`gain_shift` for its own judged items
    (``exponents[i]``, from :func:`gain_exponents`, belongs to query ``row[i]``)."""
    top = np.zeros(nq, dtype=np.int64)
    np.maximum.at(top, row, exponents)
    return np.where(top > _SAFE_EXPONENT, top, 0)


def _cut(a: np.ndarray, k: int | None) -> np.ndarray:
    return a if k is None else a[:, :k]


def hits(rel: np.ndarray, k: int | None) -> np.ndarray:
    """Number of relevant items in the top k: |rel ∩ top_k|."""
    return _cut(rel, k).sum(axis=1)


def precision(rel: np.ndarray, k: int) -> np.ndarray:
    """P@k = |rel ∩ top_k| / k (k, not the number retrieved, is the denominator, as trec_eval)."""
    return hits(rel, k) / k


def recall(rel: np.ndarray, num_rel: np.ndarray, k: int | None) -> np.ndarray:
    """R@k = |rel ∩ top_k| / |rel| (0 when the query has no relevant item at this threshold)."""
    return _safe_div(hits(rel, k), num_rel)


def hit(rel: np.ndarray, k: int | None) -> np.ndarray:
    """Hit@k (trec_eval ``success``) = 1 if any relevant item is in the top k."""
    return (hits(rel, k) > 0).astype(np.float64)


def reciprocal_rank(rel: np.ndarray, k: int | None) -> np.ndarray:
    """RR@k = 1 / rank of the first relevant item within k, 0 if none."""
    r = _cut(rel, k)
    if r.shape[1] == 0:
        return np.zeros(r.shape[0])
    first = r.argmax(axis=1)
    found = r[np.arange(r.shape[0]), first]
    return np.where(found, 1.0 / (first + 1.0), 0.0)


def average_precision(rel: np.ndarray, num_rel: np.ndarray, k: int | None) -> np.ndarray:
    """AP@k = Σ_{i ≤ k, item i relevant} P@i / |rel| (trec_eval ``map_cut_k``; no k: ``map``).

    The n-th relevant item at rank i adds n / i, summed rank by rank (one pass per rank over
    the queries, no per-hit arrays; a query's sum is the same whatever queries surround it).
    """
    r = _cut(rel, k)
    total = np.zeros(r.shape[0])
    seen = np.zeros(r.shape[0])
    for i in range(r.shape[1]):
        hit = r[:, i]
        seen += hit
        total += np.where(hit, seen / (i + 1.0), 0.0)
    return _safe_div(total, num_rel)


def r_precision(rel: np.ndarray, num_rel: np.ndarray) -> np.ndarray:
    """Rprec = |rel ∩ top_R| / R with R = |rel|."""
    rows, cols = np.nonzero(rel)
    within = cols < num_rel[rows]
    return _safe_div(np.bincount(rows[within], minlength=rel.shape[0]), num_rel)


def discounts(n: int) -> np.ndarray:
    """1 / log2(i + 1) for ranks i = 1..n."""
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))


def ndcg(gains: np.ndarray, ideal: np.ndarray, k: int | None) -> np.ndarray:
    """nDCG@k = Σ_{i ≤ k} gain_i / log2(i+1) ÷ IDCG@k, IDCG from the ideal order of ALL judged
    items.

    ``gains`` holds each ranked item's gain (already mapped from its grade); 0 when IDCG is 0.
    """
    g = _cut(gains, k)
    ig = _cut(ideal, k)
    return _safe_div(_rank_sum(g), _rank_sum(ig))


def _rank_sum(g: np.ndarray) -> np.ndarray:
    """Σ_i g[:, i] / log2(i+1), summed rank by rank (trec_eval's order). Not a BLAS ``@``: that
    may sum a row differently depending on the matrix around it, and a query's value must not
    depend on which queries are scored with it (``query_chunks`` gives one pass's numbers)."""
    out = np.zeros(g.shape[0])
    for i, d in enumerate(discounts(g.shape[1]).tolist()):
        out += g[:, i] * d
    return out


def ideal_gains(gains: np.ndarray, j_row: np.ndarray, nq: int) -> np.ndarray:
    """Per query: the gains of all its judged items, sorted descending, zero padded."""
    keep = gains > 0
    rows, g = j_row[keep], gains[keep]
    order = np.lexsort((-g, rows))
    rows, g = rows[order], g[order]
    counts = np.bincount(rows, minlength=nq)
    width = int(counts.max()) if nq and counts.size else 0
    out = np.zeros((nq, width))
    col = np.arange(rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
    out[rows, col] = g
    return out


#: grade ranges up to this wide get their ideal order by counting grades per query, not sorting
COUNTED_GRADES = 64


def grade_counts(j_rel: np.ndarray, j_row: np.ndarray, nq: int) -> tuple[np.ndarray, int]:
    """(per query row, how many judged items have each grade ``lo + i``; ``lo``)."""
    lo = int(j_rel.min()) if j_rel.size else 0
    span = int(j_rel.max()) - lo + 1 if j_rel.size else 1
    counts = np.bincount(j_row * span + (j_rel - lo), minlength=nq * span).reshape(nq, span)
    return counts, lo


def ideal_from_counts(
    counts: np.ndarray,
    lo: int,
    gain_of: Any,
    width: int | None = None,
    order: np.ndarray | None = None,
) -> np.ndarray:
    """Each query's judged gains sorted descending and zero padded, from ``counts[q, i]``: how
    many judged items of query ``q`` have grade ``lo + i``. Grades are laid out best gain first,
    one pass per grade present (a column is the best gain whose items have not yet filled the
    columns before it): no sort and no per-item array. The same matrix as sorting (equal gains
    are equal floats, so their order does not matter). ``width``: only the first ``width``
    columns (the cutoff of the metric that needs them).

    ``gain_of(grades)`` gives one gain per grade, or one row of them per query (queries x
    grades, when each query has its own shift); ``order``: per grade, a key whose descending
    order is the gains' (the gains themselves by default) and is positive where the gain is:
    one order for every query, whatever its shift."""
    nq, span = counts.shape
    gains = np.asarray(gain_of(lo + np.arange(span)), dtype=np.float64)
    key = gains if order is None else np.asarray(order)
    slots = np.argsort(key, kind="stable")[::-1]  # best first (ints: no negation to overflow)
    slots = slots[(key[slots] > 0) & counts[:, slots].any(axis=0)]  # gain 0 is padding
    if not nq or not slots.size:
        return np.zeros((nq, 0))
    filled = np.cumsum(counts[:, slots], axis=1)  # per query: columns taken by the best slots
    most = int(filled[:, -1].max())
    width = most if width is None else min(width, most)
    out = np.zeros((nq, width))
    cols = np.arange(width)
    for s in range(slots.size - 1, -1, -1):  # worst gain first; better ones overwrite
        taken = cols < filled[:, s : s + 1]
        if gains.ndim == 1:
            out[taken] = gains[slots[s]]
        else:  # each query's own gain for this grade
            np.copyto(out, gains[:, slots[s] : slots[s] + 1], where=taken)
    return out


@dataclass
class RankInputs:
    """Ranked grades of the scored queries (``grades``, queries x depth) and their judged items,
    either listed (``j_row`` query row, ``j_rel`` grade) or counted (``counts[q, i]``: judged
    items of query ``q`` with grade ``lo + i``; then ``j_row``/``j_rel`` may be empty), with
    each derived array built once and shared. Counts are what every kernel needs when grades
    span few values (:func:`grade_counts`)."""

    grades: np.ndarray
    j_row: np.ndarray
    j_rel: np.ndarray
    nq: int
    counts: np.ndarray | None = None
    lo: int = 0
    _cache: dict[Any, np.ndarray] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        g = self.j_rel
        if self.counts is None and g.size and int(g.max()) - int(g.min()) < COUNTED_GRADES:
            self.counts, self.lo = grade_counts(g, self.j_row, self.nq)

    def relevant(self, rel: int) -> np.ndarray:
        """Boolean (queries x depth): the item at each rank has grade >= ``rel``."""
        key = ("relevant", rel)
        if key not in self._cache:
            self._cache[key] = self.grades >= rel
        return self._cache[key]

    def num_rel(self, rel: int) -> np.ndarray:
        """Per query: judged items with grade >= ``rel``."""
        key = ("num_rel", rel)
        if key not in self._cache:
            if self.counts is not None:
                self._cache[key] = self.counts[:, max(rel - self.lo, 0) :].sum(axis=1)
            else:
                self._cache[key] = np.bincount(self.j_row[self.j_rel >= rel], minlength=self.nq)
        return self._cache[key]

    def _present(self) -> np.ndarray:
        """The judged grades (each grade present once when counted)."""
        if self.counts is not None:
            return self.lo + np.flatnonzero(self.counts.any(axis=0))
        return self.j_rel

    def shift(self, m: Options) -> np.ndarray:
        """Per query: the power of two every gain of that query under ``m``'s rule is divided
        by (:func:`gain_shift` of the query's OWN judged grades, so its ranked and ideal gains
        share it and no other query's grades change it); a 0-d 0 when no query needs one (the
        usual case: no gain is scaled at all)."""
        key = ("shift", m.gain, m.gains)
        if key not in self._cache:
            if not gain_shift(self._present(), m.gain, m.gains):
                self._cache[key] = np.zeros((), dtype=np.int64)
            elif self.counts is not None:
                e = gain_exponents(self.lo + np.arange(self.counts.shape[1]), m.gain, m.gains)
                top = np.where(self.counts > 0, e, 0).max(axis=1, initial=0)
                self._cache[key] = np.where(top > _SAFE_EXPONENT, top, 0)
            else:
                e = gain_exponents(self.j_rel, m.gain, m.gains)
                self._cache[key] = query_shifts(e, self.j_row, self.nq)
        return self._cache[key]

    def _row_shift(self, m: Options) -> np.ndarray:
        """:meth:`shift` shaped to broadcast against a (queries x anything) matrix."""
        s = self.shift(m)
        return s[:, None] if s.ndim else s

    def gains(self, m: Options) -> np.ndarray:
        """Gain of the item at each rank under ``m``'s gain rule."""
        key = ("gains", m.gain, m.gains)
        if key not in self._cache:
            self._cache[key] = gain_values(self.grades, m.gain, m.gains, self._row_shift(m))
        return self._cache[key]

    def ideal(self, m: Options) -> np.ndarray:
        """Per query: the ideal order of ALL judged items' gains under ``m``'s gain rule (at
        least the first ``m.k`` columns of it)."""
        key = ("ideal", m.gain, m.gains, m.k if self.counts is not None else None)
        if key not in self._cache:
            if self.counts is not None:
                shift = self._row_shift(m)
                grades = self.lo + np.arange(self.counts.shape[1])
                # grades order linear and exp gains whatever the shift (exp gains of huge
                # grades are not finite unscaled); a map's gains are finite
                order = grades if m.gains is None else gain_values(grades, m.gain, m.gains)
                self._cache[key] = ideal_from_counts(
                    self.counts,
                    self.lo,
                    lambda x: gain_values(x, m.gain, m.gains, shift),
                    m.k,
                    order,
                )
            else:
                s = self.shift(m)
                shift = s[self.j_row] if s.ndim else s
                self._cache[key] = ideal_gains(
                    gain_values(self.j_rel, m.gain, m.gains, shift), self.j_row, self.nq
                )
        return self._cache[key]


# -- rank kernels as the registry calls them: (inputs, metric) -> one value per query ------------
def rank_recall(x: RankInputs, m: Options) -> np.ndarray:
    return recall(x.relevant(m.rel), x.num_rel(m.rel), m.k)


def rank_hit(x: RankInputs, m: Options) -> np.ndarray:
    return hit(x.relevant(m.rel), m.k)


def rank_precision(x: RankInputs, m: Options) -> np.ndarray:
    if m.k is None:  # pragma: no cover - the registry declares P's cutoff required
        raise UsageError("P needs a cutoff, e.g. P@5")
    return precision(x.relevant(m.rel), m.k)


def rank_rr(x: RankInputs, m: Options) -> np.ndarray:
    return reciprocal_rank(x.relevant(m.rel), m.k)


def rank_ap(x: RankInputs, m: Options) -> np.ndarray:
    return average_precision(x.relevant(m.rel), x.num_rel(m.rel), m.k)


def rank_rprec(x: RankInputs, m: Options) -> np.ndarray:
    return r_precision(x.relevant(m.rel), x.num_rel(m.rel))


def rank_ndcg(x: RankInputs, m: Options) -> np.ndarray:
    g = _cut(x.grades, m.k)
    lo, hi = (int(g.min()), int(g.max())) if g.size else (0, 0)
    shift = x.shift(m)
    if hi - lo >= COUNTED_GRADES or shift.ndim:  # many grades, or each query its own shift
        return ndcg(x.gains(m), x.ideal(m), m.k)
    # the gain of each grade present, then summed rank by rank: the same products in the same
    # order as _rank_sum over the gains matrix, without building it
    lut = gain_values(lo + np.arange(hi - lo + 1), m.gain, m.gains, shift)
    dcg = np.zeros(g.shape[0])
    for i, d in enumerate(discounts(g.shape[1]).tolist()):
        dcg += lut[g[:, i] - lo] * d
    return _safe_div(dcg, _rank_sum(_cut(x.ideal(m), m.k)))


# -- span kernels ---------------------------------------------------------------------------------
def per_group_min(group: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Per group 0..n-1: the smallest of its ``values`` (inf for a group with none)."""
    out = np.full(n, np.inf)
    np.minimum.at(out, group, values)
    return out


@dataclass(frozen=True)
class SpanInputs:
    """Evidence spans of the scored questions: ``question`` (question row of each span),
    ``grade``, ``required``, ``found`` (the span's found rank, inf when never) and ``cutoff``
    (per question: k, the effective k of a token budget, or inf for the whole list)."""

    question: np.ndarray
    grade: np.ndarray
    required: np.ndarray
    found: np.ndarray
    cutoff: np.ndarray
    nq: int

    @property
    def within(self) -> np.ndarray:
        """Per span: found within its question's cutoff."""
        return np.isfinite(self.found) & (self.found <= self.cutoff[self.question])

    def counts(self, rel: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per question: spans with grade >= ``rel``, and how many of them are found; and the
        per-span mask of those spans."""
        relevant = self.grade >= rel
        n_rel = np.bincount(self.question, weights=relevant, minlength=self.nq)
        n_found = np.bincount(self.question, weights=relevant & self.within, minlength=self.nq)
        return n_rel, n_found, relevant


def span_recall(x: SpanInputs, m: Options) -> np.ndarray:
    n_rel, n_found, _ = x.counts(m.rel)
    return _safe_div(n_found, n_rel)


def span_hit(x: SpanInputs, m: Options) -> np.ndarray:
    _, n_found, _ = x.counts(m.rel)
    return (n_found > 0).astype(np.float64)


def span_rr(x: SpanInputs, m: Options) -> np.ndarray:
    relevant = x.grade >= m.rel
    best = per_group_min(x.question, np.where(relevant & x.within, x.found, np.inf), x.nq)
    return np.where(np.isfinite(best), 1.0 / np.where(np.isfinite(best), best, 1.0), 0.0)


def span_all_required(x: SpanInputs, m: Options) -> np.ndarray:
    """1 when every required span is found; a question with no required span needs any one."""
    q = x.question
    has_req = np.bincount(q, weights=x.required, minlength=x.nq) > 0
    need = np.where(has_req[q], x.required, True)
    n_need = np.bincount(q, weights=need, minlength=x.nq)
    n_got = np.bincount(q, weights=need & x.within, minlength=x.nq)
    return np.where(has_req, n_got >= n_need, n_got >= 1).astype(np.float64)


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den > 0)
    return out
