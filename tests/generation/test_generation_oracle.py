"""Context ablations (``source_context``): hand-computed oracle, none and distractor contexts,
and hypothesis properties over many generated documents, spans, budgets and passage caps."""

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter._errors import UsageError
from ragmeter.chunking import get_tokenizer
from ragmeter.generation import CONTEXT_SOURCES, ContextSpec, Passage, assemble, source_context

REGEX = "regex-words"
WORDS = re.compile(r"\w+|[^\w\s]")


def _ctx(source: str, evidence, documents, *, budget=None, max_passages=None, retrieved=(), **kw):
    spec = ContextSpec(source=source, **kw)
    return source_context(
        "q",
        list(retrieved),
        spec,
        evidence=evidence,
        documents=documents,
        tokenizer=REGEX,
        budget=budget,
        max_passages=max_passages,
    )


def _texts(ctx) -> list[str]:
    return [cp.passage.text for cp in ctx.passages]


def _retrieved(doc: str, text: str, ranges: list[tuple[int, int]]) -> list[Passage]:
    return [
        Passage(f"{doc}#{a}-{b}", doc, a, b, text[a:b], len(WORDS.findall(text[a:b])), r)
        for r, (a, b) in enumerate(ranges, 1)
    ]


ALPHA = "a b c d e f g h i j"  # one token per letter, at 2*i


def _span(text: str, words: str) -> tuple[int, int]:
    s = text.index(words)
    return s, s + len(words)


# -- hand examples ------------------------------------------------------------------------------
def test_sources_are_the_four_of_the_design() -> None:
    assert CONTEXT_SOURCES == ("retrieved", "oracle", "none", "oracle+distractors")


def test_oracle_grows_left_then_right_alternately() -> None:
    docs = {"d": ALPHA}
    ev = [("d", *_span(ALPHA, "e"))]
    assert _texts(_ctx("oracle", ev, docs, budget=1)) == ["e"]
    assert _texts(_ctx("oracle", ev, docs, budget=2)) == ["d e"]
    assert _texts(_ctx("oracle", ev, docs, budget=3)) == ["d e f"]
    assert _texts(_ctx("oracle", ev, docs, budget=4)) == ["c d e f"]
    # the start of the document reached: the rest goes right
    assert _texts(_ctx("oracle", ev, docs, budget=8)) == ["a b c d e f g h"]
    whole = _ctx("oracle", ev, docs, budget=50)
    assert _texts(whole) == [ALPHA] and whole.n_tokens == 10
    cp = whole.passages[0]
    assert (cp.id, cp.rank, cp.passage.score, cp.passage.n_tokens) == ("d#0-19", 1, None, 10)
    assert whole.text == f"[1] d (chars 0-19)\n{ALPHA}"
    assert whole.hash == hashlib.sha256(whole.text.encode()).hexdigest()
    assert whole.spec.source == "oracle"
    # no budget: the spans as labelled
    assert _texts(_ctx("oracle", ev, docs)) == ["e"]


def test_the_budget_is_shared_equally_and_a_long_span_is_not_extended() -> None:
    docs = {"x": ALPHA, "y": "k l m n o p q r s t"}
    ev = [("x", *_span(ALPHA, "a b c d e")), ("y", *_span(docs["y"], "o"))]
    # the 5-token span is over the share: y grows to 5 first, then both grow in turn
    assert _texts(_ctx("oracle", ev, docs, budget=8)) == ["a b c d e", "n o p"]
    assert _texts(_ctx("oracle", ev, docs, budget=10)) == ["a b c d e", "m n o p q"]
    assert _texts(_ctx("oracle", ev, docs, budget=12)) == ["a b c d e f", "l m n o p q"]
    # spans alone over the budget: exactly the spans, untouched
    over = _ctx("oracle", ev, docs, budget=4)
    assert _texts(over) == ["a b c d e", "o"] and over.n_tokens == 6


