"""The data model: corpora, span-labelled golden sets, versions, relocation, dataset loaders."""

from ._freeze import FreezeResult, FrozenCheck, check_frozen, freeze
from ._golden_diff import DiffSide, GoldenDiff, golden_diff
from ._schema import Document, Evidence, Question
from ._version import lock_path_for, read_lock
from .agreement import LabelAgreement, QuestionAgreement, label_agreement, weighted_kappa
from .beir import load_beir
from .corpus import Corpus, load_corpus, write_corpus
from .golden import (
    GoldenSet,
    assign_split,
    golden_stats,
    golden_version_of,
    load_golden,
    validate_golden,
    write_golden,
)
from .relocate import RelocateReport, relocate
from .squad import load_squad
from .traffic import (
    TrafficComparison,
    TrafficLog,
    TrafficSample,
    compare_traffic,
    read_log,
    sample_log,
)

__all__ = [
    "Corpus",
    "DiffSide",
    "Document",
    "Evidence",
    "FreezeResult",
    "FrozenCheck",
    "GoldenDiff",
    "GoldenSet",
    "LabelAgreement",
    "Question",
    "QuestionAgreement",
    "RelocateReport",
    "TrafficComparison",
    "TrafficLog",
    "TrafficSample",
    "assign_split",
    "check_frozen",
    "compare_traffic",
    "freeze",
    "golden_diff",
    "golden_stats",
    "golden_version_of",
    "label_agreement",
    "load_beir",
    "load_corpus",
    "load_golden",
    "load_squad",
    "lock_path_for",
    "read_lock",
    "read_log",
    "relocate",
    "sample_log",
    "validate_golden",
    "weighted_kappa",
    "write_corpus",
    "write_golden",
]
