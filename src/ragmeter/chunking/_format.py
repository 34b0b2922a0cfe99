"""The chunk file format and its writer: Parquet (name and tokenizer in the schema metadata) or
JSONL, one row per chunk with the columns ``id, doc, start, end, text, n_tokens``.

A JSONL row also carries ``chunking`` (the name) and ``tokenizer``; Parquet keeps them once,
under the schema metadata key ``ragmeter.chunking`` as JSON ``{"name", "tokenizer", "format"}``.
Writing lives here, below :class:`~ragmeter.chunking.Chunking` (whose ``save``/``to_arrow``
call it) and below the reader in ``_storage`` (which builds a Chunking), so neither module
imports the other in a circle.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from .._errors import UsageError
from ..io import atomic_path, write_text_lines

if TYPE_CHECKING:  # type only: Chunking imports this module when it saves
    import pyarrow as pa

    from ._chunking import Chunking

META_KEY = b"ragmeter.chunking"
FORMAT = 1
SUFFIXES = (".parquet", ".jsonl")


def suffix_of(path: Path) -> str:
    """The chunk file's format, from its suffix (any case); a UsageError for any other."""
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise UsageError(f"{path}: chunk files end in .parquet or .jsonl, got '{path.suffix}'")
    return suffix


def to_arrow(chunking: Chunking) -> pa.Table:
    import pyarrow as pa

    meta = {"name": chunking.name, "tokenizer": chunking.tokenizer, "format": FORMAT}
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("doc", pa.string()),
            ("start", pa.int64()),
            ("end", pa.int64()),
            ("text", pa.string()),
            ("n_tokens", pa.int64()),
        ],
        metadata={META_KEY: json.dumps(meta).encode("utf-8")},
    )
    return pa.table(
        [
            chunking.ids,
            chunking.doc,
            chunking.start,
            chunking.end,
            chunking.text,
            chunking.n_tokens,
        ],
        schema=schema,
    )


def save_chunking(chunking: Chunking, path: str | os.PathLike[str]) -> Path:
    """Write ``chunking`` to ``path`` (.parquet or .jsonl), atomically replacing it."""
    path = Path(path)
    if suffix_of(path) == ".parquet":
        import pyarrow.parquet as pq

        with atomic_path(path) as tmp:
            pq.write_table(to_arrow(chunking), tmp)
        return path

    def rows() -> Iterator[str]:
        for i in range(len(chunking)):
            row = {
                "id": chunking.ids[i],
                "doc": chunking.doc[i],
                "start": int(chunking.start[i]),
                "end": int(chunking.end[i]),
                "text": chunking.text[i],
                "n_tokens": int(chunking.n_tokens[i]),
                "chunking": chunking.name,
                "tokenizer": chunking.tokenizer,
            }
            yield json.dumps(row, ensure_ascii=False)

    return write_text_lines(path, rows())
