"""A stored run made ready to be scored at any cutoff (see :mod:`._recompute`): its ranked lists
as a run again, the chunking its items are chunks of, and the chunk qrels nDCG needs. Built
once per run and kept (with the experiment's corpus and golden set, :mod:`._context`) while
the files it was read from are unchanged.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

    from ..chunking import Chunking
    from ..io import Qrels, Run
    from ..store import Store
    from ._context import RunContext
    from ._recompute import PromptCutoff, RunScores


# -- one run, prepared once ------------------------------------------------------------------
@dataclass
class PreparedRun:
    """A stored run ready to be scored at any cutoff: its ranked lists as a run, the chunking
    its items are chunks of (the real one, or one rebuilt from the stored offsets), the chunk
    qrels for nDCG. Built once per run (see :func:`prepare`)."""

    ctx: RunContext
    ranked: pa.Table  # qid, rank, item, doc, start, end, score
    run: Run
    #: None for a document-level run scored without a chunking
    chunking: Chunking | None
    #: False when ``chunking`` was rebuilt from offsets (no texts, no token counts)
    has_chunking: bool
    qrels: Qrels | None = None
    #: why a metric or the budget is unavailable for this run
    unavailable: dict[str, str] = field(default_factory=dict)
    #: one sentence on what could not be loaded and what is shown instead
    problem: str | None = None
    _rows: dict[str, tuple[int, int]] | None = field(default=None, repr=False)
    _grades: dict[str, dict[str, int]] | None = field(default=None, repr=False)
    _scores: OrderedDict[PromptCutoff, RunScores] = field(default_factory=OrderedDict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def run_id(self) -> int:
        return int(self.ctx.run.id)

    @property
    def level(self) -> str:
        return self.ctx.level

    def rows_of(self, qid: str) -> tuple[int, int]:
        """The ranked table's rows of one question (stored sorted by question, then rank)."""
        if self._rows is None:
            qids = self.ranked.column("qid").to_pylist()
            rows: dict[str, tuple[int, int]] = {}
            start = 0
            for i in range(1, len(qids) + 1):
                if i == len(qids) or qids[i] != qids[start]:
                    rows[qids[start]] = (start, i)
                    start = i
            self._rows = rows
        return self._rows.get(qid, (0, 0))

    def grades_of(self, qid: str) -> dict[str, int]:
        """Chunk id -> grade in the chunk qrels (the gain nDCG gives each chunk)."""
        if self.qrels is None:
            return {}
        if self._grades is None:
            import numpy as np

            grades: dict[str, dict[str, int]] = {}
            for q, d, g in zip(
                self.qrels.qid.to_pylist(),
                self.qrels.doc.to_pylist(),
                np.asarray(self.qrels.rel).tolist(),
                strict=True,
            ):
                grades.setdefault(q, {})[d] = int(g)
            self._grades = grades
        return self._grades.get(qid, {})


_ID = re.compile(r"^(?P<doc>.+)#(?P<start>[0-9]+)-(?P<end>[0-9]+)$")


def prepare(store: Store, ctx: RunContext) -> PreparedRun:
    """Read the run's ranked lists and set up what scoring them needs."""
    import numpy as np
    import pyarrow as pa

    from ..io import Run

    run_id = int(ctx.run.id)
    ranked = store.ranked(run_id)
    run = Run(
        qid=ranked.column("qid").combine_chunks(),
        doc=ranked.column("item").combine_chunks(),
        score=ranked.column("score").to_numpy().astype(np.float64),
        name=ctx.run.name,
    )
    unavailable: dict[str, str] = {}
    problem = ctx.problem
    chunking = ctx.chunking
    has_chunking = chunking is not None
    if ctx.level != "document":
        if chunking is not None:
            known = chunking.rows_of(ranked.column("item"))
            if (known < 0).any():
                unknown = ranked.column("item").combine_chunks().filter(pa.array(known < 0))
                problem = (
                    f"{len(unknown)} ranked item(s) of run {run_id} are not chunks of the "
                    f"chunking '{chunking.name}' rebuilt from the experiment file (e.g. "
                    f"{unknown[0].as_py()!r}): the corpus or chunker changed since it ran; "
                    "showing the stored offsets without chunk text"
                )
                chunking, has_chunking = None, False
        if chunking is None:
            chunking = offsets_chunking(ranked, ctx)
        if not has_chunking:
            why = "needs the chunking (chunk texts and token counts), which is not available"
            unavailable["budget"] = f"a token budget {why}"
            unavailable["nDCG"] = (
                f"nDCG needs every chunk of the chunking to find the ideal order; it {why[6:]}"
            )
    else:
        unavailable["budget"] = "a token budget applies to chunks, not to a document-level run"
        unavailable["AllR"] = "AllR is a span-level metric; this run was scored on documents"
    prepared = PreparedRun(
        ctx, ranked, run, chunking, has_chunking, unavailable=unavailable, problem=problem
    )
    if ctx.level == "document":
        from ..labels import document_qrels

        prepared.qrels = document_qrels(ctx.golden)
    elif has_chunking:
        from ..labels import chunk_qrels

        prepared.qrels = chunk_qrels(ctx.golden, chunking, cover=ctx.cover)
    return prepared


