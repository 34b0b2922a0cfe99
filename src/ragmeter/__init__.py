"""ragmeter: evaluate a RAG chain link by link, with numbers a reviewer can re-run.

Nothing heavy happens at import: public names are loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._about import __version__

#: public name -> module that defines it (relative to this package).
_PUBLIC: dict[str, str] = {
    # errors
    "RagmeterError": "._errors",
    "InputError": "._errors",
    "ValidationError": "._errors",
    "UsageError": "._errors",
    "MissingExtraError": "._errors",
    "VersionMismatchError": "._errors",
    "NotFoundError": "._errors",
    "Problem": "._errors",
    "RagmeterWarning": "._errors",
    "StoreSchemaError": "._errors",
    # metrics and evaluation
    "Metric": ".metrics",
    "parse_metric": ".metrics._spec",
    "Evaluation": ".metrics",
    "evaluate": ".metrics._engine",
    "rank_curve": ".explain",
    # I/O
    "Qrels": ".io._tables",
    "Run": ".io._tables",
    "read_qrels": ".io.trec",
    "read_run": ".io.trec",
    "write_qrels": ".io.trec",
    "write_run": ".io.trec",
    # answers, judges and diagnosis
    "check_answers": ".answers.report",
    "load_answers": ".answers._schema",
    "AnswerSet": ".answers._schema",
    "compare_answers": ".answers.paired",
    "validate_judge": ".answers.judge_validation",
    "diagnose": ".diagnosis",
    "Diagnosis": ".diagnosis",
    "NextExperiment": ".diagnosis",
    "RetrievalAnswerTable": ".diagnosis",
    "position_table": ".diagnosis",
    "apply_rule": ".diagnosis",
    "FakeJudge": ".answers.judges.fake",
    "OpenAIJudge": ".answers.judges.openai",
    # data model
    "Document": ".data._schema",
    "Evidence": ".data._schema",
    "Question": ".data._schema",
    "Corpus": ".data.corpus",
    "load_corpus": ".data.corpus",
    "GoldenSet": ".data.golden",
    "load_golden": ".data.golden",
    "validate_golden": ".data.golden",
    "load_beir": ".data.beir",
    "load_squad": ".data.squad",
    "label_agreement": ".data.agreement",
    "read_log": ".data.traffic",
    "sample_log": ".data.traffic",
    "compare_traffic": ".data.traffic",
    # chunking and span labels
    "Chunk": ".chunking",
    "Chunking": ".chunking",
    "chunk_corpus": ".chunking",
    "make_chunker": ".chunking",
    "load_chunking": ".chunking",
    "get_tokenizer": ".chunking",
    "evaluate_spans": ".labels",
    "chunk_qrels": ".labels",
    "budget_table": ".labels",
    # paired comparison, sweeps, gate
    "compare": ".paired",
    "Comparison": ".paired",
    "paired_bootstrap": ".paired",
    "sweep": ".paired",
    "Sweep": ".paired",
    "gate": ".paired",
    "GateRule": ".paired",
    "Ledger": ".paired",
    "plan_size": ".paired",
    "SizePlan": ".paired",
    # retrieval and experiments
    "BM25Retriever": ".retrieval",
    "DenseRetriever": ".retrieval",
    "HybridRetriever": ".retrieval",
    "RerankRetriever": ".retrieval",
    "Experiment": ".experiments",
    "ExperimentResult": ".experiments",
    "load_experiment": ".experiments",
    "run_experiment": ".experiments",
    "read_byo_run": ".retrieval",
    # the experiment store
    "Store": ".store",
    "RunRecord": ".store",
}

__all__ = sorted([*_PUBLIC, "__version__"])

_ALIASED = {"parse_metric": "parse"}


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'ragmeter' has no attribute '{name}'")
    value = getattr(importlib.import_module(module, __name__), _ALIASED.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover
    from ._errors import (
        InputError,
        MissingExtraError,
        NotFoundError,
        Problem,
        RagmeterError,
        RagmeterWarning,
        StoreSchemaError,
        UsageError,
        ValidationError,
        VersionMismatchError,
    )
    from .answers._schema import AnswerSet, load_answers
    from .answers.judge_validation import validate_judge
    from .answers.judges.fake import FakeJudge
    from .answers.judges.openai import OpenAIJudge
    from .answers.paired import compare_answers
    from .answers.report import check_answers
    from .chunking import Chunk, Chunking, chunk_corpus, get_tokenizer, load_chunking, make_chunker
    from .data._schema import Document, Evidence, Question
    from .data.agreement import label_agreement
    from .data.beir import load_beir
    from .data.corpus import Corpus, load_corpus
    from .data.golden import GoldenSet, load_golden, validate_golden
    from .data.squad import load_squad
    from .data.traffic import compare_traffic, read_log, sample_log
    from .diagnosis import (
        Diagnosis,
        NextExperiment,
        RetrievalAnswerTable,
        apply_rule,
        diagnose,
        position_table,
    )
    from .experiments import Experiment, ExperimentResult, load_experiment, run_experiment
    from .explain import rank_curve
    from .io._tables import Qrels, Run
    from .io.trec import read_qrels, read_run, write_qrels, write_run
    from .labels import budget_table, chunk_qrels, evaluate_spans
    from .metrics import Evaluation, Metric
    from .metrics._engine import evaluate
    from .metrics._spec import parse as parse_metric
    from .paired import (
        Comparison,
        GateRule,
        Ledger,
        SizePlan,
        Sweep,
        compare,
        gate,
        paired_bootstrap,
        plan_size,
        sweep,
    )
    from .retrieval import (
        BM25Retriever,
        DenseRetriever,
        HybridRetriever,
        RerankRetriever,
        read_byo_run,
    )
    from .store import RunRecord, Store
