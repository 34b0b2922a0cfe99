"""Span labels on chunkings: span->chunk mapping, span-level metrics, budgets, chunk qrels,
document-level roll-up."""

from ._budget import (
    DEFAULT_TOLERANCE,
    BudgetRow,
    ContextSetting,
    assemble,
    budget_table,
    effective_k,
    format_budget_table,
    is_fair,
)
from ._documents import document_qrels, rollup_run
from ._files import evaluate_spans_files
from ._mapping import Overlaps, SpanTable, encode_docs, map_spans, overlap_pairs, questions_of
from ._qrels import chunk_qrels, write_chunk_qrels
from ._span_mapping import SpanMapping, span_mapping
from ._span_metrics import (
    DEFAULT_COVER,
    DEFAULT_METRICS,
    check_cover,
    evaluate_spans,
    found_ranks,
    span_metric_list,
)

__all__ = [
    "DEFAULT_COVER",
    "DEFAULT_METRICS",
    "DEFAULT_TOLERANCE",
    "BudgetRow",
    "ContextSetting",
    "Overlaps",
    "SpanMapping",
    "SpanTable",
    "assemble",
    "budget_table",
    "check_cover",
    "chunk_qrels",
    "document_qrels",
    "effective_k",
    "encode_docs",
    "evaluate_spans",
    "evaluate_spans_files",
    "format_budget_table",
    "found_ranks",
    "is_fair",
    "map_spans",
    "overlap_pairs",
    "questions_of",
    "rollup_run",
    "span_mapping",
    "span_metric_list",
    "write_chunk_qrels",
]
