"""The causal table of context ablations: the rule per question, the counts, the oracle
ceiling and the JSON form."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter import UsageError
from ragmeter.diagnosis import (
    CAUSAL_SOURCES,
    CAUSE_INFO,
    CAUSES,
    CAUSES_APART,
    CausalTable,
    causal_table,
)
from ragmeter.paired import compare

OUTCOMES = (True, False, None, "missing")


def table(rows: dict[str, dict[str, bool | None]], **kw: object) -> CausalTable:
    """``rows``: question -> source -> outcome, turned into source -> question -> outcome."""
    by_source: dict[str, dict[str, bool | None]] = {}
    for q, outs in rows.items():
        for s, v in outs.items():
            by_source.setdefault(s, {})[q] = v
    return causal_table(by_source, **kw)  # type: ignore[arg-type]


# -- the rule, case by case ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("outcomes", "cause"),
    [
        ({"retrieved": True, "oracle": True}, "working"),
        ({"retrieved": True, "oracle": False}, "working"),
        ({"retrieved": True, "none": True}, "memory"),
        ({"retrieved": True, "none": False}, "working"),
        ({"retrieved": True, "none": None}, "working"),
        ({"retrieved": None, "oracle": True}, "unknown"),
        ({"retrieved": False, "none": True}, "unknown"),  # no oracle run: nothing proven
        ({"retrieved": False, "oracle": None}, "unknown"),
        ({"retrieved": False, "oracle": False}, "generation_failure"),
        ({"retrieved": False, "oracle": False, "oracle+distractors": False}, "generation_failure"),
        ({"retrieved": False, "oracle": True}, "retrieval_failure"),
        ({"retrieved": False, "oracle": True, "oracle+distractors": True}, "retrieval_failure"),
        ({"retrieved": False, "oracle": True, "oracle+distractors": None}, "retrieval_failure"),
        ({"retrieved": False, "oracle": True, "oracle+distractors": False}, "noise_sensitive"),
        ({"retrieved": True, "oracle": True, "oracle+distractors": False, "none": True}, "memory"),
    ],
)
def test_the_rule_per_question(outcomes: dict[str, bool | None], cause: str) -> None:
    t = table({"q": outcomes})
    assert [q.cause for q in t.questions] == [cause]
    assert t.ids(cause) == ["q"] and t.count(cause) == 1


def test_unanswerable_and_no_oracle_passage_are_reported_apart() -> None:
    t = table(
        {
            "u": {"retrieved": True, "oracle": True},
            "blank": {"retrieved": False, "oracle": True},  # oracle had no passage: no proof
            "blank-right": {"retrieved": True, "oracle": True},
            "r": {"retrieved": False, "oracle": True},
        },
        unanswerable=["u", "only-listed"],
        no_oracle_passage=["blank", "blank-right"],
    )
    assert t.counts() == {
        "working": 1,
        "memory": 0,
        "retrieval_failure": 1,
        "generation_failure": 0,
        "noise_sensitive": 0,
        "unanswerable": 2,
        "unknown": 1,
    }
    assert t.ids("unanswerable") == ["only-listed", "u"]
    assert t.n == 5 and t.n_counted == 2
    # the ceiling: the answerable questions with both outcomes, an oracle passage included
    assert t.ceiling is not None and t.ceiling.query_ids == ("r",)


def test_the_largest_proven_bad_cause_and_its_ties() -> None:
    rows = {
        "g1": {"retrieved": False, "oracle": False, "oracle+distractors": False},
        "n1": {"retrieved": False, "oracle": True, "oracle+distractors": False},
        "w": {"retrieved": True, "oracle": True, "oracle+distractors": True},
    }
    # tie generation / noise: generation comes first
    assert table(rows).largest_proven_bad() == "generation_failure"
    rows["n2"] = {"retrieved": False, "oracle": True, "oracle+distractors": False}
    assert table(rows).largest_proven_bad() == "noise_sensitive"
    rows["r1"] = rows["r2"] = {"retrieved": False, "oracle": True, "oracle+distractors": True}
    assert table(rows).largest_proven_bad() == "retrieval_failure"  # tie: retrieval first
    assert table({"w": rows["w"]}).largest_proven_bad() is None


def test_cross_reads_each_observed_cell_against_its_proven_cause() -> None:
    t = table(
        {
            "a": {"retrieved": False, "oracle": False},  # inferred retrieval, proven generation
            "b": {"retrieved": False, "oracle": True},
            "c": {"retrieved": True, "oracle": True},
            "d": {"retrieved": True, "oracle": True},  # no observed cell
        },
        observed={"a": "retrieval_failure", "b": "retrieval_failure", "c": "working"},
    )
    cross = t.cross()
    assert list(cross) == ["working", "retrieval_failure"]  # the table's cell order
    assert cross["retrieval_failure"]["generation_failure"] == 1
    assert cross["retrieval_failure"]["retrieval_failure"] == 1
    assert cross["working"]["working"] == 1
    assert sum(sum(v.values()) for v in cross.values()) == 3


def test_the_ceiling_is_paired_compare_oracle_minus_retrieved() -> None:
    # ids in sorted order: the table lists its questions sorted, and the bootstrap resamples
    # questions by position
    rows = {f"q{i:02d}": {"retrieved": i % 3 == 0, "oracle": i % 2 == 0} for i in range(30)}
    t = table(rows, seed=7, n_resamples=500)
    want = compare(
        {q: float(o["retrieved"]) for q, o in rows.items()},
        {q: float(o["oracle"]) for q, o in rows.items()},
        outcome="answer correct",
        seed=7,
        n_resamples=500,
    )
    assert t.ceiling is not None
    assert t.ceiling.mean_delta == want.mean_delta and t.ceiling.ci == want.ci
    assert (t.ceiling.fixed, t.ceiling.broken) == (want.fixed, want.broken)
    d = t.to_dict()["ceiling"]
    assert d["interval"] == list(want.ci) and d["mean"] == want.mean_delta
    assert d["oracle_right"] == 15 and d["retrieved_right"] == 10 and d["n"] == 30


def test_no_oracle_run_means_no_ceiling() -> None:
    t = table({"a": {"retrieved": True, "none": True}, "b": {"retrieved": False, "none": False}})
    assert t.ceiling is None and t.to_dict()["ceiling"] is None
    assert t.sources == ("retrieved", "none")


@pytest.mark.parametrize(
    ("outcomes", "needle"),
    [
        ({"oracle": {"a": True}}, "source 'retrieved'"),
        ({"retrieved": {"a": True}}, "context.source = 'oracle'"),
        ({"retrieved": {"a": True}, "gold": {"a": True}}, "'gold'"),
        ({"retrieved": {"a": 1}, "oracle": {"a": True}}, "a (1)"),
        ({}, "got only nothing"),
    ],
)
def test_bad_input_is_a_usage_error_naming_what_is_wrong(
    outcomes: dict[str, dict[str, object]], needle: str
) -> None:
    with pytest.raises(UsageError, match=None) as e:
        causal_table(outcomes)  # type: ignore[arg-type]
    assert needle in str(e.value)


def test_unknown_cause_is_a_usage_error() -> None:
    t = table({"a": {"retrieved": True, "oracle": True}})
    with pytest.raises(UsageError, match="unknown cause 'from_memory'"):
        t.count("from_memory")


def test_sources_match_the_generation_packages_context_sources() -> None:
    from ragmeter.generation import CONTEXT_SOURCES

    assert tuple(CONTEXT_SOURCES) == CAUSAL_SOURCES
    assert set(CAUSE_INFO) == {*CAUSES, *CAUSES_APART}


def test_from_dict_names_the_field_at_fault() -> None:
    from ragmeter import InputError

    d = table({"a": {"retrieved": True, "oracle": True}}).to_dict()
    d["questions"][0]["cause"] = "lucky"
    with pytest.raises(InputError, match=r"questions\[0\]\.cause"):
        CausalTable.from_dict(d, source="causal.json")


# -- properties over many generated inputs ---------------------------------------------------
@st.composite
def ablations(draw: st.DrawFn) -> tuple[dict[str, dict[str, bool | None]], set[str], set[str]]:
    n = draw(st.integers(1, 40))
    qids = [f"q{i:02d}" for i in range(n)]
    others = draw(
        st.lists(st.sampled_from(CAUSAL_SOURCES[1:]), min_size=1, max_size=3, unique=True)
    )
    out: dict[str, dict[str, bool | None]] = {}
    for s in ("retrieved", *others):
        per: dict[str, bool | None] = {}
        for q in qids:
            v = draw(st.sampled_from(OUTCOMES))
            if v != "missing":
                per[q] = v  # type: ignore[assignment]
        out[s] = per
    unanswerable = set(draw(st.lists(st.sampled_from(qids), max_size=5)))
    blank = set(draw(st.lists(st.sampled_from(qids), max_size=5)))
    return out, unanswerable, blank


def expected(outs: dict[str, bool | None], ran: tuple[str, ...]) -> str:
    """The design's rule, written as the issue states it (a second, independent reading)."""
    r, o = outs.get("retrieved"), outs.get("oracle")
    if r is True:
        return "memory" if outs.get("none") is True else "working"
    if r is None or o is None:
        return "unknown"
    if o is False:
        return "generation_failure"
    noisy = "oracle+distractors" in ran and outs.get("oracle+distractors") is False
    return "noise_sensitive" if noisy else "retrieval_failure"