def test_spans_of_one_document_merge_when_touching_or_grown_together() -> None:
    docs = {"d": ALPHA}
    b, c, g = (_span(ALPHA, w) for w in "bcg")
    # b and c: only a space between them, one passage
    assert _texts(_ctx("oracle", [("d", *b), ("d", *c)], docs)) == ["b c"]
    # c and g grow to b c d and f g h (6 tokens, e between them still two passages)
    ev = [("d", *g), ("d", *c)]
    assert _texts(_ctx("oracle", ev, docs, budget=6)) == ["b c d", "f g h"]
    # the 7th token goes left (a); the 8th, e, joins them into one passage, which grows on
    assert _texts(_ctx("oracle", ev, docs, budget=7)) == ["a b c d", "f g h"]
    assert _texts(_ctx("oracle", ev, docs, budget=8)) == ["a b c d e f g h"]
    assert _texts(_ctx("oracle", ev, docs, budget=9)) == ["a b c d e f g h i"]


def test_max_passages_merges_neighbours_then_leaves_out_the_last_documents() -> None:
    docs = {"d": ALPHA, "e": "u v w x y z"}
    ev = [("d", *_span(ALPHA, "a")), ("d", *_span(ALPHA, "c")), ("d", *_span(ALPHA, "j"))]
    ev.append(("e", *_span(docs["e"], "x")))
    # cap 3: a and c (one token between) merge first, j stays apart
    assert _texts(_ctx("oracle", ev, docs, max_passages=3)) == ["a b c", "j", "x"]
    assert _texts(_ctx("oracle", ev, docs, max_passages=2)) == [ALPHA, "x"]
    one = _ctx("oracle", ev, docs, max_passages=1)
    assert _texts(one) == [ALPHA] and one.dropped == ("e#6-7",)


def test_ranks_follow_the_evidence_list_documents_then_offsets() -> None:
    docs = {"d": ALPHA, "e": "u v w x y z"}
    ev = [("e", *_span(docs["e"], "y")), ("d", *_span(ALPHA, "h")), ("d", *_span(ALPHA, "b"))]
    ctx = _ctx("oracle", ev, docs)
    assert [(cp.rank, cp.passage.text) for cp in ctx.passages] == [(1, "y"), (2, "b"), (3, "h")]
    rev = _ctx("oracle", ev, docs, order="reverse")
    assert [(cp.label, cp.rank) for cp in rev.passages] == [(1, 3), (2, 2), (3, 1)]


def test_none_and_unlabelled_questions_get_no_passage() -> None:
    docs = {"d": ALPHA}
    ps = _retrieved("d", ALPHA, [(0, 3), (4, 7)])
    empty = hashlib.sha256(b"").hexdigest()
    for source, ev in [("none", [("d", 0, 1)]), ("oracle", []), ("oracle+distractors", [])]:
        ctx = _ctx(source, ev, docs, budget=10, max_passages=4, retrieved=ps)
        assert (ctx.passages, ctx.text, ctx.hash, ctx.dropped) == ((), "", empty, ())
        assert ctx.spec.source == source


def test_distractors_follow_the_spans_in_rank_order_within_budget_and_count() -> None:
    docs = {"d": ALPHA}
    # ranked: a-b, d-e (holds the evidence e), g-h, i-j
    ps = _retrieved("d", ALPHA, [(0, 3), (6, 9), (12, 15), (16, 19)])
    ev = [("d", *_span(ALPHA, "e"))]
    ctx = _ctx("oracle+distractors", ev, docs, budget=10, max_passages=4, retrieved=ps)
    assert [(cp.rank, cp.id) for cp in ctx.passages] == [
        (1, "d#8-9"),
        (2, "d#0-3"),
        (3, "d#12-15"),
        (4, "d#16-19"),
    ]
    assert ctx.passages[1].passage.score is None and ctx.n_tokens == 7
    # budget 4: the span (1) and a-b (2); g-h would make 5 and stops the list
    assert _ctx("oracle+distractors", ev, docs, budget=4, retrieved=ps).ids == ("d#8-9", "d#0-3")
    # the passage count, and k cut before the evidence filter
    assert len(_ctx("oracle+distractors", ev, docs, max_passages=2, retrieved=ps).passages) == 2
    assert _ctx("oracle+distractors", ev, docs, retrieved=ps, k=2).ids == ("d#8-9", "d#0-3")
    # the spans are never extended, even with budget to spare
    assert _texts(_ctx("oracle+distractors", ev, docs, budget=50))[0] == "e"


