"""Context ablations: the context a question gets under each source of ``ContextSpec.source``.

What the model reads decides whether a wrong answer is retrieval's fault or generation's. The
retrieved context (``source = "retrieved"``) is :func:`~._assemble.assemble` exactly; the
ablations replace it with what a perfect retriever, or none at all, would have given, at the
baseline's token budget and passage count, so that the text read is the only change:

``none``
    No passages: the empty text (its hash is sha256 of ""). Right answers here come from the
    model's memory.
``oracle``
    The question's labelled evidence spans, extended with the text around them in their own
    documents to the token budget and passage count:

    1. **Passages.** One per span; spans of one document that overlap, or with no token
       between them (only whitespace), are one passage. While there are more passages than
       ``max_passages``, the two neighbours of one document with the fewest tokens between
       them merge (the tokens between become passage text and count); when every document
       holds one passage, those of the documents the evidence list names last are left out
       (their ids go to ``dropped``). Evidence is never cut to fit a count.
    2. **Extension.** While the total of the passages' ``n_tokens`` is below ``budget``, the
       shortest passage (ties: the first) grows by one token of its document, on the left and
       the right alternately (its first step also moves a span edge that falls inside a token
       out to that token's edge, at no cost; at a document's edge it grows on the other side;
       a passage covering its whole document gives its share to the others). Passages thus
       end up equal in length, like chunks, each centred on its evidence within one token; a
       span longer than that share is kept whole and not extended, so a context whose spans
       alone pass the budget is exactly the spans. A passage that grows into its neighbour
       merges with it. Edges fall on token boundaries of the chunking's tokenizer (inside a
       word the tokenizer splits, possibly), never between a letter and its accent.
    3. **Ids and order.** A passage's id is its chunk id (``doc#start-end``), ``n_tokens``
       the count of its document's tokens it overlaps (a chunk's count, on token edges),
       ``rank`` 1.. in evidence order (documents in the order the evidence list first names
       them, then by offset), ``score`` None. Then duplicate removal, order and headers as
       :func:`~._assemble.assemble` does them.
``oracle+distractors``
    The spans themselves (not extended; merged and capped as in step 1) ranked first, then
    the retrieved passages (rank order, the first ``spec.k``) that hold no evidence (overlap
    no span by a character or more), appended while the total stays within ``budget`` and the
    count within ``max_passages``; the first that does not fit stops the list, as the budget
    rule of :func:`~._assemble.assemble` does. Wrong answers here that the oracle got right
    are the model thrown off by noise.

A question with no labelled span (unanswerable, or unlabelled) gets no passage under either
oracle source; the caller reports those apart rather than scoring an empty context.

Encoded documents are cached between calls, keyed by their text (the experiment calls once
per question, and questions share documents).
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import hashlib
import itertools
import unicodedata
from collections.abc import Mapping, Sequence

import numpy as np

from .._errors import UsageError
from ..chunking import chunk_id, get_tokenizer
from ._assemble import AssembledContext, ContextSpec, Passage, assemble

#: encoded documents kept between calls (each holds two int64 arrays of its token offsets)
_CACHE_SIZE = 64


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _offsets(tokenizer: str, doc: str, text: str) -> tuple[np.ndarray, np.ndarray]:
    """Token (starts, ends) of a document's text; keyed by the text itself, so two corpora
    that give one document id different texts never share an entry."""
    enc = get_tokenizer(tokenizer).encode([text])[0]
    return enc.starts, enc.ends


class _Doc:
    """One document's text and token offsets (as lists: the growth loop reads them one by
    one)."""

    def __init__(self, doc: str, text: str, tokenizer: str) -> None:
        self.doc = doc
        self.text = text
        starts, ends = _offsets(tokenizer, doc, text)
        self.starts: list[int] = starts.tolist()
        self.ends: list[int] = ends.tolist()

    def tokens(self, a: int, b: int) -> tuple[int, int]:
        """``(lo, hi)``: the indices of the tokens overlapping characters ``[a, b)``."""
        lo = bisect.bisect_right(self.ends, a)
        return lo, max(lo, bisect.bisect_left(self.starts, b))

    def end_of(self, j: int) -> int:
        """The end of token ``j``, past combining marks no token owns (the tokenizer drops
        accents), so an edge never parts a letter from its accent."""
        end = self.ends[j]
        limit = self.starts[j + 1] if j + 1 < len(self.starts) else len(self.text)
        while end < limit and unicodedata.category(self.text[end])[0] == "M":
            end += 1
        return end


@dataclasses.dataclass(eq=False)
class _Piece:
    """A passage being built: characters ``[a, b)`` of its document, the tokens it overlaps
    (indices ``lo:hi``; its ``n_tokens`` is ``hi - lo``), and its place in evidence order
    (``first``: where the evidence list first names its document)."""

    doc: _Doc
    a: int
    b: int
    lo: int
    hi: int
    first: int
    left_next: bool = True
    grown: bool = False
    done: bool = False

    @property
    def n(self) -> int:
        return self.hi - self.lo

    @property
    def key(self) -> tuple[int, int]:
        return self.first, self.a

    def merge(self, q: _Piece) -> None:
        """Take in ``q`` (of the same document): the union of the two."""
        self.a, self.b = min(self.a, q.a), max(self.b, q.b)
        self.lo, self.hi = min(self.lo, q.lo), max(self.hi, q.hi)
        self.first = min(self.first, q.first)

    def step(self, left: bool) -> int | None:
        """Grow by one token on one side (the first step also moves a span edge inside a token
        out to that token's edge, which costs nothing); the new token count, or None at the
        document's edge. Tokens sharing one character offset come together."""
        d = self.doc
        if not self.grown and self.lo < self.hi:
            self.a = min(self.a, d.starts[self.lo])
            self.b = max(self.b, d.end_of(self.hi - 1))
            self.grown = True
        if left:
            if self.lo == 0:
                return None
            lo = self.lo - 1
            while lo > 0 and d.ends[lo - 1] > d.starts[lo]:
                lo -= 1
            self.a, self.lo = d.starts[lo], lo
        else:
            if self.hi >= len(d.ends):
                return None
            hi = self.hi + 1
            while hi < len(d.starts) and d.starts[hi] < d.ends[hi - 1]:
                hi += 1
            self.b, self.hi = d.end_of(hi - 1), hi
        self.grown = True
        return self.n


def _gap(p: _Piece, q: _Piece) -> int:
    """Tokens between two pieces of one document (0 or less: they touch or overlap)."""
    return max(p.lo, q.lo) - min(p.hi, q.hi)


def _merge_touching(pieces: list[_Piece]) -> list[_Piece]:
    """Pieces of one document that overlap or have no token between them, merged."""
    out: list[_Piece] = []
    for p in sorted(pieces, key=lambda p: (p.doc.doc, p.lo, p.a)):
        last = out[-1] if out else None
        if last is not None and last.doc is p.doc and _gap(last, p) <= 0:
            last.merge(p)
        else:
            out.append(p)
    return sorted(out, key=lambda p: p.key)


def _cap(pieces: list[_Piece], max_passages: int | None) -> tuple[list[_Piece], list[_Piece]]:
    """(kept, left out): neighbours of one document merged (smallest gap first) while there are
    more than ``max_passages``; then the pieces last in evidence order left out."""
    if max_passages is None:
        return pieces, []
    pieces = list(pieces)
    while len(pieces) > max_passages:
        best: tuple[int, int, int] | None = None  # (gap, index, neighbour's index)
        order = sorted(range(len(pieces)), key=lambda i: (pieces[i].doc.doc, pieces[i].lo))
        for x, y in itertools.pairwise(order):
            if pieces[x].doc is pieces[y].doc:
                gap = _gap(pieces[x], pieces[y])
                if best is None or gap < best[0]:
                    best = (gap, x, y)
        if best is None:
            break
        _, x, y = best
        pieces[x].merge(pieces[y])
        del pieces[y]
    pieces.sort(key=lambda p: p.key)
    return pieces[:max_passages], pieces[max_passages:]


def _grow(pieces: list[_Piece], budget: int) -> list[_Piece]:
    """Extend the pieces token by token, shortest first, until their total reaches ``budget``
    (see the module docstring); pieces that grow into each other merge."""
    total = sum(p.n for p in pieces)
    while total < budget:
        live = [p for p in pieces if not p.done]
        if not live:
            break
        p = min(live, key=lambda p: (p.n, p.key))
        before = (p.a, p.b, p.lo, p.hi, p.grown)
        for left in (p.left_next, not p.left_next):
            n = p.step(left)
            if n is not None:
                break
        else:
            p.done = True  # the whole document: its share goes to the others
            continue
        if total - (before[3] - before[2]) + n > budget:  # tokens sharing one offset: no room
            p.a, p.b, p.lo, p.hi, p.grown = before
            p.done = True
            continue
        total += n - (before[3] - before[2])
        p.left_next = not left
        for q in pieces:  # the neighbour it reached, if any, joins it
            if q is not p and q.doc is p.doc and _gap(p, q) <= 0:
                p.merge(q)
                pieces = [r for r in pieces if r is not q]
                total = sum(r.n for r in pieces)
                break
    return sorted(pieces, key=lambda p: p.key)


def _evidence_pieces(
    question_id: str,
    evidence: Sequence[tuple[str, int, int]],
    documents: Mapping[str, str],
    tokenizer: str,
) -> list[_Piece]:
    docs: dict[str, _Doc] = {}
    firsts: dict[str, int] = {}
    pieces: list[_Piece] = []
    for doc_id, start, end in evidence:
        if doc_id not in documents:
            raise UsageError(
                f"question {question_id}: evidence span in document {doc_id!r}, "
                "which is not in the corpus"
            )
        text = documents[doc_id]
        if not 0 <= start < end <= len(text):
            raise UsageError(
                f"question {question_id}: evidence span {doc_id} {start}-{end} is not inside "
                f"its document (0-{len(text)}) or is empty"
            )
        if doc_id not in docs:
            docs[doc_id] = _Doc(doc_id, text, tokenizer)
            firsts[doc_id] = len(firsts)
        d = docs[doc_id]
        pieces.append(_Piece(d, start, end, *d.tokens(start, end), firsts[doc_id]))
    return _merge_touching(pieces)


def _passage(p: _Piece, rank: int) -> Passage:
    d = p.doc
    return Passage(chunk_id(d.doc, p.a, p.b), d.doc, p.a, p.b, d.text[p.a : p.b], p.n, rank)


def _finish(
    question_id: str,
    passages: Sequence[Passage],
    spec: ContextSpec,
    left_out: Sequence[Passage] = (),
) -> AssembledContext:
    """Duplicate removal, order and headers as :func:`assemble` does them, with no k or budget
    cut (the passages are already cut), under the caller's spec."""
    ctx = assemble(question_id, passages, dataclasses.replace(spec, k=None, budget=None))
    return dataclasses.replace(ctx, spec=spec, dropped=ctx.dropped + tuple(p.id for p in left_out))


def _empty(question_id: str, spec: ContextSpec) -> AssembledContext:
    return AssembledContext(question_id, (), "", hashlib.sha256(b"").hexdigest(), spec)


def source_context(
    question_id: str,
    retrieved: Sequence[Passage],
    spec: ContextSpec,
    *,
    evidence: Sequence[tuple[str, int, int]],
    documents: Mapping[str, str],
    tokenizer: str,
    budget: int | None,
    max_passages: int | None,
) -> AssembledContext:
    """The context of one question under ``spec.source`` (see the module docstring).

    ``retrieved`` are the question's ranked passages (as for :func:`assemble`); ``evidence``
    its labelled spans ``(doc, start, end)``; ``documents`` the corpus texts by id;
    ``tokenizer`` the chunking's tokenizer name, so passage token counts match the chunks';
    ``budget`` the tokens the oracle context fills (the baseline's context size for this
    question when the variant sets no budget; None: no extension, no cap) and
    ``max_passages`` its passage count (the baseline's k; None: no cap). An evidence span
    outside its document, or in a document not in ``documents``, is a :class:`UsageError`."""
    if spec.source == "retrieved":
        return assemble(question_id, retrieved, spec)
    if spec.source == "none" or not evidence:
        return _empty(question_id, spec)
    pieces, left_out = _cap(
        _evidence_pieces(question_id, evidence, documents, tokenizer), max_passages
    )
    if spec.source == "oracle":
        if budget is not None:
            pieces = _grow(pieces, budget)
        return _finish(
            question_id,
            [_passage(p, r) for r, p in enumerate(pieces, 1)],
            spec,
            [_passage(p, len(pieces) + r) for r, p in enumerate(left_out, 1)],
        )
    # oracle+distractors: the spans, then retrieved passages that hold no evidence
    chosen = [_passage(p, r) for r, p in enumerate(pieces, 1)]
    total = sum(p.n_tokens for p in chosen)
    ranked = sorted(retrieved, key=lambda p: p.rank)
    if spec.k is not None:
        ranked = ranked[: spec.k]
    for p in ranked:
        if any(d == p.doc and p.start < e and s < p.end for d, s, e in evidence):
            continue
        full = max_passages is not None and len(chosen) >= max_passages
        if full or (budget is not None and total + p.n_tokens > budget):
            break
        chosen.append(dataclasses.replace(p, rank=len(chosen) + 1))
        total += p.n_tokens
    return _finish(
        question_id,
        chosen,
        spec,
        [_passage(p, len(chosen) + r) for r, p in enumerate(left_out, 1)],
    )
