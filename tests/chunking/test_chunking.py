"""Tokenizers, chunker names and the behaviour of each chunker on hand-checkable text."""

from __future__ import annotations

import pytest

from ragmeter import InputError, UsageError, ValidationError
from ragmeter.chunking import (
    Chunking,
    chunk_corpus,
    from_langchain,
    from_ranges,
    get_tokenizer,
    make_chunker,
    split_sentences,
)
from ragmeter.data import Document

WORDPIECE = get_tokenizer("minilm-wordpiece")
REGEX = get_tokenizer("regex-words")


def doc(text: str, id: str = "d") -> list[Document]:
    return [Document(id=id, text=text)]


def texts(c: Chunking) -> list[str]:
    return [ch.text for ch in c]


# --- tokenizers ---------------------------------------------------------------------------------
def test_wordpiece_counts_subwords_without_special_tokens_or_truncation():
    assert WORDPIECE.name == "minilm-wordpiece"
    assert WORDPIECE.count("") == 0
    assert WORDPIECE.count("hello world") == 2
    assert WORDPIECE.count("unaffable") == 3  # una ##ffa ##ble
    long = "fare " * 500
    assert WORDPIECE.count(long) == 500  # the shipped file truncates at 128; counting must not
    assert list(WORDPIECE.count_batch(["a b", "", "c"])) == [2, 0, 1]


def test_wordpiece_offsets_index_the_original_text():
    text = "Change fee: $75 (rule 16) — 東京"
    enc = WORDPIECE.encode([text])[0]
    pieces = [text[a:b] for a, b in zip(enc.starts.tolist(), enc.ends.tolist(), strict=True)]
    assert pieces == ["Change", "fee", ":", "$", "75", "(", "rule", "16", ")", "—", "東", "京"]
    word = WORDPIECE.encode(["unaffable x"])[0]
    assert word.words.tolist() == [0, 0, 0, 1]  # one word, three pieces


def test_regex_fallback_counts_words_and_punctuation():
    assert REGEX.name == "regex-words"
    assert REGEX.count("unaffable fee: $75!") == 6  # unaffable fee : $ 75 !
    assert REGEX.count("unaffable") < WORDPIECE.count("unaffable")


def test_unknown_tokenizer_lists_valid_names():
    with pytest.raises(UsageError, match="minilm-wordpiece, regex-words"):
        get_tokenizer("gpt2")


# --- names --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name,canonical",
    [
        ("tokens:300:50", "tokens:300:50"),
        ("tokens:300", "tokens:300:0"),
        ("sentences:5", "sentences:5"),
        ("sections:500", "sections:500"),
        ("recursive:300:30", "recursive:300:30"),
        ("recursive:64", "recursive:64:0"),
    ],
)
def test_chunker_names_are_canonical(name, canonical):
    assert make_chunker(name).name == canonical
    assert make_chunker(canonical).name == canonical


@pytest.mark.parametrize(
    "name,why",
    [
        ("token:300", "unknown chunker 'token'"),
        ("tokens", "tokens takes SIZE and OVERLAP"),
        ("tokens:300:300", "OVERLAP must be smaller than SIZE"),
        ("tokens:0", "SIZE must be at least 1"),
        ("tokens:3x", "whole numbers"),
        ("tokens:-5", "whole numbers"),
        ("sentences:0", "at least 1"),
        ("sentences:2:1", "one number"),
        ("sections", "one number"),
        ("", "unknown chunker"),
        ("recursive:10:2:1", "SIZE and OVERLAP"),
    ],
)
def test_bad_chunker_names_say_why_and_list_every_form(name, why):
    with pytest.raises(UsageError) as err:
        make_chunker(name)
    msg = str(err.value)
    assert why in msg
    for form in (
        "tokens:SIZE:OVERLAP",
        "sentences:N",
        "sections:MAX_TOKENS",
        "recursive:SIZE:OVERLAP",
    ):
        assert form in msg


# --- chunkers -----------------------------------------------------------------------------------
def test_token_windows_with_overlap():
    text = "one two three four five six seven"
    c = chunk_corpus(doc(text), "tokens:3:1")
    assert texts(c) == ["one two three", "three four five", "five six seven"]
    assert c.ids == ["d#0-13", "d#8-23", "d#19-33"]
    assert c.n_tokens.tolist() == [3, 3, 3]
    assert c.name == "tokens:3:1" and c.tokenizer == "minilm-wordpiece"


def test_token_windows_never_split_a_word():
    # "unaffable" is three word pieces; a 2-token window moves back to the word's start
    c = chunk_corpus(doc("a unaffable b"), "tokens:2:0")
    assert texts(c) == ["a", "unaffable", "b"]
    assert c.n_tokens.tolist() == [1, 3, 1]  # a word longer than the window stays whole


def test_sentence_splitter_rules():
    text = (
        "The fee is $75. Refunds take 7 days, e.g. by card! Why? 東京は大きい。次の文。"
        "\n\nNext para"
    )
    got = [text[a:b] for a, b in split_sentences(text)]
    assert got == [
        "The fee is $75.",
        "Refunds take 7 days, e.g. by card!",
        "Why?",
        "東京は大きい。",
        "次の文。",
        "Next para",
    ]


def test_sentence_windows():
    c = chunk_corpus(doc("A one. B two. C three. D four. E five."), "sentences:2")
    assert texts(c) == ["A one. B two.", "C three. D four.", "E five."]