@settings(max_examples=300)
@given(ablations(), st.integers(0, 2**31 - 1))
def test_every_question_lands_in_exactly_one_category(
    drawn: tuple[dict[str, dict[str, bool | None]], set[str], set[str]], seed: int
) -> None:
    outcomes, unanswerable, blank = drawn
    t = causal_table(
        outcomes, unanswerable=unanswerable, no_oracle_passage=blank, seed=seed, n_resamples=200
    )
    qids = {q for per in outcomes.values() for q in per} | unanswerable
    counts = t.counts()
    assert sum(counts.values()) == t.n == len(qids)
    assert sum(counts[c] for c in CAUSES) == t.n_counted
    seen = list(itertools.chain.from_iterable(t.ids(c) for c in (*CAUSES, *CAUSES_APART)))
    assert sorted(seen) == sorted(qids)  # each id once: exactly one category
    ran = t.sources
    assert ran[0] == "retrieved" and set(ran) == set(outcomes)
    for q in t.questions:
        outs = {s: outcomes[s].get(q.id) for s in ran}
        assert dict(q.outcomes) == outs
        if q.id in unanswerable:
            assert q.cause == "unanswerable"
            continue
        if q.id in blank:
            outs = {**outs, "oracle": None, "oracle+distractors": None}
        assert q.cause == expected(outs, ran), (q.id, outs)
    # the ceiling: mean = (oracle right - retrieved right) / n on the questions both know
    both = [
        q
        for q in t.questions
        if q.cause != "unanswerable"
        and q.id not in blank
        and q.outcomes.get("retrieved") is not None
        and q.outcomes.get("oracle") is not None
    ]
    if "oracle" not in ran or not both:
        assert t.ceiling is None
    else:
        assert t.ceiling is not None and t.ceiling.n == len(both)
        right = sum(bool(q.outcomes["oracle"]) for q in both)
        was = sum(bool(q.outcomes["retrieved"]) for q in both)
        assert t.ceiling.mean_delta == pytest.approx((right - was) / len(both), abs=1e-12)
        lo, hi = t.ceiling.ci
        assert -1.0 <= lo <= t.ceiling.mean_delta + 1e-12 and hi <= 1.0
    # the largest proven bad cause is the largest of the three (ties in chain order)
    bad = ("retrieval_failure", "generation_failure", "noise_sensitive")
    top = max(counts[c] for c in bad)
    lpb = t.largest_proven_bad()
    assert lpb == (next(c for c in bad if counts[c] == top) if top else None)
    # the JSON form round-trips the counts, the questions and the ceiling
    d = json.loads(json.dumps(t.to_dict()))
    assert d["counts"] == counts and {c["cause"]: c["count"] for c in d["causes"]} == counts
    back = CausalTable.from_dict(d)
    assert back.counts() == counts and back.questions == t.questions
    assert back.to_dict() == d
