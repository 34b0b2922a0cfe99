"""The answer review views' models (``/review``): the answers queues, the review page of one
generated answer (the question, the answer, the passages it cites highlighted in their
documents and in its prompt context, the reference answer) and the agreement panel.

The agreement panel's kappa is :func:`ragmeter.workflows.labelling.answer_agreement`'s: the
first labeller's reviews taken as the human labels and the second's as the judge's, compared by
``ragmeter judge validate``'s own code, so it is the kappa ``ragmeter judge validate --human
human-correctness.A.jsonl --judge human-correctness.B.jsonl`` prints on the files
``ragmeter label export`` writes. Saves go through the label view's save
(:func:`._data_label.save`): one save path, one payload (docs/labelling.md).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._errors import NotFoundError, UsageError
from ._data_label import MineRow, item_of, label_json, mine_rows, own_label, position, urls_of, when
from ._views import TemplateVariables

if TYPE_CHECKING:  # pragma: no cover
    from ..store import ItemRow, QueueRow, Store

#: characters of a cited document shown on either side of its cited passages
WINDOW = 400
#: the review's choices: (payload field, value, key, words); the keys are shown on the page
CHOICES: tuple[tuple[str, str, str, str], ...] = (
    ("correct", "correct", "c", "correct"),
    ("correct", "incorrect", "i", "incorrect"),
    ("supported", "supported", "s", "supported"),
    ("supported", "unsupported", "u", "unsupported"),
    ("abstention", "correct_abstention", "a", "correct abstention"),
    ("abstention", "wrong_abstention", "w", "wrong abstention"),
)
#: the agreement panel's metrics, as ``judge validate`` names them
METRICS = ("correctness", "faithfulness", "abstention")


def review_urls(queue: str, item_id: int) -> dict[str, str]:
    """The label view's URLs under ``/review``, less search and documents (a review has none)."""
    urls = urls_of(queue, item_id, "/review")
    return {k: urls[k] for k in ("queue", "save", "delete", "next")}


def answers_queue(store: Store, queue: str) -> QueueRow:
    """The answers queue ``queue`` (UsageError pointing an evidence queue to ``/label``)."""
    q = store.queue(queue)
    if q.kind != "answers":
        raise UsageError(
            f"queue {q.name!r} labels evidence, not answers: label it at /label/{q.name}"
        )
    return q


# -- the agreement panel ----------------------------------------------------------------------
@dataclass(frozen=True)
class MetricAgreement:
    metric: str
    n: int
    agreement: float
    kappa: float
    labels: tuple[str, ...]
    #: rows: the first labeller's label; columns: the second's
    confusion: list[tuple[str, list[int]]]
    disagreements: int


@dataclass(frozen=True)
class AgreementPanel:
    #: answers the queue gives two labellers, and those reviewed by two so far
    double: int
    reviewed_twice: int
    #: the first labeller (as ``--human``) and the second (as ``--judge``), when known
    a: str | None
    b: str | None
    metrics: list[MetricAgreement]

    @property
    def correctness(self) -> MetricAgreement | None:
        return next((m for m in self.metrics if m.metric == "correctness"), None)


def _pair_names(store: Store, queue: str) -> tuple[str | None, str | None]:
    """The first and second labeller of the agreement (the workflow's rule)."""
    from ..workflows import labelling

    found = labelling.answer_labellers(store, queue)
    return (None, None) if found is None else (found[0], found[1])


def agreement_panel(store: Store, queue: str) -> AgreementPanel:
    """The two labellers' agreement on the queue's answers (module docstring)."""
    from ..workflows import labelling

    q = answers_queue(store, queue)
    items = store.items(q.id)
    by_item: dict[int, set[str]] = {}
    for lb in store.labels(queue_id=q.id):
        if lb.role == "label" and not lb.payload.get("skipped"):
            by_item.setdefault(lb.item_id, set()).add(lb.labeller)
    found = labelling.answer_agreement(store, q.name)
    metrics = [
        MetricAgreement(
            metric=m,
            n=v.n,
            agreement=v.agreement,
            kappa=v.kappa,
            labels=tuple(v.labels),
            confusion=[
                (lab, [int(x) for x in row])
                for lab, row in zip(v.labels, v.confusion.tolist(), strict=True)
            ],
            disagreements=len(v.disagreements),
        )
        for m in METRICS
        if (v := found.get(m)) is not None
    ]
    a, b = _pair_names(store, q.name) if metrics else (None, None)
    return AgreementPanel(
        double=sum(it.double for it in items),
        reviewed_twice=sum(len(v) >= 2 for v in by_item.values()),
        a=a,
        b=b,
        metrics=metrics,
    )


