"""The chunking and labelling jobs, each written once: cut a corpus into a chunk file
(``ragmeter chunk``) and turn span labels into chunk qrels for one chunking (``ragmeter labels
export``).

The command line checks its options and output paths, calls these functions and renders the
records they return; the lab's labelling workbench calls the same functions. None prints: the
progress of a long job goes to a callback, warnings come back in the record.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ..chunking import Chunker, Chunking, Tokenizer
    from ..data import Corpus

__all__ = [
    "ChunkPlan",
    "Chunked",
    "ExportedQrels",
    "Progress",
    "Update",
    "chunk_files",
    "export_chunk_qrels",
    "plan_chunking",
]

PathLike = str | os.PathLike[str]
#: ``update(done, total)``: documents chunked so far
Update = Callable[[int, int], None]
#: ``progress(description, total)``: a context around a long step that yields its ``update``
Progress = Callable[[str, int], AbstractContextManager[Update]]


@dataclass(frozen=True)
class ChunkPlan:
    """A chunker and a tokenizer, both checked by name before any file is read."""

    chunker: Chunker
    tokenizer: Tokenizer


def plan_chunking(chunker: str | Chunker, tokenizer: str | Tokenizer) -> ChunkPlan:
    """The chunker a name describes (``tokens:300:50``, ...) and the tokenizer it counts with;
    a bad name is a UsageError before any work."""
    from ..chunking import get_tokenizer, make_chunker

    spec = make_chunker(chunker)  # a bad chunker name fails first
    return ChunkPlan(spec, get_tokenizer(tokenizer))


@dataclass(frozen=True)
class Chunked:
    """The chunking :func:`chunk_files` made and the file it was written to."""

    chunking: Chunking
    output: Path

    def stats(self) -> dict[str, Any]:
        """Counts and token sizes (``Chunking.stats``) with the ``path`` written."""
        return dict(self.chunking.stats(), path=str(self.output))


@contextlib.contextmanager
def _no_progress(_description: str, _total: int) -> Iterator[Update]:
    yield lambda _done, _total: None


def chunk_files(
    corpus: Corpus | PathLike,
    plan: ChunkPlan,
    output: PathLike,
    *,
    progress: Progress | None = None,
) -> Chunked:
    """Chunk every document of ``corpus`` as ``plan`` says and write the chunk table to
    ``output`` (``.parquet`` or ``.jsonl``, checked before the corpus is read); ``progress``
    is told ``chunking NAME`` and the number of documents."""
    from ..chunking import chunk_corpus, suffix_of
    from ..data import Corpus, load_corpus

    output = Path(output)
    suffix_of(output)  # the library's rule for chunk file names, checked before any work
    docs = corpus if isinstance(corpus, Corpus) else load_corpus(corpus)
    with (progress or _no_progress)(f"chunking {plan.chunker.name}", len(docs)) as update:
        chunking = chunk_corpus(docs, plan.chunker, tokenizer=plan.tokenizer, progress=update)
    chunking.save(output)
    return Chunked(chunking, output)


@dataclass(frozen=True)
class ExportedQrels:
    """What :func:`export_chunk_qrels` wrote: chunk judgements for how many questions, of which
    chunking at which ``cover``, and the warnings raised on the way (questions whose evidence no
    chunk meets the rule)."""

    output: Path
    judgements: int
    questions: int
    chunking: str
    cover: float
    warnings: list[str]


def export_chunk_qrels(
    golden: PathLike,
    chunks: PathLike,
    output: PathLike,
    *,
    cover: float = 0.5,
    corpus: PathLike | None = None,
) -> ExportedQrels:
    """Write chunk-level TREC qrels (``qid 0 chunk_id grade``) of the chunking in ``chunks``
    from the span labels of ``golden`` (:func:`ragmeter.labels.chunk_qrels`); with ``corpus``,
    the spans and the chunk texts are checked against it."""
    from .._errors import RagmeterWarning
    from ..chunking import load_chunking
    from ..data import load_corpus, load_golden
    from ..labels import chunk_qrels, write_chunk_qrels

    corpus_obj = load_corpus(corpus) if corpus is not None else None
    golden_set = load_golden(golden, corpus=corpus_obj)
    chunking = load_chunking(chunks, corpus=corpus_obj)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RagmeterWarning)
        qrels = chunk_qrels(golden_set, chunking, cover=cover)
    written = write_chunk_qrels(qrels, output)
    return ExportedQrels(
        output=written,
        judgements=len(qrels),
        questions=len(set(qrels.qid.to_pylist())),
        chunking=chunking.name,
        cover=cover,
        warnings=[str(w.message) for w in caught],
    )
