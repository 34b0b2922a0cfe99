"""Pydantic schemas of ragmeter's on-disk records (JSONL, one record a line). See
docs/formats.md."""

from __future__ import annotations

import hashlib
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
#: offsets and grades are stored as 64-bit integers when spans are mapped onto chunks.
INT64_MAX = 2**63 - 1


def lone_surrogate_field(value: Any, path: str = "") -> str | None:
    """The field path of the first string (key or value) in ``value`` holding a lone surrogate
    (``"\\ud800"`` is not a Unicode character: such text fails later, when written or hashed).
    Files are checked by the JSON reader; this catches records built in Python."""
    if isinstance(value, str):
        return (path or "value") if _LONE_SURROGATE.search(value) else None
    if isinstance(value, BaseModel):
        value = {k: getattr(value, k) for k in type(value).model_fields}
    if isinstance(value, dict):
        for key, item in value.items():
            sub = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and _LONE_SURROGATE.search(key):
                return sub
            found = lone_surrogate_field(item, sub)
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = lone_surrogate_field(item, f"{path}[{i}]")
            if found:
                return found
    return None


class _Text(BaseModel):
    """Refuses a lone surrogate in any string field (a record built in Python, not read)."""

    @model_validator(mode="after")
    def _no_lone_surrogate(self) -> Any:
        field = lone_surrogate_field(self)
        if field is not None:
            raise ValueError(
                f"'{field}' holds a lone surrogate (\\ud800-\\udfff alone is not a Unicode "
                "character)"
            )
        return self


class Document(_Text):
    """One source document of a corpus. Evidence spans are character offsets into ``text``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    text: str
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def content_hash(self) -> str:
        """sha256 of the text (hex); changes whenever the text does."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


class Evidence(_Text):
    """A labelled span ``doc.text[start:end]`` with a grade (2 = answers it, 1 = helpful)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    doc: str = Field(min_length=1)
    start: int = Field(ge=0, le=INT64_MAX)
    end: int = Field(ge=0, le=INT64_MAX)
    grade: int = Field(default=1, ge=1, le=INT64_MAX)
    text: str | None = None
    #: every required span must be found for a multi-passage answer (AllR). When no span of a
    #: question is marked, every span with the question's top grade counts as required.
    required: bool | None = None


class Question(_Text):
    """One golden question with its evidence spans."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    question: str
    evidence: list[Evidence] = Field(default_factory=list)
    answer: str | None = None
    answerable: bool = True
    slices: list[str] = Field(default_factory=list)
    split: Literal["tune", "heldout"] = "tune"
    #: how the question was made (docs/labelling.md): a user's logged question, one written by
    #: hand, or a generator's draft a labeller accepted; None when not recorded (every file
    #: from before the field). Part of the version only when set.
    origin: Literal["logged", "written", "drafted"] | None = None

    @model_validator(mode="after")
    def _answerable_has_evidence(self) -> Question:
        if not self.answerable and self.evidence:
            raise ValueError("an unanswerable question (answerable: false) must have no evidence")
        return self

    def required_spans(self) -> list[int]:
        """Indices of the spans that must all be found for AllR."""
        if any(e.required is not None for e in self.evidence):
            return [i for i, e in enumerate(self.evidence) if e.required]
        if not self.evidence:
            return []
        top = max(e.grade for e in self.evidence)
        return [i for i, e in enumerate(self.evidence) if e.grade == top]
