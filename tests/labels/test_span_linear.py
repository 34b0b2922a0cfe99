"""The span path's linear-cost pieces (issue 28, goal 5) give what the general code gives:
the chunking's document codes, the sweep on chunks already in order, the run's query codes
hashed per block, and the span table read with ``map``."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st
from test_labels_mapping import brute

from ragmeter.chunking import Chunking
from ragmeter.chunking._id_lookup import DocCodes
from ragmeter.data import Evidence, Question
from ragmeter.labels import SpanTable, encode_docs, map_spans, overlap_pairs, span_mapping
from ragmeter.labels._mapping import doc_extent
from ragmeter.labels._span_metrics import _RunQueries

docs = st.lists(st.sampled_from(["a", "b", "c", "d", "é", ""]), max_size=30)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(chunk_docs=docs, span_docs=docs)
def test_doc_codes_partition_ids_as_encode_docs_does(
    chunk_docs: list[str], span_docs: list[str]
) -> None:
    kept = DocCodes(chunk_docs)
    got_s, got_c = kept.of(span_docs), kept.codes
    want_s, want_c = encode_docs(span_docs, chunk_docs)
    # the same documents share a code, on either side, and different ones never do
    pairs = list(zip(span_docs + chunk_docs, np.r_[got_s, got_c].tolist(), strict=True))
    assert len({d for d, _ in pairs}) == len(set(pairs)) == len({c for _, c in pairs})
    assert np.array_equal(np.r_[want_s, want_c] == np.r_[want_s, want_c][:, None], (
        np.r_[got_s, got_c] == np.r_[got_s, got_c][:, None]
    ))  # fmt: skip
    # the chunks' numbering: first appearance; an id without a chunk after all of them
    first = [chunk_docs.index(d) for d in dict.fromkeys(chunk_docs)]
    assert got_c[first].tolist() == list(range(len(first)))
    absent = [i for i, d in enumerate(span_docs) if d not in chunk_docs]
    assert all(got_s[i] >= len(first) for i in absent)
    assert got_s.dtype == got_c.dtype == np.int64


intervals = st.lists(
    st.tuples(st.integers(0, 2), st.integers(0, 40), st.integers(0, 15)), max_size=25
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(spans=intervals, chunks=intervals)
def test_the_sweep_on_chunks_in_order_equals_brute_force(spans: list, chunks: list) -> None:
    chunks = sorted(chunks)  # (doc, start) order, as a chunking usually is: no sort taken
    sd, ss, se = ([d for d, _, _ in spans], [s for _, s, _ in spans], [s + n for _, s, n in spans])
    cd, cs, ce = (
        [d for d, _, _ in chunks],
        [s for _, s, _ in chunks],
        [s + n for _, s, n in chunks],
    )
    o = overlap_pairs(*(np.array(x, dtype=np.int64) for x in (sd, ss, se, cd, cs, ce)))
    got = list(zip(o.span.tolist(), o.chunk.tolist(), o.lo.tolist(), o.hi.tolist(), strict=True))
    assert got == brute(sd, ss, se, cd, cs, ce)


def _world(seed: int) -> tuple[list[Question], Chunking]:
    """Random questions (1-3 spans, some marked required) on random chunks in shuffled order;
    every span inside what the chunks of its document cover."""
    rng = np.random.default_rng(seed)
    ranges = []
    for d in range(int(rng.integers(1, 6))):
        for _ in range(int(rng.integers(1, 6))):
            a = int(rng.integers(0, 80))
            ranges.append((f"d{d}", a, a + int(rng.integers(1, 30))))
    ranges = list(dict.fromkeys(ranges))
    rng.shuffle(ranges)
    chunking = Chunking(
        name="random",
        tokenizer="none",
        ids=[f"{d}#{a}-{b}" for d, a, b in ranges],
        doc=[d for d, _, _ in ranges],
        start=[a for _, a, _ in ranges],
        end=[b for _, _, b in ranges],
        text=[""] * len(ranges),
        n_tokens=[1] * len(ranges),
    )
    extent: dict[str, int] = {}
    for d, _, b in ranges:
        extent[d] = max(extent.get(d, 0), b)
    names = sorted(extent)
    questions = []
    for i in range(int(rng.integers(1, 12))):
        evidence = []
        for _ in range(int(rng.integers(1, 4))):
            doc = names[int(rng.integers(0, len(names)))]
            a = int(rng.integers(0, extent[doc]))
            b = a + int(rng.integers(1, extent[doc] - a + 1))
            required = [None, True, False][int(rng.integers(0, 3))] if rng.random() < 0.3 else None
            evidence.append(
                Evidence.model_construct(
                    doc=doc, start=a, end=b, grade=int(rng.integers(1, 3)), text=None,
                    required=required,
                )
            )  # fmt: skip
        questions.append(
            Question.model_construct(
                id=f"q{i}", question="", evidence=evidence, answer=None, answerable=True,
                slices=[f"s{i % 3}"], split="tune" if i % 2 else "heldout",
            )
        )  # fmt: skip
    return questions, chunking


@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000))
def test_span_mapping_equals_the_general_path(seed: int) -> None:
    questions, chunking = _world(seed)
    spans = SpanTable.from_questions(questions)
    mapping = span_mapping(questions, chunking)
    want = map_spans(spans, chunking)  # codes from encode_docs over both sides
    want_extent = doc_extent(spans, chunking)
    for f in ("span", "chunk", "lo", "hi"):
        assert np.array_equal(getattr(mapping.pairs, f), getattr(want, f)), f
    assert np.array_equal(mapping.extent, want_extent)
    assert mapping.slices == {q.id: tuple(q.slices) for q in questions}
    assert mapping.splits == {q.id: q.split for q in questions}


@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000))
def test_the_span_table_reads_every_evidence_item(seed: int) -> None:
    questions, _ = _world(seed)
    t = SpanTable.from_questions(iter(questions))  # any iterable, not only a list
    items = [(i, j, ev) for i, q in enumerate(questions) for j, ev in enumerate(q.evidence)]
    assert t.question_ids == tuple(q.id for q in questions)
    assert t.question.tolist() == [i for i, _, _ in items]
    assert t.evidence.tolist() == [j for _, j, _ in items]
    assert t.doc == [ev.doc for _, _, ev in items]
    assert t.start.tolist() == [ev.start for _, _, ev in items]
    assert t.end.tolist() == [ev.end for _, _, ev in items]
    assert t.grade.tolist() == [ev.grade for _, _, ev in items]
    required = [j in q.required_spans() for q in questions for j in range(len(q.evidence))]
    assert t.required.tolist() == required
    for a in (t.question, t.evidence, t.start, t.end, t.grade):
        assert a.dtype == np.int64


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    blocks=st.lists(st.tuples(st.sampled_from(["q1", "q2", "q10", "x", None]), st.integers(1, 4))),
    shuffle=st.booleans(),
)
def test_run_query_codes_equal_hashing_every_row(
    blocks: list[tuple[str | None, int]], shuffle: bool
) -> None:
    qids = [q for q, n in blocks for _ in range(n)]
    if shuffle:
        np.random.default_rng(len(qids)).shuffle(qids)
    arr = pa.array(qids, type=pa.string())
    got = _RunQueries(arr)
    want = pc.dictionary_encode(arr, null_encoding="encode")
    assert got.ids.equals(want.dictionary)
    assert np.array_equal(got._indices, want.indices.to_numpy())
    assert got._indices.dtype == want.indices.to_numpy().dtype
