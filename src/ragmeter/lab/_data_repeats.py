"""The repeats view's model (``/repeats?run=ID``): a generating run made with ``repeat = N``
(:mod:`ragmeter.experiments._repeats`), read from the store.

``ragmeter run`` stores a variant's answers once (repeat 0, the headline) and, in the answer
set's report (``report.generation.repeats``, the same dict ``answer_check.json`` holds), every
question's verdict ("answer correct and supported", 1/0) in each repeat, the judge scores of
each repeat, the flaky questions and, for a variant, the noise against the baseline: each
repeat's difference, the questions fixed / broken in every repeat, and how many of the
headline's fixed and broken questions are flaky. Nothing is recomputed here: the page shows
what the run measured, as ``gate --stable`` reads it from the files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._errors import NotFoundError

if TYPE_CHECKING:
    from ..store import RunRecord, Store


@dataclass(frozen=True)
class RepeatRow:
    """One repeat of the run: its seed, its rate of correct-and-supported answers, and against
    the baseline its difference and fixed / broken counts."""

    r: int
    seed: int | None
    ok_rate: float | None
    delta: float | None
    fixed: int | None
    broken: int | None


@dataclass(frozen=True)
class QuestionRepeats:
    """One question over the repeats: each repeat's verdict (1, 0, None: not scored), the share
    of repeats it passed, the judge scores' spread, and the baseline's verdicts."""

    qid: str
    verdicts: list[int | None]
    share_ok: float | None
    spread: dict[str, float | None]
    flaky: bool
    baseline: list[int | None] | None
    #: one of the headline's (repeat 0's) fixed or broken questions, flaky on either side
    flaky_mover: bool


@dataclass(frozen=True)
class Noise:
    """The run against its baseline over the repeats."""

    delta_range: tuple[float, float] | None
    movers: int
    flaky_movers: list[str]
    stable_fixed: list[str]
    stable_broken: list[str]
    note: str
    #: the headline difference (repeat 0) on "answer correct and supported" and its interval
    headline_delta: float | None
    headline_ci: tuple[float, float] | None
    headline_fixed: int | None
    headline_broken: int | None


@dataclass(frozen=True)
class RepeatsView:
    """Everything ``repeats.html`` shows (``v``)."""

    run_id: int
    run_name: str
    experiment: str
    answers_id: int
    baseline_run: int | None
    n: int
    generator_repeat: int
    judge_repeat: int
    rows: list[RepeatRow]
    flaky: list[QuestionRepeats]
    questions: list[QuestionRepeats]
    metrics: list[str]
    noise: Noise | None
    judge_failed: int


def stored_repeats(store: Store, run_id: int) -> tuple[int, Mapping[str, Any]] | None:
    """(answer set id, its ``repeats`` dict) of the newest answer set stored for the run
    ``run_id`` whose report holds repeats; None when none does."""
    from ..store import DamagedRowError

    sets = sorted((a for a in store.answer_sets() if a.run_id == run_id), key=lambda a: -a.id)
    for a in sets:
        try:
            report = store.answer_set(a.id).report or {}
        except DamagedRowError:  # a damaged set is said where it is listed; not read here
            continue
        generation = report.get("generation")
        repeats = generation.get("repeats") if isinstance(generation, Mapping) else None
        if isinstance(repeats, Mapping) and int(repeats.get("n") or 0) > 1:
            return a.id, repeats
    return None


def _headline(store: Store, set_id: int) -> Mapping[str, Any]:
    generation = (store.answer_set(set_id).report or {}).get("generation") or {}
    vs = generation.get("vs_baseline") if isinstance(generation, Mapping) else None
    return vs if isinstance(vs, Mapping) else {}


def _bits(values: Sequence[Any]) -> list[int | None]:
    return [None if v is None else int(v) for v in values]


def _baseline_run(store: Store, run: RunRecord) -> RunRecord | None:
    """The baseline run of ``run``'s invocation: the experiment's baseline recorded with it
    (the same experiment file, golden version and the newest one before or with it)."""
    if run.is_baseline:
        return None
    file = (run.config or {}).get("experiment")
    bases = [
        r
        for r in store.runs(golden_version=run.golden_version, status="finished")
        if r.is_baseline
        and r.experiment == run.experiment
        and (r.config or {}).get("experiment") == file
        and r.id < run.id
    ]
    return max(bases, key=lambda r: r.id) if bases else None


def repeats_context(store: Store, run_id: int) -> RepeatsView:
    """The repeats of the run ``run_id`` (NotFoundError when it has none stored)."""
    run = store.run(run_id)
    found = stored_repeats(store, run.id)
    if found is None:
        raise NotFoundError(
            f"run {run.id} ({run.name}) has no repeats stored: `ragmeter run` stores them for "
            "a generating experiment with repeat = N (N >= 2) in [generator] or [judge]"
        )
    set_id, rep = found
    base = _baseline_run(store, run)
    base_rep = stored_repeats(store, base.id) if base is not None else None
    base_q: Mapping[str, Any] = {}
    if base_rep is not None:
        base_q = {str(q.get("id")): q for q in base_rep[1].get("questions") or ()}
    vs = rep.get("vs_baseline") if isinstance(rep.get("vs_baseline"), Mapping) else None
    flaky_ids = [str(q) for q in rep.get("flaky") or ()]
    movers: set[str] = set()
    if vs is not None:
        movers = {*map(str, vs.get("flaky_movers") or ())}
    seeds = list(rep.get("seeds") or ())
    deltas = list(vs.get("delta") or ()) if vs else []
    fixed = list(vs.get("fixed") or ()) if vs else []
    broken = list(vs.get("broken") or ()) if vs else []
    rates = list(rep.get("ok_rate") or ())
    n = int(rep.get("n") or 0)

    def at(xs: list[Any], i: int) -> Any:
        return xs[i] if i < len(xs) else None

    rows = [
        RepeatRow(i, at(seeds, i), at(rates, i), at(deltas, i), at(fixed, i), at(broken, i))
        for i in range(n)
    ]
    questions = []
    metrics: list[str] = []
    for q in rep.get("questions") or ():
        qid = str(q.get("id"))
        scores = q.get("scores") or {}
        for m in scores:
            if m not in metrics:
                metrics.append(str(m))
        b = base_q.get(qid)
        questions.append(
            QuestionRepeats(
                qid=qid,
                verdicts=_bits(q.get("verdicts") or ()),
                share_ok=q.get("share_ok"),
                spread={str(m): (s or {}).get("std") for m, s in scores.items()},
                flaky=qid in flaky_ids,
                baseline=None if b is None else _bits(b.get("verdicts") or ()),
                flaky_mover=qid in movers,
            )
        )
    noise = None
    if vs is not None:
        head = _headline(store, set_id)
        ci = head.get("ci")
        lo_hi = vs.get("delta_range")
        noise = Noise(
            delta_range=None if not lo_hi else (float(lo_hi[0]), float(lo_hi[1])),
            movers=int(vs.get("movers") or 0),
            flaky_movers=[str(q) for q in vs.get("flaky_movers") or ()],
            stable_fixed=[str(q) for q in vs.get("stable_fixed") or ()],
            stable_broken=[str(q) for q in vs.get("stable_broken") or ()],
            note=str(vs.get("note") or ""),
            headline_delta=head.get("mean_delta"),
            headline_ci=None if not ci else (float(ci[0]), float(ci[1])),
            headline_fixed=head.get("fixed"),
            headline_broken=head.get("broken"),
        )
    return RepeatsView(
        run_id=run.id,
        run_name=run.name,
        experiment=run.experiment,
        answers_id=set_id,
        baseline_run=None if base is None else base.id,
        n=n,
        generator_repeat=int(rep.get("generator_repeat") or 1),
        judge_repeat=int(rep.get("judge_repeat") or 1),
        rows=rows,
        flaky=[q for q in questions if q.flaky or q.flaky_mover],
        questions=questions,
        metrics=metrics,
        noise=noise,
        judge_failed=sum(int(x or 0) for x in rep.get("judge_failed") or ()),
    )


@dataclass(frozen=True)
class RepeatsNote:
    """What the comparison page says of the repeats beside the comparison: the candidate's
    (else the baseline's) run with repeats, its flaky count and the noise note."""

    run_id: int
    n: int
    flaky: int
    note: str | None


def repeats_note(store: Store, base: int, cand: int) -> RepeatsNote | None:
    """The repeats beside a comparison of ``base`` and ``cand`` (None when neither run has
    repeats stored)."""
    for rid in (cand, base):
        found = stored_repeats(store, rid)
        if found is not None:
            rep = found[1]
            vs = rep.get("vs_baseline")
            note = str(vs.get("note")) if isinstance(vs, Mapping) and vs.get("note") else None
            return RepeatsNote(rid, int(rep.get("n") or 0), len(rep.get("flaky") or ()), note)
    return None
