"""The labels a labeller saves: their schemas and checks, and the golden questions they
make (:mod:`ragmeter.workflows.labelling`)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticError

from .._errors import InputError
from ..store import ItemRow

if TYPE_CHECKING:  # pragma: no cover
    from ..data import Corpus, Question


# -- payloads ----------------------------------------------------------------------------------
class SpanLabel(BaseModel):
    """One evidence span: code-point offsets into ``doc.text``; ``text`` (the selected string
    the page sends) must equal ``doc.text[start:end]`` and is stored as it."""

    model_config = ConfigDict(extra="forbid")

    doc: str = Field(min_length=1)
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    grade: Literal[1, 2] = 2
    required: bool = False
    text: str | None = None


class EvidenceLabel(BaseModel):
    """An evidence queue's label of a question (docs/labelling.md)."""

    model_config = ConfigDict(extra="forbid")

    spans: list[SpanLabel] = Field(default_factory=list)
    answer: str | None = None
    answerable: bool = True
    slices: list[str] = Field(default_factory=list)
    split: Literal["tune", "heldout"] | None = None
    skipped: bool = False
    note: str | None = None
    #: a drafted question's text as the labeller edited it (None: as drafted)
    question: str | None = None


class AnswerLabel(BaseModel):
    """An answers queue's review of a generated answer."""

    model_config = ConfigDict(extra="forbid")

    correct: Literal["correct", "incorrect"] | None = None
    supported: Literal["supported", "unsupported"] | None = None
    abstention: Literal["correct_abstention", "wrong_abstention"] | None = None
    note: str | None = None
    skipped: bool = False


def _field(loc: Sequence[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def check_payload(kind: str, payload: Any, corpus: Corpus | None) -> dict[str, Any]:
    """The payload as stored: checked against its kind's schema and, for spans, against the
    corpus (the document exists, ``0 <= start < end <= len(text)``, the selected text is
    ``doc.text[start:end]``, no two spans of a document overlap); every span's ``text`` is
    set from the document. InputError naming the field otherwise."""
    if not isinstance(payload, Mapping):
        raise InputError("a label is a JSON object", field="payload")
    model: type[BaseModel] = EvidenceLabel if kind == "evidence" else AnswerLabel
    try:
        label = model.model_validate(dict(payload))
    except PydanticError as exc:
        first = exc.errors()[0]
        raise InputError(str(first["msg"]), field=_field(first["loc"])) from None
    if not isinstance(label, EvidenceLabel):
        return label.model_dump()
    if label.spans and not label.answerable:
        raise InputError(
            "an unanswerable question has no evidence: remove its spans or mark it answerable",
            field="answerable",
        )
    spans: list[dict[str, Any]] = []
    for i, s in enumerate(label.spans):
        doc = None if corpus is None else corpus.get(s.doc)
        if doc is None:
            raise InputError(
                f"document {s.doc!r} is not in this queue's corpus", field=f"spans[{i}].doc"
            )
        size = len(doc.text)
        if not s.start < s.end <= size:
            raise InputError(
                f"span {s.start}-{s.end} is out of range: it needs 0 <= start < end <= "
                f"{size} (document {s.doc!r} has {size} characters)",
                field=f"spans[{i}].end",
            )
        found = doc.text[s.start : s.end]
        if s.text is not None and s.text != found:
            raise InputError(
                f"the selected text {s.text[:60]!r} is not document {s.doc!r} at "
                f"{s.start}-{s.end}, which reads {found[:60]!r}: reload the document and "
                "select again",
                field=f"spans[{i}].text",
            )
        spans.append({**s.model_dump(), "text": found})
    ordered = sorted(spans, key=lambda x: (x["doc"], x["start"], x["end"]))
    for a, b in itertools.pairwise(ordered):
        if a["doc"] == b["doc"] and b["start"] < a["end"]:
            raise InputError(
                f"spans {a['start']}-{a['end']} and {b['start']}-{b['end']} of document "
                f"{a['doc']!r} overlap: merge them into one span or make them disjoint",
                field="spans",
            )
    return {**label.model_dump(), "spans": spans}


#: the item origins a frozen question records (``Question.origin``); a reviewed golden
#: question (item origin "golden") keeps the origin its golden file gave it
ORIGINS = ("logged", "written", "drafted")
_ORIGIN: dict[str, Literal["logged", "written", "drafted"]] = {
    "logged": "logged",
    "written": "written",
    "drafted": "drafted",
}


def _golden_prefill(q: Question) -> dict[str, Any]:
    return {
        "spans": [
            {
                "doc": e.doc,
                "start": e.start,
                "end": e.end,
                "grade": 2 if e.grade >= 2 else 1,
                "required": bool(e.required),
                "text": e.text,
            }
            for e in q.evidence
        ],
        "answer": q.answer,
        "answerable": q.answerable,
        "slices": list(q.slices),
        "split": q.split,
        "origin": q.origin,
    }


def payload_of(q: Question) -> dict[str, Any]:
    """An evidence payload holding a golden question's label."""
    return {
        "spans": [
            {
                "doc": e.doc,
                "start": e.start,
                "end": e.end,
                "grade": e.grade,
                "required": bool(e.required),
            }
            for e in q.evidence
        ],
        "answer": q.answer,
        "answerable": q.answerable,
        "slices": list(q.slices),
        # a split the file left open stays open: the freeze's hash of the id decides it
        "split": q.split if "split" in q.model_fields_set else None,
    }


def _span_key(payload: Mapping[str, Any]) -> tuple[Any, ...]:
    spans = frozenset(
        (s["doc"], int(s["start"]), int(s["end"]), int(s.get("grade", 2)))
        for s in payload.get("spans") or ()
    )
    return (spans, bool(payload.get("answerable", True)))


def _answer_key(payload: Mapping[str, Any]) -> tuple[Any, ...]:
    return (payload.get("correct"), payload.get("supported"), payload.get("abstention"))


def _complete(kind: str, payload: Mapping[str, Any]) -> bool:
    if payload.get("skipped"):
        return False
    if kind == "evidence":
        return not payload.get("answerable", True) or bool(payload.get("spans"))
    return any(payload.get(k) for k in ("correct", "supported", "abstention"))


def question_of(item: ItemRow, payload: Mapping[str, Any]) -> Question:
    """The golden question an evidence label makes."""
    from ..data import Evidence, Question, assign_split

    evidence = [
        Evidence(
            doc=s["doc"],
            start=int(s["start"]),
            end=int(s["end"]),
            grade=int(s.get("grade", 2)),
            text=s.get("text"),
            required=True if s.get("required") else None,
        )
        for s in payload.get("spans") or ()  # the labeller's order, as a golden file keeps it
    ]
    answerable = bool(payload.get("answerable", True))
    # how the question was made (docs/formats.md): the item's origin; a reviewed golden
    # question (item origin "golden") keeps the one its golden file gave it
    made = item.origin if item.origin in ORIGINS else (item.prefill or {}).get("origin")
    return Question(
        origin=_ORIGIN.get(made) if isinstance(made, str) else None,
        id=item.qid,
        question=payload.get("question") or item.question,
        evidence=evidence if answerable else [],
        answer=payload.get("answer") or None,
        answerable=answerable,
        slices=list(dict.fromkeys(payload.get("slices") or ())),
        split=payload.get("split") or assign_split(item.qid),
    )


def _answer_word(payload: Mapping[str, Any], key: str) -> str | None:
    value = payload.get(key)
    if value is None:
        return None
    if key == "abstention":
        return "pass" if value == "correct_abstention" else "fail"
    return str(value)
