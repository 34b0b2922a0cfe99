"""The retrieval-by-answer table: where each golden question's failure sits.

Per answerable question: **evidence in the prompt context** (every required evidence span found
within the prompt's k passages or token budget: span-level ``AllR@k`` = 1) crossed with **answer
correct and supported**. The four cells and how to read them:

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

Below the evidence line the split is on correctness: the passage that could support the answer
never reached the prompt, so a right answer there came from the model's memory whatever it
cites, and a wrong one is a retrieval failure. Above it, "correct and supported" means the
deterministic (or judge) support check passed.

Two more categories, outside the four cells and never counted as supported:

- **cites a passage outside its context**: the answer cites a passage its prompt never held, a
  pipeline bug (answers and run do not belong together) or a leak from the model's memory;
- **correct, support unknown** (evidence in context): right, but it quotes and states nothing
  checkable, so neither "working" nor "generation failure" can be claimed; counted apart.

"The largest bad cell names the next experiment" (ties broken in chain order: retrieval, then
generation, then memory). Built from plain per-question verdicts, so it needs no retrieval run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

from .._errors import Problem, UsageError, ValidationError
from .._numbers import MAX_CELL_COUNT, whole


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
    Cell(
        "generation_failure",
        True,
        False,
        "generation failure",
        "fix context assembly, prompt or abstention; retrieval did its job",
        True,
    ),
    Cell(
        "from_memory",
        False,
        True,
        "answered from memory",
        "fragile: fails as soon as the fact changes; do not credit retrieval",
        True,
    ),
    Cell(
        "retrieval_failure",
        False,
        False,
        "retrieval failure",
        "fix ingestion, chunking or ranking; a bigger model cannot help",
        True,
    ),
)
#: categories outside the four cells (``evidence``/``answer_ok`` None: not a row/column pair)
OTHER: tuple[Cell, ...] = (
    Cell(
        "cites_outside_context",
        False,
        False,
        "cites a passage outside its context",
        "a pipeline bug or a leak from the model's memory: check that the answers and the run "
        "belong together (log the prompt); never counted as supported",
        True,
    ),
    Cell(
        "support_unknown",
        True,
        True,
        "correct, support unknown",
        "nothing quoted or stated to check: have the answer quote what it relies on, or judge "
        "faithfulness; not counted as supported",
        False,
    ),
)
_BY_KEY = {c.key: c for c in (*CELLS, *OTHER)}
_BAD_ORDER = ("retrieval_failure", "generation_failure", "from_memory")


@dataclass(frozen=True)
class RetrievalAnswerTable:
    """Counts and question ids per cell."""

    ids: Mapping[str, Sequence[str]]  # cell key (CELLS and OTHER) -> question ids
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

    @property
    def tied_with_largest(self) -> tuple[Cell, ...]:
        """Other bad cells as large as the largest one (it won the tie by chain order)."""
        lb = self.largest_bad
        if lb is None:
            return ()
        return tuple(
            _BY_KEY[k] for k in _BAD_ORDER if k != lb.key and self.count(k) == self.count(lb.key)
        )

    def cell(self, key: str) -> Cell:
        return _BY_KEY[key]

    def to_dict(self) -> dict[str, Any]:
        lb = self.largest_bad
        return {
            "n": self.n,
            "evidence": self.evidence_label,
            "cells": [
                {
                    "cell": c.key,
                    "evidence_in_context": c.evidence,
                    "answer_ok": c.answer_ok,
                    "title": c.title,
                    "reading": c.reading,
                    "count": self.count(c.key),
                    "ids": _ids(self.ids[c.key]),
                }
                for c in CELLS
            ],
            "other": [
                {
                    "cell": c.key,
                    "title": c.title,
                    "reading": c.reading,
                    "count": self.count(c.key),
                    "ids": _ids(self.ids[c.key]),
                }
                for c in OTHER
            ],
            "largest_bad_cell": lb.key if lb else None,
            "excluded": dict(self.excluded),
        }


class CountedIds(Sequence[str]):
    """The questions of a cell known only by their count (``table_from_counts``): ids
    ``<cell>-<n>`` made on access and never stored, so a count of ten million costs nothing."""

    def __init__(self, key: str, n: int) -> None:
        self.key, self.n = key, n

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...
    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.n))]
        j = range(self.n)[i]  # IndexError past the end, negative indices from the end
        return f"{self.key}-{j + 1:04d}"


def _ids(ids: Sequence[str]) -> list[str] | None:
    """The ids of a cell for JSON: None when the table was given as counts (no real ids)."""
    return None if isinstance(ids, CountedIds) else list(ids)


def _place(ev: bool, ok: bool | None, correct: bool | None, outside: bool) -> str | None:
    """The category of one question, or None when its answer verdict is missing."""
    if outside:
        return "cites_outside_context"
    if ev:
        if ok is None:
            return "support_unknown" if correct else None
        return "working" if ok else "generation_failure"
    right = ok if correct is None else correct
    if right is None:
        return None
    return "from_memory" if right else "retrieval_failure"


def build_table(
    evidence_in_context: Mapping[str, bool | None],
    answer_ok: Mapping[str, bool | None],
    *,
    correct: Mapping[str, bool | None] | None = None,
    cites_outside: Mapping[str, bool] | None = None,
    evidence_label: str = "evidence in the prompt context",
) -> RetrievalAnswerTable:
    """Fill the table from per-question verdicts.

    ``answer_ok``: correct and supported (None: unscored, or correct with unknown support);
    ``correct`` (optional): the correctness verdict, which splits the "not in context" row and
    tells "correct, support unknown" from "not scored"; without it the row splits on
    ``answer_ok``. ``cites_outside`` (optional): the answer cites a passage outside its prompt
    context. A question without an evidence verdict (e.g. unanswerable) or an answer verdict is
    listed in ``excluded`` with the reason.
    """
    ids: dict[str, list[str]] = {c.key: [] for c in (*CELLS, *OTHER)}
    excluded: dict[str, str] = {}
    outside = cites_outside or {}
    for qid in sorted(set(evidence_in_context) | set(answer_ok)):
        ev, ok = evidence_in_context.get(qid), answer_ok.get(qid)
        right = None if correct is None else correct.get(qid)
        if ev is None:
            excluded[qid] = "no evidence verdict (unanswerable, or not in the retrieval results)"
            continue
        if correct is None and qid not in answer_ok:
            key = None
        else:
            key = _place(bool(ev), ok, right, bool(outside.get(qid)))
        if key is None:
            excluded[qid] = "no answer verdict (no answer, or no reference to score it)"
        else:
            ids[key].append(qid)
    if not any(ids.values()):
        raise UsageError(
            "no question has both an evidence verdict and an answer verdict; check "
            "that the answers and the retrieval results use the golden set's ids"
        )
    return RetrievalAnswerTable({k: tuple(v) for k, v in ids.items()}, excluded, evidence_label)


def table_from_report(
    evidence_in_context: Mapping[str, bool | None],
    report: Any,
    *,
    evidence_label: str = "evidence in the prompt context",
) -> RetrievalAnswerTable:
    """The table of an :class:`~ragmeter.answers.report.AnswerReport` (its ok, correct and
    outside-the-context verdicts) against per-question evidence-in-context booleans."""
    return build_table(
        evidence_in_context,
        report.answer_ok(),
        correct=report.answer_correct(),
        cites_outside=report.cites_outside(),
        evidence_label=evidence_label,
    )


def table_from_counts(
    working: int,
    generation_failure: int,
    from_memory: int,
    retrieval_failure: int,
    *,
    cites_outside_context: int = 0,
    support_unknown: int = 0,
) -> RetrievalAnswerTable:
    """A table from the counts alone, e.g. the RAG evaluation lesson's lab sample
    ``table_from_counts(41, 9, 6, 14)``. Each count is an integer from 0 to 10,000,000
    (:data:`~ragmeter._numbers.MAX_CELL_COUNT`); the questions have no ids (synthetic
    ``<cell>-<n>`` on access, ``null`` in JSON), so no per-question record is ever built."""
    counts = {
        "working": working,
        "generation_failure": generation_failure,
        "from_memory": from_memory,
        "retrieval_failure": retrieval_failure,
        "cites_outside_context": cites_outside_context,
        "support_unknown": support_unknown,
    }
    for key, n in counts.items():
        whole(f"the count of {key}", n, low=0, high=MAX_CELL_COUNT)
    if not any(counts.values()):
        raise UsageError("every count is 0: the table has no question")
    # the cell of each count is known, so no per-question verdicts are built (see CountedIds)
    return RetrievalAnswerTable({k: CountedIds(k, n) for k, n in counts.items()}, {})


#: optional per-question fields of ``--table``: name -> keyword of ``build_table``
_OPTIONAL = {"correct": "correct", "cites_outside_context": "cites_outside"}


def table_from_file(
    path: str | os.PathLike[str], *, evidence_label: str = "evidence in the prompt context"
) -> RetrievalAnswerTable:
    """The table from a JSON Lines file of per-question verdicts (``ragmeter diagnose --table``):
    ``{"id", "evidence_in_context": bool, "answer_ok": bool|null, "correct"?: bool,
    "cites_outside_context"?: bool}`` (``answer_ok`` null: correct, support unknown). Every bad
    line is reported at once, naming the file, the line and the field; an id given twice is an
    error naming both lines (one question is one verdict, never the last of several)."""
    from ..io import iter_jsonl

    path = Path(path)
    ev: dict[str, bool] = {}
    ok: dict[str, bool | None] = {}
    extra: dict[str, dict[str, bool]] = {}
    problems: list[Problem] = []
    lines: dict[str, int] = {}
    for line, rec in iter_jsonl(path, problems, what="questions"):
        if not isinstance(rec.get("id"), str) or not rec["id"]:
            problems.append(Problem("needs a non-empty string id", str(path), line, "id"))
            continue
        if rec["id"] in lines:
            problems.append(
                Problem(
                    f"'{rec['id']}' appears twice (first on line {lines[rec['id']]}); give "
                    "each question one line",
                    str(path),
                    line,
                    "id",
                )
            )
            continue
        lines[rec["id"]] = line
        v = rec.get("evidence_in_context")
        if not isinstance(v, bool):
            problems.append(
                Problem("must be true or false", str(path), line, "evidence_in_context")
            )
        else:
            ev[rec["id"]] = v
        v = rec.get("answer_ok")
        if not isinstance(v, bool) and not (v is None and "correct" in rec):
            problems.append(
                Problem(
                    "must be true or false (null only with 'correct': correct, support unknown)",
                    str(path),
                    line,
                    "answer_ok",
                )
            )
        else:
            ok[rec["id"]] = v
        for name, kw in _OPTIONAL.items():
            if name not in rec:
                continue
            if not isinstance(rec[name], bool):
                problems.append(Problem("must be true or false", str(path), line, name))
            else:
                extra.setdefault(kw, {})[rec["id"]] = rec[name]
    if problems:
        raise ValidationError(problems, what=str(path))
    return build_table(
        ev,
        ok,
        correct=extra.get("correct"),
        cites_outside=extra.get("cites_outside"),
        evidence_label=evidence_label,
    )
