"""The retrieval-by-answer table: where each golden question's failure sits.

Per answerable question: **evidence in the prompt context** (every required evidence span found
within the prompt's k passages or token budget: span-level ``AllR@k`` = 1) crossed with **answer
correct and supported**. The four cells and the seed's readings:

================  ==================  =====================================================
evidence          answer ok           reading
================  ==================  =====================================================
in context        yes                 working as designed: keep as regression cases
in context        no                  generation failure: fix context assembly, prompt or
                                      abstention; retrieval did its job
not in context    yes                 answered from memory: fragile, fails as soon as the fact
                                      changes; do not credit retrieval
not in context    no                  retrieval failure: fix ingestion, chunking or ranking; a
                                      bigger model cannot help
================  ==================  =====================================================

"The largest bad cell names the next experiment" (ties broken in chain order: retrieval, then
generation, then memory). Built from plain per-question booleans, so it needs no retrieval run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import UsageError


@dataclass(frozen=True)
class Cell:
    key: str
    evidence: bool
    answer_ok: bool
    title: str
    reading: str
    bad: bool


CELLS: tuple[Cell, ...] = (
    Cell("working", True, True, "working as designed", "keep as regression cases", False),
    Cell("generation_failure", True, False, "generation failure",
         "fix context assembly, prompt or abstention; retrieval did its job", True),
    Cell("from_memory", False, True, "answered from memory",
         "fragile: fails as soon as the fact changes; do not credit retrieval", True),
    Cell("retrieval_failure", False, False, "retrieval failure",
         "fix ingestion, chunking or ranking; a bigger model cannot help", True),
)
_BY_KEY = {c.key: c for c in CELLS}
_BAD_ORDER = ("retrieval_failure", "generation_failure", "from_memory")


@dataclass(frozen=True)
class RetrievalAnswerTable:
    """Counts and question ids per cell."""

    ids: Mapping[str, tuple[str, ...]]  # cell key -> question ids
    excluded: Mapping[str, str]  # question id -> why it is not in the table
    evidence_label: str = "evidence in the prompt context"

    def count(self, key: str) -> int:
        return len(self.ids[key])

    @property
    def n(self) -> int:
        return sum(len(v) for v in self.ids.values())

    @property
    def largest_bad(self) -> Cell | None:
        """The bad cell with the most questions (None when every bad cell is empty)."""
        best = max(_BAD_ORDER, key=lambda k: (self.count(k), -_BAD_ORDER.index(k)))
        return _BY_KEY[best] if self.count(best) else None

    def cell(self, key: str) -> Cell:
        return _BY_KEY[key]

    def to_dict(self) -> dict[str, Any]:
        lb = self.largest_bad
        return {
            "n": self.n,
            "evidence": self.evidence_label,
            "cells": [{"cell": c.key, "evidence_in_context": c.evidence, "answer_ok": c.answer_ok,
                       "title": c.title, "reading": c.reading, "count": self.count(c.key),
                       "ids": list(self.ids[c.key])} for c in CELLS],
            "largest_bad_cell": lb.key if lb else None,
            "excluded": dict(self.excluded),
        }


def build_table(
    evidence_in_context: Mapping[str, bool | None],
    answer_ok: Mapping[str, bool | None],
    *,
    evidence_label: str = "evidence in the prompt context",
) -> RetrievalAnswerTable:
    """Fill the table from per-question booleans.

    A question enters when both values are known booleans; others are listed in ``excluded``
    with the reason (no evidence label, e.g. unanswerable; no answer; answer not scored).
    """
    ids: dict[str, list[str]] = {c.key: [] for c in CELLS}
    excluded: dict[str, str] = {}
    for qid in sorted(set(evidence_in_context) | set(answer_ok)):
        ev, ok = evidence_in_context.get(qid), answer_ok.get(qid)
        if qid not in evidence_in_context or ev is None:
            excluded[qid] = "no evidence verdict (unanswerable, or not in the retrieval results)"
        elif qid not in answer_ok or ok is None:
            excluded[qid] = "no answer verdict (no answer, or no reference to score it)"
        else:
            key = next(c.key for c in CELLS if c.evidence == bool(ev) and c.answer_ok == bool(ok))
            ids[key].append(qid)
    if not any(ids.values()):
        raise UsageError("no question has both an evidence verdict and an answer verdict; check "
                         "that the answers and the retrieval results use the golden set's ids")
    return RetrievalAnswerTable({k: tuple(v) for k, v in ids.items()}, excluded, evidence_label)


def table_from_counts(working: int, generation_failure: int, from_memory: int,
                      retrieval_failure: int) -> RetrievalAnswerTable:
    """A table from the four counts alone (synthetic ids ``c<cell>-<n>``), e.g. the seed's lab
    sample ``table_from_counts(41, 9, 6, 14)``."""
    counts = {"working": working, "generation_failure": generation_failure,
              "from_memory": from_memory, "retrieval_failure": retrieval_failure}
    ev: dict[str, bool] = {}
    ok: dict[str, bool] = {}
    for key, n in counts.items():
        if n < 0:
            raise UsageError(f"cell counts must be >= 0, got {key}={n}")
        c = _BY_KEY[key]
        for i in range(n):
            qid = f"{key}-{i + 1:04d}"
            ev[qid], ok[qid] = c.evidence, c.answer_ok
    return build_table(ev, ok)