def test_sections_merge_paragraphs_within_a_section_only():
    text = (
        "# Fees\n\nChange fee is 75.\n\nName change fee is 50.\n\n"
        "## Refunds\nRefunds take seven days.\n\nCash refunds are not offered."
    )
    c = chunk_corpus(doc(text), "sections:17")  # 2 + 5 + 6 tokens, then 10 + 7
    assert texts(c) == [
        "# Fees\n\nChange fee is 75.\n\nName change fee is 50.",
        "## Refunds\nRefunds take seven days.\n\nCash refunds are not offered.",
    ]
    small = chunk_corpus(doc(text), "sections:8")
    assert texts(small)[:2] == ["# Fees\n\nChange fee is 75.", "Name change fee is 50."]
    assert all(n <= 8 for n in small.n_tokens.tolist())


def test_sections_cut_an_oversize_paragraph_into_token_windows():
    text = "intro\n\n" + " ".join(f"w{i}" for i in range(10))
    c = chunk_corpus(doc(text), "sections:8")
    assert c.n_tokens.max() <= 8
    assert texts(c)[0] == "intro"
    assert "".join(texts(c)[1:]).replace(" ", "") == text.split("\n\n")[1].replace(" ", "")


def test_recursive_prefers_paragraphs_then_lines_then_sentences():
    text = "Alpha beta gamma.\n\nDelta epsilon.\nZeta eta theta. Iota kappa."
    c = chunk_corpus(doc(text), "recursive:5:0", tokenizer="regex-words")
    assert texts(c) == ["Alpha beta gamma.", "Delta epsilon.", "Zeta eta theta.", "Iota kappa."]
    merged = chunk_corpus(doc(text), "recursive:20:0", tokenizer="regex-words")
    assert texts(merged) == [text]


def test_recursive_overlap_repeats_trailing_pieces():
    text = "a b c d e f g h"
    c = chunk_corpus(doc(text), "recursive:4:2", tokenizer="regex-words")
    assert texts(c) == ["a b c d", "c d e f", "e f g h"]


@pytest.mark.parametrize("name", ["tokens:5:1", "sentences:2", "sections:5", "recursive:5:1"])
def test_empty_and_blank_documents_give_no_chunks(name):
    c = chunk_corpus([Document(id="e", text=""), Document(id="w", text=" \n\r\n\t ")], name)
    assert len(c) == 0
    assert c.stats()["n_chunks"] == 0


def test_chunk_ids_are_stable_across_runs():
    text = "one two three four five six seven eight nine ten " * 5
    a = chunk_corpus(doc(text), "recursive:7:2")
    b = chunk_corpus(doc(text), "recursive:7:2")
    assert a.ids == b.ids
    assert all(
        i == f"d#{s}-{e}" for i, s, e in zip(a.ids, a.start.tolist(), a.end.tolist(), strict=True)
    )


def test_corpus_forms_accepted():
    mapping = chunk_corpus({"x": "hello there"}, "tokens:5:0")
    assert mapping.doc == ["x"]
    with pytest.raises(UsageError):
        chunk_corpus(["plain string"], "tokens:5:0")


# --- adapters -----------------------------------------------------------------------------------
CORPUS = [
    Document(id="a", text="Change fees are 75 dollars."),
    Document(id="b", text="No refunds."),
]


def test_from_ranges_computes_text_and_tokens():
    c = from_ranges(
        CORPUS, [("b", 0, 10), {"doc": "a", "start": 0, "end": 11}, ("b", 0, 10)], name="mine"
    )
    assert c.ids == ["a#0-11", "b#0-10"]  # ordered by (doc, start, end), repeats kept once
    assert texts(c) == ["Change fees", "No refunds"]
    assert c.n_tokens.tolist() == [2, 3]  # "no", "ref", "##unds"
    assert c.name == "mine"


def test_from_ranges_reports_every_problem():
    with pytest.raises(ValidationError) as err:
        from_ranges(CORPUS, [("zz", 0, 1), ("a", 5, 5), ("a", 0, 999), ("a", "0", 3), (1,)])
    problems = err.value.problems
    assert len(problems) == 5
    assert "unknown document 'zz'" in str(problems[0])
    assert "is not inside document 'a'" in str(problems[1])
    assert "integers" in str(problems[3])


class FakeLangChainDoc:
    def __init__(self, page_content: str, metadata: dict) -> None:
        self.page_content = page_content
        self.metadata = metadata


def test_from_langchain_objects_and_dicts():
    docs = [
        FakeLangChainDoc("Change fees", {"source": "a", "start_index": 0}),
        {"page_content": "refunds.", "metadata": {"source": "b", "start_index": 3}},
    ]
    c = from_langchain(docs, CORPUS)
    assert c.ids == ["a#0-11", "b#3-11"]
    assert c.name == "langchain"
    trusted = from_langchain(docs)  # without a corpus the texts are taken as given
    assert texts(trusted) == texts(c)


def test_from_langchain_errors_name_the_fix():
    bad = [
        FakeLangChainDoc("Change", {"source": "a"}),
        FakeLangChainDoc("Change", {"source": "a", "start_index": -1}),
        FakeLangChainDoc("Change", {"file": "a", "start_index": 0}),
        FakeLangChainDoc("Nope", {"source": "a", "start_index": 0}),
    ]
    with pytest.raises(ValidationError) as err:
        from_langchain(bad, CORPUS)
    msg = str(err.value)
    assert msg.count("add_start_index=True") == 2
    assert "doc_key=" in msg
    assert "is not the text of document 'a'" in msg


def test_duplicate_chunk_ids_are_refused():
    with pytest.raises(InputError, match="duplicate chunk id 'x'"):
        Chunking(
            name="n",
            tokenizer="t",
            ids=["x", "x"],
            doc=["a", "a"],
            start=[0, 1],
            end=[1, 2],
            text=["C", "h"],
            n_tokens=[1, 1],
        )
