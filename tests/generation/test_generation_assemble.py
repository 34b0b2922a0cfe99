"""Context assembly: k, token budget, order, duplicate removal and headers (hand-computed
examples), and hypothesis properties over many random ranked lists."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter._errors import InputError, UsageError
from ragmeter.generation import ContextSpec, Passage, arrange, assemble, dedupe


def _p(rank: int, doc: str = "", start: int = 0, end: int = 0, text: str = "", tokens: int = 5):
    doc = doc or f"d{rank}"
    end = end or start + 10
    return Passage(f"{doc}#{start}-{end}", doc, start, end, text or f"text {rank}", tokens, rank)


def _ranks(ctx) -> list[int]:
    return [cp.rank for cp in ctx.passages]


def test_orders_on_five_passages() -> None:
    ps = [_p(r) for r in range(1, 6)]
    assert _ranks(assemble("q", ps, ContextSpec(order="rank"))) == [1, 2, 3, 4, 5]
    assert _ranks(assemble("q", ps, ContextSpec(order="reverse"))) == [5, 4, 3, 2, 1]
    # best at both ends: 1, 3, 5 from the start, then 4, 2 towards the end
    assert _ranks(assemble("q", ps, ContextSpec(order="sandwich"))) == [1, 3, 5, 4, 2]
    assert _ranks(assemble("q", ps[:4], ContextSpec(order="sandwich"))) == [1, 3, 4, 2]
    assert _ranks(assemble("q", ps[:2], ContextSpec(order="sandwich"))) == [1, 2]
    assert _ranks(assemble("q", ps[:1], ContextSpec(order="sandwich"))) == [1]


def test_input_is_taken_by_rank_not_by_position() -> None:
    ps = [_p(3), _p(1), _p(2)]
    assert _ranks(assemble("q", ps, ContextSpec())) == [1, 2, 3]


def test_text_headers_labels_and_hash() -> None:
    ps = [_p(1, "fares", 0, 12, "Fee is $75."), _p(2, "bags", 40, 60, "One bag free.")]
    ctx = assemble("q7", ps, ContextSpec(order="reverse"))
    expected = "[1] bags (chars 40-60)\nOne bag free.\n\n[2] fares (chars 0-12)\nFee is $75."
    assert ctx.text == expected
    assert ctx.hash == hashlib.sha256(expected.encode()).hexdigest()
    assert [(cp.label, cp.id, cp.rank) for cp in ctx.passages] == [
        (1, "bags#40-60", 2),
        (2, "fares#0-12", 1),
    ]
    assert ctx.ids == ("bags#40-60", "fares#0-12")
    second = ctx.by_label(2)
    assert second is not None and second.id == "fares#0-12" and ctx.by_label(3) is None
    plain = assemble("q7", ps, ContextSpec(headers=False))
    assert plain.text == "Fee is $75.\n\nOne bag free."
    assert plain.hash != ctx.hash
    d = ctx.to_dict()
    assert (
        d["text"] == expected and d["passages"][0]["label"] == 1 and d["spec"]["order"] == "reverse"
    )


def test_k_then_budget_follow_the_budget_rule() -> None:
    ps = [_p(1, tokens=5), _p(2, tokens=5), _p(3, tokens=5), _p(4, tokens=1)]
    # budget 12: 5, 10 fit, 15 does not; the small 4th is not used to fill the gap
    assert _ranks(assemble("q", ps, ContextSpec(budget=12))) == [1, 2]
    assert _ranks(assemble("q", ps, ContextSpec(budget=15))) == [1, 2, 3]
    assert _ranks(assemble("q", ps, ContextSpec(k=1, budget=15))) == [1]
    assert _ranks(assemble("q", ps, ContextSpec(k=3))) == [1, 2, 3]
    assert assemble("q", ps, ContextSpec(budget=15)).n_tokens == 15
    # the first passage alone is over the budget: an empty context
    big = assemble("q", [_p(1, tokens=50), _p(2, tokens=1)], ContextSpec(budget=10))
    assert big.passages == () and big.text == "" and big.hash == hashlib.sha256(b"").hexdigest()


def test_dedupe_rules() -> None:
    ps = [
        _p(1, "a", 0, 100, "alpha beta gamma"),
        _p(2, "a", 10, 50, "beta"),  # inside rank 1's span: dropped
        _p(3, "b", 0, 16, "alpha  beta\ngamma"),  # same text up to whitespace: dropped
        _p(4, "a", 0, 200, "alpha beta gamma delta"),  # contains rank 1: kept (holds more)
        _p(5, "c", 5, 9, "beta"),  # another document, other text than any kept: kept
    ]
    ctx = assemble("q", ps, ContextSpec())
    assert _ranks(ctx) == [1, 4, 5]
    assert ctx.dropped == ("a#10-50", "b#0-16")
    # k cuts first (as R@k does), duplicates go from what was cut: never a deeper passage
    assert _ranks(assemble("q", ps, ContextSpec(k=2))) == [1]
    assert _ranks(assemble("q", ps, ContextSpec(k=4))) == [1, 4]
    assert _ranks(assemble("q", ps, ContextSpec(k=2, dedupe=False))) == [1, 2]
    kept, dropped = dedupe(ps)
    assert [p.rank for p in kept] == [1, 4, 5] and [p.rank for p in dropped] == [2, 3]


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"k": 0}, "k must be a whole number >= 1"),
        ({"budget": -5}, "budget must be"),
        ({"k": 2.5}, "k must be"),
        ({"k": True}, "k must be"),
        ({"order": "middle"}, "rank, reverse, sandwich"),
        ({"dedupe": "yes"}, "dedupe must be true or false"),
        ({"source": "gold"}, "source must be one of retrieved, oracle, none, oracle\\+distractors"),
    ],
)
def test_bad_spec_is_a_usage_error(kwargs: dict, words: str) -> None:
    with pytest.raises(UsageError, match=words):
        ContextSpec(**kwargs)


def test_spec_from_a_table_names_the_field() -> None:
    spec = ContextSpec.from_mapping({"k": 4, "order": "sandwich"})
    assert spec == ContextSpec(k=4, order="sandwich")
    with pytest.raises(InputError) as e:
        ContextSpec.from_mapping({"order": "middle"}, path="exp.toml")
    assert e.value.field == "context.order" and e.value.path == "exp.toml"
    with pytest.raises(InputError) as e:
        ContextSpec.from_mapping({"ordr": "rank"}, path="exp.toml")
    assert e.value.field == "context.ordr" and "expected k, budget" in str(e.value)


def test_the_context_source_is_a_setting_named_in_errors_and_dicts() -> None:
    assert ContextSpec().source == "retrieved" and ContextSpec().to_dict()["source"] == "retrieved"
    spec = ContextSpec.from_mapping({"source": "oracle+distractors", "order": "reverse"})
    assert spec == ContextSpec(order="reverse", source="oracle+distractors")
    assert spec.to_dict() == {
        "k": None,
        "budget": None,
        "order": "reverse",
        "dedupe": True,
        "headers": True,
        "source": "oracle+distractors",
    }
    with pytest.raises(InputError) as e:
        ContextSpec.from_mapping({"source": "gold"}, path="exp.toml", table="variant.context")
    assert e.value.field == "variant.context.source" and e.value.path == "exp.toml"
    assert "retrieved, oracle, none, oracle+distractors" in str(e.value)


def test_bad_passages_are_refused() -> None:
    with pytest.raises(UsageError, match="start <= end"):
        Passage("x", "d", 9, 3, "t", 1, 1)
    with pytest.raises(UsageError, match="rank >= 1"):
        Passage("x", "d", 0, 3, "t", 1, 0)


# -- properties ------------------------------------------------------------------------------
DOC_TEXT = {
    "a": "the change fee is seventy five dollars per ticket",
    "b": "one checked bag is free on long haul flights only",
    "c": "the change fee is seventy five dollars per ticket",  # a copy of a
}


@st.composite
def ranked_lists(draw: st.DrawFn) -> list[Passage]:
    n = draw(st.integers(0, 12))
    out = []
    for rank in range(1, n + 1):
        doc = draw(st.sampled_from(sorted(DOC_TEXT)))
        text = DOC_TEXT[doc]
        start = draw(st.integers(0, len(text) - 1))
        end = draw(st.integers(start + 1, len(text)))
        tokens = draw(st.integers(0, 20))
        out.append(Passage(f"{doc}#{start}-{end}", doc, start, end, text[start:end], tokens, rank))
    return draw(st.permutations(out))


specs = st.builds(
    ContextSpec,
    k=st.none() | st.integers(1, 8),
    budget=st.none() | st.integers(1, 80),
    order=st.sampled_from(["rank", "reverse", "sandwich"]),
    dedupe=st.booleans(),
    headers=st.booleans(),
)


@settings(max_examples=100, deadline=None)
@given(ranked_lists(), specs)
def test_every_order_is_a_permutation_of_the_same_passages(ps: list[Passage], spec) -> None:
    by_order = {
        o: assemble("q", ps, ContextSpec(spec.k, spec.budget, o, spec.dedupe, spec.headers))
        for o in ("rank", "reverse", "sandwich")
    }
    rank_ids = [cp.passage for cp in by_order["rank"].passages]
    for ctx in by_order.values():
        assert sorted((p.rank, p.id) for p in (cp.passage for cp in ctx.passages)) == sorted(
            (p.rank, p.id) for p in rank_ids
        )
        assert [cp.label for cp in ctx.passages] == list(range(1, len(ctx.passages) + 1))
    assert [cp.rank for cp in by_order["rank"].passages] == sorted(
        cp.rank for cp in by_order["rank"].passages
    )
    assert by_order["reverse"].passages == tuple(
        type(cp)(i, cp.passage) for i, cp in enumerate(reversed(by_order["rank"].passages), 1)
    )


@settings(max_examples=100, deadline=None)
@given(ranked_lists(), specs)
def test_sandwich_puts_rank_one_first_and_rank_two_last(ps: list[Passage], spec) -> None:
    ctx = assemble("q", ps, ContextSpec(spec.k, spec.budget, "sandwich", spec.dedupe))
    ranks = [cp.rank for cp in ctx.passages]
    if len(ranks) >= 1:
        assert ranks[0] == min(ranks)
    if len(ranks) >= 2:
        assert ranks[-1] == sorted(ranks)[1]
    # weakest in the middle: ranks fall towards the middle from both ends
    half = (len(ranks) + 1) // 2
    assert ranks[:half] == sorted(ranks[:half])
    assert ranks[half:] == sorted(ranks[half:], reverse=True)


@settings(max_examples=100, deadline=None)
@given(ranked_lists(), specs)
def test_budget_is_never_exceeded_and_k_never_passed(ps: list[Passage], spec) -> None:
    ctx = assemble("q", ps, spec)
    if spec.budget is not None:
        assert ctx.n_tokens <= spec.budget
    if spec.k is not None:
        assert len(ctx.passages) <= spec.k
    # the context is the cut the metrics score (a prefix of the ranked list: k, then the
    # budget's fill), less its duplicates: nothing deeper is ever read
    ranked = sorted(ps, key=lambda p: p.rank)
    cut = ranked[: spec.k] if spec.k is not None else ranked
    if spec.budget is not None:
        total, n = 0, 0
        for p in cut:
            if total + p.n_tokens > spec.budget:
                break
            total, n = total + p.n_tokens, n + 1
        cut = cut[:n]
    expected = dedupe(cut)[0] if spec.dedupe else cut
    used = sorted((cp.rank, cp.id) for cp in ctx.passages)
    assert used == [(p.rank, p.id) for p in expected]


@settings(max_examples=150, deadline=None)
@given(ranked_lists(), st.data())
def test_dedupe_never_drops_evidence_no_kept_passage_covers(ps: list[Passage], data) -> None:
    ctx = assemble("q", ps, ContextSpec(order=data.draw(st.sampled_from(["rank", "sandwich"]))))
    kept = [cp.passage for cp in ctx.passages]
    dropped_ids = set(ctx.dropped)
    assert len(kept) + len(ctx.dropped) == len(ps)
    for p in ps:
        if p.id not in dropped_ids or p in kept:
            continue
        # any evidence span inside the dropped passage
        s = data.draw(st.integers(p.start, p.end - 1))
        e = data.draw(st.integers(s + 1, p.end))
        evidence = DOC_TEXT[p.doc][s:e]
        assert any(
            (k.doc == p.doc and k.start <= s and e <= k.end) or evidence in k.text for k in kept
        )
        # and the whole dropped passage lies in one kept passage
        assert any(
            (k.doc == p.doc and k.start <= p.start and p.end <= k.end)
            or " ".join(p.text.split()) == " ".join(k.text.split())
            for k in kept
        )


def test_arrange_refuses_an_unknown_order() -> None:
    with pytest.raises(UsageError):
        arrange([1, 2], "middle")
