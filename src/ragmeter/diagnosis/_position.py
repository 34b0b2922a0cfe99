"""Lost in the middle: answer correctness by where the evidence sits in the assembled context.

Accuracy can depend on where in a long context the relevant passage sits (Liu et al., "Lost in
the Middle", 2024), which is why more context is not a free gain. This module measures that on
your own answers, so a context-order experiment has a reason before it is run.

Definitions (also in docs/answers.md):

- **the assembled context** of a question is the run's ranked chunks cut at the prompt ``k``
  or at a token ``budget`` (the same assembly as every ``@k`` / ``@budget=B`` span metric, see
  :mod:`ragmeter.labels._budget`), or the whole list when neither is given (e.g. a run built
  from the answers' own ``context`` ids, :func:`contexts_run`). Its length ``k_eff`` is the
  number of chunks in it: ``min(k, retrieved)``, or the budget's effective k.
- **evidence in context**: every required span is found within the context (span-level
  ``AllR`` = 1), the definition of the retrieval-by-answer table and ``ragmeter diagnose``.
  Only those questions are placed; the others are counted as excluded.
- **position** of the evidence: the rank at which a span becomes found (the union of the
  context's chunks up to that rank covers ``cover`` of it), so it comes from the span metrics'
  reciprocal rank: ``"first"`` is the first found span of any grade (``1 / RR@cut``),
  ``"best"`` the first found span of the highest grade found (``1 / RR(rel=g)@cut``).
- **bins**: ``first`` = position 1; ``last`` = position ``k_eff``; ``middle`` = the rest. A
  one-chunk context is ``first`` only; a two-chunk one has no middle.
- **outcome**: ``correct`` and ``ok`` (answer correct and supported) of
  :func:`ragmeter.answers.check_answers`, the same as the answers checks and the table. A
  correct answer whose support is unknown (``ok`` None) is counted apart, never as supported
  nor as wrong; the supported rate is over the answers whose verdict is known. Check the
  answers against the same prompt contexts (``check_answers(..., contexts=...)``) so that a
  citation outside the context counts as unsupported.

Questions are not randomised over positions: a question whose evidence ranks low may also be a
harder question. A gap between bins is a reason to run the experiment (reorder the same context,
e.g. best passage first or last, and compare answers paired), not its result; bins under
``MIN_BIN`` questions give a direction, not proof.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .._errors import NotFoundError, UsageError
from ..metrics import Metric
from ._diagnose import Thresholds

BINS = ("first", "middle", "last")
EVIDENCE = ("first", "best")
#: bins with fewer questions give a direction, not proof (the diagnosis' slice minimum).
MIN_BIN = Thresholds().min_slice
_Z95 = 1.959963984540054
SMALL_NOTE = f"bins under {MIN_BIN} questions give a direction, not proof"
ORDER_NOTE = (
    "questions are not randomised over positions, so confirm with a context-order "
    "experiment (reorder the same contexts, compare answers paired)"
)


def position_bin(position: int, context_len: int) -> str:
    """``first`` (position 1), ``last`` (position ``context_len``) or ``middle``."""
    if not 1 <= position <= context_len:
        raise UsageError(f"position {position} is outside a context of {context_len} chunk(s)")
    if position == 1:
        return "first"
    return "last" if position == context_len else "middle"


def wilson(k: int, n: int) -> tuple[float, float] | None:
    """95% Wilson score interval of a rate k/n (None when n = 0): honest at small n."""
    if n == 0:
        return None
    p, z2 = k / n, _Z95 * _Z95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = _Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class EvidencePosition:
    """Where one question's evidence sits in its assembled context."""

    id: str
    in_context: bool
    context_len: int
    position: int | None = None  # None when the evidence is not in the context
    grade: int | None = None  # grade of the span the position belongs to

    @property
    def bin(self) -> str | None:
        return None if self.position is None else position_bin(self.position, self.context_len)


