"""Answers files: one JSON record a line, validated like the golden set (every problem at once).

Record shape (docs/answers.md)::

    {"id": "q1",                       # golden question id (required)
     "answer": "The change fee is $75.", # generated text (required; "" allowed when abstained)
     "abstained": false,               # optional; inferred from the text when absent
     "citations": [{"doc": "fares-2026", "start": 120, "end": 310},
                   {"chunk": "fares-2026#3"}],
     "context": ["fares-2026#3", "baggage#1"],   # chunk ids in prompt order (optional)
     "context_text": "[1] fares-2026 ...",       # the exact context text (optional)
     "variant": "baseline"}            # optional; one variant per file

A ``doc`` citation's ``start``/``end`` are character offsets into the document text (whole
document when omitted); a ``chunk`` citation's ``start``/``end`` are offsets into the chunk text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic import ValidationError as PydanticError

from .._errors import Problem, UsageError, ValidationError
from ..data._schema import lone_surrogate_field
from ..io import iter_jsonl


class Citation(BaseModel):
    """The passage an answer cites: a chunk id or a document (span)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    chunk: str | None = Field(default=None, min_length=1)
    doc: str | None = Field(default=None, min_length=1)
    start: int | None = Field(default=None, ge=0)
    end: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _one_target(self) -> Citation:
        if (self.chunk is None) == (self.doc is None):
            raise ValueError("a citation names exactly one of 'chunk' or 'doc'")
        if (self.start is None) != (self.end is None):
            raise ValueError("give both 'start' and 'end', or neither")
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise ValueError(f"'end' ({self.end}) must be greater than 'start' ({self.start})")
        return self

    @property
    def label(self) -> str:
        """Short human form: ``doc:12-80`` or ``chunk#3``."""
        target = self.doc if self.doc is not None else self.chunk
        return f"{target}:{self.start}-{self.end}" if self.start is not None else str(target)


class Answer(BaseModel):
    """One generated answer to one golden question."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    answer: str
    abstained: bool | None = None
    citations: list[Citation] = Field(default_factory=list)
    context: list[str] | None = None
    #: the exact context text the model read (written by ``ragmeter run`` when it generates;
    #: optional, not used by the checks: ``context`` ids say what the prompt held)
    context_text: str | None = None
    variant: str | None = None

    @model_validator(mode="after")
    def _no_lone_surrogate(self) -> Answer:
        # files are checked by the JSON reader; this catches records built in Python
        field = lone_surrogate_field(self)
        if field is not None:
            raise ValueError(
                f"'{field}' holds a lone surrogate (\\ud800-\\udfff alone is not a Unicode "
                "character)"
            )
        return self


#: Phrases that mark an abstention when the record has no ``abstained`` field (matched on the
#: lower-cased answer). Kept short on purpose: set ``abstained`` explicitly when in doubt.
ABSTENTION_PATTERNS: tuple[str, ...] = (
    r"\bi (?:do not|don't|cannot|can't) (?:know|find|answer|tell)\b",
    (
        r"\b(?:not|no) (?:enough )?(?:information|details?) (?:is |are )?"
        r"(?:available|provided|given|in)\b"
    ),
    (
        r"\b(?:the )?(?:provided|given|available) (?:context|documents?|passages?|sources?) "
        r"(?:do(?:es)? not|don't|doesn't) (?:say|state|mention|contain|cover|specify)\b"
    ),
    r"\bunable to (?:answer|find|determine)\b",
    r"\bcannot be (?:answered|determined)\b",
    r"^\s*(?:i abstain|no answer|unanswerable)\b",
)
_ABSTAIN_RE = re.compile("|".join(ABSTENTION_PATTERNS))


def looks_abstained(text: str) -> bool:
    """True when ``text`` is empty or matches one of :data:`ABSTENTION_PATTERNS`."""
    return not text.strip() or _ABSTAIN_RE.search(text.lower()) is not None


def is_abstention(answer: Answer) -> bool:
    """The record's ``abstained`` field when present, else :func:`looks_abstained`."""
    return answer.abstained if answer.abstained is not None else looks_abstained(answer.answer)


