"""The toy set of the RAG evaluation lesson: six synthetic fare-rules queries, a baseline run
and the same candidates after a reranker; the generator receives three passages.

Per query: the grades of ALL relevant passages (2 = answers it, 1 = helpful), then the grade at
ranks 1..8 for each run (0 = not relevant). The table is copied from the design source; item ids
and scores are made up so that the engine ranks them exactly in that order.
"""

from __future__ import annotations

TOY: dict[str, tuple[list[int], list[int], list[int]]] = {
    "change fee": ([2, 1], [0, 1, 2, 0, 0, 0, 0, 0], [2, 1, 0, 0, 0, 0, 0, 0]),
    "name change": ([2], [0, 0, 0, 2, 0, 0, 0, 0], [0, 2, 0, 0, 0, 0, 0, 0]),
    "infant fare": ([2, 1], [1, 2, 0, 0, 0, 0, 0, 0], [2, 1, 0, 0, 0, 0, 0, 0]),
    "rule 16 code": ([2], [2, 0, 0, 0, 0, 0, 0, 0], [0, 0, 2, 0, 0, 0, 0, 0]),
    "refund window": ([2, 1], [0, 0, 0, 0, 0, 1, 2, 0], [0, 0, 0, 0, 0, 1, 2, 0]),
    "seat selection": ([2], [0, 0, 2, 0, 0, 0, 0, 0], [2, 0, 0, 0, 0, 0, 0, 0]),
}


def _item(query: str, kind: str, i: int) -> str:
    return f"{query.replace(' ', '-')}/{kind}{i}"


def toy_qrels() -> dict[str, dict[str, int]]:
    """``{query: {passage: grade}}`` for every labelled passage."""
    return {
        q: {_item(q, "rel", i): g for i, g in enumerate(sorted(gold, reverse=True))}
        for q, (gold, _, _) in TOY.items()
    }


def toy_run(which: str) -> dict[str, dict[str, float]]:
    """``{query: {passage: score}}`` for ``which`` = "baseline" or "reranked" (8 passages each)."""
    col = {"baseline": 1, "reranked": 2}[which]
    qrels = toy_qrels()
    out: dict[str, dict[str, float]] = {}
    for q, row in TOY.items():
        by_grade: dict[int, list[str]] = {}
        for item, g in qrels[q].items():
            by_grade.setdefault(g, []).append(item)
        ranked: dict[str, float] = {}
        for rank, g in enumerate(row[col]):
            item = by_grade[g].pop(0) if g else _item(q, "other", rank)
            ranked[item] = float(len(row[col]) - rank)  # strictly decreasing: no ties
        out[q] = ranked
    return out
