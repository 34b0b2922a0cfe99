"""Token counting with character offsets: the tokenizer behind chunk sizes and context budgets.

Two tokenizers exist, each recorded by name with every chunking and budget result:

``minilm-wordpiece`` (default)
    The WordPiece tokenizer of ``sentence-transformers/all-MiniLM-L6-v2`` (lower-casing BERT
    normaliser, BERT pre-tokenizer, 30,522-piece vocabulary), shipped in
    ``ragmeter/_resources/minilm-tokenizer.json`` and run by the ``tokenizers`` library, fully
    offline. Counts exclude the special tokens ``[CLS]``/``[SEP]`` and are never truncated.

``regex-words`` (only when asked for by name)
    One token per run of word characters (``\\w+``) and one per other non-space character. It
    counts *words*, not subwords, so its counts are lower than WordPiece's (typically by 10-30 %
    on English prose, far more on rare words and identifiers). Budgets computed with it are not
    comparable with budgets computed with ``minilm-wordpiece``; the tokenizer name in every
    result says which was used. (``tokenizers`` is a core dependency and the WordPiece file
    ships with ragmeter, so the default never falls back to it.)

Both give, for each text, the character offsets of every token and the *word* (pre-token) it
belongs to; chunkers cut only between words, so a chunk's token count equals the count of its
text tokenized alone.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import UsageError

DEFAULT_TOKENIZER = "minilm-wordpiece"
FALLBACK_TOKENIZER = "regex-words"
TOKENIZERS = (DEFAULT_TOKENIZER, FALLBACK_TOKENIZER)

_RESOURCE = "minilm-tokenizer.json"
_REGEX_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class Encoded:
    """The tokens of one text as character offsets, in text order.

    Token ``i`` is ``text[starts[i]:ends[i]]`` (as the tokenizer aligns it) and belongs to word
    ``words[i]``; a word is a pre-token (a run of letters, one punctuation mark, one CJK
    character) and its tokens are consecutive.
    """

    starts: np.ndarray  # int64
    ends: np.ndarray  # int64
    words: np.ndarray  # int64, non-decreasing

    def __len__(self) -> int:
        return len(self.starts)

    @functools.cached_property
    def word_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) character offsets of each word, in text order."""
        n = len(self.words)
        if n == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        first = np.flatnonzero(np.r_[True, self.words[1:] != self.words[:-1]])
        last = np.r_[first[1:] - 1, n - 1]
        return self.starts[first], self.ends[last]

    @functools.cached_property
    def word_start_token(self) -> np.ndarray:
        """For each token, the index of the first token of its word."""
        n = len(self.words)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        is_first = np.r_[True, self.words[1:] != self.words[:-1]]
        return np.maximum.accumulate(np.where(is_first, np.arange(n), 0))

    def count_in(self, start: np.ndarray | int, end: np.ndarray | int) -> np.ndarray | int:
        """Tokens lying entirely inside ``[start, end)`` (vectorised over arrays of ranges)."""
        n = np.searchsorted(self.ends, end, side="right") - np.searchsorted(
            self.starts, start, side="left"
        )
        return np.maximum(n, 0)

    def snap(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(outward start, outward end) of character positions: a position strictly inside a
        word moves to that word's start (for a chunk start) or end (for a chunk end)."""
        ws, we = self.word_bounds
        pos = np.asarray(pos, dtype=np.int64)
        if len(ws) == 0:
            return pos, pos
        i = np.searchsorted(we, pos, side="right")
        ic = np.minimum(i, len(ws) - 1)
        inside = (i < len(ws)) & (ws[ic] < pos)
        return np.where(inside, ws[ic], pos), np.where(inside, we[ic], pos)


class Tokenizer:
    """Base of the tokenizers: ``name``, ``encode`` (offsets) and ``count`` (token counts)."""

    name: str = ""

    def encode(self, texts: Sequence[str]) -> list[Encoded]:  # pragma: no cover - abstract
        raise NotImplementedError

    def count_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Token count of each text (no special tokens, no truncation)."""
        return np.fromiter((len(e) for e in self.encode(texts)), dtype=np.int64, count=len(texts))

    def count(self, text: str) -> int:
        """Token count of one text (no special tokens, no truncation)."""
        return int(self.count_batch([text])[0])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class WordPieceTokenizer(Tokenizer):
    """The all-MiniLM-L6-v2 WordPiece tokenizer (``minilm-wordpiece``), via ``tokenizers``."""

    name = DEFAULT_TOKENIZER

    def __init__(self, backend: Any) -> None:
        self._tok = backend

    @classmethod
    def load(cls) -> WordPieceTokenizer:
        from importlib import resources

        from tokenizers import Tokenizer as HFTokenizer

        spec = resources.files("ragmeter").joinpath("_resources", _RESOURCE).read_text("utf-8")
        tok = HFTokenizer.from_str(spec)
        tok.no_truncation()  # the shipped file truncates to 128 tokens for the model
        tok.no_padding()
        return cls(tok)

    def encode(self, texts: Sequence[str]) -> list[Encoded]:
        out: list[Encoded] = []
        for enc in self._tok.encode_batch(list(texts), add_special_tokens=False):
            n = len(enc.ids)
            flat = np.fromiter(
                (x for pair in enc.offsets for x in pair), dtype=np.int64, count=2 * n
            )
            words = np.fromiter(
                (-1 if w is None else w for w in enc.word_ids), dtype=np.int64, count=n
            )
            out.append(Encoded(flat[0::2].copy(), flat[1::2].copy(), words))
        return out

    def count_batch(self, texts: Sequence[str]) -> np.ndarray:
        fast = getattr(self._tok, "encode_batch_fast", self._tok.encode_batch)
        encs = fast(list(texts), add_special_tokens=False)
        return np.fromiter((len(e.ids) for e in encs), dtype=np.int64, count=len(texts))


class RegexWordTokenizer(Tokenizer):
    """``regex-words``: one token per ``\\w+`` run and per other non-space character."""

    name = FALLBACK_TOKENIZER

    def encode(self, texts: Sequence[str]) -> list[Encoded]:
        out: list[Encoded] = []
        for text in texts:
            spans = [m.span() for m in _REGEX_TOKEN.finditer(text)]
            arr = np.array(spans, dtype=np.int64).reshape(-1, 2)
            out.append(Encoded(arr[:, 0].copy(), arr[:, 1].copy(), np.arange(len(arr))))
        return out

    def count_batch(self, texts: Sequence[str]) -> np.ndarray:
        return np.fromiter(
            (len(_REGEX_TOKEN.findall(t)) for t in texts), dtype=np.int64, count=len(texts)
        )


@functools.cache
def _load(name: str) -> Tokenizer:
    if name == DEFAULT_TOKENIZER:
        return WordPieceTokenizer.load()
    return RegexWordTokenizer()


def get_tokenizer(name: str | Tokenizer | None = None) -> Tokenizer:
    """The tokenizer called ``name`` (default ``minilm-wordpiece``), loaded once and cached."""
    if isinstance(name, Tokenizer):
        return name
    name = DEFAULT_TOKENIZER if name is None else name
    if name not in TOKENIZERS:
        raise UsageError(f"unknown tokenizer '{name}'; valid tokenizers: {', '.join(TOKENIZERS)}")
    return _load(name)
