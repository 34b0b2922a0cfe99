"""What ``answers check`` and ``judge validate`` recorded, as the lab's pages take it: the
store's records (:meth:`ragmeter.store.Store.answer_sets` and the like, which leave a damaged row
out with a warning naming it) as plain dicts of their columns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Store


def answer_sets(store: Store, golden_version: str | None = None) -> list[dict[str, Any]]:
    """Stored answer sets, newest first: id, name, golden version, answers, source, when."""
    return [a.to_dict() for a in store.answer_sets(golden_version=golden_version)]


def answer_set(store: Store, set_id: int | str) -> dict[str, Any]:
    """One answer set: its headline row, the answers as stored and the report it was given."""
    return store.answer_set(set_id).to_dict()


def judge_validations(store: Store) -> list[dict[str, Any]]:
    """Stored judge validations, newest first, with kappa and agreement from their report."""
    return [v.to_dict() for v in store.judge_validations()]


def judge_validation(store: Store, vid: int | str) -> dict[str, Any]:
    """One judge validation: judge, prompt, the labels (with the human label) and the report."""
    return store.judge_validation(vid).to_dict()