# -- /review ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReviewQueue:
    name: str
    items: int
    reviewed: int
    mine: int
    double: int
    source: str | None
    created: str


@dataclass(frozen=True)
class ReviewQueuesPage(TemplateVariables):
    queues: list[ReviewQueue]
    labeller: str
    message: str | None


def queues_page(store: Store, labeller: str, message: str | None = None) -> ReviewQueuesPage:
    out = []
    for q in store.queues():
        if q.kind != "answers":
            continue
        items = store.items(q.id)
        labels = [lb for lb in store.labels(queue_id=q.id) if lb.role == "label"]
        out.append(
            ReviewQueue(
                name=q.name,
                items=len(items),
                reviewed=len({lb.item_id for lb in labels if not lb.payload.get("skipped")}),
                mine=sum(lb.labeller == labeller for lb in labels),
                double=sum(it.double for it in items),
                source=q.source,
                created=when(q.created_at),
            )
        )
    return ReviewQueuesPage(queues=out, labeller=labeller, message=message)


@dataclass(frozen=True)
class DonePage(TemplateVariables):
    queue: QueueRow
    labeller: str
    panel: AgreementPanel


def done_page(store: Store, queue: str, labeller: str) -> DonePage:
    return DonePage(answers_queue(store, queue), labeller, agreement_panel(store, queue))


def next_item_id(store: Store, queue: str, labeller: str, after: int | None) -> int | None:
    """The answer to open next for ``labeller`` (the label view's rule)."""
    from ._data_label import next_item_id as next_id

    answers_queue(store, queue)
    return next_id(store, queue, labeller, after)


# -- /review/QUEUE/item/ID --------------------------------------------------------------------
@dataclass(frozen=True)
class Piece:
    """A stretch of text, ``cited`` when a passage the answer cites covers it."""

    text: str
    cited: bool


@dataclass(frozen=True)
class CitedDoc:
    """A document the answer cites, cut into pieces around its cited passages (``WINDOW``
    characters either side; ``clipped_*`` say whether text was left out there)."""

    doc: str
    title: str | None
    pieces: list[Piece]
    clipped_start: bool
    clipped_end: bool
    #: ``doc:12-80`` of each citation of the document
    where: list[str]
    missing: bool


@dataclass(frozen=True)
class Choice:
    field: str
    value: str
    key: str
    words: str


@dataclass(frozen=True)
class ReviewView:
    queue: QueueRow
    item: ItemRow
    number: int
    total: int
    labeller: str
    revision: int
    answer: str | None
    abstained: bool | None
    reference: str | None
    answerable: bool | None
    cited_docs: list[CitedDoc]
    #: chunk citations (no document offsets to highlight)
    cited_chunks: list[str]
    #: the prompt's context text with the cited passages' texts marked
    context: list[Piece]
    context_ids: list[str]
    others: list[str]
    choices: list[Choice]
    mine: list[MineRow]
    urls: dict[str, str]
    #: what review.js reads (through tojson)
    data: dict[str, Any]


@dataclass(frozen=True)
class ReviewPage(TemplateVariables):
    view: ReviewView
    panel: AgreementPanel


def cut(text: str, spans: Sequence[tuple[int, int]]) -> list[Piece]:
    """``text`` cut at every span boundary, each piece marked when a span covers it."""
    n = len(text)
    bounds = sorted({0, n, *(x for s in spans for x in s if 0 <= x <= n)})
    return [
        Piece(text[lo:hi], any(s <= lo and hi <= e for s, e in spans))
        for lo, hi in itertools.pairwise(bounds)
        if hi > lo
    ]


