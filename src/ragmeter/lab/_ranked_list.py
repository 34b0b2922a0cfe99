"""One question's ranked list at a cutoff, for the lab's expanded rows and the question view:
each chunk with its text, the labelled evidence it holds as character segments relative to the
chunk (found with the same span-to-chunk mapping every metric uses, grade kept), and where the
prompt ends (k, or where the token budget fills).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ..data import Corpus
    from ._prepared import PreparedRun
    from ._recompute import PromptCutoff


# -- one question's ranked list --------------------------------------------------------------
@dataclass(frozen=True)
class Piece:
    """A stretch of a chunk's text: plain (``grade`` None) or labelled evidence."""

    text: str
    start: int  # offset in the chunk's text
    end: int
    grade: int | None = None
    evidence: int | None = None  # index in the question's evidence list


@dataclass(frozen=True)
class RankedItem:
    rank: int
    score: float
    item: str
    doc: str | None
    start: int | None
    end: int | None
    text: str | None  # None when the chunk text is unavailable
    pieces: tuple[Piece, ...]
    #: evidence overlaps as (start, end, grade, evidence index), offsets relative to the chunk
    segments: tuple[tuple[int, int, int, int], ...]
    grade: int | None  # the chunk's grade in the chunk qrels (nDCG gain); None when unknown
    n_tokens: int | None
    in_prompt: bool

    @property
    def id_names_offsets(self) -> bool:
        """True when the chunk id already reads ``doc#start-end`` (the page then shows it once)."""
        return self.item == f"{self.doc}#{self.start}-{self.end}"

    @property
    def shown(self) -> tuple[Shown, ...]:
        """The chunk text to show: every evidence mark in full, the plain text around it cut to
        a little context, the rest folded (see :func:`excerpt`)."""
        return excerpt(self.pieces)


@dataclass(frozen=True)
class Shown:
    """A part of a chunk as the page shows it: ``fold`` parts are behind a "more" toggle."""

    piece: Piece
    fold: bool = False

    @property
    def text(self) -> str:
        return self.piece.text


#: characters of plain text kept on each side of an evidence mark (and at a chunk's start)
CONTEXT = 160


def excerpt(parts: Sequence[Piece], context: int = CONTEXT) -> tuple[Shown, ...]:
    """Fold the long plain stretches of a chunk: keep ``context`` characters next to each
    evidence mark (and the first ``2 * context`` of a chunk without evidence); the folded text
    stays in the page (opened with a click), so nothing is lost and the marks are in sight."""
    out: list[Shown] = []
    n = len(parts)
    for i, p in enumerate(parts):
        if p.grade is not None:
            out.append(Shown(p))
            continue
        marked_before = i > 0
        marked_after = i < n - 1
        keep_head = context if marked_before else (0 if marked_after else 2 * context)
        keep_tail = context if marked_after else 0
        if len(p.text) <= keep_head + keep_tail + 40:
            out.append(Shown(p))
            continue
        a, b = p.start + keep_head, p.end - keep_tail
        if keep_head:
            out.append(Shown(Piece(p.text[:keep_head], p.start, a)))
        out.append(Shown(Piece(p.text[keep_head : len(p.text) - keep_tail], a, b), fold=True))
        if keep_tail:
            out.append(Shown(Piece(p.text[len(p.text) - keep_tail :], b, p.end)))
    return tuple(out)


@dataclass(frozen=True)
class EvidenceView:
    index: int
    doc: str
    start: int
    end: int
    grade: int
    required: bool
    text: str | None
    found_rank: int | None  # the span's found rank (cover reached), None if never


@dataclass(frozen=True)
class QuestionList:
    """One question's ranked list at a cutoff, with its evidence marked."""

    run_id: int
    qid: str
    question: str | None
    answer: str | None
    evidence: tuple[EvidenceView, ...]
    items: tuple[RankedItem, ...]
    prompt_size: int | None  # chunks that reach the prompt (k, or the budget's fill)
    cutoff: PromptCutoff
    cutoff_label: str  # "prompt ends here: k = 4"
    values: dict[str, float | None]
    names: dict[str, str]
    depth: int


