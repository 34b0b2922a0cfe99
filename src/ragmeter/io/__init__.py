"""Input and output of labels and runs: the columnar :class:`Qrels` and :class:`Run` every layer
passes around, TREC and JSON Lines readers and writers, and conversion from Python objects."""

from ._atomic import append_line, atomic_path, atomic_write, write_text_lines
from ._duplicates import DuplicateRowsError
from ._id_spaces import check_item_ids, check_query_ids, check_run_against_qrels
from ._reading import iter_jsonl, read_json
from ._source import is_jsonl_path, open_source
from ._tables import Qrels, Run, dictionary_codes, flat
from .convert import to_qrels, to_run
from .jsonl import read_qrels_jsonl, read_run_jsonl, write_qrels_jsonl, write_run_jsonl
from .trec import read_qrels, read_run, write_qrels, write_run

__all__ = [
    "DuplicateRowsError",
    "Qrels",
    "Run",
    "append_line",
    "atomic_path",
    "atomic_write",
    "check_item_ids",
    "check_query_ids",
    "check_run_against_qrels",
    "dictionary_codes",
    "flat",
    "is_jsonl_path",
    "iter_jsonl",
    "open_source",
    "read_json",
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
    "write_text_lines",
]