def test_retrieved_is_assemble_exactly() -> None:
    ps = _retrieved("d", ALPHA, [(0, 3), (6, 9), (12, 15)])
    spec = ContextSpec(k=2, order="sandwich")
    got = source_context(
        "q",
        ps,
        spec,
        evidence=[("d", 0, 1)],
        documents={"d": ALPHA},
        tokenizer=REGEX,
        budget=1,
        max_passages=1,
    )
    assert got == assemble("q", ps, spec) and got.text == assemble("q", ps, spec).text


def test_bad_evidence_is_a_usage_error_naming_the_question() -> None:
    with pytest.raises(UsageError, match=r"question q: .*'zz', which is not in the corpus"):
        _ctx("oracle", [("zz", 0, 1)], {"d": ALPHA})
    with pytest.raises(UsageError, match=r"question q: evidence span d 5-99 is not inside"):
        _ctx("oracle", [("d", 5, 99)], {"d": ALPHA})
    with pytest.raises(UsageError, match="or is empty"):
        _ctx("oracle", [("d", 4, 4)], {"d": ALPHA})


def test_a_document_id_with_another_text_is_not_served_from_the_cache() -> None:
    one = _ctx("oracle", [("d", 8, 9)], {"d": ALPHA}, budget=3)
    other = _ctx("oracle", [("d", 8, 9)], {"d": "z y x w v u t s r q"}, budget=3)
    assert _texts(one) == ["d e f"] and _texts(other) == ["w v u"]


def test_wordpiece_counts_like_a_chunk_and_keeps_accents_with_their_letter() -> None:
    text = "Le café coûte trois euros. Unaffordable fares are refundable within seven days."
    s, e = _span(text, "refundable")
    ctx = source_context(
        "q",
        [],
        ContextSpec(source="oracle"),
        evidence=[("d", s, e)],
        documents={"d": text},
        tokenizer="minilm-wordpiece",
        budget=12,
        max_passages=None,
    )
    p = ctx.passages[0].passage
    tok = get_tokenizer("minilm-wordpiece")
    assert "refundable" in p.text and p.n_tokens == ctx.n_tokens == 12
    assert tok.count(p.text) == p.n_tokens
    full = source_context(
        "q",
        [],
        ContextSpec(source="oracle"),
        evidence=[("d", s, e)],
        documents={"d": text},
        tokenizer="minilm-wordpiece",
        budget=500,
        max_passages=None,
    )
    assert _texts(full) == [text] and full.n_tokens == tok.count(text)


# -- properties ---------------------------------------------------------------------------------
VOCAB = ["fee", "bag", "refund", "seven", "days", "the", "is", ",", ".", "75", "$", "x"]


@st.composite
def corpora(draw: st.DrawFn) -> dict[str, str]:
    out = {}
    for i in range(draw(st.integers(1, 4))):
        words = draw(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=40))
        seps = draw(st.lists(st.sampled_from([" ", "  ", "\n", ""]), min_size=len(words)))
        text = "".join(w + s for w, s in zip(words, seps, strict=False)).strip() or "x"
        out[f"doc{i}"] = text
    return out


@st.composite
def cases(draw: st.DrawFn, aligned: bool = False):
    docs = draw(corpora())
    ev = []
    for _ in range(draw(st.integers(0, 5))):
        doc = draw(st.sampled_from(sorted(docs)))
        text = docs[doc]
        if aligned:  # spans on token edges
            toks = [m.span() for m in WORDS.finditer(text)]
            i = draw(st.integers(0, len(toks) - 1))
            j = draw(st.integers(i, min(i + 4, len(toks) - 1)))
            ev.append((doc, toks[i][0], toks[j][1]))
        else:
            s = draw(st.integers(0, len(text) - 1))
            ev.append((doc, s, draw(st.integers(s + 1, min(len(text), s + 30)))))
    ranges = []
    for _ in range(draw(st.integers(0, 8))):
        doc = draw(st.sampled_from(sorted(docs)))
        text = docs[doc]
        s = draw(st.integers(0, len(text) - 1))
        ranges.append((doc, s, draw(st.integers(s + 1, len(text)))))
    ranges = list(dict.fromkeys(ranges))  # one passage per chunk id
    retrieved = [
        Passage(f"{d}#{a}-{b}", d, a, b, docs[d][a:b], len(WORDS.findall(docs[d][a:b])), r)
        for r, (d, a, b) in enumerate(ranges, 1)
    ]
    budget = draw(st.none() | st.integers(1, 60))
    cap = draw(st.none() | st.integers(1, 5))
    spec = ContextSpec(
        k=draw(st.none() | st.integers(1, 6)),
        order=draw(st.sampled_from(["rank", "reverse", "sandwich"])),
        dedupe=draw(st.booleans()),
    )
    return docs, ev, retrieved, budget, cap, spec


