"""Chunkers: cut one document's text into character ranges, named by their configuration.

Every chunker works on the document's tokens (``Encoded``: character offsets and words) and
returns ``(start, end)`` character ranges; ``chunk_corpus`` then slices ``text[start:end]``, so
a chunk's text is exactly the document's characters. Rules shared by all chunkers:

- chunks never begin or end with whitespace, and never cut inside a word (a pre-token of the
  tokenizer), so a chunk's token count equals the count of its text tokenized alone;
- whitespace between two adjacent chunks belongs to neither; a span crossing that boundary is
  at most those few characters short of full coverage (use ``cover`` < 1);
- a single word longer than the size limit becomes a chunk of its own, over the limit.

Names (the chunking's identity in every result): ``tokens:SIZE:OVERLAP``, ``sentences:N``,
``sections:MAX_TOKENS``, ``recursive:SIZE:OVERLAP``, ``document``.

``document`` is the exception to the trimming rule: its one chunk is the whole text, offsets
``0..len(text)``, so a whole-document span (what BEIR's qrels become) is covered exactly.
"""

from __future__ import annotations

import re
import unicodedata
from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .._errors import UsageError
from ._tokenizer import Encoded

Range = tuple[int, int]

# --- text boundaries ---------------------------------------------------------------------------
#: a sentence ends with . ! ? or … (plus closing quotes/brackets) followed by whitespace and a
#: character that is not a lower-case letter (so "e.g. the" and "approx. five" stay whole).
_LATIN_END = re.compile(r"[.!?\u2026]+[\"'\u201d\u2019)\]\u00bb]*(\s+)")
#: CJK full stops end a sentence with or without following whitespace.
_CJK_END = re.compile(r"[\u3002\uff01\uff1f]+[\u300d\u300f\u201d\u2019\uff09)]*(\s*)")
#: a blank line (two line breaks with only whitespace between) ends a paragraph.
_BLANK_LINE = re.compile(r"\n\s*\n")
_LINE_BREAK = re.compile(r"\s*\n\s*")
_WHITESPACE = re.compile(r"\s+")
#: an ATX markdown heading: up to three spaces, 1-6 '#', then a space or the line's end.
_HEADING_LINE = re.compile(r"^[ ]{0,3}#{1,6}(?=[ \t]|\r?$)", re.MULTILINE)
_HEADING_AT = re.compile(r"#{1,6}(?=[ \t\r\n]|$)")
_NUMBER = re.compile(r"[0-9]+")


def _trim(text: str, a: int, b: int) -> Range:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def _pieces(text: str, a: int, b: int, gaps: list[Range]) -> list[Range]:
    """The non-empty, whitespace-trimmed pieces of ``text[a:b]`` between the ``gaps``."""
    out: list[Range] = []
    pos = a
    for gs, ge in sorted(gaps):
        if gs >= pos:
            p = _trim(text, pos, gs)
            if p[0] < p[1]:
                out.append(p)
        pos = max(pos, ge)
    p = _trim(text, pos, b)
    if p[0] < p[1]:
        out.append(p)
    return out


def sentence_gaps(text: str, a: int = 0, b: int | None = None) -> list[Range]:
    """Gaps between sentences in ``text[a:b]``: after . ! ? … followed by whitespace and a
    non-lower-case character, after CJK full stops, and at blank lines."""
    b = len(text) if b is None else b
    gaps: list[Range] = []
    for m in _LATIN_END.finditer(text, a, b):
        nxt = m.end()
        if nxt < b and not text[nxt].islower():
            gaps.append(m.span(1))
    gaps.extend(m.span(1) for m in _CJK_END.finditer(text, a, b))
    gaps.extend(m.span() for m in _BLANK_LINE.finditer(text, a, b))
    return gaps


def split_sentences(text: str, a: int = 0, b: int | None = None) -> list[Range]:
    """Sentence ranges of ``text[a:b]`` (see :func:`sentence_gaps` for the rule)."""
    b = len(text) if b is None else b
    return _pieces(text, a, b, sentence_gaps(text, a, b))


