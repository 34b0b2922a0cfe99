"""Diagnosis: which link of the chain fails, read from retrieval, answers and comparisons.

The retrieval-by-answer table, the "where to look first" path with the one next experiment and
its refutation rule, the rule applied to measured variants, and answer correctness by the
position of the evidence in the prompt context (lost in the middle).
"""

from ._diagnose import (
    Diagnosis,
    NextExperiment,
    RecallAt,
    Step,
    Thresholds,
    diagnose,
    pick_recall,
)
from ._position import PositionReport, evidence_positions, lost_in_the_middle, position_table
from ._refutation import RuleCheck, Verdicts, apply_rule
from ._table import RetrievalAnswerTable, build_table, table_from_counts, table_from_report

__all__ = [
    "Diagnosis",
    "NextExperiment",
    "PositionReport",
    "RecallAt",
    "RetrievalAnswerTable",
    "RuleCheck",
    "Step",
    "Thresholds",
    "Verdicts",
    "apply_rule",
    "build_table",
    "diagnose",
    "evidence_positions",
    "lost_in_the_middle",
    "pick_recall",
    "position_table",
    "table_from_counts",
    "table_from_report",
]