def offsets_chunking(ranked: pa.Table, ctx: RunContext) -> Chunking:
    """A chunking of just the ranked chunks, from the stored documents and offsets (or, for a
    run imported from its TREC file, from chunk ids of the ``doc#start-end`` form), with no
    text and no token counts. Each evidence document also gets an empty chunk at the end of
    its last span: empty chunks overlap nothing, but they tell the span check how far each
    document reaches (the stored golden set has no corpus to check the spans against)."""
    from ..chunking import Chunking
    from ..labels import questions_of

    items = ranked.column("item").to_pylist()
    docs = ranked.column("doc").to_pylist()
    starts = ranked.column("start").to_pylist()
    ends = ranked.column("end").to_pylist()
    seen: dict[str, tuple[str, int, int]] = {}
    for item, doc, a, b in zip(items, docs, starts, ends, strict=True):
        if item in seen:
            continue
        if doc is None or a is None or b is None:
            m = _ID.match(item)
            if m is None:
                raise UsageError(
                    f"run {ctx.run.id} stores no document offsets for chunk {item!r} and the "
                    "experiment file is not available to rebuild its chunking"
                    + (f" ({ctx.problem})" if ctx.problem else "")
                )
            doc, a, b = m["doc"], int(m["start"]), int(m["end"])
        seen[item] = (str(doc), int(a), int(b))
    reach: dict[str, int] = {}
    for q in questions_of(ctx.golden):
        for ev in q.evidence:
            reach[ev.doc] = max(reach.get(ev.doc, 0), ev.end)
    ids = list(seen)
    cols = [seen[i] for i in ids]
    for doc, end in reach.items():
        ids.append(f"\x00reach\x00{doc}")
        cols.append((doc, end, end))
    return Chunking(
        name=str(settings_chunker(ctx) or "stored offsets"),
        tokenizer="unknown",
        ids=ids,
        doc=[c[0] for c in cols],
        start=[c[1] for c in cols],
        end=[c[2] for c in cols],
        text=[""] * len(ids),
        n_tokens=[0] * len(ids),
    )


def settings_chunker(ctx: RunContext) -> str | None:
    s = ctx.settings
    return s.get("chunker") or (str(s["chunks"]) if s.get("chunks") else None)


# -- the cache of prepared runs --------------------------------------------------------------
def prepared_run(
    store: Store, run_id: int, cache: MutableMapping[Any, Any] | None = None
) -> PreparedRun:
    """The prepared run ``run_id`` (loaded once per process, or per ``cache``)."""
    from ._context import _DEFAULT_CACHE, run_context
    from ._paths import root_of

    cache = _DEFAULT_CACHE if cache is None else cache
    # what may be read depends on the root (a plain cache's is the current folder)
    key = ("prepared", store.url, int(run_id), str(root_of(cache)))
    found: PreparedRun | None = cache.get(key)
    run = store.run(int(run_id))
    if found is not None and found.ctx.run == run and found.ctx.is_current():
        return found
    if run.status != "finished":
        raise UsageError(f"run {run_id} is {run.status}: only finished runs can be shown")
    if not run.has_ranked:
        raise UsageError(f"run {run_id} has no stored ranked lists to recompute from")
    prepared = prepare(store, run_context(store, run, cache))
    cache[key] = prepared
    return prepared
