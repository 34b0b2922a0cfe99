"""What ``answers check`` and ``judge validate`` record in the experiment store.

An answer set is kept with the context each answer was given (its own ``context``, else the
prompt context ``--run`` cut for it) and the report the check made. Judge labels are kept with
the human label of each question, the judge model that produced them and the prompt text, so
a later look can tell which prompt a judge's agreement belongs to.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import RagmeterError
from ._store_options import say_stored, store_errors

if TYPE_CHECKING:  # pragma: no cover
    from ..answers._schema import AnswerSet
    from ..answers.judge_validation import JudgeLabel
    from ..store import Store


def golden_version(gold: Any) -> str | None:
    """The golden set's version when it can be computed (a corpus or a lock file), else None."""
    try:
        return str(gold.version)
    except RagmeterError:
        return None


def record_answer_sets(
    store: Store | None,
    sets: Sequence[AnswerSet],
    reports: Sequence[Any],
    contexts: Mapping[str, Sequence[str]] | None,
    gold: Any,
) -> None:
    if store is None:
        return
    version = golden_version(gold)
    ids = []
    with store_errors(store.url):
        for s, report in zip(sets, reports, strict=True):
            rows = []
            for a in s.answers:
                row = a.model_dump(mode="json", exclude_none=True)
                if a.context is None and contexts is not None and a.id in contexts:
                    row["context"] = list(contexts[a.id])
                rows.append(row)
            ids.append(
                store.record_answers(
                    name=s.variant,
                    answers=rows,
                    report=report.to_dict(),
                    golden_version=version,
                    source=s.path,
                )
            )
    say_stored(store, "answer set", ids)


def prompt_text(prompt: Mapping[str, Any] | None) -> str | None:
    """The text of the prompt the judge labels name: a shipped prompt whose sha256 matches is
    kept whole; any other is kept as its id and sha256 (the text is not in the labels file)."""
    if not prompt:
        return None
    pid, sha = str(prompt.get("id") or ""), str(prompt.get("sha256") or "")
    if pid:
        import hashlib
        from importlib import resources

        res = resources.files("ragmeter.answers.judges").joinpath("prompts", f"{pid}.txt")
        if res.is_file():
            text = res.read_text(encoding="utf-8")
            if hashlib.sha256(text.encode("utf-8")).hexdigest() == sha:
                return text
    return json.dumps(dict(prompt), sort_keys=True, ensure_ascii=False)


def judge_name(judge: Mapping[str, Any] | None) -> str:
    if not judge:
        return "unknown judge (the labels name none)"
    from ..answers.judges._protocol import JudgeInfo

    try:
        return JudgeInfo.from_dict(judge).label
    except (KeyError, TypeError, ValueError):
        return json.dumps(dict(judge), sort_keys=True, ensure_ascii=False)


def record_judge_validation(
    store: Store | None,
    labels: Sequence[JudgeLabel],
    humans: Mapping[str, str],
    info: Mapping[str, Any],
    report: Mapping[str, Any],
    source: Path,
) -> None:
    if store is None:
        return
    rows = [
        {
            "id": x.id,
            "label": x.label,
            "human": humans.get(x.id),
            "run": x.run,
            "order": x.order,
            "score": x.score,
        }
        for x in labels
    ]
    with store_errors(store.url):
        vid = store.record_judge_validation(
            judge=judge_name(info.get("judge")),
            labels=rows,
            report=report,
            prompt=prompt_text(info.get("prompt")),
            source=str(source),
        )
    say_stored(store, "judge validation", [vid])
