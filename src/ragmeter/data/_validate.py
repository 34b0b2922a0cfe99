"""Validating JSONL records and checking golden-set labels, every problem reported at once.

Lines come from ragmeter's one JSON Lines reader (:func:`ragmeter.io._reading.iter_jsonl`);
nothing here stops at the first bad line: each mistake becomes a
:class:`~ragmeter._errors.Problem` (file, line, field, message) and the caller raises one
:class:`~ragmeter._errors.ValidationError` listing them all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

import pydantic

from .._errors import Problem
from ..io import iter_jsonl
from ._schema import Document, Evidence, Question

M = TypeVar("M", bound=pydantic.BaseModel)


class Documents(Protocol):
    """What label checks need of a corpus (``ragmeter.data.Corpus`` is one): a lookup by id and
    a near-miss hint."""

    def get(self, doc_id: str, default: Document | None = None) -> Document | None: ...

    def suggest(self, doc_id: str) -> str: ...


#: records one problem of the current question: ``add(message, field)``.
AddProblem = Callable[[str, "str | None"], None]

#: unknown document ids that get a "did you mean" hint.
_HINTS = 20
#: how much of a long value an error message quotes.
_QUOTE = 60


def quote(text: str, limit: int = _QUOTE) -> str:
    """``repr`` of ``text`` cut to ``limit`` characters (an ellipsis marks the cut)."""
    if len(text) <= limit:
        return repr(text)
    return repr(text[: limit - 1] + "…")


def field_path(loc: Sequence[int | str]) -> str | None:
    """A pydantic error location as a field path: ``("evidence", 0, "end")`` →
    ``evidence[0].end``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or None


def schema_problems(
    exc: pydantic.ValidationError, path: str | None, line: int | None
) -> list[Problem]:
    """One Problem per pydantic error, with the field path and the offending value."""
    problems = []
    for err in exc.errors(include_url=False):
        message = str(err["msg"]).removeprefix("Value error, ")
        field = field_path(err["loc"])
        if field is None and "unanswerable" in message:
            field = "evidence"  # the schema's answerable/evidence rule is a model-level check
        if err["type"] not in ("missing", "extra_forbidden") and err["loc"]:
            value = err.get("input")
            shown = quote(value) if isinstance(value, str) else repr(value)
            message = f"{message} (got {shown[: _QUOTE + 10]})"
        problems.append(Problem(message, path, line, field))
    return problems


def parse_records(
    path: Path, model: type[M], problems: list[Problem], what: str = "records"
) -> tuple[list[M], list[int]]:
    """Validate each JSONL line against ``model``; return the good records and their lines.
    ``what`` names the records in the empty-file message."""
    records: list[M] = []
    lines: list[int] = []
    where = str(path)
    for number, obj in iter_jsonl(path, problems, what=what):
        try:
            records.append(model.model_validate(obj))
        except pydantic.ValidationError as exc:
            problems.extend(schema_problems(exc, where, number))
            continue
        lines.append(number)
    return records, lines


def check_questions(
    questions: Sequence[Question],
    lines: Sequence[int] | None,
    corpus: Documents | None,
    path: str | None,
) -> list[Problem]:
    """Every label problem of ``questions``, in file order.

    Without a corpus: duplicate question ids, empty spans (``start >= end``), answerable
    questions without evidence, identical or overlapping spans of one question on one document.
    With a corpus, also: unknown documents, spans past the end of their document, and spans whose
    recorded ``text`` differs from ``doc.text[start:end]``.

    ``lines`` are the file lines of the questions; without them (a set built in memory, e.g.
    by a loader) a problem names no file and ``line`` is the question's position (1-based),
    which is its line once written with ``write_golden``.
    """
    if lines is None:
        path = None
    problems: list[Problem] = []
    first_line: dict[str, int] = {}
    unknown: set[str] = set()  # unknown document ids seen so far (near-miss hints for a few)
    for index, q in enumerate(questions):
        line = lines[index] if lines is not None else index + 1

        def add(message: str, field: str | None, line: int = line) -> None:
            problems.append(Problem(message, path, line, field))

        if q.id in first_line:
            add(f"duplicate question id {q.id!r} (first on line {first_line[q.id]})", "id")
        else:
            first_line[q.id] = line
        if q.answerable and not q.evidence:
            add(
                'answerable question has no evidence spans; add spans or set "answerable": false',
                "evidence",
            )
        for i, ev in enumerate(q.evidence):
            _check_span(i, ev, corpus, add, unknown)
        _check_overlaps(q, add)
    return problems


def _check_span(
    i: int, ev: Evidence, corpus: Documents | None, add: AddProblem, unknown: set[str]
) -> None:
    if ev.start >= ev.end:
        add(
            f"empty span: end ({ev.end}) must be greater than start ({ev.start})",
            f"evidence[{i}].end",
        )
        return
    if corpus is None:
        return
    doc = corpus.get(ev.doc)
    if doc is None:
        # a near-miss search costs a pass over the corpus ids: only for the first few unknown ids
        hint = corpus.suggest(ev.doc) if len(unknown) < _HINTS and ev.doc not in unknown else ""
        unknown.add(ev.doc)
        add(f"unknown document {ev.doc!r}: not in the corpus{hint}", f"evidence[{i}].doc")
        return
    size = len(doc.text)
    if ev.end > size:
        add(
            f"span {ev.start}-{ev.end} is out of bounds: document {ev.doc!r} has {size} characters",
            f"evidence[{i}].end",
        )
        return
    if ev.text is not None:
        found = doc.text[ev.start : ev.end]
        if found != ev.text:
            add(
                f"span text {quote(ev.text)} does not match document {ev.doc!r} at "
                f"{ev.start}-{ev.end}, which reads {quote(found)}: the document changed after "
                "labelling; re-anchor with `ragmeter golden relocate`",
                f"evidence[{i}].text",
            )


def _check_overlaps(q: Question, add: AddProblem) -> None:
    """Sweep each document's spans in start order; report each span that overlaps an earlier one."""
    order = sorted(
        range(len(q.evidence)),
        key=lambda i: (q.evidence[i].doc, q.evidence[i].start, q.evidence[i].end, i),
    )
    prev: int | None = None  # the span reaching furthest right so far, on the same document
    for i in order:
        ev = q.evidence[i]
        if ev.start >= ev.end:
            continue  # already reported as empty
        if prev is not None and q.evidence[prev].doc == ev.doc:
            p = q.evidence[prev]
            if ev.start < p.end:
                what = "duplicates" if (p.start, p.end) == (ev.start, ev.end) else "overlaps"
                add(
                    f"span {ev.start}-{ev.end} {what} evidence[{prev}] ({p.start}-{p.end}) on "
                    f"document {ev.doc!r}; merge them or keep one",
                    f"evidence[{i}]",
                )
            if ev.end <= p.end:
                continue
        prev = i
