"""Golden sets: questions with evidence labelled as spans of source documents.

On disk a golden set is JSONL, one question a line (docs/formats.md)::

    {"id": "q1", "question": "...", "evidence": [{"doc": "d1", "start": 10, "end": 42,
     "grade": 2, "text": "..."}], "answer": "...", "answerable": true,
     "slices": ["fees"], "split": "tune"}

Spans are ``doc.text[start:end]`` (Python string offsets, end exclusive), so one golden set
scores every chunking of the corpus. A span may instead give the words it covers,
``{"quote": "...", "doc": "d1", "occurrence": 2}``: they are found in the corpus when the set is
read (``_quotes``; ``resolve_quotes`` reports how each one was found).
"""

from __future__ import annotations

from ._freeze import check_frozen, freeze
from ._golden_set import (
    HELDOUT_SHARE,
    SMALL_SLICE,
    GoldenSet,
    assign_split,
    golden_stats,
    golden_version_of,
    load_golden,
    validate_golden,
    write_golden,
)
from ._quotes import QuoteResolution, ResolvedQuote, resolve_quotes
from .relocate import RelocateReport, relocate

__all__ = [
    "HELDOUT_SHARE",
    "SMALL_SLICE",
    "GoldenSet",
    "QuoteResolution",
    "RelocateReport",
    "ResolvedQuote",
    "assign_split",
    "check_frozen",
    "freeze",
    "golden_stats",
    "golden_version_of",
    "load_golden",
    "relocate",
    "resolve_quotes",
    "validate_golden",
    "write_golden",
]