# --- token windows -----------------------------------------------------------------------------
def _extend_over_marks(text: str, end: int, limit: int) -> int:
    """Move ``end`` past combining marks that no token owns (the tokenizer drops accents)."""
    while end < limit and unicodedata.category(text[end])[0] == "M":
        end += 1
    return end


def token_windows(
    text: str, enc: Encoded, lo: int, hi: int, size: int, overlap: int
) -> list[Range]:
    """Windows of at most ``size`` tokens over tokens ``lo:hi``, each starting ``overlap``
    tokens before the previous one ends; window edges move back to the start of a word."""
    ws = enc.word_start_token
    n = len(enc)
    out: list[Range] = []
    i = int(ws[lo]) if lo < n else lo
    i = max(i, lo)
    while i < hi:
        j = min(i + size, hi)
        if j < hi and ws[j] != j:
            if ws[j] > i:
                j = int(ws[j])
            else:  # one word longer than the window: keep it whole
                j = j + 1
                while j < hi and ws[j] != j:
                    j += 1
        limit = int(enc.starts[j]) if j < n else len(text)
        out.append((int(enc.starts[i]), _extend_over_marks(text, int(enc.ends[j - 1]), limit)))
        if j >= hi:
            break
        nxt = int(ws[j - overlap]) if overlap else j
        i = nxt if nxt > i else j
    return out


def _token_range(enc: Encoded, a: int, b: int) -> tuple[int, int]:
    """Indices of the tokens lying inside characters ``[a, b)``."""
    lo = int(np.searchsorted(enc.starts, a, side="left"))
    hi = int(np.searchsorted(enc.ends, b, side="right"))
    return lo, max(lo, hi)


# --- chunkers ----------------------------------------------------------------------------------
class Chunker(ABC):
    """Cuts one document into character ranges; ``name`` is its canonical configuration."""

    kind: ClassVar[str]
    form: ClassVar[str]
    example: ClassVar[str]
    #: retrievers index ``title + " " + text`` of the chunk's document (BEIR's convention) rather
    #: than the chunk text alone; the chunk's offsets and text stay those of the document text.
    joins_title: ClassVar[bool] = False

    @property
    @abstractmethod
    def name(self) -> str: ...

    @abstractmethod
    def split(self, text: str, enc: Encoded) -> list[Range]:
        """Character ranges of the chunks of ``text`` (whose tokens are ``enc``)."""

    def __repr__(self) -> str:
        return f"make_chunker({self.name!r})"


@dataclass(frozen=True, repr=False)
class TokenChunker(Chunker):
    """``tokens:SIZE:OVERLAP``: windows of SIZE tokens, each starting SIZE - OVERLAP tokens after
    the previous one (window edges move back to a word start, so a window may hold fewer)."""

    size: int
    overlap: int = 0
    kind: ClassVar[str] = "tokens"
    form: ClassVar[str] = "tokens:SIZE:OVERLAP"
    example: ClassVar[str] = "tokens:300:50"

    @property
    def name(self) -> str:
        return f"tokens:{self.size}:{self.overlap}"

    def split(self, text: str, enc: Encoded) -> list[Range]:
        return token_windows(text, enc, 0, len(enc), self.size, self.overlap)


@dataclass(frozen=True, repr=False)
class SentenceChunker(Chunker):
    """``sentences:N``: consecutive, non-overlapping windows of N sentences
    (:func:`split_sentences`)."""

    n: int
    kind: ClassVar[str] = "sentences"
    form: ClassVar[str] = "sentences:N"
    example: ClassVar[str] = "sentences:5"

    @property
    def name(self) -> str:
        return f"sentences:{self.n}"

    def split(self, text: str, enc: Encoded) -> list[Range]:
        sents = split_sentences(text)
        return [
            (sents[i][0], sents[min(i + self.n, len(sents)) - 1][1])
            for i in range(0, len(sents), self.n)
        ]


