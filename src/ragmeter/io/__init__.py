"""Input and output of labels and runs: the columnar :class:`Qrels` and :class:`Run` every layer
passes around, TREC and JSON Lines readers and writers, and conversion from Python objects."""

from ._tables import Qrels, Run
from .convert import to_qrels, to_run
from .jsonl import read_qrels_jsonl, read_run_jsonl, write_qrels_jsonl, write_run_jsonl
from .trec import read_qrels, read_run, write_qrels, write_run

__all__ = [
    "Qrels",
    "Run",
    "read_qrels",
    "read_qrels_jsonl",
    "read_run",
    "read_run_jsonl",
    "to_qrels",
    "to_run",
    "write_qrels",
    "write_qrels_jsonl",
    "write_run",
    "write_run_jsonl",
]
