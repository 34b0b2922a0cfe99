"""Span-level metrics: coverage by union, split spans, budgets, required spans, bookkeeping."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter import InputError, RagmeterWarning, UsageError, ValidationError
from ragmeter.chunking import Chunking, from_ranges
from ragmeter.data import Corpus, Document, Evidence, GoldenSet, Question
from ragmeter.io import Run
from ragmeter.labels import evaluate_spans, span_metric_list

DOC = Document(id="d", text="x" * 200)


def chunks(*ranges: tuple[int, int], n_tokens: list[int] | None = None) -> Chunking:
    c = from_ranges(
        [DOC], [("d", a, b) for a, b in ranges], name="test-chunks", tokenizer="regex-words"
    )
    if n_tokens is None:
        return c
    return Chunking(
        name=c.name,
        tokenizer=c.tokenizer,
        ids=c.ids,
        doc=c.doc,
        start=c.start,
        end=c.end,
        text=c.text,
        n_tokens=n_tokens,
    )


def run(ranked: dict[str, list[str]]) -> Run:
    """A run whose scores follow the given order (first = best)."""
    rows = [(q, d, float(len(ds) - i)) for q, ds in ranked.items() for i, d in enumerate(ds)]
    return Run(
        qid=pa.array([r[0] for r in rows], pa.string()),
        doc=pa.array([r[1] for r in rows], pa.string()),
        score=np.array([r[2] for r in rows]),
        name="test-run",
    )


def q(id: str, *spans: tuple[int, int] | tuple[int, int, int], **kw) -> Question:
    required = kw.pop("required", None)
    ev = [
        Evidence(doc="d", start=s[0], end=s[1], grade=s[2] if len(s) > 2 else 2, required=required)
        for s in spans
    ]
    return Question(id=id, question="?", evidence=ev, **kw)


def values(ev, qid: str) -> dict[str, float]:
    return ev.per_query[qid]


def test_a_span_split_across_two_chunks_needs_both():
    c = chunks((0, 50), (50, 100), (100, 150))
    golden = [q("q1", (30, 70))]  # 20 characters in each of the first two chunks
    r = run({"q1": ["d#0-50", "d#100-150", "d#50-100"]})
    ev = evaluate_spans(golden, c, r, "R@1,R@2,R@3,Hit@2,RR", cover=0.6)
    assert values(ev, "q1") == {"R@1": 0.0, "R@2": 0.0, "R@3": 1.0, "Hit@2": 0.0, "RR": 1 / 3}
    assert ev.details["q1"]["first_rank"] == 3
    # at the default cover 0.5 the first chunk alone (half the span) is enough
    ev = evaluate_spans(golden, c, r, "R@1")
    assert values(ev, "q1") == {"R@1": 1.0}


def test_coverage_is_a_union_not_a_sum():
    c = chunks((30, 60), (40, 70), (60, 100))
    golden = [q("q1", (30, 100))]  # 70 characters
    r = run({"q1": ["d#30-60", "d#40-70", "d#60-100"]})
    # 30 + 30 characters would be 0.86 of the span, but the union [30, 70) is only 0.57
    ev = evaluate_spans(golden, c, r, "R@2,R@3", cover=0.7)
    assert values(ev, "q1") == {"R@2": 0.0, "R@3": 1.0}


def test_budget_stops_at_the_first_chunk_that_does_not_fit():
    c = chunks((0, 10), (10, 20), (20, 30), (100, 110), n_tokens=[100, 200, 300, 50])
    golden = [q("q1", (100, 110)), q("q2", (0, 10))]
    r = run({"q1": ["d#0-10", "d#10-20", "d#20-30", "d#100-110"], "q2": ["d#20-30", "d#0-10"]})
    ev = evaluate_spans(golden, c, r, "R@budget=600,R@budget=650,R@budget=250")
    # q1: 100 + 200 + 300 = 600 fits; the 50-token chunk fits only from 650 on
    assert values(ev, "q1") == {"R@budget=600": 0.0, "R@budget=650": 1.0, "R@budget=250": 0.0}
    # q2: the first chunk (300) is over 250: effective k is 0 even though the next would fit
    assert values(ev, "q2") == {"R@budget=600": 1.0, "R@budget=650": 1.0, "R@budget=250": 0.0}
    assert ev.details["q1"]["effective_k"] == {"250": 1, "600": 3, "650": 4}
    assert ev.details["q2"]["effective_k"] == {"250": 0, "600": 2, "650": 2}
    assert ev.config["effective_k"]["600"] == {"min": 2, "median": 2.5, "max": 3}
    assert ev.config["budgets"] == [250, 600, 650]
    assert ev.config["tokenizer"] == "regex-words"


def test_required_spans_graded_recall_and_rr():
    c = chunks((0, 20), (20, 40), (40, 60))
    golden = [
        q("all", (0, 10), (20, 30), required=True),
        Question(
            id="graded",
            question="?",
            evidence=[
                Evidence(doc="d", start=0, end=10, grade=1),
                Evidence(doc="d", start=40, end=50, grade=2),
            ],
        ),
        Question(
            id="none-required",
            question="?",
            evidence=[
                Evidence(doc="d", start=0, end=10, required=False),
                Evidence(doc="d", start=20, end=30, required=False),
            ],
        ),
    ]
    r = run(
        {
            "all": ["d#0-20", "d#40-60", "d#20-40"],
            "graded": ["d#0-20", "d#40-60"],
            "none-required": ["d#20-40"],
        }
    )
    ev = evaluate_spans(golden, c, r, "R@2,Hit@2,AllR@2,AllR@3,R(rel=2)@1,RR(rel=2),RR")
    assert values(ev, "all") == {
        "R@2": 0.5,
        "Hit@2": 1.0,
        "AllR@2": 0.0,
        "AllR@3": 1.0,
        "R(rel=2)@1": 0.5,
        "RR(rel=2)": 1.0,
        "RR": 1.0,
    }
    g = values(ev, "graded")
    assert (g["R(rel=2)@1"], g["RR(rel=2)"], g["RR"], g["AllR@2"]) == (0.0, 0.5, 1.0, 1.0)
    # all spans explicitly not required: any one span satisfies AllR
    assert values(ev, "none-required")["AllR@2"] == 1.0


def test_unanswerable_missing_and_skip():
    c = chunks((0, 20))
    golden = [
        q("q1", (0, 10)),
        q("gone", (0, 10)),
        Question(id="unanswerable", question="?", answerable=False, slices=["unanswerable"]),
    ]
    r = run({"q1": ["d#0-20"], "unanswerable": ["d#0-20"], "not-golden": ["d#0-20"]})
    with pytest.warns(RagmeterWarning, match=r"1 of the run's 3 query id\(s\) are not queries"):
        ev = evaluate_spans(golden, c, r, "R@1")
    assert ev.query_ids == ("gone", "q1")
    assert ev.missing_ids == ("gone",) and ev.no_relevant_ids == ("unanswerable",)
    assert ev.aggregate == {"R@1": 0.5}
    assert ev.details["gone"] == {"first_rank": None, "n_retrieved": 0}
    assert ev.slices["unanswerable"] == ("unanswerable",)
    with pytest.warns(RagmeterWarning, match="not queries of the golden set"):
        skipped = evaluate_spans(golden, c, r, "R@1", missing="skip")
    assert skipped.query_ids == ("q1",) and skipped.aggregate == {"R@1": 1.0}


def test_records_what_produced_the_numbers():
    from ragmeter.data.corpus import Corpus
    from ragmeter.data.golden import GoldenSet

    golden = GoldenSet([q("q1", (0, 10), split="heldout", slices=["fees"])], corpus=Corpus([DOC]))
    ev = evaluate_spans(golden, chunks((0, 20)), run({"q1": ["d#0-20"]}), "R@1,Hit", cover=0.8)
    assert ev.golden_version == golden.version
    assert ev.splits == {"q1": "heldout"} and ev.slices == {"q1": ("fees",)}
    assert ev.run == "test-run"
    assert ev.config["chunking"] == "test-chunks" and ev.config["cover"] == 0.8
    assert ev.config["level"] == "span" and ev.config["ties"] == "trec"
    assert [str(m) for m in ev.metrics] == ["R@1", "Hit"]


def test_bad_inputs():
    c = chunks((0, 20))
    golden = [q("q1", (0, 10))]
    with pytest.raises(InputError, match="not chunks of chunking 'test-chunks'") as err:
        evaluate_spans(golden, c, run({"q1": ["d#0-21", "other"]}), "R@1")
    assert err.value.field == "doc" and "2 item id(s)" in str(err.value)
    with pytest.raises(UsageError, match="nDCG@10 is not a span-level metric"):
        evaluate_spans(golden, c, run({"q1": ["d#0-20"]}), "nDCG@10")
    for bad in (0, 1.5, -0.1, "x"):
        with pytest.raises(UsageError, match="cover"):
            evaluate_spans(golden, c, run({"q1": ["d#0-20"]}), "R@1", cover=bad)


def test_spans_on_unchunked_documents_are_refused_without_a_corpus():
    """Without a corpus the chunking is the record of which documents exist."""
    golden = [Question(id="q1", question="?", evidence=[Evidence(doc="elsewhere", start=0, end=5)])]
    with pytest.raises(ValidationError, match="document 'elsewhere' has no chunk in chunking"):
        evaluate_spans(golden, chunks((0, 20)), run({"q1": ["d#0-20"]}), "R@1")


def test_spans_on_unchunked_documents_warn_with_a_corpus():
    qs = [Question(id="q1", question="?", evidence=[Evidence(doc="elsewhere", start=0, end=5)])]
    corpus = Corpus([DOC, Document(id="elsewhere", text="y" * 10)])
    golden = GoldenSet(qs, corpus=corpus)
    with pytest.warns(RagmeterWarning, match="no chunk in chunking 'test-chunks'"):
        ev = evaluate_spans(golden, chunks((0, 20)), run({"q1": ["d#0-20"]}), "R@1")
    assert ev.aggregate == {"R@1": 0.0}


def test_span_metric_list_expands_k_and_budgets():
    got = [str(m) for m in span_metric_list("R,RR@3", k=[5, 10], budgets=[1200])]
    assert got == ["R@5", "R@10", "R@budget=1200", "RR@3"]
    assert [str(m) for m in span_metric_list(None)] == ["R", "Hit", "AllR", "RR"]


# --- differential: the engine against character masks ----------------------------------------
def brute_found_rank(span: tuple[int, int], ranked: list[tuple[int, int]], cover: float) -> float:
    mask = np.zeros(200, dtype=bool)
    for r, (a, b) in enumerate(ranked, start=1):
        mask[a:b] = True
        if mask[span[0] : span[1]].sum() >= cover * (span[1] - span[0]):
            return r
    return math.inf


ranges = st.tuples(st.integers(0, 180), st.integers(1, 40)).map(
    lambda t: (t[0], min(200, t[0] + t[1]))
)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(
    chunk_ranges=st.lists(ranges, min_size=1, max_size=12, unique=True),
    span_ranges=st.lists(ranges, min_size=1, max_size=4, unique=True),
    cover=st.sampled_from([0.25, 0.5, 0.9, 1.0]),
    k=st.integers(1, 12),
)
def test_matches_character_mask_brute_force(chunk_ranges, span_ranges, cover, k):
    c = chunks(*chunk_ranges)
    order = [c.ids.index(f"d#{a}-{b}") for a, b in chunk_ranges]  # rank = listed order
    q = Question(
        id="q", question="?", evidence=[Evidence(doc="d", start=a, end=b) for a, b in span_ranges]
    )
    golden = GoldenSet([q], corpus=Corpus([DOC]))  # spans may run past the last chunk
    ranked = [(int(c.start[i]), int(c.end[i])) for i in order]
    r = run({"q": [c.ids[i] for i in order]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ev = evaluate_spans(golden, c, r, f"R@{k},Hit@{k},RR@{k},R", cover=cover)
    found = [brute_found_rank(s, ranked, cover) for s in span_ranges]
    within = [f <= k for f in found]
    best = min(found)
    assert values(ev, "q") == pytest.approx(
        {
            f"R@{k}": sum(within) / len(found),
            f"Hit@{k}": float(any(within)),
            f"RR@{k}": 1 / best if best <= k else 0.0,
            "R": sum(f < math.inf for f in found) / len(found),
        }
    )