def evidence_positions(
    golden: Any,
    chunking: Any,
    run: Any,
    *,
    k: int | None = None,
    budget: int | None = None,
    evidence: str = "first",
    cover: float | None = None,
    ties: Literal["trec", "given"] = "trec",
) -> dict[str, EvidencePosition]:
    """Per answerable question in the golden set: is the evidence in the context, and where.

    Scored with :func:`ragmeter.labels.evaluate_spans` (``AllR`` and ``RR(rel=g)`` at the cut),
    so "found" and the budget assembly are exactly the span metrics'. ``run`` is anything
    ``evaluate_spans`` accepts (a path, a Run, ``{qid: {chunk_id: score}}``).
    """
    from ..labels import DEFAULT_COVER, evaluate_spans, questions_of

    if evidence not in EVIDENCE:
        raise UsageError(f"evidence must be 'first' or 'best', got '{evidence}'")
    if k is not None and budget is not None:
        raise UsageError("give the prompt's k or its token budget, not both")
    questions = [q for q in questions_of(golden) if q.evidence]
    grades = sorted({e.grade for q in questions for e in q.evidence}, reverse=True)
    all_required = Metric("AllR", k, budget)
    rr = {g: Metric("RR", k, budget, rel=max(g, 1)) for g in grades}
    e = evaluate_spans(
        golden,
        chunking,
        run,
        [all_required, *rr.values()],
        cover=DEFAULT_COVER if cover is None else cover,
        ties=ties,
    )
    allr = e.column(all_required)
    cols = {g: e.column(m) for g, m in rr.items()}
    out: dict[str, EvidencePosition] = {}
    for q in questions:
        if q.id not in allr:  # not in the run (missing="zero" keeps them; defensive)
            out[q.id] = EvidencePosition(q.id, False, 0)
            continue
        d = e.details[q.id]
        n = int(d["n_retrieved"])
        k_eff = (
            min(k, n)
            if k is not None
            else int(d["effective_k"][str(budget)])
            if budget is not None
            else n
        )
        if allr[q.id] < 1.0 - 1e-9:
            out[q.id] = EvidencePosition(q.id, False, k_eff)
            continue
        ranks = {g: round(1.0 / v) for g, v in ((g, cols[g][q.id]) for g in grades) if v > 0}
        if evidence == "best":
            grade = max(ranks)
            pos = ranks[grade]
        else:
            pos = min(ranks.values())
            grade = max(g for g, r in ranks.items() if r == pos)
        out[q.id] = EvidencePosition(q.id, True, k_eff, pos, grade)
    return out


def contexts_run(answers: Any) -> dict[str, dict[str, float]]:
    """A run ``{qid: {chunk_id: score}}`` from the answers' ``context`` ids, in prompt order
    (descending scores), for :func:`evidence_positions` without ``k``/``budget``."""
    out: dict[str, dict[str, float]] = {}
    for a in getattr(answers, "answers", answers):
        if a.context:
            ids = list(dict.fromkeys(a.context))
            out[a.id] = {cid: float(len(ids) - i) for i, cid in enumerate(ids)}
    return out


@dataclass(frozen=True)
class QuestionOutcome:
    """One placed question: its evidence position and its answer's outcome."""

    id: str
    position: int
    context_len: int
    bin: str
    grade: int | None
    correct: bool
    ok: bool | None  # None: correct, support unknown


@dataclass(frozen=True)
class PositionGroup:
    """Outcome counts of the questions in one bin (``first``/``middle``/``last``) or at one
    raw position (``"1"``, ``"2"``, ...)."""

    key: str
    n: int
    correct: int
    ok: int
    support_unknown: int = 0  # correct answers whose support could not be checked

    @property
    def ok_known(self) -> int:
        """Questions whose correct-and-supported verdict is known (the rate's denominator)."""
        return self.n - self.support_unknown

    @property
    def correct_rate(self) -> float | None:
        return self.correct / self.n if self.n else None

    @property
    def ok_rate(self) -> float | None:
        return self.ok / self.ok_known if self.ok_known else None

    @property
    def ok_interval(self) -> tuple[float, float] | None:
        return wilson(self.ok, self.ok_known)

    @property
    def small(self) -> bool:
        """Fewer than MIN_BIN known verdicts: the rate gives a direction, not proof."""
        return self.ok_known < MIN_BIN

    def to_dict(self) -> dict[str, Any]:
        ci = self.ok_interval
        return {
            "key": self.key,
            "n": self.n,
            "correct": self.correct,
            "ok": self.ok,
            "ok_known": self.ok_known,
            "support_unknown": self.support_unknown,
            "correct_rate": self.correct_rate,
            "ok_rate": self.ok_rate,
            "ok_ci95": list(ci) if ci else None,
            "small": self.small,
        }


