"""Repeats of a generating experiment (``repeat = N`` in ``[generator]`` and/or ``[judge]``):
every variant's answers made (or judged) N times, and what moves between the repeats.

Repeat 0 is the run's headline: its answers, files, checks and comparison are exactly those of
a run without repeats. Repeat r >= 1 asks the generator again with ``seed`` + r (where the
generator's parameters carry a seed) and/or the judge again with ``seed = r``, each cached
apart, and its verdicts ("answer correct and supported", 1/0 per question) are kept here:

- per question: the verdict of each repeat, the share of repeats it was correct and supported,
  and the spread (population standard deviation) of each judge score over the repeats;
- the **flaky** questions: those whose verdict is not the same in every repeat;
- against the baseline (:class:`RepeatNoise`): the difference of each repeat (repeat r of the
  variant paired with repeat r of the baseline) and their range, the questions fixed / broken
  in every repeat, and how many of the headline's fixed and broken questions are flaky on
  either side: the part of the headline that the repeat-to-repeat noise can explain.

Nothing here calls a model: :class:`._generate.Answering` makes the repeats.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ..answers.report import AnswerReport
    from ..paired import StableChanges

__all__ = [
    "REPEATS_DIR",
    "RepeatNoise",
    "Repeats",
    "noise",
    "read_repeat_verdicts",
    "repeats_of",
]

#: the folder under ``OUTPUT/<variant>/`` that holds repeat r's files, as ``repeats/<r>/``
REPEATS_DIR = "repeats"

Verdicts = Mapping[str, "float | None"]


@dataclass(frozen=True)
class RepeatNoise:
    """A variant against the baseline over the repeats (see the module docstring)."""

    deltas: tuple[float | None, ...]  # each repeat's mean difference (None: no common question)
    fixed: tuple[int, ...]  # each repeat's fixed count
    broken: tuple[int, ...]
    movers: tuple[str, ...]  # the headline's (repeat 0's) fixed and broken questions
    flaky_movers: tuple[str, ...]  # those of them flaky on either side
    stable: StableChanges

    @property
    def delta_range(self) -> tuple[float, float] | None:
        known = [d for d in self.deltas if d is not None]
        return (min(known), max(known)) if known else None

    def note(self) -> str:
        """The noise in one sentence."""
        lo_hi = self.delta_range
        spread = (
            ""
            if lo_hi is None
            else f"; over the {len(self.deltas)} repeats the difference ranged from "
            f"{lo_hi[0]:+.3f} to {lo_hi[1]:+.3f}"
        )
        return (
            f"{len(self.flaky_movers)} of the {len(self.movers)} fixed and broken questions "
            f"are flaky (their verdict changes across repeats){spread}; fixed in every repeat "
            f"{len(self.stable.fixed)}, broken in every repeat {len(self.stable.broken)}"
        )

    def to_dict(self) -> dict[str, Any]:
        lo_hi = self.delta_range
        return {
            "delta": [None if d is None else round(d, 6) for d in self.deltas],
            "delta_range": None if lo_hi is None else [round(lo_hi[0], 6), round(lo_hi[1], 6)],
            "fixed": list(self.fixed),
            "broken": list(self.broken),
            "movers": len(self.movers),
            "flaky_movers": list(self.flaky_movers),
            "stable_fixed": list(self.stable.fixed),
            "stable_broken": list(self.stable.broken),
            "note": self.note(),
        }


@dataclass(frozen=True)
class Repeats:
    """One variant's verdicts and judge scores over its repeats."""

    generator_repeat: int
    judge_repeat: int
    seeds: tuple[int | None, ...]  # the generator's seed of each repeat (None: no seed)
    questions: tuple[str, ...]  # the golden set's order
    verdicts: tuple[Verdicts, ...]  # per repeat: question -> 1.0 / 0.0 (None: not scored)
    scores: tuple[Mapping[str, Verdicts], ...]  # per repeat: judge metric -> question -> score
    model_calls: tuple[int, ...]  # answers that reached the generator, per repeat
    vs_baseline: RepeatNoise | None = None
    #: judgements that failed, per repeat (counted as failed, never as passes)
    judge_failed: tuple[int, ...] = ()

    @property
    def n(self) -> int:
        return len(self.verdicts)

    def flaky(self) -> tuple[str, ...]:
        from ..paired import flaky_questions

        found = set(flaky_questions(self.verdicts))
        return tuple(q for q in self.questions if q in found)

    def of(self, qid: str) -> list[float | None]:
        return [v.get(qid) for v in self.verdicts]

    def share_ok(self, qid: str) -> float | None:
        """The share of the repeats that scored ``qid`` in which it was correct and supported."""
        known = [v for v in self.of(qid) if v is not None]
        return sum(known) / len(known) if known else None

    def metrics(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m for s in self.scores for m in s))

    def score_spread(self, metric: str, qid: str) -> float | None:
        """Population standard deviation of a judge score over the repeats that scored it
        (None with fewer than two)."""
        known = [s.get(metric, {}).get(qid) for s in self.scores]
        return _pstdev([x for x in known if x is not None])

    def ok_rates(self) -> list[float | None]:
        out: list[float | None] = []
        for v in self.verdicts:
            known = [x for x in v.values() if x is not None]
            out.append(sum(known) / len(known) if known else None)
        return out

    def to_dict(self) -> dict[str, Any]:
        metrics = self.metrics()
        rows = []
        for q in self.questions:
            row: dict[str, Any] = {
                "id": q,
                "verdicts": [None if x is None else int(x) for x in self.of(q)],
                "share_ok": _round(self.share_ok(q)),
            }
            if metrics:
                row["scores"] = {
                    m: {
                        "values": [s.get(m, {}).get(q) for s in self.scores],
                        "std": _round(self.score_spread(m, q)),
                    }
                    for m in metrics
                }
            rows.append(row)
        return {
            "n": self.n,
            "generator_repeat": self.generator_repeat,
            "judge_repeat": self.judge_repeat,
            "seeds": list(self.seeds),
            "model_calls": list(self.model_calls),
            "judge_failed": list(self.judge_failed),
            "ok_rate": [_round(x) for x in self.ok_rates()],
            "flaky": list(self.flaky()),
            "vs_baseline": None if self.vs_baseline is None else self.vs_baseline.to_dict(),
            "questions": rows,
        }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def _pstdev(xs: Sequence[float]) -> float | None:
    if len(xs) < 2:
        return None
    mean = sum(xs) / len(xs)
    return math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs))


