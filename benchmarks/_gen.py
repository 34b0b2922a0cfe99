"""Seeded TREC qrels and runs for the benchmarks: the same bytes for the same (queries, depth,
seed, shape).

The data are shaped so every peer's definition agrees and the means must be identical:

- every query is in both files and has at least one relevant item (peers average queries without
  one, or absent from the run, differently from ragmeter);
- scores strictly decrease with rank with gaps of at least 0.005, far above float32 resolution,
  so there are no ties (peers break ties differently);
- per query, ``depth`` distinct retrieved items; 5 of them judged (grades 0-3, at least one >= 1)
  plus 3 judged items the run never retrieved (so recall and the ideal DCG see unretrieved
  relevant items).

That is the default ``shape="strict"``. Real runs have ties, so other shapes (``SHAPES``) keep
the same items, ranks and qrels (byte for byte: only the score column differs) and give the
scores ties as real runs have them; each row still lists its query's items in rank order, with
non-increasing scores, so tied items are listed in a given order that the tie rule may change:

- ``round1``, ``round2``, ``round3``: similarity-like scores (the top one in [0.6, 0.9), the
  others below it by sorted uniform drops of up to 0.3) rounded to 1, 2 or 3 decimals: ties in
  nearly every query at 1 decimal, in most at 2, and at 3 in a share that grows with depth;
- ``rand6``: independent uniform scores in [0, 1) at 6 decimals, sorted (a tie in roughly
  ``depth**2 / 2e6`` of the queries: about 0.5% at depth 100);
- ``bm25``: BM25 scores (Lucene's formula, k1=0.9, b=0.4, float32) of the BEIR SciFact claims
  against its 5,183 abstracts when ``$RAGMETER_DATA/beir-scifact`` exists (query ``i`` of the
  file takes the top ``depth`` scores of claim ``i mod 1,109``; exact ties where abstracts
  match a claim alike, and 0.0 past the matching abstracts), else a seeded BM25-like
  distribution (``bm25sim``: a few query terms of random idf, small term frequencies and
  length bins, so many exact ties); printed with 4 decimals.

On a shape with ties, peers that break ties by another rule than trec_eval's score different
means without any definition differing (docs/metrics.md, "Ties"): ragmeter's default rule is
trec_eval's, so compare means with pytrec_eval only (``Shape.ties``, :func:`agreeing_peers`).

Files are single-space separated: ``qid 0 doc grade`` and ``qid Q0 doc rank score tag``.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: a prime larger than any depth: (a + b*r) mod PRIME gives distinct ids for r < PRIME
_PRIME = 1_000_003
JUDGED_IN_RUN = 5
JUDGED_OUTSIDE = 3


@dataclass(frozen=True)
class Shape:
    """How a shape's scores are made: ``ties`` when its scores tie in some queries."""

    name: str
    ties: bool
    about: str


SHAPES = {
    s.name: s
    for s in (
        Shape("strict", False, "strictly decreasing scores, no ties"),
        Shape("round1", True, "scores rounded to 1 decimal"),
        Shape("round2", True, "scores rounded to 2 decimals"),
        Shape("round3", True, "scores rounded to 3 decimals"),
        Shape("rand6", True, "uniform random scores at 6 decimals"),
        Shape("bm25", True, "BM25 scores on SciFact (bm25sim without $RAGMETER_DATA)"),
        Shape("bm25sim", True, "a seeded BM25-like score distribution"),
    )
}
#: peers whose tie rule is ragmeter's default (trec_eval's): the only ones whose means must
#: equal ragmeter's on a shape with ties
TREC_TIE_RULE_PEERS = ("pytrec_eval",)


def agreeing_peers(shape: str, peers: tuple[str, ...]) -> tuple[str, ...]:
    """The peers among ``peers`` whose means must equal ragmeter's on ``shape``."""
    if not SHAPES[shape].ties:
        return peers
    return tuple(p for p in peers if p in TREC_TIE_RULE_PEERS)


@dataclass(frozen=True)
class BenchFiles:
    qrels: Path
    run: Path
    n_queries: int
    depth: int
    seed: int
    shape: str = "strict"

    @property
    def n_rows(self) -> int:
        return self.n_queries * self.depth


def cache_dir() -> Path:
    """Where generated files are kept between runs (``$RAGMETER_BENCH_DATA`` overrides)."""
    root = os.environ.get("RAGMETER_BENCH_DATA")
    return Path(root) if root else Path(tempfile.gettempdir()) / "ragmeter-bench"