def _run(source, docs, ev, retrieved, budget, cap, spec, dedupe=None):
    dedupe = spec.dedupe if dedupe is None else dedupe
    spec = ContextSpec(k=spec.k, budget=spec.budget, order=spec.order, dedupe=dedupe, source=source)
    return source_context(
        "q",
        retrieved,
        spec,
        evidence=ev,
        documents=docs,
        tokenizer=REGEX,
        budget=budget,
        max_passages=cap,
    )


def _norm(text: str) -> str:
    return " ".join(text.split())


def _n_docs(ev) -> int:
    return len({d for d, _, _ in ev})


def _no_overlap(ctx) -> None:
    ps = [cp.passage for cp in ctx.passages]
    for i, p in enumerate(ps):
        for q in ps[i + 1 :]:
            assert p.doc != q.doc or p.end <= q.start or q.end <= p.start, (p.id, q.id)


def _unions(ev) -> set[tuple[str, int]]:
    return {(d, s) for d, s, _ in ev}, {(d, e) for d, _, e in ev}


@settings(max_examples=200, deadline=None)
@given(cases())
def test_oracle_holds_every_span_whole_within_budget_and_cap(case) -> None:
    docs, ev, retrieved, budget, cap, spec = case
    ctx = _run("oracle", docs, ev, retrieved, budget, cap, spec)
    ps = [cp.passage for cp in ctx.passages]
    if not ev:
        assert ps == []
        return
    if cap is None or _n_docs(ev) <= cap:
        for d, s, e in ev:  # (or, with dedupe, the same text in another document)
            held = any(p.doc == d and p.start <= s and e <= p.end for p in ps)
            same = any(_norm(docs[d][s:e]) in _norm(p.text) for p in ps)
            assert held or (spec.dedupe and same), (d, s, e)
        assert ctx.dropped == () or spec.dedupe
    assert cap is None or len(ps) <= cap
    _no_overlap(ctx)
    for p in ps:  # counted like a chunk (regex-words: the count of the text alone)
        assert p.text == docs[p.doc][p.start : p.end] and p.n_tokens == len(WORDS.findall(p.text))
        assert p.id == f"{p.doc}#{p.start}-{p.end}" and p.score is None
    assert sorted(cp.rank for cp in ctx.passages) == sorted(set(cp.rank for cp in ctx.passages))
    starts, ends = _unions(ev)
    if budget is not None and ctx.n_tokens > budget:  # the spans alone pass it: untouched
        assert all((p.doc, p.start) in starts and (p.doc, p.end) in ends for p in ps)
    elif budget is not None and ctx.n_tokens < budget and spec.dedupe is False:
        # short of the budget only when every passage holds its whole document
        for p in ps:
            toks = [m.span() for m in WORDS.finditer(docs[p.doc])]
            assert p.start <= toks[0][0] and toks[-1][1] <= p.end


@settings(max_examples=200, deadline=None)
@given(cases(aligned=True))
def test_oracle_extension_is_symmetric_and_shared_equally(case) -> None:
    docs, ev, retrieved, budget, _, spec = case
    firsts: dict[str, tuple[str, int, int]] = {}
    for d, s, e in ev:
        firsts.setdefault(d, (d, s, e))
    ev = list(firsts.values())  # one span per document: no merging
    ctx = _run("oracle", docs, ev, retrieved, budget, None, spec, dedupe=False)
    ps = {cp.passage.doc: cp.passage for cp in ctx.passages}
    grown, open_ = [], []
    for d, s, e in ev:
        p, text = ps[d], docs[d]
        left = len(WORDS.findall(text[p.start : s]))
        right = len(WORDS.findall(text[e : p.end]))
        at_start = not WORDS.search(text[: p.start])
        at_end = not WORDS.search(text[p.end :])
        if not (at_start or at_end):
            assert left in (right, right + 1), (left, right)  # left first, then alternately
        if left or right:
            grown.append(p.n_tokens)
        if not (at_start and at_end):
            open_.append(p.n_tokens)
    if grown and open_:  # a grown passage was the shortest when it grew
        assert max(grown) <= min(open_) + 1


