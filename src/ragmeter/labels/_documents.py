"""Document-level scoring of a chunk run: roll the chunk ranking up to documents.

Test collections such as BEIR judge whole documents. To score a chunk run against them, each
document takes its best chunk's place: the document's score is its best chunk's score (the
chunk the metric engine ranks first: highest score as a 32-bit float, then highest chunk id),
so documents keep the order of their best chunks, and the documents' later chunks drop out
rather than pushing other documents down. The engine then ranks the document run as trec_eval
does (score descending, ties by document id descending), so with one chunk per document
(``chunker = "document"``) the figures are exactly trec_eval's on the equivalent document run.

Document qrels come from the span labels: a document's grade for a question is the highest
grade of the question's spans in it (what a BEIR qrels file becomes on import, round-tripped).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from .._errors import InputError
from ..io import Qrels, Run, dictionary_codes, flat
from ._mapping import questions_of


def rollup_run(run: Run, chunking: Any) -> Run:
    """The document run of a chunk run: one row per (query, document) with the score of the
    document's best chunk (see the module docstring). Every chunk id of ``run`` must be a
    chunk of ``chunking``."""
    from ..metrics import rank_run

    ranked = rank_run(run, ties="trec")
    rows = ranked.rows.astype(np.int64)
    chunk_ids = flat(run.doc).take(pa.array(rows))
    where = chunking.rows_of(chunk_ids)  # vectorised: no Python string per row
    if (where < 0).any():
        bad = chunk_ids[int(np.flatnonzero(where < 0)[0])].as_py()
        raise InputError(
            f"run item {bad!r} is not a chunk of chunking '{chunking.name}': "
            "cannot find its document"
        )
    if not rows.size:
        return Run(
            qid=pa.array([], pa.string()),
            doc=pa.array([], pa.string()),
            score=np.zeros(0, dtype=np.float64),
            name=run.name,
        )
    docs = pa.array(chunking.doc, pa.string()).take(pa.array(where))
    doc_code, names = dictionary_codes(docs)
    query = np.repeat(np.arange(len(ranked.qids), dtype=np.int64), ranked.lengths)
    # the first (best-ranked) row of each (query, document) pair, kept in ranked order
    _, first = np.unique(query * len(names) + doc_code, return_index=True)
    keep = np.sort(first)
    return Run(
        qid=pa.array(ranked.qids, pa.string()).take(pa.array(query[keep])),
        doc=docs.take(pa.array(keep)),
        score=np.asarray(run.score, dtype=np.float64)[rows[keep]],
        name=run.name,
    )


def document_qrels(golden: Any) -> Qrels:
    """Document qrels ``(question id, document id, grade)``: a document's grade is the highest
    grade of the question's spans in it. Questions without evidence get no row."""
    best: dict[tuple[str, str], int] = {}
    for q in questions_of(golden):
        for ev in q.evidence:
            key = (q.id, ev.doc)
            best[key] = max(best.get(key, 0), ev.grade)
    rows = sorted(best.items())
    return Qrels(
        qid=pa.array([k[0] for k, _ in rows], pa.string()),
        doc=pa.array([k[1] for k, _ in rows], pa.string()),
        rel=np.array([g for _, g in rows], dtype=np.int64),
        source=f"document labels of {getattr(golden, 'source', None) or '<golden>'}",
    )
