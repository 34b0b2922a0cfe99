"""File-level entry point for span-level scoring (what ``ragmeter eval --golden --chunks`` runs)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .._errors import UsageError
from ..metrics import Evaluation
from ._span_mapping import span_mapping
from ._span_metrics import DEFAULT_COVER, evaluate_spans, span_metric_list

if TYPE_CHECKING:
    from ..metrics import Missing, Ties


def parse_ints(text: str | int | Sequence[int] | None, what: str) -> list[int]:
    """``"5,10"`` / ``5`` / ``[5, 10]`` as positive ints; UsageError naming the option."""
    if text is None:
        return []
    if isinstance(text, int):
        items: list[object] = [text]
    elif isinstance(text, str):
        items = [t.strip() for t in text.split(",") if t.strip()]
    else:
        items = list(text)
    out: list[int] = []
    for item in items:
        try:
            value = int(item)  # type: ignore[call-overload]
        except (TypeError, ValueError):
            raise UsageError(
                f"{what} must be positive integers such as 5 or 5,10; got {item!r}"
            ) from None
        if value < 1:
            raise UsageError(f"{what} must be positive, got {value}")
        out.append(value)
    return out


def evaluate_spans_files(
    runs: Sequence[str | os.PathLike[str]],
    *,
    golden: str | os.PathLike[str],
    chunks: str | os.PathLike[str],
    metrics: str | None = None,
    corpus: str | os.PathLike[str] | None = None,
    k: str | int | Sequence[int] | None = None,
    budget: str | int | Sequence[int] | None = None,
    cover: float = DEFAULT_COVER,
    missing: Missing = "zero",
    ties: Ties = "trec",
    duplicates: str = "best",
) -> list[Evaluation]:
    """Load a golden set, a chunk file and runs of chunk ids (TREC or ``.jsonl``), and score
    each run with :func:`evaluate_spans`.

    ``metrics`` defaults to ``R,Hit,AllR,RR``; metrics written without a cutoff are computed at
    every ``k`` and every ``budget`` (comma-separated lists). With ``corpus``, the golden set's
    version covers the documents, and every chunk's text is checked against its document.
    """
    from ..chunking import load_chunking
    from ..data.corpus import load_corpus
    from ..data.golden import load_golden

    if not runs:
        raise UsageError("give at least one RUN of chunk ids")
    ms = span_metric_list(metrics, parse_ints(k, "--k"), parse_ints(budget, "--budget"))
    corpus_obj = load_corpus(corpus) if corpus is not None else None
    golden_set = load_golden(golden, corpus=corpus_obj)
    chunking = load_chunking(chunks, corpus=corpus_obj)  # without a corpus, evaluate_spans
    # checks the spans against the chunking (check_spans_within_chunking)
    mapping = span_mapping(golden_set, chunking)  # once for every run
    out = []
    for path in runs:
        run = _read_run(Path(path), duplicates)
        ev = evaluate_spans(
            golden_set,
            chunking,
            run,
            ms,
            cover=cover,
            ties=ties,
            missing=missing,
            run_name=str(path),
            mapping=mapping,
        )
        config = dict(ev.config, golden=str(golden), chunks=str(chunks))
        out.append(dataclasses.replace(ev, config=config))
    return out


def _read_run(path: Path, duplicates: str):  # -> Run
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        from ..io.jsonl import read_run_jsonl

        return read_run_jsonl(path)
    from ..io.trec import read_run

    return read_run(path, duplicates=duplicates)


#: the name ``ragmeter eval`` imports.