def bench_files(
    n_queries: int,
    depth: int,
    seed: int = 0,
    folder: Path | None = None,
    shape: str = "strict",
) -> BenchFiles:
    """Paths of the qrels and run for this size and shape (``SHAPES``), generating them once.
    ``bm25`` is SciFact's BM25 scores when ``$RAGMETER_DATA/beir-scifact`` exists, else
    ``bm25sim`` (the returned ``shape`` says which)."""
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {', '.join(SHAPES)}, got {shape!r}")
    if shape == "bm25" and _scifact() is None:
        shape = "bm25sim"
    folder = folder or cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"q{n_queries}-d{depth}-s{seed}" + ("" if shape == "strict" else f"-{shape}")
    files = BenchFiles(
        folder / f"{stem}.qrels", folder / f"{stem}.run", n_queries, depth, seed, shape
    )
    if not (files.qrels.is_file() and files.run.is_file()):
        _generate(files)
    return files


def _generate(files: BenchFiles) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc

    nq, depth = files.n_queries, files.depth
    if depth < JUDGED_IN_RUN:
        raise ValueError(f"depth must be at least {JUDGED_IN_RUN}")
    rng = np.random.default_rng(files.seed)
    qnames = pc.binary_join_element_wise("q", pa.array(np.arange(nq)).cast(pa.string()), "")

    # -- run: depth distinct items per query, scores strictly decreasing with rank --------------
    a = rng.integers(0, _PRIME, size=nq)
    b = rng.integers(1, _PRIME, size=nq)
    rank = np.arange(1, depth + 1)
    doc_num = (a[:, None] + b[:, None] * (rank[None, :] - 1)) % _PRIME  # nq x depth, distinct rows
    base = 20.0 + 10.0 * rng.random(nq)
    score = base[:, None] - 0.01 * rank[None, :] + 0.005 * rng.random((nq, depth))
    score = np.round(score, 6)
    if files.shape != "strict":  # after every draw of the strict shape: the same items, qrels
        score = _shaped_scores(files, score)
    q_rows = pa.array(np.repeat(np.arange(nq), depth))
    run = pa.table(
        {
            "qid": qnames.take(q_rows),
            "q0": pa.array(np.full(nq * depth, "Q0")),
            "doc": _ids("D", doc_num.ravel()),
            "rank": pa.array(np.tile(rank, nq)),
            "score": pa.array(score.ravel()),
            "tag": pa.array(np.full(nq * depth, "bench")),
        }
    )

    # -- qrels: judged items from the run (first one relevant) and unretrieved judged items -----
    picked = np.argsort(rng.random((nq, depth)), axis=1)[:, :JUDGED_IN_RUN]  # distinct ranks
    in_docs = np.take_along_axis(doc_num, picked, axis=1)
    in_grades = rng.choice(4, size=(nq, JUDGED_IN_RUN), p=[0.4, 0.3, 0.2, 0.1])
    in_grades[:, 0] = rng.integers(1, 4, size=nq)
    out_docs = np.arange(nq * JUDGED_OUTSIDE).reshape(nq, JUDGED_OUTSIDE)
    out_grades = rng.choice(4, size=(nq, JUDGED_OUTSIDE), p=[0.4, 0.3, 0.2, 0.1])
    per_q = JUDGED_IN_RUN + JUDGED_OUTSIDE
    docs = pa.chunked_array(
        [_ids("D", in_docs.ravel()), _ids("J", out_docs.ravel())]
    ).combine_chunks()
    # row q of the (nq x per_q) layout: its 5 in-run items, then its 3 unretrieved ones
    idx = np.concatenate(
        [
            np.arange(nq)[:, None] * JUDGED_IN_RUN + np.arange(JUDGED_IN_RUN),
            nq * JUDGED_IN_RUN
            + np.arange(nq)[:, None] * JUDGED_OUTSIDE
            + np.arange(JUDGED_OUTSIDE),
        ],
        axis=1,
    ).ravel()
    grades = np.concatenate([in_grades.ravel(), out_grades.ravel()])[idx]
    qrels = pa.table(
        {
            "qid": qnames.take(pa.array(np.repeat(np.arange(nq), per_q))),
            "iter": pa.array(np.zeros(nq * per_q, dtype=np.int64)),
            "doc": docs.take(pa.array(idx)),
            "rel": pa.array(grades.astype(np.int64)),
        }
    )
    _write(run, files.run)
    _write(qrels, files.qrels)


def _shaped_scores(files: BenchFiles, strict: np.ndarray) -> np.ndarray:
    """The (queries x depth) scores of a shape with ties, non-increasing along each row."""
    shape, (nq, depth) = files.shape, strict.shape
    rng = np.random.default_rng([files.seed, sum(map(ord, shape))])  # apart from strict's draws
    if shape.startswith("round"):  # a dense retriever's similarities: top in [0.6, 0.9)
        top = 0.6 + 0.3 * rng.random((nq, 1))
        drop = np.sort(0.3 * rng.random((nq, depth)), axis=1)
        return np.round(top - drop, int(shape[-1]))
    if shape == "rand6":
        return -np.sort(-np.round(rng.random((nq, depth)), 6), axis=1)
    top = _scifact_top(depth) if shape == "bm25" else _bm25_like(rng, nq, depth)
    rows = np.arange(nq) % top.shape[0]
    return np.round(top[rows].astype(np.float64), 4)


