"""The question view's model: one golden question, its reference answer, its evidence spans
shown inside their documents, every stored run's ranked list for it with the evidence marked
(the lab's :func:`~ragmeter.lab._ranked_list.question_list`), every stored answer to it with the
citation checks ``answers check`` recorded, and the judge labels given to it."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

from .._errors import NotFoundError, RagmeterError

if TYPE_CHECKING:  # pragma: no cover
    from ..data import Corpus, GoldenSet
    from ..store import Store
    from ._ranked_list import Piece, RankedItem
    from ._views import QuestionPage, Window

#: characters of document shown on each side of an evidence span
WINDOW = 280
#: characters of a ranked chunk shown before its first evidence mark, after its last one, and
#: of a chunk without evidence (the whole text is one click away in the lab)
BEFORE, AFTER, PLAIN = 140, 260, 220


def excerpt(items: tuple[RankedItem, ...]) -> tuple[RankedItem, ...]:
    """Ranked items with their text cut around the evidence they hold (so the mark is in
    view), or to their first lines when they hold none."""
    from dataclasses import replace

    from ._ranked_list import Piece

    out = []
    for it in items:
        ps = list(it.pieces)
        if not ps:
            out.append(it)
            continue
        marked = [i for i, p in enumerate(ps) if p.grade]
        if not marked:
            text = it.text or ""
            cut = text[:PLAIN] + (" …" if len(text) > PLAIN else "")
            out.append(replace(it, pieces=(Piece(cut, 0, len(cut)),)))
            continue
        first, last = marked[0], marked[-1]
        keep: list[Piece] = []
        before = "".join(p.text for p in ps[:first])
        if before:
            head = before[-BEFORE:]
            keep.append(Piece(("… " if len(before) > BEFORE else "") + head, 0, len(head)))
        keep += ps[first : last + 1]
        after = "".join(p.text for p in ps[last + 1 :])
        if after:
            tail = after[:AFTER]
            keep.append(Piece(tail + (" …" if len(after) > AFTER else ""), 0, len(tail)))
        out.append(replace(it, pieces=tuple(keep)))
    return tuple(out)


def _window(text: str, spans: list[tuple[int, int, int, int]]) -> Window:
    """The document around its spans: marked pieces of the excerpt, with offsets kept."""
    from ._ranked_list import pieces
    from ._views import Window

    lo = max(0, min(s[0] for s in spans) - WINDOW)
    hi = min(len(text), max(s[1] for s in spans) + WINDOW)
    shifted = [(a - lo, b - lo, g, e) for a, b, g, e in spans]
    return Window(
        start=lo,
        end=hi,
        before=lo > 0,
        after=hi < len(text),
        pieces=pieces(text[lo:hi], shifted),
        full=pieces(text, spans),
    )


def question_context(
    store: Store,
    golden_version: str,
    qid: str,
    *,
    cache: MutableMapping[Any, Any] | None = None,
) -> QuestionPage:
    from dataclasses import replace

    from ..store import DamagedRowError, skipped
    from ._context import settings_of
    from ._prepared import prepared_run
    from ._ranked_list import question_list
    from ._recompute import PromptCutoff
    from ._views import (
        Citation,
        DocumentShown,
        JudgeLabel,
        QuestionPage,
        RunQuestionList,
        RunShown,
        SpanShown,
        StoredAnswer,
    )

    runs = [r for r in store.runs(golden_version=golden_version, status="finished") if r.has_ranked]
    golden: GoldenSet | None = None
    try:
        golden = store.golden(golden_version)
    except NotFoundError:
        pass
    lists: list[RunQuestionList] = []
    problems: list[str] = []
    corpus: Corpus | None = None
    for r in sorted(runs, key=lambda r: r.id):
        try:
            prepared = prepared_run(store, r.id, cache)
            golden = golden or prepared.ctx.golden
            corpus = corpus if corpus is not None else prepared.ctx.corpus
            cut = PromptCutoff.of_settings(settings_of(r))
            lst = question_list(prepared, cut, qid, limit=5)
            lst = replace(lst, items=excerpt(lst.items))
        except RagmeterError as exc:
            problems.append(f"run {r.id} ({r.name}): {exc}")
            continue
        shown = RunShown(id=r.id, name=r.name, baseline=r.is_baseline, experiment=r.experiment)
        lists.append(RunQuestionList(run=shown, l=lst, problem=prepared.problem))
    if golden is None:
        raise NotFoundError(f"the store holds no golden-set version {golden_version!r}")
    q = golden.by_id.get(qid)
    if q is None:
        raise NotFoundError(f"golden set {golden_version} has no question {qid!r}")
    texts = {d.id: d.text for d in corpus} if corpus is not None else {}
    by_doc: dict[str, list[tuple[int, int, int, int]]] = {}
    for j, ev in enumerate(q.evidence):
        by_doc.setdefault(ev.doc, []).append((ev.start, ev.end, ev.grade, j))
    documents = []
    for doc, spans in by_doc.items():
        shown_spans = [
            SpanShown(
                index=e + 1,
                start=a,
                end=b,
                grade=g,
                required=bool(getattr(q.evidence[e], "required", True)),
            )
            for a, b, g, e in spans
        ]
        if doc in texts:
            documents.append(DocumentShown(doc, shown_spans, _window(texts[doc], spans)))
        else:
            own = [q.evidence[e].text for *_, e in spans]
            documents.append(DocumentShown(doc, shown_spans, None, own))
    answers = []
    for meta in store.answer_sets(golden_version=golden_version):
        try:
            a = store.answer_set(meta.id)
        except DamagedRowError as exc:  # said once; the question shows the other sets
            skipped(exc)
            continue
        row = next((x for x in a.answers if x.get("id") == qid), None)
        if row is None:
            continue
        check = next((x for x in (a.report or {}).get("answers", []) if x.get("id") == qid), None)
        cites = []
        for c in row.get("citations") or []:
            doc, s, e = c.get("doc"), c.get("start"), c.get("end")
            text = None
            if doc in texts:
                t = texts[doc]
                text = t[s:e] if s is not None and e is not None else t[:300]
            cites.append(
                Citation(
                    label=f"{doc}:{s}-{e}" if doc else str(c.get("chunk")),
                    text=text,
                    evidence_doc=doc in by_doc,
                )
            )
        answers.append(
            StoredAnswer(
                set=meta.id,
                variant=a.name,
                answer=row.get("answer"),
                abstained=row.get("abstained"),
                citations=cites,
                context=row.get("context"),
                check=check,
            )
        )
    judged = []
    for v in store.judge_validations():
        try:
            jv = store.judge_validation(v.id)
        except DamagedRowError as exc:
            skipped(exc)
            continue
        judged += [
            JudgeLabel(
                validation=v.id,
                judge=v.judge,
                label=lab.get("label"),
                human=lab.get("human"),
                run=lab.get("run"),
                order=lab.get("order"),
            )
            for lab in jv.labels
            if lab.get("id") == qid
        ]
    return QuestionPage(
        golden_version=golden_version,
        qid=qid,
        question=q.question,
        answer=q.answer,
        answerable=q.answerable,
        slices=list(q.slices),
        split=q.split,
        documents=documents,
        lists=lists,
        problems=problems,
        answers=answers,
        judged=judged,
    )
