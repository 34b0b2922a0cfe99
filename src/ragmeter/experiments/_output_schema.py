"""The shape of what ``ragmeter run`` writes beside each variant's evaluation: ``config.json``
(:func:`ragmeter.experiments._runner.config_record_of`) and the experiment's ``summary.json``
(``ExperimentResult.to_dict``).

``ragmeter runs import`` reads these files back into the store, so every field it uses is typed
here as the writer writes it (a flag is ``true``/``false``, timings are finite seconds, metric
names parse); the tests check that what the writer writes validates. Keys the importer does not
use (``cached``, ``answers``, ``judge``, the summary's tables) may be anything: the whole
``config.json`` is stored as the run's config, as ``ragmeter run`` stores it. Imports pydantic:
imported by the importer when it runs, not by ``import ragmeter``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..io._json_fields import (
    Flag,
    LongText,
    Messages,
    Name,
    NonNegative,
    Object,
    Timings,
    Version,
    must,
)
from ..metrics._name_field import Means

Level = Annotated[Literal["span", "document"], must('"span" or "document"')]


class Resolved(BaseModel):
    """``config.json``'s ``resolved``: what the settings came to (the chunking's statistics)."""

    model_config = ConfigDict(extra="allow", strict=True)

    chunking: Object | None = None


class VariantConfig(BaseModel):
    """A variant's ``config.json`` as ``ragmeter run`` writes it. Every key the importer uses
    is required (the writer always writes it): a default would stand in silently for what
    the file lost, e.g. a missing ``level`` would read a document-level evaluation as spans."""

    model_config = ConfigDict(extra="allow", strict=True)

    variant: Name
    baseline: Flag
    label: LongText | None
    changes: Messages
    experiment: LongText | None = None
    level: Level
    golden_version: Version | None
    settings: Object
    resolved: Annotated[Resolved, must("an object")] | None = None
    metrics: Means
    context_tokens: NonNegative | None
    timings: Timings
    notes: Messages


class VariantSummary(BaseModel):
    """One entry of ``summary.json``'s ``variants`` (``VariantResult.to_dict``; every key the
    importer uses is required, as in :class:`VariantConfig`)."""

    model_config = ConfigDict(extra="allow", strict=True)

    name: Name
    baseline: Flag
    label: LongText | None
    changes: Messages
    metrics: Means
    context_tokens: NonNegative | None
    timings: Timings
    notes: Messages


class ExperimentSummary(BaseModel):
    """An experiment's ``summary.json`` (``ExperimentResult.to_dict``)."""

    model_config = ConfigDict(extra="allow", strict=True)

    experiment: Name
    level: Level
    golden_version: Version | None
    variants: Annotated[list[VariantSummary], Field(min_length=1)]