@dataclass(frozen=True)
class PositionReport:
    """Answer outcomes by evidence position, with what was left out and why."""

    questions: tuple[QuestionOutcome, ...]
    bins: tuple[PositionGroup, ...]
    positions: tuple[PositionGroup, ...]
    excluded: Mapping[str, int]
    evidence: str = "first"
    context: str = "k"  # e.g. "k = 4", "budget = 1200 tokens", "the answers' context ids"
    variant: str | None = None
    golden_version: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def n(self) -> int:
        return len(self.questions)

    def group(self, key: str) -> PositionGroup:
        for g in (*self.bins, *self.positions):
            if g.key == key:
                return g
        raise NotFoundError(
            f"no group {key!r}; groups: {', '.join(g.key for g in (*self.bins, *self.positions))}"
        )

    def to_dict(self) -> dict[str, Any]:
        header, rows = self.csv_rows(per_question=True)
        return {
            "variant": self.variant,
            "golden_version": self.golden_version,
            "context": self.context,
            "evidence": self.evidence,
            "n": self.n,
            "bins": [b.to_dict() for b in self.bins],
            "positions": [p.to_dict() for p in self.positions],
            "excluded": dict(self.excluded),
            "notes": list(self.notes),
            "min_bin": MIN_BIN,
            "questions": [dict(zip(header, row, strict=True)) for row in rows],
        }

    def csv_rows(self, *, per_question: bool = False) -> tuple[list[str], list[list[object]]]:
        """The header and rows of ``answers position --format csv``: one row per bin and per
        position, or with ``per_question`` one per placed question."""
        if per_question:
            header = ["id", "position", "context_len", "bin", "grade", "correct", "ok"]
            return header, [
                [q.id, q.position, q.context_len, q.bin, q.grade, q.correct, q.ok]
                for q in self.questions
            ]
        header = [
            *("group", "key", "n", "correct", "ok", "support_unknown"),
            *("ok_rate", "ok_ci_low", "ok_ci_high"),
        ]
        rows: list[list[object]] = []
        for group, groups in (("bin", self.bins), ("position", self.positions)):
            for g in groups:
                ci = g.ok_interval
                rows.append(
                    [
                        *(group, g.key, g.n, g.correct, g.ok, g.support_unknown),
                        "" if g.ok_rate is None else f"{g.ok_rate:.4f}",
                        *(("", "") if ci is None else (f"{ci[0]:.4f}", f"{ci[1]:.4f}")),
                    ]
                )
        return header, rows


def position_table(
    positions: Mapping[str, EvidencePosition],
    report: Any,
    *,
    evidence: str = "first",
    context: str = "k",
) -> PositionReport:
    """Join evidence positions with an :class:`~ragmeter.answers.AnswerReport`'s outcomes.

    A question is placed when its evidence is in the context and its answer was scored
    (``correct`` is not None); everything else is counted in ``excluded``.
    """
    checks = report.by_id
    golden_ids = set(positions)
    excluded = {"not_in_context": 0, "no_answer": 0, "not_scored": 0}
    placed: list[QuestionOutcome] = []
    for qid in sorted(positions):
        p = positions[qid]
        c = checks.get(qid)
        if p.position is None:
            excluded["not_in_context"] += 1
        elif c is None:
            excluded["no_answer"] += 1
        elif c.correct is None:
            excluded["not_scored"] += 1
        else:
            placed.append(
                QuestionOutcome(
                    qid,
                    p.position,
                    p.context_len,
                    p.bin or "",
                    p.grade,
                    bool(c.correct),
                    None if c.ok is None else bool(c.ok),
                )
            )
    excluded["unanswerable"] = sum(
        1 for c in report.checks if not c.answerable and c.id not in golden_ids
    )
    bins = tuple(_group(b, [q for q in placed if q.bin == b]) for b in BINS)
    top = max((q.context_len for q in placed), default=0)
    pos = tuple(_group(str(i), [q for q in placed if q.position == i]) for i in range(1, top + 1))
    notes = [SMALL_NOTE, ORDER_NOTE]
    if placed and all(q.context_len == 1 for q in placed):
        notes.append("every context holds one chunk: all evidence is 'first'")
    return PositionReport(
        tuple(placed),
        bins,
        pos,
        excluded,
        evidence,
        context,
        getattr(report, "variant", None),
        getattr(report, "golden_version", None),
        tuple(notes),
    )


def _group(key: str, qs: Iterable[QuestionOutcome]) -> PositionGroup:
    qs = list(qs)
    return PositionGroup(
        key,
        len(qs),
        sum(q.correct for q in qs),
        sum(q.ok is True for q in qs),
        sum(q.ok is None for q in qs),
    )


def lost_in_the_middle(
    golden: Any,
    chunking: Any,
    run: Any,
    report: Any,
    *,
    k: int | None = None,
    budget: int | None = None,
    evidence: str = "first",
    cover: float | None = None,
) -> PositionReport:
    """:func:`evidence_positions` joined with an answers report by :func:`position_table`."""
    positions = evidence_positions(
        golden, chunking, run, k=k, budget=budget, evidence=evidence, cover=cover
    )
    context = (
        f"k = {k}"
        if k is not None
        else f"budget = {budget} tokens"
        if budget is not None
        else "the whole ranked list"
    )
    return position_table(positions, report, evidence=evidence, context=context)