@settings(max_examples=200, deadline=None)
@given(cases())
def test_distractors_hold_no_evidence_and_come_after_the_spans(case) -> None:
    docs, ev, retrieved, budget, cap, spec = case
    ctx = _run("oracle+distractors", docs, ev, retrieved, budget, cap, spec)
    by_rank = sorted((cp.passage for cp in ctx.passages), key=lambda p: p.rank)
    if not ev:
        assert by_rank == []
        return
    starts, ends = _unions(ev)
    spans = [p for p in by_rank if (p.doc, p.start) in starts and (p.doc, p.end) in ends]
    extra = by_rank[len(spans) :]
    assert by_rank[: len(spans)] == spans and spans  # spans first, never extended
    assert cap is None or len(by_rank) <= cap
    ids = [p.id for p in retrieved]
    pool = [p for p in sorted(retrieved, key=lambda p: p.rank)][: spec.k]
    eligible = [
        p for p in pool if not any(d == p.doc and p.start < e and s < p.end for d, s, e in ev)
    ]
    for p in extra:
        assert p.id in ids and p.id in [q.id for q in eligible]
    assert [ids.index(p.id) for p in extra] == sorted(ids.index(p.id) for p in extra)
    if extra:
        assert budget is None or ctx.n_tokens <= budget
    if not spec.dedupe:  # a prefix of the eligible passages: the first that does not fit stops
        assert [p.id for p in extra] == [q.id for q in eligible[: len(extra)]]


@settings(max_examples=200, deadline=None)
@given(cases())
def test_retrieved_equals_assemble_and_none_is_empty(case) -> None:
    docs, ev, retrieved, budget, cap, spec = case
    got = _run("retrieved", docs, ev, retrieved, budget, cap, spec)
    assert got == assemble("q", retrieved, spec) and got.hash == assemble("q", retrieved, spec).hash
    none = _run("none", docs, ev, retrieved, budget, cap, spec)
    assert none.passages == () and none.text == "" and none.hash == hashlib.sha256(b"").hexdigest()


WP_VOCAB = ["café", "naïve", "unaffordable", "refundable", "fee", "25%", "—", "NW-1203", "the", "."]


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_wordpiece_passages_count_their_document_tokens_and_keep_spans(data) -> None:
    docs = {}
    for i in range(data.draw(st.integers(1, 3))):
        words = data.draw(st.lists(st.sampled_from(WP_VOCAB), min_size=1, max_size=30))
        docs[f"d{i}"] = " ".join(words)
    ev = []
    for _ in range(data.draw(st.integers(1, 4))):
        d = data.draw(st.sampled_from(sorted(docs)))
        s = data.draw(st.integers(0, len(docs[d]) - 1))
        ev.append((d, s, data.draw(st.integers(s + 1, len(docs[d])))))
    budget = data.draw(st.integers(1, 80))
    cap = data.draw(st.none() | st.integers(1, 4))
    ctx = source_context(
        "q",
        [],
        ContextSpec(source="oracle", dedupe=False),
        evidence=ev,
        documents=docs,
        tokenizer="minilm-wordpiece",
        budget=budget,
        max_passages=cap,
    )
    enc = {d: get_tokenizer("minilm-wordpiece").encode([t])[0] for d, t in docs.items()}
    ps = [cp.passage for cp in ctx.passages]
    for p in ps:
        e = enc[p.doc]
        overlapping = int(((e.starts < p.end) & (e.ends > p.start)).sum())
        assert p.n_tokens == overlapping
    if cap is None or _n_docs(ev) <= cap:
        for d, s, e in ev:
            assert any(p.doc == d and p.start <= s and e <= p.end for p in ps)
    starts, ends = _unions(ev)
    if ctx.n_tokens > budget:
        assert all((p.doc, p.start) in starts and (p.doc, p.end) in ends for p in ps)
    _no_overlap(ctx)
