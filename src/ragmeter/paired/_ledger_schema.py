"""The shape of one selection-ledger entry, as :meth:`ragmeter.paired.Ledger.record` writes it
(a line of ``ledger.jsonl``, a row of the store's ledger).

``ragmeter runs import ledger.jsonl`` validates every entry with it before one is counted: an
entry without a candidate, with a count that is a string or with keys the writer never writes
would otherwise be counted in the selection ledger (``n_variants``) as a comparison that was
made. The tests check that every entry ``Ledger.record`` writes validates. Imports pydantic:
imported by the importer when it runs, not by ``import ragmeter``.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ..io._json_fields import Count, Finite, Messages, Timestamp, Version, must, no_nul, not_blank

#: a variant id (``bm25#3f9a1c2b``) as the store's ledger columns hold it
VariantId = Annotated[
    str,
    Field(max_length=600),
    AfterValidator(no_nul),
    AfterValidator(not_blank),
    must("a variant id (a non-blank string of at most 600 characters)"),
]
#: what was compared (a metric, ``R@4``, or another measure's label)
Measure = Annotated[
    str,
    Field(max_length=200),
    AfterValidator(no_nul),
    AfterValidator(not_blank),
    must("a metric (a non-blank string of at most 200 characters)"),
]
Interval = Annotated[
    list[Finite | None],
    Field(min_length=2, max_length=2),
    must("a list [low, high] of finite numbers (or nulls)"),
]


class LedgerEntry(BaseModel):
    """One comparison counted on a golden-set version."""

    model_config = ConfigDict(extra="forbid", strict=True)

    time: Timestamp
    golden_version: Version
    metric: Measure
    baseline: VariantId
    candidate: VariantId
    changes: Messages = []
    n: Count | None = None
    mean_delta: Finite | None = None
    ci: Interval | None = None
