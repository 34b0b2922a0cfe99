"""The data model: corpora, span-labelled golden sets, versions, relocation, dataset loaders."""

from ._schema import Document, Evidence, Question
from ._freeze import FreezeResult, FrozenCheck, check_frozen, freeze
from ._version import lock_path_for
from .agreement import LabelAgreement, QuestionAgreement, label_agreement, weighted_kappa
from .beir import load_beir
from .corpus import Corpus, load_corpus, write_corpus
from .golden import (GoldenSet, assign_split, golden_stats, load_golden, validate_golden,
                     write_golden)
from .relocate import RelocateReport, relocate
from .squad import load_squad
from .traffic import (TrafficComparison, TrafficLog, TrafficSample, compare_traffic, read_log,
                      sample_log)

__all__ = [
    "Corpus", "Document", "Evidence", "FreezeResult", "FrozenCheck", "GoldenSet", "Question",
    "RelocateReport", "assign_split", "check_frozen", "freeze", "golden_stats", "load_beir",
    "load_corpus", "load_golden", "load_squad", "lock_path_for", "relocate", "validate_golden",
    "write_corpus", "write_golden",
    "LabelAgreement", "QuestionAgreement", "label_agreement", "weighted_kappa",
    "TrafficComparison", "TrafficLog", "TrafficSample", "compare_traffic", "read_log", "sample_log",
]