def verdicts_of(report: AnswerReport) -> dict[str, float | None]:
    """Question -> "correct and supported" as 1.0 / 0.0, None where it could not be scored."""
    return {c.id: None if c.ok is None else float(bool(c.ok)) for c in report.checks}


def scores_of(report: AnswerReport) -> dict[str, dict[str, float | None]]:
    """Judge metric -> question -> score (None for a failed judgement)."""
    out: dict[str, dict[str, float | None]] = {}
    for c in report.checks:
        for name, s in c.judged.items():
            out.setdefault(name, {})[c.id] = s.score if s.ok else None
    return out


def repeats_of(
    reports: Sequence[AnswerReport],
    *,
    questions: Sequence[str],
    generator_repeat: int,
    judge_repeat: int,
    seeds: Sequence[int | None],
    model_calls: Sequence[int],
) -> Repeats:
    """The :class:`Repeats` of one variant's checked repeats (repeat 0 first)."""
    return Repeats(
        generator_repeat,
        judge_repeat,
        tuple(seeds),
        tuple(questions),
        tuple(verdicts_of(r) for r in reports),
        tuple(scores_of(r) for r in reports),
        tuple(model_calls),
        judge_failed=tuple(
            sum(1 for c in r.checks for s in c.judged.values() if not s.ok) for r in reports
        ),
    )


def noise(
    baseline: Sequence[Verdicts], candidate: Sequence[Verdicts], questions: Sequence[str]
) -> RepeatNoise:
    """Repeat r of ``candidate`` against repeat r of ``baseline``, on ``questions`` (those the
    headline compares): each repeat's difference and fixed / broken counts (on the questions
    both sides scored in that repeat), the headline's movers and which of them are flaky, and
    the questions fixed / broken in every repeat."""
    from ..paired import stable_changes

    deltas: list[float | None] = []
    fixed: list[int] = []
    broken: list[int] = []
    for b, c in zip(baseline, candidate, strict=True):
        pairs = [
            (float(bv), float(cv))
            for q in questions
            if (bv := b.get(q)) is not None and (cv := c.get(q)) is not None
        ]
        deltas.append(sum(cv - bv for bv, cv in pairs) / len(pairs) if pairs else None)
        fixed.append(sum(1 for bv, cv in pairs if cv > bv))
        broken.append(sum(1 for bv, cv in pairs if cv < bv))
    b0, c0 = baseline[0], candidate[0]
    movers = tuple(
        q
        for q in questions
        if (bv := b0.get(q)) is not None and (cv := c0.get(q)) is not None and bv != cv
    )
    stable = stable_changes(baseline, candidate, questions)
    flaky = set(stable.flaky)
    return RepeatNoise(
        tuple(deltas),
        tuple(fixed),
        tuple(broken),
        movers,
        tuple(q for q in movers if q in flaky),
        stable,
    )


def read_repeat_verdicts(path: str | Path) -> tuple[str, list[dict[str, float | None]]]:
    """The variant name and each repeat's verdicts (repeat 0 first) of an ``answer_check.json``
    written by ``ragmeter run`` with ``repeat`` over 1. UsageError naming the file when it is
    no such file, or holds one repeat only."""
    import json

    from .._errors import UsageError

    p = Path(path)
    need = (
        "--stable reads the answer_check.json of two variants of a `ragmeter run` with "
        "repeat >= 2 (OUTPUT/<variant>/answer_check.json)"
    )
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        raise UsageError(f"{need}; {path} is not one") from None
    if not isinstance(data, dict) or not isinstance(data.get("check"), dict):
        raise UsageError(f"{need}; {path} is not one")
    rep = data.get("repeats")
    if not isinstance(rep, dict) or not isinstance(rep.get("questions"), list):
        raise UsageError(
            f"{path} holds one repeat only (the run had repeat = 1): {need}, or drop --stable"
        )
    n = rep.get("n")
    out: list[dict[str, float | None]] = [{} for _ in range(n if isinstance(n, int) else 0)]
    for row in rep["questions"]:
        verdicts = row.get("verdicts") if isinstance(row, dict) else None
        if not isinstance(verdicts, list) or len(verdicts) != len(out):
            raise UsageError(f"{path}: repeats.questions holds a row without {len(out)} verdicts")
        for i, v in enumerate(verdicts):
            if v is not None and v not in (0, 1):
                raise UsageError(f"{path}: question {row.get('id')}: verdict {v!r} is not 0 or 1")
            out[i][str(row["id"])] = None if v is None else float(v)
    if len(out) < 2:
        raise UsageError(f"{path} holds one repeat only: {need}, or drop --stable")
    return str(data.get("variant") or p.parent.name), out