@dataclass(frozen=True, repr=False)
class SectionChunker(Chunker):
    """``sections:MAX_TOKENS``: paragraphs (split at blank lines) and markdown sections (a line
    starting with 1-6 '#' and a space opens one). Consecutive paragraphs of one section merge
    while the chunk stays within MAX_TOKENS; a chunk never spans two sections; a paragraph over
    MAX_TOKENS is cut into token windows of MAX_TOKENS."""

    max_tokens: int
    kind: ClassVar[str] = "sections"
    form: ClassVar[str] = "sections:MAX_TOKENS"
    example: ClassVar[str] = "sections:500"

    @property
    def name(self) -> str:
        return f"sections:{self.max_tokens}"

    def split(self, text: str, enc: Encoded) -> list[Range]:
        gaps = [m.span() for m in _BLANK_LINE.finditer(text)]
        gaps += [(m.start(), m.start()) for m in _HEADING_LINE.finditer(text)]
        pieces = _pieces(text, 0, len(text), gaps)
        if not pieces:
            return []
        starts = np.array([p[0] for p in pieces])
        ends = np.array([p[1] for p in pieces])
        counts = np.asarray(enc.count_in(starts, ends)).tolist()
        out: list[Range] = []
        cur: list[int] | None = None  # [start, end, tokens]
        for (a, b), n in zip(pieces, counts, strict=True):
            heading = _HEADING_AT.match(text, a) is not None
            if cur is not None and (heading or n > self.max_tokens or cur[2] + n > self.max_tokens):
                out.append((cur[0], cur[1]))
                cur = None
            if n > self.max_tokens:
                lo, hi = _token_range(enc, a, b)
                out.extend(token_windows(text, enc, lo, hi, self.max_tokens, 0))
            elif cur is None:
                cur = [a, b, n]
            else:
                cur[1], cur[2] = b, cur[2] + n
        if cur is not None:
            out.append((cur[0], cur[1]))
        return out


@dataclass(frozen=True, repr=False)
class RecursiveChunker(Chunker):
    """``recursive:SIZE:OVERLAP``: LangChain's RecursiveCharacterTextSplitter measured in tokens.

    The text is split at the coarsest separator present (blank line, then line break, then
    sentence end, then whitespace, then token windows); pieces within SIZE tokens are merged
    greedily into chunks of at most SIZE tokens, the next chunk restarting with the trailing
    pieces of the previous one that total at most OVERLAP tokens; a piece over SIZE is split
    again with the next separator.
    """

    size: int
    overlap: int = 0
    kind: ClassVar[str] = "recursive"
    form: ClassVar[str] = "recursive:SIZE:OVERLAP"
    example: ClassVar[str] = "recursive:300:30"

    @property
    def name(self) -> str:
        return f"recursive:{self.size}:{self.overlap}"

    def split(self, text: str, enc: Encoded) -> list[Range]:
        a, b = _trim(text, 0, len(text))
        if a >= b:
            return []
        if int(enc.count_in(a, b)) <= self.size:
            return [(a, b)]
        return self._split(text, enc, a, b, 0)

    def _gaps(self, text: str, a: int, b: int, level: int) -> list[Range]:
        if level == 2:
            return sentence_gaps(text, a, b)
        rx = (_BLANK_LINE, _LINE_BREAK, None, _WHITESPACE)[level]
        return [m.span() for m in rx.finditer(text, a, b)]  # type: ignore[union-attr]

    def _split(self, text: str, enc: Encoded, a: int, b: int, level: int) -> list[Range]:
        if level >= 4:
            lo, hi = _token_range(enc, a, b)
            return token_windows(text, enc, lo, hi, self.size, self.overlap)
        pieces = _pieces(text, a, b, self._gaps(text, a, b, level))
        if len(pieces) <= 1:
            return self._split(text, enc, a, b, level + 1)
        counts = np.asarray(
            enc.count_in(np.array([p[0] for p in pieces]), np.array([p[1] for p in pieces]))
        ).tolist()
        out: list[Range] = []
        good: list[tuple[int, int, int]] = []
        for (pa, pb), n in zip(pieces, counts, strict=True):
            if n <= self.size:
                good.append((pa, pb, n))
                continue
            out.extend(self._merge(good))
            good = []
            out.extend(self._split(text, enc, pa, pb, level + 1))
        out.extend(self._merge(good))
        return out

    def _merge(self, pieces: list[tuple[int, int, int]]) -> list[Range]:
        out: list[Range] = []
        cur: deque[tuple[int, int, int]] = deque()
        total = 0
        for piece in pieces:
            n = piece[2]
            if cur and total + n > self.size:
                out.append((cur[0][0], cur[-1][1]))
                while cur and (total > self.overlap or total + n > self.size):
                    total -= cur.popleft()[2]
            cur.append(piece)
            total += n
        if cur:
            out.append((cur[0][0], cur[-1][1]))
        return out