def _bm25_like(rng: np.random.Generator, nq: int, depth: int) -> np.ndarray:
    """Seeded BM25-like top scores: per query 1-6 terms of idf in [0.5, 8), candidates with term
    frequencies 0-3 (mostly 0) and one of 8 length bins, so equal inputs give exactly equal
    float32 scores (the ties of a real BM25 run); the top ``depth`` of 3 x depth candidates."""
    k1, b = np.float32(0.9), np.float32(0.4)
    out = np.empty((nq, depth), dtype=np.float32)
    step = max(1, 2_000_000 // (3 * depth))  # queries per block: bounded memory
    for lo in range(0, nq, step):
        n = min(step, nq - lo)
        idf = (0.5 + 7.5 * rng.random((n, 1, 6))).astype(np.float32)
        idf *= rng.random((n, 1, 6)) < 0.6  # 1-6 terms per query (the rest weigh 0)
        idf[:, :, 0] = np.maximum(idf[:, :, 0], np.float32(0.5))
        tf = rng.choice(4, size=(n, 3 * depth, 6), p=[0.7, 0.2, 0.07, 0.03]).astype(np.float32)
        norm = k1 * (1 - b + b * (0.5 + rng.integers(0, 8, size=(n, 3 * depth, 1)) / 4))
        score = (idf * tf * (k1 + 1) / (tf + norm.astype(np.float32))).sum(axis=2)
        out[lo : lo + n] = -np.sort(-score, axis=1)[:, :depth]
    return out


def _scifact() -> Path | None:
    root = os.environ.get("RAGMETER_DATA")
    folder = Path(root) / "beir-scifact" if root else None
    return folder if folder and (folder / "corpus.jsonl").is_file() else None


def _scifact_top(depth: int) -> np.ndarray:
    """(claims x depth) float32: each SciFact claim's top ``depth`` BM25 scores (Lucene's idf and
    length normalisation, k1=0.9, b=0.4, lower-cased alphanumeric tokens), descending."""
    import json
    import re

    from scipy import sparse

    folder = _scifact()
    assert folder is not None
    token = re.compile(r"[a-z0-9]+")
    vocab: dict[str, int] = {}

    def counts(text: str) -> dict[int, int]:
        out: dict[int, int] = {}
        for w in token.findall(text.lower()):
            t = vocab.setdefault(w, len(vocab))
            out[t] = out.get(t, 0) + 1
        return out

    docs = [json.loads(line) for line in (folder / "corpus.jsonl").open(encoding="utf-8")]
    tfs = [counts(f"{d['title']} {d['text']}") for d in docs]
    claims = [json.loads(line)["text"] for line in (folder / "queries.jsonl").open()]
    rows = np.repeat(np.arange(len(tfs)), [len(t) for t in tfs])
    cols = np.fromiter((t for d in tfs for t in d), dtype=np.int64)
    tf = np.fromiter((c for d in tfs for c in d.values()), dtype=np.float32)
    length = np.array([sum(d.values()) for d in tfs], dtype=np.float32)
    n_docs = len(tfs)
    df = np.bincount(cols, minlength=len(vocab)).astype(np.float32)
    idf = np.log1p((n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)
    k1, b = np.float32(0.9), np.float32(0.4)
    norm = k1 * (1 - b + b * length / length.mean())
    w = idf[cols] * tf * (k1 + 1) / (tf + norm[rows])
    matrix = sparse.csc_matrix((w, (rows, cols)), shape=(n_docs, len(vocab)), dtype=np.float32)
    top = np.zeros((len(claims), depth), dtype=np.float32)
    for i, claim in enumerate(claims):
        terms = [vocab[t] for t in dict.fromkeys(token.findall(claim.lower())) if t in vocab]
        score = np.asarray(matrix[:, terms].sum(axis=1), dtype=np.float32).ravel()
        best = -np.sort(-score)[:depth]
        top[i, : best.size] = best
    return top


def _ids(prefix: str, nums: np.ndarray):  # -> pa.Array
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.binary_join_element_wise(prefix, pa.array(nums).cast(pa.string()), "")


def _write(table, path: Path) -> None:  # table: pa.Table
    from pyarrow import csv

    tmp = path.with_suffix(path.suffix + ".part")
    opts = csv.WriteOptions(
        include_header=False, delimiter=" ", quoting_style="none", batch_size=1 << 16
    )
    csv.write_csv(table, tmp, write_options=opts)
    tmp.replace(path)
