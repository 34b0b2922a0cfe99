"""The user's own retrieval pipeline, evaluated in place: a function, a LangChain retriever or a
LlamaIndex retriever, asked every golden question and scored on the same span labels as
ragmeter's own retrievers (see :mod:`._run` for the rules and :mod:`._adapters` for what each
kind must return). In an experiment file::

    retriever = {kind = "python", target = "mypkg.rag:retrieve"}
    retriever = {kind = "langchain", target = "mypkg.rag:make_retriever", doc_key = "source"}
    retriever = {kind = "llamaindex", target = "mypkg.rag:make_retriever"}

with ``on_error = "record"`` (the default: an exception on one question is recorded and counted,
the question retrieves nothing) or ``"raise"``. Neither LangChain nor LlamaIndex is imported by
ragmeter: the adapters read the objects the user's code returns.
"""

from ._adapters import (
    CallablePipeline,
    LangChainPipeline,
    LlamaIndexPipeline,
    OutputProblem,
    Pipeline,
    RetrievedItem,
    as_pipeline,
)
from ._load import check_llamaindex_offline, check_pipeline, load_pipeline
from ._run import PipelineRun, QuestionError, run_pipeline
from ._stdout import routed
from ._target import check_signature, load_target

__all__ = [
    "CallablePipeline",
    "LangChainPipeline",
    "LlamaIndexPipeline",
    "OutputProblem",
    "Pipeline",
    "PipelineRun",
    "QuestionError",
    "RetrievedItem",
    "as_pipeline",
    "check_llamaindex_offline",
    "check_pipeline",
    "check_signature",
    "load_pipeline",
    "load_target",
    "routed",
    "run_pipeline",
]
