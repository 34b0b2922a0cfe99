"""The shape of one selection-ledger entry, as :meth:`ragmeter.paired.Ledger.record` writes it
(a line of ``ledger.jsonl``, a row of the store's ledger).

``ragmeter runs import ledger.jsonl`` validates every entry with it before one is counted: an
entry without a candidate, with a count that is a string or with keys the writer never writes
would otherwise be counted in the selection ledger (``n_variants``) as a comparison that was
made. The tests check that every entry ``Ledger.record`` and ``Ledger.record_confirmation``
write validates. An entry without ``kind`` is a comparison (every ledger written before
confirmations existed reads as before); ``"kind": "confirm"`` needs its ``split``, and only a
confirmation carries a split, a config or a confirmation's result. Imports pydantic: imported
by the importer when it runs, not by ``import ragmeter``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from ..io._json_fields import (
    Count,
    Finite,
    Messages,
    Object,
    Timestamp,
    Version,
    must,
    no_nul,
    not_blank,
)

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
#: a golden set's split (``tune``, ``heldout``)
SplitName = Annotated[
    str,
    Field(max_length=64),
    AfterValidator(no_nul),
    AfterValidator(not_blank),
    must("a split name (a non-blank string of at most 64 characters)"),
]
Probability = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False), must("a number in [0, 1]")]
Interval = Annotated[
    list[Finite | None],
    Field(min_length=2, max_length=2),
    must("a list [low, high] of finite numbers (or nulls)"),
]


#: the keys only a confirmation carries
CONFIRM_ONLY = (
    "split", "config", "fixed", "broken", "sign_test_p", "baseline_mean", "candidate_mean"
)  # fmt: skip


class LedgerEntry(BaseModel):
    """One comparison counted on a golden-set version, or one confirmation on its held-out
    split (``kind = "confirm"``)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    time: Timestamp
    kind: Literal["compare", "confirm"] = "compare"
    golden_version: Version
    metric: Measure
    baseline: VariantId
    candidate: VariantId
    changes: Messages = []
    n: Count | None = None
    mean_delta: Finite | None = None
    ci: Interval | None = None
    split: SplitName | None = None
    config: Object | None = None
    fixed: Count | None = None
    broken: Count | None = None
    sign_test_p: Probability | None = None
    baseline_mean: Finite | None = None
    candidate_mean: Finite | None = None

    @model_validator(mode="after")
    def _kind_fits(self) -> LedgerEntry:
        if self.kind == "confirm" and self.split is None:
            raise ValueError("a confirmation ('kind': 'confirm') names its 'split'")
        if self.kind == "compare":
            given = [k for k in CONFIRM_ONLY if getattr(self, k) is not None]
            if given:
                raise ValueError(
                    f"only a confirmation ('kind': 'confirm') carries {', '.join(given)}"
                )
        return self