def question_list(
    prepared: PreparedRun, cutoff: PromptCutoff, qid: str, *, limit: int | None = None
) -> QuestionList:
    """``qid``'s ranked list at ``cutoff``: each chunk with its text, the labelled evidence it
    holds as character segments relative to the chunk (grade kept), and where the prompt ends."""
    import numpy as np

    from ..labels import SpanTable, encode_docs, found_ranks, overlap_pairs
    from ._recompute import HEADROOM, METRICS, scores

    ctx = prepared.ctx
    question = ctx.golden.by_id.get(qid)
    sc = scores(prepared, cutoff)
    a, b = prepared.rows_of(qid)
    if question is None and a == b:
        raise UsageError(f"run {prepared.run_id} has no question {qid!r}")
    t = prepared.ranked.slice(a, b - a)
    items = t.column("item").to_pylist()
    docs = t.column("doc").to_pylist()
    starts = t.column("start").to_pylist()
    ends = t.column("end").to_pylist()
    ranks = t.column("rank").to_pylist()
    score = t.column("score").to_pylist()
    # chunk offsets from the chunking (they also fill in a run imported without offsets)
    ch = prepared.chunking
    rows = np.zeros(0, np.int64)
    if ch is not None and len(items):
        rows = ch.rows_of(t.column("item"))
        for i, r in enumerate(rows.tolist()):
            if r >= 0:
                docs[i], starts[i], ends[i] = ch.doc[r], int(ch.start[r]), int(ch.end[r])
    evidence = list(question.evidence) if question is not None else []
    spans = SpanTable.from_questions([question]) if question is not None else None
    # overlaps of the question's spans with its ranked chunks: the mapping every metric uses
    known = [i for i in range(len(items)) if docs[i] is not None and starts[i] is not None]
    seg: dict[int, list[tuple[int, int, int, int]]] = {}
    found: np.ndarray = np.zeros(0)
    if spans is not None and len(spans) and known:
        sd, cd = encode_docs(spans.doc, [docs[i] for i in known])
        cs = np.array([starts[i] for i in known], dtype=np.int64)
        ce = np.array([ends[i] for i in known], dtype=np.int64)
        pairs = overlap_pairs(sd, spans.start, spans.end, cd, cs, ce)
        for s, c, lo, hi in zip(
            pairs.span.tolist(),
            pairs.chunk.tolist(),
            pairs.lo.tolist(),
            pairs.hi.tolist(),
            strict=True,
        ):
            i = known[c]
            seg.setdefault(i, []).append(
                (lo - starts[i], hi - starts[i], int(spans.grade[s]), int(spans.evidence[s]))
            )
        chunk_rank = np.array([ranks[i] for i in known], dtype=np.int64)
        found = found_ranks(pairs, chunk_rank[pairs.chunk], spans.length, ctx.cover)
    prompt = sc.prompt_size(qid)
    grades = prepared.grades_of(qid)
    doc_text = _doc_texts(ctx.corpus)
    # always show the prompt, the chunk after the cutoff and every chunk holding evidence
    last_marked = max((i + 1 for i in seg), default=0)
    shown = (
        len(items) if limit is None else min(len(items), max(limit, (prompt or 0) + 1, last_marked))
    )
    out: list[RankedItem] = []
    for i in range(shown):
        text = None
        if ch is not None and prepared.has_chunking and rows[i] >= 0:
            text = ch.text[int(rows[i])]
        elif doc_text is not None and docs[i] in doc_text and starts[i] is not None:
            text = doc_text[docs[i]][starts[i] : ends[i]]
        segments = tuple(sorted(seg.get(i, ())))
        out.append(
            RankedItem(
                rank=int(ranks[i]),
                score=float(score[i]),
                item=str(items[i]),
                doc=docs[i],
                start=starts[i],
                end=ends[i],
                text=text,
                pieces=pieces(text, segments) if text is not None else (),
                segments=segments,
                grade=grades.get(str(items[i]), 0) if prepared.qrels is not None else None,
                n_tokens=int(ch.n_tokens[int(rows[i])])
                if ch is not None and prepared.has_chunking and rows[i] >= 0
                else None,
                in_prompt=prompt is not None and int(ranks[i]) <= prompt,
            )
        )
    texts = doc_text or {}
    ev_views = tuple(
        EvidenceView(
            index=j,
            doc=ev.doc,
            start=ev.start,
            end=ev.end,
            grade=ev.grade,
            required=bool(spans.required[j]) if spans is not None else True,
            text=ev.text
            if ev.text is not None
            else (texts[ev.doc][ev.start : ev.end] if ev.doc in texts else None),
            found_rank=int(found[j]) if len(found) and np.isfinite(found[j]) else None,
        )
        for j, ev in enumerate(evidence)
    )
    return QuestionList(
        run_id=prepared.run_id,
        qid=qid,
        question=question.question if question is not None else None,
        answer=question.answer if question is not None else None,
        evidence=ev_views,
        items=tuple(out),
        prompt_size=prompt,
        cutoff=cutoff,
        cutoff_label=_cutoff_label(cutoff, prompt),
        values={k: sc.value(k, qid) for k in (*METRICS, HEADROOM)},
        names=dict(sc.names),
        depth=len(items),
    )


def _cutoff_label(cutoff: PromptCutoff, prompt: int | None) -> str:
    if cutoff.k is not None:
        return f"prompt ends here: k = {cutoff.k}"
    return f"prompt ends here: {prompt} chunk(s) fill the {cutoff.budget:,}-token budget"


def _doc_texts(corpus: Corpus | None) -> Mapping[str, str] | None:
    if corpus is None:
        return None
    return _CorpusTexts(corpus)


class _CorpusTexts(Mapping[str, str]):
    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus

    def __getitem__(self, key: str) -> str:
        doc = self.corpus.get(key)
        if doc is None:
            raise KeyError(key)
        return str(doc.text)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.corpus.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.corpus.ids)

    def __len__(self) -> int:
        return len(self.corpus)


def pieces(text: str, segments: Sequence[tuple[int, int, int, int]]) -> tuple[Piece, ...]:
    """Split ``text`` at the segment boundaries: plain pieces and marked ones (grade, evidence
    index). Segments are clipped to the text; where two overlap, the higher grade marks the
    shared characters."""
    n = len(text)
    cuts = {0, n}
    for a, b, _, _ in segments:
        cuts.update((min(max(a, 0), n), min(max(b, 0), n)))
    bounds = sorted(cuts)
    out: list[Piece] = []
    for a, b in itertools.pairwise(bounds):
        if a >= b:
            continue
        cover = [(g, e) for s0, s1, g, e in segments if s0 <= a and b <= s1]
        grade, ev = max(cover) if cover else (None, None)
        if out and out[-1].grade == grade and out[-1].evidence == ev:
            last = out.pop()
            out.append(Piece(text[last.start : b], last.start, b, grade, ev))
        else:
            out.append(Piece(text[a:b], a, b, grade, ev))
    return tuple(out)
