"""The shape of ``run.json``, the store's record of a run that ``ragmeter runs export`` writes
(:meth:`RunRecord.to_dict`) and ``ragmeter runs import`` reads back.

Every field of :class:`~ragmeter.store._records.RunRecord` is here, typed as the store keeps it
(the tests check the two agree field for field), and no other key: a file with other keys, a
string where a flag belongs or a status other than ``finished`` was not written by the exporter.
Imports pydantic: imported by the importer when it runs, not by ``import ragmeter``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from ..io._json_fields import (
    Count,
    Flag,
    LongText,
    Messages,
    Name,
    NonNegative,
    Object,
    Timestamp,
    Timings,
    Version,
    must,
    no_nul,
)
from ..io._schema_problems import rule
from ..metrics._name_field import Means

#: a short column: kind (16), ragmeter version and git commit (40), host (255), invocation (32)
Kind = Annotated[str, Field(max_length=16), AfterValidator(no_nul), must("at most 16 characters")]
Short = Annotated[str, Field(max_length=40), AfterValidator(no_nul), must("at most 40 characters")]
Host = Annotated[str, Field(max_length=255), AfterValidator(no_nul), must("at most 255 characters")]
Invocation = Annotated[
    str, Field(max_length=32), AfterValidator(no_nul), must("at most 32 characters")
]


Level = Annotated[
    Literal["span", "chunk", "document", "eval"], must('"span", "chunk", "document" or "eval"')
]
#: the level each run's evaluation file holds (``chunk`` is ``chunk_evaluation.json``)
PRIMARY = ("span", "document", "eval")


class RunFile(BaseModel):
    """``run.json``: one finished run's record."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: Annotated[int, Field(ge=1), must("a run id (a whole number >= 1)")]
    experiment: Name
    name: Name
    label: LongText | None
    kind: Kind
    status: Annotated[Literal["finished"], must('"finished" (only a finished run is exported)')]
    is_baseline: Flag
    golden_version: Version | None
    config: Object
    config_hash: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$"), must("a sha256 in hex")]
    changes: Messages
    ragmeter_version: Short
    git_commit: Short | None
    git_dirty: Flag | None
    host: Host
    pid: Annotated[int, Field(ge=0), must("a process id (a whole number >= 0)")]
    started_at: Timestamp
    finished_at: Timestamp | None
    seconds: NonNegative | None
    timings: Timings
    metrics: Means
    n_queries: Count | None
    context_tokens: NonNegative | None
    source: LongText | None
    notes: Messages
    message: Annotated[str, AfterValidator(no_nul), must("a string")] | None
    invocation: Invocation
    levels: Annotated[list[Level], must("a list of levels")]
    has_ranked: Flag

    @model_validator(mode="after")
    def _one_evaluation_per_file(self) -> RunFile:
        primary = [x for x in self.levels if x in PRIMARY]
        if len(primary) != 1 or len(set(self.levels)) != len(self.levels):
            raise rule(
                "must name one of span, document or eval (evaluation.json) and at most chunk "
                f"(chunk_evaluation.json) besides, got {self.levels}",
                "levels",
            )
        return self
