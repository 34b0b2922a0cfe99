"""The report job (``ragmeter report``): what the HTML report needs from the store. Which
finished runs the selectors name (baseline first), which stored answer set each run is
diagnosed with, the retrieval steps of a run without one, and the judge validations that label
the reported questions. The lab builds the report's pages from these (``lab/_report.py``,
``lab/_report_data.py``); the command line only parses its options and writes the file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from .._errors import NotFoundError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ..diagnosis import Diagnosis
    from ..store import AnswerSetRow, JudgeValidationRow, RunRecord, Store

__all__ = [
    "AnsweredRun",
    "JudgeValidations",
    "answered_runs",
    "judge_validations_for",
    "resolve_runs",
    "retrieval_diagnosis",
]

T = TypeVar("T")


def resolve_runs(store: Store, selectors: Sequence[str]) -> list[RunRecord]:
    """The finished runs ``selectors`` name, baseline first, without repeats.

    A selector is a stored run id (``12``, ``run:12``) or an experiment name (every finished run
    of it, its baseline first). The first run named is the report's baseline.

    These are not :meth:`.refs.RunRef.parse`'s rules, on purpose: a report shows stored runs
    only, so any other text is an experiment name (never a file: a number is a run id even when
    a file of that name is here), and it shows every level a run has (``run:12:chunk`` names no
    level here, it is looked up as an experiment).
    """
    if not selectors:
        raise UsageError("name at least one stored run (12, run:12) or experiment")
    out: list[RunRecord] = []
    seen: set[int] = set()
    everything: list[RunRecord] | None = None
    for spec in selectors:
        text = str(spec).strip()
        rid = text[4:] if text.startswith("run:") else text
        if rid.isascii() and rid.isdigit():
            run = store.run(int(rid))
            if run.status != "finished":
                raise UsageError(f"run {run.id} is {run.status}: a report shows finished runs only")
            found = [run]
        else:
            if everything is None:
                everything = store.runs(status="finished")
            found = [r for r in everything if r.experiment == text]
            if not found:
                names = sorted({r.experiment for r in everything})
                hint = f" (stored experiments: {', '.join(names[:10])})" if names else ""
                raise NotFoundError(
                    f"'{text}' is neither a stored run id nor an experiment with finished "
                    f"runs{hint}"
                )
            # oldest first, the experiment's newest baseline in front
            found = sorted(found, key=lambda r: r.id)
            bases = [r for r in found if r.is_baseline]
            if bases:
                found = [bases[-1], *[r for r in found if r is not bases[-1]]]
        for r in found:
            if r.id not in seen:
                seen.add(r.id)
                out.append(r)
    return out


@dataclass(frozen=True)
class AnsweredRun:
    """A reported run and the stored answer set it is diagnosed with (its newest)."""

    run: RunRecord
    answers: AnswerSetRow


def answered_runs(store: Store, runs: Sequence[RunRecord]) -> list[AnsweredRun]:
    """For each of ``runs`` an answer set is stored for, its newest one (``ragmeter diagnose
    --answers``'s run: the set's own run, else the run its variant name matches, else its
    golden version's baseline), in the order the sets were found (newest first). Sets whose run
    was deleted are left out."""
    from .diagnose import run_for_answers

    wanted = {r.id for r in runs}
    versions = {r.golden_version for r in runs}
    found: dict[int, AnsweredRun] = {}
    for a in store.answer_sets():  # newest first: the first set found for a run is shown
        if a.golden_version not in versions:
            continue
        try:
            run = run_for_answers(store, a, None)
        except NotFoundError:  # the run it was checked against was deleted
            continue
        if run is None or run.id not in wanted or run.id in found:
            continue
        found[run.id] = AnsweredRun(run=run, answers=a)
    return list(found.values())


def retrieval_diagnosis(store: Store, run: RunRecord) -> Diagnosis | None:
    """``ragmeter diagnose`` (:func:`ragmeter.workflows.diagnose.diagnose`) on what the store
    holds for ``run`` without answers: recall at the prompt k and at the headroom k from its
    stored evaluations (the retrieval steps of the path and the one next experiment); None when
    no stored evaluation has a recall. When the recall read at the prompt has no larger cutoff
    (AllR at one k), the largest of several R@k is the headroom. The retrieval-by-answer grid
    needs an answer set."""
    from ..diagnosis import pick_recall
    from .diagnose import diagnose

    evals = [store.evaluation(run.id, lvl) for lvl in run.levels]
    if pick_recall(evals, None, "prompt") is None:
        return None
    headroom = None
    if pick_recall(evals, None, "headroom") is None:
        ks = sorted(
            (m for e in evals for m in e.metrics if m.name == "R" and m.k),
            key=lambda m: m.k or 0,
        )
        if len(ks) > 1:
            headroom = str(ks[-1])
    found = diagnose(evaluations=evals, headroom_metric=headroom, golden_version=run.golden_version)
    return found.diagnosis


@dataclass(frozen=True)
class JudgeValidations(Generic[T]):
    """The newest stored judge validation that labels reported questions, as ``lay_out`` gave
    it, and the older such ones (newest first)."""

    newest: T
    older: list[JudgeValidationRow]


def judge_validations_for(
    store: Store, versions: Sequence[str | None], lay_out: Callable[[int], T]
) -> JudgeValidations[T] | None:
    """The stored judge validations that label questions of the golden sets ``versions`` (a
    validation names no run, so its question ids tell), the newest laid out by
    ``lay_out(validation id)``; None when there is none. A damaged validation (or one
    ``lay_out`` finds damaged) is left out with a warning naming it, as listings do."""
    from ..store import DamagedRowError, skipped

    qids: set[str] = set()
    for v in {v for v in versions if v}:
        try:
            qids |= {q.id for q in store.golden(v)}
        except NotFoundError:
            continue
    if not qids:
        return None
    ours: list[JudgeValidationRow] = []
    newest: list[T] = []  # the newest, once laid out
    for row in store.judge_validations():  # newest first
        try:
            labels = store.judge_validation(int(row.id)).labels
            if not any(_labels_question(x, qids) for x in labels):
                continue
            if not newest:
                newest.append(lay_out(int(row.id)))
        except DamagedRowError as exc:  # one damaged validation is left out, as listings do
            skipped(exc)
            continue
        ours.append(row)
    if not newest:
        return None
    return JudgeValidations(newest=newest[0], older=ours[1:])


def _labels_question(label: object, qids: set[str]) -> bool:
    return isinstance(label, Mapping) and str(label.get("id")) in qids