@dataclass(frozen=True, repr=False)
class DocumentChunker(Chunker):
    """``document``: one chunk per document, the whole text (offsets ``0..len(text)``, not
    trimmed), for document-level test collections such as BEIR, where a judged document is a
    span over its whole text. Retrievers index the document's title joined to the text
    (``title + " " + text`` when the document has a title, BEIR's convention; see
    :func:`ragmeter.chunking.index_texts`) while spans map on the text's offsets.
    A whitespace-only document gives no chunk, as with every chunker."""

    kind: ClassVar[str] = "document"
    form: ClassVar[str] = "document"
    example: ClassVar[str] = "document"
    joins_title: ClassVar[bool] = True

    @property
    def name(self) -> str:
        return "document"

    def split(self, text: str, enc: Encoded) -> list[Range]:
        return [(0, len(text))] if text.strip() else []


CHUNKERS: dict[str, type[Chunker]] = {
    c.kind: c
    for c in (TokenChunker, SentenceChunker, SectionChunker, RecursiveChunker, DocumentChunker)
}


def _valid_forms() -> str:
    return "; ".join(
        c.form if c.form == c.example else f"{c.form} (e.g. {c.example})" for c in CHUNKERS.values()
    )


def make_chunker(name: str | Chunker) -> Chunker:
    """The chunker a name describes, e.g. ``tokens:300:50``, ``sentences:5``, ``sections:500``,
    ``recursive:300:30``, ``document``. ``tokens:300`` and ``recursive:300`` mean overlap 0; the
    canonical name (``Chunker.name``) always spells the overlap out."""
    if isinstance(name, Chunker):
        return name

    def bad(why: str) -> UsageError:
        return UsageError(f"bad chunker name '{name}': {why}. Valid forms: {_valid_forms()}")

    kind, *args = str(name).strip().split(":")
    cls = CHUNKERS.get(kind)
    if cls is None:
        raise bad(f"unknown chunker '{kind}'")
    if cls is DocumentChunker:
        if args:
            raise bad("document takes no numbers (one chunk per document)")
        return cls()
    if not all(_NUMBER.fullmatch(a) for a in args):
        raise bad("sizes must be whole numbers")
    nums = [int(a) for a in args]
    if cls in (TokenChunker, RecursiveChunker):
        if len(nums) not in (1, 2):
            raise bad(f"{kind} takes SIZE and OVERLAP")
        size, overlap = nums[0], (nums[1] if len(nums) == 2 else 0)
        if size < 1:
            raise bad("SIZE must be at least 1")
        if overlap >= size:
            raise bad("OVERLAP must be smaller than SIZE")
        return cls(size, overlap)
    if len(nums) != 1:
        raise bad(f"{kind} takes one number")
    if nums[0] < 1:
        raise bad("the number must be at least 1")
    return cls(nums[0])  # type: ignore[call-arg]
