"""The vectorised span-label paths agree with their per-question definitions."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter._errors import UsageError
from ragmeter.chunking import Chunking
from ragmeter.data import Evidence, Question
from ragmeter.io import Run
from ragmeter.labels import Overlaps, SpanTable, evaluate_spans, found_ranks, span_mapping


def _questions(seed: int) -> list[Question]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(int(rng.integers(0, 12))):
        evidence = []
        marked = rng.random() < 0.4
        for _ in range(int(rng.integers(0, 4))):
            start = int(rng.integers(0, 900))
            required = bool(rng.random() < 0.5) if marked and rng.random() < 0.7 else None
            evidence.append(
                Evidence(
                    doc=f"d{rng.integers(0, 3)}",
                    start=start,
                    end=start + int(rng.integers(1, 200)),
                    grade=int(rng.integers(1, 4)),
                    required=required,
                )
            )
        out.append(Question(id=f"q{i}", question="?", evidence=evidence))
    return out


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_span_table_matches_the_per_question_rule(seed: int) -> None:
    qs = _questions(seed)
    t = SpanTable.from_questions(qs)
    rows = [(i, j, ev) for i, q in enumerate(qs) for j, ev in enumerate(q.evidence)]
    assert t.question.tolist() == [i for i, _, _ in rows]
    assert t.evidence.tolist() == [j for _, j, _ in rows]
    assert t.doc == [ev.doc for _, _, ev in rows]
    assert t.start.tolist() == [ev.start for _, _, ev in rows]
    assert t.grade.tolist() == [ev.grade for _, _, ev in rows]
    assert t.required.tolist() == [j in qs[i].required_spans() for i, j, _ in rows]
    pick = [i for i in range(len(qs)) if i % 2 == 0][::-1]
    sub, kept = t.of_questions(pick)
    ref = SpanTable.from_questions([qs[i] for i in pick])
    assert sub.question.tolist() == ref.question.tolist() and sub.doc == ref.doc
    assert sub.required.tolist() == ref.required.tolist()
    assert t.start[kept].tolist() == ref.start.tolist()


def _walk(pairs: Overlaps, ranks: np.ndarray, span_len: np.ndarray, cover: float) -> list[float]:
    """The definition, pair by pair: the first rank at which the union covers ``cover``."""
    out = []
    for s in range(len(span_len)):
        got = sorted(
            (int(ranks[i]), int(pairs.lo[i]), int(pairs.hi[i]))
            for i in range(len(pairs))
            if pairs.span[i] == s and ranks[i] > 0
        )
        chars: set[int] = set()
        found = float("inf")
        for rank, lo, hi in got:
            chars |= set(range(lo, hi))
            if len(chars) >= cover * span_len[s] - 1e-9:
                found = float(rank)
                break
        out.append(found)
    return out


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), cover=st.sampled_from([0.25, 0.5, 1.0]))
def test_found_ranks_match_the_union_definition(seed: int, cover: float) -> None:
    rng = np.random.default_rng(seed)
    n_spans, n_pairs = int(rng.integers(1, 6)), int(rng.integers(0, 15))
    span_len = rng.integers(5, 40, n_spans)
    span = rng.integers(0, n_spans, n_pairs)
    lo = np.array([rng.integers(0, span_len[s]) for s in span], dtype=np.int64)
    hi = np.array(
        [rng.integers(a + 1, span_len[s] + 1) for a, s in zip(lo, span, strict=True)], np.int64
    )
    pairs = Overlaps(span.astype(np.int64), np.arange(n_pairs), lo, hi)
    ranks = rng.integers(0, 6, n_pairs)  # 0: the chunk was not retrieved
    got = found_ranks(pairs, ranks, span_len, cover).tolist()
    assert got == _walk(pairs, ranks, span_len, cover)


def _world() -> tuple[list[Question], Chunking, Run]:
    qs = [
        Question(id="a", question="?", evidence=[Evidence(doc="x", start=10, end=30)]),
        Question(id="b", question="?", evidence=[Evidence(doc="y", start=90, end=130)]),
        Question(id="c", question="?", answerable=False),
    ]
    ch = Chunking(
        name="c",
        tokenizer="t",
        ids=["x#0", "x#1", "y#0", "y#1"],
        doc=["x", "x", "y", "y"],
        start=[0, 100, 0, 100],
        end=[100, 200, 100, 200],
        text=[""] * 4,
        n_tokens=[10] * 4,
    )
    run = Run(
        qid=pa.array(["a", "a", "b", "b"]),
        doc=pa.array(["x#1", "x#0", "y#0", "y#1"]),
        score=np.array([2.0, 1.0, 2.0, 1.0]),
        name="r",
    )
    return qs, ch, run


def test_a_prepared_mapping_gives_the_same_evaluation() -> None:
    """a: its span is in x#0, ranked 2 -> RR 0.5; b: 10 of 40 characters in y#0 (rank 1), 30 in
    y#1 (rank 2) -> found at rank 2 with cover 0.5 -> RR 0.5."""
    qs, ch, run = _world()
    mapping = span_mapping(qs, ch)
    with_it = evaluate_spans(qs, ch, run, "RR,R@1,R@2", mapping=mapping)
    without = evaluate_spans(qs, ch, run, "RR,R@1,R@2")
    assert with_it.values.tolist() == without.values.tolist() == [[0.5, 0, 1], [0.5, 0, 1]]
    assert dict(with_it.details) == dict(without.details)
    assert with_it.details["a"] == {"first_rank": 2, "n_retrieved": 2}
    assert with_it.no_relevant_ids == ("c",) and with_it.slices == without.slices
    with pytest.raises(UsageError, match="another golden set or chunking"):
        evaluate_spans(list(qs), ch, run, "RR", mapping=mapping)