@dataclass(frozen=True)
class AnswerSet:
    """The answers of one variant, in file order, with the file they came from."""

    answers: tuple[Answer, ...]
    variant: str
    path: str | None = None
    #: question id -> line of the file it came from (for error messages)
    lines: Mapping[str, int] = field(default_factory=dict)

    @property
    def by_id(self) -> dict[str, Answer]:
        return {a.id: a for a in self.answers}

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(a.id for a in self.answers)

    def __len__(self) -> int:
        return len(self.answers)


def _field_of(err: Mapping[str, Any]) -> str | None:
    loc = [str(p) for p in err.get("loc", ()) if p != "__root__"]
    return ".".join(loc) or None


def answers_from_records(
    records: Iterable[Mapping[str, Any]],
    *,
    variant: str | None = None,
    path: str | PathLike[str] | None = None,
    question_ids: Iterable[str] | None = None,
) -> AnswerSet:
    """Validate plain dict records into an :class:`AnswerSet`, reporting every problem at once.

    Checks: the schema of each record, duplicate ids, a single ``variant`` per set, and (when
    ``question_ids`` is given) that every id is a golden question.
    """
    return _validate(
        list(enumerate(records, start=1)), variant=variant, path=path, question_ids=question_ids
    )


def _validate(
    numbered: list[tuple[int, Any]],
    *,
    variant: str | None,
    path: str | PathLike[str] | None,
    question_ids: Iterable[str] | None,
) -> AnswerSet:
    where = None if path is None else str(path)
    known = None if question_ids is None else set(question_ids)
    problems: list[Problem] = []
    answers: list[Answer] = []
    seen: dict[str, int] = {}
    variants: set[str] = set()
    for line, rec in numbered:
        if not isinstance(rec, Mapping):
            problems.append(Problem("a record must be a JSON object", where, line))
            continue
        try:
            ans = Answer.model_validate(dict(rec))
        except PydanticError as exc:
            for err in exc.errors():
                msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
                problems.append(Problem(msg, where, line, _field_of(err)))
            continue
        if ans.id in seen:
            problems.append(
                Problem(
                    f"duplicate answer for question '{ans.id}' (first on line {seen[ans.id]})",
                    where,
                    line,
                    "id",
                )
            )
            continue
        if known is not None and ans.id not in known:
            problems.append(
                Problem(f"'{ans.id}' is not a question of the golden set", where, line, "id")
            )
        seen[ans.id] = line
        if ans.variant is not None:
            variants.add(ans.variant)
        answers.append(ans)
    if len(variants) > 1:
        problems.append(
            Problem(
                f"one answers file holds one variant, found {sorted(variants)}",
                where,
                None,
                "variant",
            )
        )
    if problems:
        raise ValidationError(problems, what=where or "answers")
    name = variant or (variants.pop() if variants else None)
    if name is None:
        name = Path(where).stem if where else "answers"
    return AnswerSet(tuple(answers), name, where, dict(seen))


def load_answers(
    path: str | PathLike[str],
    *,
    golden: Any | None = None,
    variant: str | None = None,
) -> AnswerSet:
    """Read an answers JSONL file. With ``golden`` (a GoldenSet), ids are checked against it.

    The variant name is the ``variant`` field, else ``variant=``, else the file's stem.
    """
    p = Path(path)
    problems: list[Problem] = []
    records: list[tuple[int, Any]] = list(iter_jsonl(p, problems, what="answers"))
    if problems:
        raise ValidationError(problems, what=str(p))
    qids = None
    if golden is not None:
        qids = [q.id for q in golden.questions]
    return _validate(records, variant=variant, path=p, question_ids=qids)


def require_same_questions(a: AnswerSet, b: AnswerSet) -> None:
    """Two variants are compared question by question: both must answer the same ids."""
    only_a = sorted(set(a.ids) - set(b.ids))
    only_b = sorted(set(b.ids) - set(a.ids))
    if only_a or only_b:
        raise UsageError(
            f"variants '{a.variant}' and '{b.variant}' answer different questions "
            f"(only in '{a.variant}': {only_a[:5]}; only in '{b.variant}': {only_b[:5]}); "
            "a paired comparison needs the same questions"
        )
