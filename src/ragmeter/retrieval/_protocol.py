"""What every retriever and encoder looks like, and the helpers that turn score arrays into runs.

A retriever is fitted once on the items to search (chunk ids and texts) and then answers a list
of queries with a :class:`~ragmeter.io._tables.Run`: one row per (query, item) for the top
``depth`` items, ``score`` higher = better. Its ``name`` is a short label for tables and its
``config`` a plain JSON-able dict that goes into results, so a reviewer can rebuild it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa

from .._errors import UsageError
from ..io import Run


@runtime_checkable
class Retriever(Protocol):
    """A first-stage retriever: ``fit`` on items, then ``search`` queries."""

    name: str

    @property
    def config(self) -> dict[str, Any]:
        """Everything needed to rebuild this retriever, as plain JSON values."""
        ...

    def fit(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        """Index the items to search; ``ids[i]`` names ``texts[i]``."""
        ...

    def search(
        self, queries: Sequence[str], depth: int, *, qids: Sequence[str] | None = None
    ) -> Run:
        """Top ``depth`` items for each query; ``qids`` default to "0", "1", ..."""
        ...


@runtime_checkable
class Encoder(Protocol):
    """A text embedding model: unit-length float32 vectors, one row per text.

    ``model_id`` changes whenever the vectors could (model file, tokenizer, max length), so it
    can key a cache. ``symmetric`` encoders embed queries and passages the same way.
    ``calls`` counts batches sent to the model and ``texts_encoded`` the texts in them.
    """

    symmetric: bool
    calls: int
    texts_encoded: int

    @property
    def model_id(self) -> str: ...

    def encode(self, texts: Sequence[str], *, role: str = "passage") -> np.ndarray:
        """``(len(texts), dim)`` float32 rows of unit length; ``role`` is "query" or "passage"."""
        ...


def check_fit_input(ids: Sequence[str], texts: Sequence[str]) -> None:
    """Reject mismatched, empty or duplicated item lists before any expensive work."""
    if len(ids) != len(texts):
        raise UsageError(f"fit() got {len(ids)} ids but {len(texts)} texts")
    if not ids:
        raise UsageError("fit() needs at least one item to search")
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        for i in ids:
            if i in seen:
                raise UsageError(f"fit() got the item id '{i}' more than once; ids must be unique")
            seen.add(i)


def query_ids(queries: Sequence[str], qids: Sequence[str] | None) -> list[str]:
    """The query ids of a search: the given ones (checked) or "0", "1", ..."""
    if qids is None:
        return [str(i) for i in range(len(queries))]
    if len(qids) != len(queries):
        raise UsageError(f"search() got {len(queries)} queries but {len(qids)} query ids")
    if len(set(qids)) != len(qids):
        raise UsageError("search() query ids must be unique")
    return [str(q) for q in qids]


def check_depth(depth: int) -> None:
    if not isinstance(depth, (int, np.integer)) or isinstance(depth, bool) or depth < 1:
        raise UsageError(f"depth must be a positive integer, got {depth!r}")


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and values of the ``k`` largest scores of each row, best first.

    ``argpartition`` finds the top ``k`` in O(n) per row, then only those are sorted. Equal
    scores are ordered by column index ascending, so results do not depend on the partition.
    """
    n = scores.shape[1]
    k = min(k, n)
    if k < n:
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    else:
        part = np.broadcast_to(np.arange(n), scores.shape).copy()
    vals = np.take_along_axis(scores, part, axis=1)
    # lexsort: last key is primary -> score descending, then column index ascending
    order = np.lexsort((part, -vals), axis=1)
    idx = np.take_along_axis(part, order, axis=1)
    return idx, np.take_along_axis(vals, order, axis=1)


def run_from_topk(
    qids: Sequence[str],
    item_ids: Sequence[str] | np.ndarray,
    idx: np.ndarray,
    scores: np.ndarray,
    name: str,
    valid: np.ndarray | None = None,
) -> Run:
    """Build a Run from per-query top-k item indices and scores (rows aligned with ``qids``).

    ``valid`` (same shape, bool) drops padding cells, e.g. items that matched no query term.
    """
    items = np.asarray(item_ids, dtype=object)
    k = idx.shape[1]
    q = np.repeat(np.asarray(qids, dtype=object), k)
    d = items[idx.reshape(-1)]
    s = scores.reshape(-1).astype(np.float64)
    if valid is not None:
        keep = valid.reshape(-1)
        q, d, s = q[keep], d[keep], s[keep]
    return Run(
        qid=pa.array(q, type=pa.string()), doc=pa.array(d, type=pa.string()), score=s, name=name
    )


def ranked_lists(run: Run) -> dict[str, list[tuple[str, float]]]:
    """``{qid: [(item, score), ...]}`` best first: score desc, then item id desc (trec_eval's
    order)."""
    out: dict[str, list[tuple[str, float]]] = {}
    for qid, item, score in zip(
        run.qid.to_pylist(), run.doc.to_pylist(), run.score.tolist(), strict=True
    ):
        out.setdefault(qid, []).append((item, score))
    for pairs in out.values():
        pairs.sort(key=lambda p: p[0], reverse=True)
        pairs.sort(key=lambda p: -p[1])  # stable: equal scores keep id-descending order
    return out
