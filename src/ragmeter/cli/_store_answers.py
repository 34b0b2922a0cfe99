"""What ``answers check`` and ``judge validate`` record in the experiment store, said on stderr.

An answer set is kept with the context each answer was given (its own ``context``, else the
prompt context ``--run`` cut for it) and the report the check made. Judge labels are kept with
the human label of each question, the judge model that produced them and the prompt text, so
a later look can tell which prompt a judge's agreement belongs to
(:mod:`ragmeter.workflows.answers` records them; this module reports what was stored).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ._store_options import say_stored, store_errors

if TYPE_CHECKING:  # pragma: no cover
    from ..data import GoldenSet
    from ..store import Store
    from ..workflows.answers import CheckedAnswers, ValidatedJudge


def record_answer_sets(
    store: Store | None,
    checked: Sequence[CheckedAnswers],
    contexts: Mapping[str, Sequence[str]] | None,
    gold: GoldenSet,
) -> None:
    if store is None:
        return
    from ..workflows import answers

    with store_errors(store.url):
        ids = answers.record_answer_sets(store, checked, contexts, gold)
    say_stored(store, "answer set", ids)


def record_judge_validation(store: Store | None, validated: ValidatedJudge, source: Path) -> None:
    if store is None:
        return
    from ..workflows import answers

    with store_errors(store.url):
        vid = answers.record_judge_validation(store, validated, source)
    say_stored(store, "judge validation", [vid])
