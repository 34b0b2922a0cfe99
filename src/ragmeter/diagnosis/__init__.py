"""Diagnosis: which link of the chain fails, read from retrieval, answers and comparisons.

The retrieval-by-answer table, the "where to look first" path with the one next experiment and
its refutation rule, the rule applied to measured variants, answer correctness by the position
of the evidence in the prompt context (lost in the middle), and the causal table of context
ablations (proven causes and the oracle ceiling).
"""

from ._causal import APART as CAUSES_APART
from ._causal import CAUSE_INFO, CAUSES, CausalQuestion, CausalTable, CauseInfo, causal_table
from ._causal import SOURCES as CAUSAL_SOURCES
from ._diagnose import (
    Diagnosis,
    NextExperiment,
    RecallAt,
    Step,
    Thresholds,
    diagnose,
    evidence_from_evaluation,
    pick_recall,
    recall_from_evaluation,
)
from ._position import EVIDENCE as EVIDENCE_CHOICES
from ._position import (
    MIN_BIN,
    PositionGroup,
    PositionReport,
    contexts_run,
    evidence_positions,
    lost_in_the_middle,
    position_table,
)
from ._position import SMALL_NOTE as SMALL_BIN_NOTE
from ._refutation import RuleCheck, Verdicts, apply_rule
from ._table import CELLS as TABLE_CELLS
from ._table import OTHER as OTHER_CATEGORIES
from ._table import Cell as TableCell
from ._table import (
    RetrievalAnswerTable,
    build_table,
    table_from_counts,
    table_from_file,
    table_from_report,
)

__all__ = [
    "CAUSAL_SOURCES",
    "CAUSES",
    "CAUSES_APART",
    "CAUSE_INFO",
    "EVIDENCE_CHOICES",
    "MIN_BIN",
    "OTHER_CATEGORIES",
    "SMALL_BIN_NOTE",
    "TABLE_CELLS",
    "CausalQuestion",
    "CausalTable",
    "CauseInfo",
    "Diagnosis",
    "NextExperiment",
    "PositionGroup",
    "PositionReport",
    "RecallAt",
    "RetrievalAnswerTable",
    "RuleCheck",
    "Step",
    "TableCell",
    "Thresholds",
    "Verdicts",
    "apply_rule",
    "build_table",
    "causal_table",
    "contexts_run",
    "diagnose",
    "evidence_from_evaluation",
    "evidence_positions",
    "lost_in_the_middle",
    "pick_recall",
    "position_table",
    "recall_from_evaluation",
    "table_from_counts",
    "table_from_file",
    "table_from_report",
]