def _cited_docs(
    citations: Sequence[Mapping[str, Any]], corpus: Any
) -> tuple[list[CitedDoc], list[str]]:
    by_doc: dict[str, list[tuple[int, int]]] = {}
    chunks: list[str] = []
    for c in citations:
        doc = c.get("doc")
        if not doc:
            if c.get("chunk"):
                chunks.append(str(c["chunk"]))
            continue
        by_doc.setdefault(str(doc), [])
        if isinstance(c.get("start"), int) and isinstance(c.get("end"), int):
            by_doc[str(doc)].append((int(c["start"]), int(c["end"])))
    out = []
    for doc_id, spans in by_doc.items():
        d = None if corpus is None else corpus.get(doc_id)
        where = [f"{doc_id}:{s}-{e}" for s, e in spans] or [doc_id]
        if d is None:
            out.append(CitedDoc(doc_id, None, [], False, False, where, True))
            continue
        text = d.text
        marked = spans or [(0, len(text))]  # a citation of the whole document
        lo = max(0, min(s for s, _ in marked) - WINDOW)
        hi = min(len(text), max(e for _, e in marked) + WINDOW)
        shifted = [(max(s, lo) - lo, min(e, hi) - lo) for s, e in marked]
        out.append(
            CitedDoc(
                doc_id, d.title, cut(text[lo:hi], shifted), lo > 0, hi < len(text), where, False
            )
        )
    return out, chunks


def _context_pieces(text: str, cited: Sequence[str]) -> list[Piece]:
    spans = []
    for c in cited:
        if not c.strip():
            continue
        at = text.find(c)
        while at >= 0:
            spans.append((at, at + len(c)))
            at = text.find(c, at + len(c))
    return cut(text, spans)


def review_page(store: Store, queue: str, item_id: str | int, labeller: str) -> ReviewPage:
    """The review page of one answer of an answers queue."""
    from ..workflows import labelling

    q = answers_queue(store, queue)
    it = item_of(store, q, item_id)
    items = store.items(q.id)
    number = position(items, it)
    ctx = it.context
    citations = [c for c in ctx.get("citations") or [] if isinstance(c, Mapping)]
    corpus = labelling.queue_corpus(store, q) if q.n_docs else None
    cited_docs, chunks = _cited_docs(citations, corpus)
    context_text = ctx.get("context_text")
    mine = own_label(store, it.id, labeller)
    urls = review_urls(q.name, it.id)
    others = sorted(
        {lb.labeller for lb in store.labels(item_id=it.id) if lb.role == "label"} - {labeller}
    )
    data = {
        "queue": q.name,
        "item": {"id": it.id, "qid": it.qid},
        "labeller": labeller,
        "label": label_json(mine),
        "urls": urls,
        "keys": {key: [f, v] for f, v, key, _ in CHOICES},
    }

    def text_of(key: str) -> str | None:
        value = ctx.get(key)
        return None if value is None else str(value)

    return ReviewPage(
        view=ReviewView(
            queue=q,
            item=it,
            number=number,
            total=len(items),
            labeller=labeller,
            revision=0 if mine is None else mine.revision,
            answer=text_of("answer"),
            abstained=ctx.get("abstained"),
            reference=text_of("reference"),
            answerable=ctx.get("answerable"),
            cited_docs=cited_docs,
            cited_chunks=chunks,
            context=_context_pieces(
                str(context_text), [str(c.get("text") or "") for c in citations]
            )
            if context_text
            else [],
            context_ids=[str(x) for x in ctx.get("context") or []],
            others=others,
            choices=[Choice(*c) for c in CHOICES],
            mine=mine_rows(store, q, labeller, review_urls),
            urls=urls,
            data=data,
        ),
        panel=agreement_panel(store, q.name),
    )


def _not_answers(store: Store, queue: str) -> tuple[int, dict[str, Any]] | None:
    """The refusal (HTTP status, JSON) of a save or delete on what is not an answers queue."""
    try:
        answers_queue(store, queue)
    except (UsageError, NotFoundError) as exc:
        return (404 if isinstance(exc, NotFoundError) else 400), {"error": str(exc)}
    return None


def save(
    store: Store, queue: str, item_id: str | int, labeller: str, body: Mapping[str, Any]
) -> tuple[int, dict[str, Any]]:
    """Save a review (the label view's save, on an answers queue only): (HTTP status, JSON)."""
    from ._data_label import save as save_label

    return _not_answers(store, queue) or save_label(store, queue, item_id, labeller, body)


def delete(
    store: Store, queue: str, item_id: str | int, labeller: str, body: Mapping[str, Any]
) -> tuple[int, dict[str, Any]]:
    """Delete a review (the label view's delete, on an answers queue only)."""
    from ._data_label import delete as delete_label

    return _not_answers(store, queue) or delete_label(store, queue, item_id, labeller, body)
