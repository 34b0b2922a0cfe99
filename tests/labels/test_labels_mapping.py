"""Span -> chunk mapping: the sort-and-sweep equals the brute-force product on random inputs."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.chunking import from_ranges
from ragmeter.data import Document, Evidence, Question
from ragmeter.labels import SpanTable, map_spans, overlap_pairs


def brute(sd, ss, se, cd, cs, ce):
    out = []
    for i in range(len(ss)):
        for j in range(len(cs)):
            lo, hi = max(ss[i], cs[j]), min(se[i], ce[j])
            if sd[i] == cd[j] and hi > lo:
                out.append((i, j, lo, hi))
    return sorted(out)


intervals = st.lists(
    st.tuples(st.integers(0, 2), st.integers(0, 40), st.integers(0, 15)), max_size=25
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(spans=intervals, chunks=intervals)
def test_sweep_equals_brute_force(spans, chunks):
    sd = [d for d, _, _ in spans]
    ss = [s for _, s, _ in spans]
    se = [s + n for _, s, n in spans]
    cd = [d for d, _, _ in chunks]
    cs = [s for _, s, _ in chunks]
    ce = [s + n for _, s, n in chunks]
    o = overlap_pairs(
        np.array(sd, dtype=np.int64),
        np.array(ss, dtype=np.int64),
        np.array(se, dtype=np.int64),
        np.array(cd, dtype=np.int64),
        np.array(cs, dtype=np.int64),
        np.array(ce, dtype=np.int64),
    )
    got = list(zip(o.span.tolist(), o.chunk.tolist(), o.lo.tolist(), o.hi.tolist(), strict=True))
    assert got == brute(sd, ss, se, cd, cs, ce)  # also checks the (span, chunk) order


def test_map_spans_on_a_golden_set():
    docs = [Document(id="a", text="x" * 100), Document(id="b", text="y" * 50)]
    chunking = from_ranges(
        docs, [("a", 0, 60), ("a", 40, 100), ("b", 0, 50)], name="c", tokenizer="regex-words"
    )
    qs = [
        Question(
            id="q1",
            question="?",
            evidence=[
                Evidence(doc="a", start=50, end=70, grade=2),
                Evidence(doc="b", start=10, end=20),
            ],
        ),
        Question(id="q2", question="?", answerable=False),
    ]
    spans = SpanTable.from_questions(qs)
    assert spans.question_ids == ("q1", "q2") and len(spans) == 2
    assert spans.required.tolist() == [True, False]  # top grade is required by default
    o = map_spans(spans, chunking)
    assert list(zip(o.span.tolist(), o.chunk.tolist(), o.chars.tolist(), strict=True)) == [
        (0, 0, 10),
        (0, 1, 20),
        (1, 2, 10),
    ]


def test_empty_inputs():
    e = np.zeros(0, dtype=np.int64)
    assert len(overlap_pairs(e, e, e, np.array([0]), np.array([0]), np.array([5]))) == 0
    assert len(overlap_pairs(np.array([0]), np.array([0]), np.array([5]), e, e, e)) == 0
