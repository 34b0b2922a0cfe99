"""The compiled paths (numba, the ``fast`` extra) give what the numpy paths give, to the bit.

Large inputs take compiled loops: the grade join, the one-pass rank-and-join and the grade
counts of the metric engine (``metrics/_join_kernel``, ``metrics/_counts_kernel``). Here their
size threshold is lowered to 0 and every result is compared with the numpy path on the same
input, over many seeded inputs built to reach every branch: ties, the given order, queries
split over several stretches of a run, judgements interleaved, queries with more judgements
than the linear scan takes, ids longer than 8 bytes or holding NUL (whose hashes need the byte
comparison), forced hash collisions.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from ragmeter import evaluate
from ragmeter.io import Qrels, Run
from ragmeter.metrics import _join

# justified: numba comes with the test extra (through ranx); a user without it runs the numpy
# paths only, which every other engine and reader test covers
pytest.importorskip("numba", reason="the compiled paths need numba (pip install 'ragmeter[fast]')")

METRICS = ["nDCG@10", "nDCG", "nDCG(gain=exp)@5", "RR@10", "R@100", "P@5", "AP", "AP@3",
           "Rprec", "R(rel=2)@3", "Hit@1"]  # fmt: skip


def _numpy_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_join._compiled, "available", lambda: False)


def _compiled_always(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_join, "COMPILED_MIN_ROWS", 0)


def _ids(rng: random.Random, n: int, style: str) -> list[str]:
    if style == "short":
        return [f"d{i}" for i in range(n)]
    if style == "long":  # over 8 bytes: hashes are not one-to-one, bytes are compared
        return [f"document-{i:06d}" for i in range(n)]
    return [f"d{i}\x00{'x' * (i % 3)}" for i in range(n)]  # NUL inside: bytes compared too


def _case(seed: int) -> tuple[Qrels, Run, str]:
    """A random qrels + run pair; which branch it reaches depends on the seed."""
    rng = random.Random(seed)
    style = rng.choice(["short", "long", "nul"])
    docs = _ids(rng, 400, style)
    n_q = rng.randint(1, 30)
    q_rows: list[tuple[str, str, int]] = []
    r_rows: list[tuple[str, str, float]] = []
    big = rng.random() < 0.3  # some queries with more judgements than the linear scan takes
    for q in range(n_q):
        qid = f"q{q}"
        judged = rng.sample(docs, rng.randint(1, 60 if big else 8))
        q_rows += [(qid, d, rng.choice([0, 0, 1, 2, 3])) for d in judged]
        if q and rng.random() < 0.15:
            continue  # a query absent from the run
        depth = rng.randint(1, 40)
        pool = judged + rng.sample(docs, 20)
        items = list(dict.fromkeys(rng.sample(pool, min(depth, len(pool)))))
        tie = rng.random() < 0.2
        for rank, d in enumerate(items):
            score = 10.0 - rank * 0.25 if not (tie and rank == 2) else 10.0 - 0.25
            r_rows.append((qid, d, score))
    r_rows += [("only-in-run", docs[0], 1.0)]
    if rng.random() < 0.3:  # judgements of the queries interleaved
        rng.shuffle(q_rows)
    if rng.random() < 0.2:  # a query's run rows split over two stretches, or rows shuffled
        rng.shuffle(r_rows)
    elif rng.random() < 0.2:  # ascending scores: not in ranked order
        r_rows = [(q, d, -s) for q, d, s in r_rows]
    qrels = Qrels(
        pa.array([r[0] for r in q_rows]),
        pa.array([r[1] for r in q_rows]),
        np.array([r[2] for r in q_rows], dtype=np.int64),
    )
    run = Run(
        pa.array([r[0] for r in r_rows]),
        pa.array([r[1] for r in r_rows]),
        np.array([r[2] for r in r_rows]),
    )
    return qrels, run, rng.choice(["trec", "given"])


def _scores(qrels: Qrels, run: Run, ties: str, missing: str) -> tuple[Any, ...]:
    ev = evaluate(qrels, run, METRICS, ties=ties, missing=missing)  # type: ignore[arg-type]
    values = {str(m): ev.values[:, j].copy() for j, m in enumerate(ev.metrics)}
    return ev.query_ids, values, ev.missing_ids, ev.no_relevant_ids


# a random case's run may retrieve no judged item: the id-space warning, not a failure
@pytest.mark.filterwarnings(
    "ignore:.*the run retrieves is judged in the qrels:ragmeter.RagmeterWarning"
)
@pytest.mark.parametrize("seed", range(120))
def test_compiled_engine_equals_numpy_to_the_bit(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    qrels, run, ties = _case(seed)
    missing = "skip" if seed % 4 == 0 else "zero"
    with monkeypatch.context() as m:
        _numpy_only(m)
        expected = _scores(qrels, run, ties, missing)
    with monkeypatch.context() as m:
        _compiled_always(m)
        got = _scores(qrels, run, ties, missing)
    assert got[0] == expected[0] and got[2:] == expected[2:]
    for name, values in expected[1].items():
        assert np.array_equal(np.asarray(got[1][name]), np.asarray(values)), (seed, name)


#: gain rules whose gains, scaled per query, the counts and the ideal order must carry
HUGE_METRICS = ["nDCG(gain=exp)", "nDCG(gain=exp)@5", "nDCG(gains=1:3,2:1e308)@10", "nDCG",
                "R(rel=1001)@10", "AP(rel=1001)", "RR"]  # fmt: skip


def _huge(qrels: Qrels, seed: int) -> Qrels:
    """The judgements of ``qrels`` with each query's positive grades moved into its own band:
    some past a float's exp-gain range (each query then has its own gain shift), bands close
    together (grades span few values: counted per grade, compiled) or far apart (listed)."""
    rng = random.Random(seed)
    bands = rng.choice([[0, 1000], [1000, 1030], [0, 2000, 2**40], [1000]])
    every = rng.random() < 0.5  # grade 0 moved too: the grades span < 64 values, counted
    qids = qrels.qid.to_pylist()
    band = {q: rng.choice(bands) for q in dict.fromkeys(qids)}
    rel = [g + band[q] if g > 0 or every else g for q, g in zip(qids, qrels.rel, strict=True)]
    return Qrels(qrels.qid, qrels.doc, np.array(rel, dtype=np.int64))


# a random case's run may retrieve no judged item: the id-space warning, not a failure
@pytest.mark.filterwarnings(
    "ignore:.*the run retrieves is judged in the qrels:ragmeter.RagmeterWarning"
)
@pytest.mark.parametrize("seed", range(60))
def test_compiled_engine_equals_numpy_on_huge_grades(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Per-query gain shifts (issue 22): grades past 1024 under exp gains, a gain map near the
    float's limit, thresholds past 1000, through the compiled grade counts and join."""
    qrels, run, ties = _case(seed)
    qrels = _huge(qrels, seed)

    def scores() -> dict[str, np.ndarray]:
        ev = evaluate(qrels, run, HUGE_METRICS, ties=ties)  # type: ignore[arg-type]
        return {str(m): ev.values[:, j].copy() for j, m in enumerate(ev.metrics)}

    with monkeypatch.context() as m:
        _numpy_only(m)
        expected = scores()
    with monkeypatch.context() as m:
        _compiled_always(m)
        got = scores()
    for name, values in expected.items():
        assert np.array_equal(got[name], values), (seed, name)
        assert np.all((values >= 0) & (values <= 1)), (seed, name)


