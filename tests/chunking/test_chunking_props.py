"""Offsets property for every chunker on random Unicode text (Hypothesis, seeded by pytest)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter.chunking import chunk_corpus, get_tokenizer
from ragmeter.data import Document

#: pieces that break naive chunkers: combining marks, emoji sequences, CJK, CRLF, control and
#: exotic spaces, ligatures, characters whose lower-case form is longer, markdown headings.
NASTY = [
    "e\u0301",
    "\u0903",
    "😀",
    "👍🏽",
    "👨\u200d👩\u200d👧",
    "東",
    "京",
    "。",
    "！",
    "\r\n",
    "\n\n",
    "\t",
    "\x1c",
    "\x85",
    "\u200b",
    "\u00a0",
    "\u3000",
    "İ",
    "ß",
    "ﬁ",
    "## ",
    "\n# ",
    ". ",
    "? ",
    "!",
    ",",
    "'",
    '"',
    "word",
    "Fee",
    " ",
]
TEXT = st.lists(
    st.one_of(st.sampled_from(NASTY), st.characters(exclude_categories=("Cs",))), max_size=80
).map("".join)

CHUNKERS = ["tokens:4:1", "tokens:3:0", "sentences:2", "sections:6", "recursive:5:2"]
SETTINGS = settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)


def check_chunks(text: str, name: str, tokenizer: str) -> None:
    tok = get_tokenizer(tokenizer)
    c = chunk_corpus([Document(id="doc", text=text)], name, tokenizer=tokenizer)
    assert c.name == name and c.tokenizer == tok.name
    assert len(set(c.ids)) == len(c)
    covered = np.zeros(len(text), dtype=bool)
    for ch in c:
        assert 0 <= ch.start < ch.end <= len(text)
        assert text[ch.start : ch.end] == ch.text
        assert ch.id == f"doc#{ch.start}-{ch.end}"
        assert not ch.text[0].isspace() and not ch.text[-1].isspace()
        assert ch.n_tokens == tok.count(ch.text)  # never cut inside a word
        covered[ch.start : ch.end] = True
    enc = tok.encode([text])[0]
    for a, b in zip(enc.starts.tolist(), enc.ends.tolist(), strict=True):
        assert covered[a:b].all(), "every token of the document is in some chunk"


@pytest.mark.parametrize("name", CHUNKERS)
@SETTINGS
@given(text=TEXT)
def test_chunk_offsets_wordpiece(name, text):
    check_chunks(text, name, "minilm-wordpiece")


@pytest.mark.parametrize("name", CHUNKERS)
@settings(SETTINGS, max_examples=60)
@given(text=TEXT)
def test_chunk_offsets_regex_words(name, text):
    check_chunks(text, name, "regex-words")


@pytest.mark.parametrize("name", ["tokens:3:1", "sentences:1", "sections:4", "recursive:3:1"])
def test_fixed_nasty_texts(name):
    for text in [
        "",
        "\r\n\r\n",
        "e\u0301e\u0301 x\u0301",
        "😀😀 👨\u200d👩\u200d👧 東京。次",
        "a\x1cb c",
        "# h\n\n## h2\ntext. More text! 終わり。",
        "ﬁx İstanbul ß",
    ]:
        check_chunks(text, name, "minilm-wordpiece")
