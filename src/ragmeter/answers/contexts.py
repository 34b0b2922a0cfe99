"""The prompt context of each question, taken from a retrieval run.

Answers files may carry the chunk ids of their prompt (``context``); most generation logs do not.
The retrieval run being diagnosed says what the prompt held: its ranked chunks cut at the
prompt ``k`` or token ``budget``, assembled exactly as the span metrics assemble them (ranked
as :func:`ragmeter.metrics._ranking.rank_run` ranks, ``ties="trec"``; the budget keeps the
leading chunks whose running token total fits, :func:`ragmeter.labels.assemble`). So the
context an answer is checked against is the one whose ``AllR@k`` put the question in its row of
the retrieval-by-answer table.

Used by ``check_answers(..., contexts=...)`` (an answer's own ``context`` wins), the demo and
``ragmeter diagnose --run``; reusable by anything that needs "what was in the prompt".
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import UsageError


def prompt_contexts(
    run: Any,
    chunking: Any,
    *,
    k: int | None = None,
    budget: int | None = None,
    ties: str = "trec",
) -> dict[str, tuple[str, ...]]:
    """``{qid: chunk ids in prompt order}`` of ``run`` cut at ``k`` or at ``budget`` tokens.

    ``run`` is anything :func:`ragmeter.labels.evaluate_spans` takes (a Run, a TREC/JSONL path,
    ``{qid: {chunk_id: score}}``); ``chunking`` the Chunking whose ids it ranks (its token counts
    fill the budget). Exactly one of ``k`` and ``budget``.
    """
    from ..labels import assemble
    from ..labels._span_metrics import _to_run
    from ..metrics import rank_run

    if (k is None) == (budget is None):
        raise UsageError("give the prompt's k or its token budget (exactly one)")
    if k is not None and k < 1:
        raise UsageError(f"the prompt k must be >= 1, got {k}")
    import pyarrow as pa

    from ..io import flat

    r = _to_run(run)
    ranked = rank_run(r, ties=ties)  # type: ignore[arg-type]
    ids = flat(r.doc).take(pa.array(ranked.rows)).to_pylist() if len(ranked.rows) else []
    rows = chunking.index_of(ids)
    unknown = [cid for cid, i in zip(ids, rows, strict=True) if i < 0]
    if unknown:
        raise UsageError(
            f"the run ranks {len(set(unknown))} chunk id(s) the chunking does not "
            f"have (e.g. '{unknown[0]}'): pass the chunking the run was made with"
        )
    tokens = np.asarray(chunking.n_tokens)[rows] if len(rows) else np.zeros(0, np.int64)
    out: dict[str, tuple[str, ...]] = {}
    for i, qid in enumerate(ranked.qids):
        a, b = int(ranked.starts[i]), int(ranked.starts[i + 1])
        n = min(k, b - a) if k is not None else assemble(tokens[a:b], int(budget or 0))
        out[str(qid)] = tuple(ids[a : a + n])
    return out


def variant_contexts(
    variant: Any, corpus: Any, tokenizer: Any = None
) -> tuple[Any, dict[str, tuple[str, ...]]]:
    """The chunking and the prompt contexts of one variant of an experiment result
    (:class:`ragmeter.experiments._runner.VariantResult`), at its prompt k, else its budget.

    The chunking is rebuilt from the variant's chunker (cheap, deterministic: the same ids as
    the run) or read from its chunks file.
    """
    from ..chunking import chunk_corpus, load_chunking

    s = variant.settings
    if s.chunks is not None:
        chunking = load_chunking(Path(s.chunks), corpus=corpus)
    elif s.chunker is not None:
        chunking = chunk_corpus(corpus, s.chunker, tokenizer=tokenizer)
    else:  # pragma: no cover - an experiment variant always names one of them
        raise UsageError(f"variant '{variant.name}' names no chunker and no chunks")
    ctx = prompt_contexts(
        variant.run, chunking, k=s.k, budget=None if s.k is not None else s.budget
    )
    return chunking, ctx


def require_chunks_for(contexts: Mapping[str, Any] | None, chunks: Any) -> None:
    if contexts is not None and chunks is None:
        raise UsageError(
            "prompt contexts are chunk ids: pass the chunking they refer to (chunks= / --chunks)"
        )


def experiment_contexts(
    result: Any, variants: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """For answers files written for some variants of an experiment result
    (``variants``: experiment variant name -> answers variant name): the span evaluation of each
    run, the prompt context of every question (the run cut at the prompt k, else the budget)
    and the chunking those chunk ids refer to, each keyed by the answers variant name."""
    from ..data import load_corpus

    corpus = load_corpus(result.experiment.corpus)
    evaluations: dict[str, Any] = {}
    contexts: dict[str, Any] = {}
    chunkings: dict[str, Any] = {}
    for v in result.variants:
        if v.name not in variants:
            continue
        chunking, ctx = variant_contexts(v, corpus, result.experiment.tokenizer)
        name = variants[v.name]
        evaluations[name], contexts[name], chunkings[name] = v.evaluation, ctx, chunking
    return evaluations, contexts, chunkings
