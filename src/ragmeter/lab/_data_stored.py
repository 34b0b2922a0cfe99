"""What ``answers check`` and ``judge validate`` recorded, as the lab's pages take it: the
store's typed records (:meth:`ragmeter.store.Store.answer_sets` and the like, which leave a
damaged row out with a warning naming it; each also reads as the mapping of its columns)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..store import (
        AnswerSetRow,
        JudgeValidationRow,
        Store,
        StoredAnswerSet,
        StoredJudgeValidation,
    )


def answer_sets(store: Store, golden_version: str | None = None) -> list[AnswerSetRow]:
    """Stored answer sets, newest first: id, name, golden version, answers, source, when."""
    return list(store.answer_sets(golden_version=golden_version))


def answer_set(store: Store, set_id: int | str) -> StoredAnswerSet:
    """One answer set: its headline row, the answers as stored and the report it was given."""
    return store.answer_set(set_id)


def judge_validations(store: Store) -> list[JudgeValidationRow]:
    """Stored judge validations, newest first, with kappa and agreement from their report."""
    return list(store.judge_validations())


def judge_validation(store: Store, vid: int | str) -> StoredJudgeValidation:
    """One judge validation: judge, prompt, the labels (with the human label) and the report."""
    return store.judge_validation(vid)