# a random case's run may retrieve no judged item: the id-space warning, not a failure
@pytest.mark.filterwarnings(
    "ignore:.*the run retrieves is judged in the qrels:ragmeter.RagmeterWarning"
)
@pytest.mark.parametrize("seed", range(40))
def test_compiled_join_compares_bytes_when_hashes_collide(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Hashes forced into 2 values: only the byte comparison tells ids apart."""
    qrels, run, ties = _case(seed)
    with monkeypatch.context() as m:
        _numpy_only(m)
        expected = _scores(qrels, run, ties, "zero")
    real = _join.string_hashes

    def colliding(arr: Any) -> Any:
        h = real(arr)
        return None if h is None else h & np.uint64(1)

    with monkeypatch.context() as m:
        _compiled_always(m)
        m.setattr(_join, "string_hashes", colliding)
        m.setattr(_join, "_hash_is_exact", lambda arr: False)
        got = _scores(qrels, run, ties, "zero")
    for name, values in expected[1].items():
        assert np.array_equal(np.asarray(got[1][name]), np.asarray(values)), (seed, name)


def test_the_compiled_paths_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a vacuous comparison: with the thresholds at 0 the kernels run (and they are not
    called for the numpy side)."""
    from ragmeter.metrics import _join_kernel

    calls: list[str] = []
    for name in ("ranked_grades_kernel", "grades_kernel"):
        real = getattr(_join_kernel, name)
        monkeypatch.setattr(
            _join_kernel, name, lambda *a, _r=real, _n=name: calls.append(_n) or _r(*a)
        )
    in_order = next(s for s in range(200) if _case(s)[1].score[1] < _case(s)[1].score[0])
    qrels, run, _ = _case(in_order)
    _numpy_only(monkeypatch)
    evaluate(qrels, run, ["nDCG@10"])
    assert calls == []
    monkeypatch.undo()
    _compiled_always(monkeypatch)
    for name in ("ranked_grades_kernel", "grades_kernel"):
        real = getattr(_join_kernel, name)
        monkeypatch.setattr(
            _join_kernel, name, lambda *a, _r=real, _n=name: calls.append(_n) or _r(*a)
        )
    evaluate(qrels, run, ["nDCG@10"], ties="given")
    split = np.r_[1 : len(run.score), 0]  # the first row moved last: a query in two stretches
    shuffled = Run(run.qid.take(pa.array(split)), run.doc.take(pa.array(split)), run.score[split])
    evaluate(qrels, shuffled, ["nDCG@10"])  # ranked first, then joined
    assert "ranked_grades_kernel" in calls and "grades_kernel" in calls
