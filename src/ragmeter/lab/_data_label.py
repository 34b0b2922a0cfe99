"""The label views' models (``/label``): queues, the label page of one question, a document,
a search, a save or a delete (the agreement pages' are in :mod:`._data_label_agreement`).

Everything here reads the store's public records and calls :mod:`ragmeter.workflows.labelling`
for the jobs (next question, document, search, save, delete). Text from the queue and the
corpus reaches the page only through Jinja's autoescape or as JSON that ``label.js`` puts in
as text.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._errors import NotFoundError, RagmeterError, UsageError
from ._views import TemplateVariables

if TYPE_CHECKING:  # pragma: no cover
    import datetime as dt
    from pathlib import Path

    from ..store import ItemRow, LabelRow, QueueRow, Store

#: characters of a question shown in a list
SHORT = 90
#: search results by default, and at most
K, K_MAX = 10, 50


def when(t: dt.datetime | None) -> str:
    return "" if t is None else t.strftime("%Y-%m-%d %H:%M UTC")


def short(text: str, n: int = SHORT) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def label_summary(payload: Mapping[str, Any] | None) -> str:
    """One line for a label: its spans and grades, or skipped / unanswerable (a review: its
    verdicts)."""
    if payload is None:
        return "not labelled"
    if payload.get("skipped"):
        return "skipped"
    if "correct" in payload:  # an answers queue's review (views/review.py lists them too)
        words = [str(payload[k]) for k in ("correct", "supported", "abstention") if payload.get(k)]
        return ", ".join(w.replace("_", " ") for w in words) or "not judged"
    spans = list(payload.get("spans") or [])
    parts = []
    if payload.get("answerable") is False:
        parts.append("unanswerable")
    if spans:
        grades = sorted({int(s.get("grade", 1)) for s in spans}, reverse=True)
        required = sum(bool(s.get("required")) for s in spans)
        plural = "s" if len(spans) != 1 else ""
        what = f"{len(spans)} span{plural} (grade {'/'.join(map(str, grades))})"
        parts.append(what + (f", {required} required" if required else ""))
    elif payload.get("answerable") is not False:
        parts.append("no span")
    if payload.get("answer"):
        parts.append("answer")
    return ", ".join(parts)


def document(store: Store, queue: str, doc_id: str) -> dict[str, Any]:
    """``{id, title, text}`` of one document of the queue's corpus (NotFoundError naming the
    document when the corpus has none by that id)."""
    from ..workflows import labelling

    doc = labelling.document(store, queue, doc_id)
    return {"id": doc.id, "title": doc.title, "text": doc.text}


def item_of(store: Store, q: QueueRow, item_id: str | int) -> ItemRow:
    """The item ``item_id`` of queue ``q`` (NotFoundError when it is another queue's, or none)."""
    it = store.item(item_id)
    if it.queue_id != q.id:
        raise NotFoundError(f"queue {q.name!r} has no item {item_id!r}")
    return it


def position(items: Sequence[ItemRow], it: ItemRow) -> int:
    """``it``'s place among the queue's ``items``, from 1."""
    return 1 + next((i for i, x in enumerate(items) if x.id == it.id), 0)


# -- /label -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class QueueSummary:
    name: str
    kind: str
    items: int
    labelled: int
    mine: int
    double: int
    resolved: int
    parent_version: str | None
    source: str | None
    created: str


@dataclass(frozen=True)
class QueuesPage(TemplateVariables):
    queues: list[QueueSummary]
    labeller: str
    message: str | None


def queues_page(store: Store, labeller: str, message: str | None = None) -> QueuesPage:
    out = []
    for q in store.queues():
        items = store.items(q.id)
        labels = store.labels(queue_id=q.id)
        labelled = {lb.item_id for lb in labels if lb.role == "label"}
        out.append(
            QueueSummary(
                name=q.name,
                kind=q.kind,
                items=len(items),
                labelled=len(labelled),
                mine=sum(lb.role == "label" and lb.labeller == labeller for lb in labels),
                double=sum(it.double for it in items),
                resolved=sum(lb.role == "resolved" for lb in labels),
                parent_version=q.parent_version,
                source=q.source,
                created=q.created_at.strftime("%Y-%m-%d"),
            )
        )
    return QueuesPage(queues=out, labeller=labeller, message=message)


def next_item_id(store: Store, queue: str, labeller: str, after: int | None = None) -> int | None:
    """The question to open next for ``labeller`` (the workflow's rule); after ``after``, never
    ``after`` itself (the next one by position, when the workflow would send them back)."""
    from ..workflows import labelling

    labelling.ensure_labeller(store, labeller)
    it = labelling.next_item(store, queue, labeller)
    if it is None or after is None or it.id != after:
        return None if it is None else it.id
    items = store.items(queue)
    ids = [x.id for x in items]
    if after not in ids or len(ids) < 2:
        return None
    return ids[(ids.index(after) + 1) % len(ids)]


# -- /label/QUEUE/item/ID ---------------------------------------------------------------------
@dataclass(frozen=True)
class MineRow:
    item_id: int
    qid: str
    question: str
    summary: str
    revision: int
    updated: str
    url: str
    delete_url: str


@dataclass(frozen=True)
class ContextPassage:
    #: the document to open (None: the queue's corpus has none by the logged id)
    doc: str | None
    title: str | None
    text: str | None
    start: int | None
    end: int | None
    #: the id the log gave
    label: str | None


@dataclass(frozen=True)
class LabelPage(TemplateVariables):
    view: ItemView


@dataclass(frozen=True)
class ItemView:
    queue: QueueRow
    item: ItemRow
    #: the item's place in the queue, from 1
    number: int
    total: int
    labeller: str
    revision: int
    retrievers: list[str]
    context: list[ContextPassage]
    context_answer: str | None
    mine: list[MineRow]
    urls: dict[str, str]
    #: what label.js reads (through tojson)
    data: dict[str, Any]


def urls_of(queue: str, item_id: int, section: str = "/label") -> dict[str, str]:
    """The URLs of one item's page and its actions (under ``section``: the review view's are
    under ``/review``)."""
    base = f"{section}/{queue}"
    return {
        "queue": base,
        "save": f"{base}/item/{item_id}",
        "delete": f"{base}/item/{item_id}/delete",
        "search": f"{base}/search",
        "doc": f"{base}/doc/",
        "next": f"{base}?after={item_id}",
    }


def _context(
    ctx: Mapping[str, Any], has_doc: Callable[[str], bool]
) -> tuple[list[ContextPassage], str | None]:
    """The logged passages and answer shown beside a question (``golden sample``'s ``logged``
    object: ``{"retrieved": [{"id", "content", "score"}], "answer"}``, or a record's own
    ``passages``); a passage's document opens when the queue's corpus has it."""
    logged = ctx.get("logged")
    source: Mapping[str, Any] = logged if isinstance(logged, Mapping) else ctx
    passages = source.get("retrieved") or source.get("passages") or []
    out = []
    for p in passages if isinstance(passages, list) else []:
        if not isinstance(p, Mapping):
            continue
        doc = p.get("doc") or p.get("doc_id") or p.get("id")
        text = p.get("text", p.get("content"))
        start, end = p.get("start"), p.get("end")
        out.append(
            ContextPassage(
                doc=str(doc) if doc is not None and has_doc(str(doc)) else None,
                title=None if p.get("title") is None else str(p.get("title")),
                text=None if text is None else str(text),
                start=start if isinstance(start, int) else None,
                end=end if isinstance(end, int) else None,
                label=str(doc) if doc is not None else None,
            )
        )
    answer = source.get("answer")
    return out, None if answer is None else str(answer)


def mine_rows(
    store: Store,
    q: QueueRow,
    labeller: str,
    urls: Callable[[str, int], dict[str, str]] = urls_of,
) -> list[MineRow]:
    """The labeller's labels in queue ``q``, each with its ``save`` and ``delete`` URL from
    ``urls`` (the label view's; the review view passes its own)."""
    items = {it.id: it for it in store.items(q.id)}
    rows = []
    for lb in store.labels(queue_id=q.id):
        if lb.role != "label" or lb.labeller != labeller or lb.item_id not in items:
            continue
        it = items[lb.item_id]
        u = urls(q.name, it.id)
        rows.append(
            MineRow(
                item_id=it.id,
                qid=it.qid,
                question=short(it.question),
                summary=label_summary(lb.payload),
                revision=lb.revision,
                updated=when(lb.updated_at),
                url=u["save"],
                delete_url=u["delete"],
            )
        )
    return rows


def own_label(store: Store, item_id: int, labeller: str) -> LabelRow | None:
    for lb in store.labels(item_id=item_id):
        if lb.role == "label" and lb.labeller == labeller:
            return lb
    return None


def retrievers() -> list[str]:
    """The retrievers the search box offers (BM25; dense ones when their extra is installed)."""
    from ..workflows import labelling

    return labelling.available_retrievers()


def item_page(store: Store, queue: str, item_id: str | int, labeller: str) -> LabelPage:
    """The label page of one question of an evidence queue."""
    from ..workflows import labelling

    q = store.queue(queue)
    it = item_of(store, q, item_id)
    items = store.items(q.id)
    number = position(items, it)
    mine = own_label(store, it.id, labeller)
    corpus = labelling.queue_corpus(store, q)
    context, answer = _context(it.context, lambda d: d in corpus)
    urls = urls_of(q.name, it.id)
    first_doc = next((c.doc for c in context if c.doc), None)
    prefill = dict(it.prefill) if it.prefill else None
    data = {
        "queue": q.name,
        "item": {"id": it.id, "qid": it.qid, "question": it.question},
        "labeller": labeller,
        "label": None
        if mine is None
        else {"revision": mine.revision, "payload": dict(mine.payload)},
        "prefill": prefill,
        "open_doc": first_doc,
        "urls": urls,
    }
    return LabelPage(
        view=ItemView(
            queue=q,
            item=it,
            number=number,
            total=len(items),
            labeller=labeller,
            revision=0 if mine is None else mine.revision,
            retrievers=retrievers(),
            context=context,
            context_answer=answer,
            mine=mine_rows(store, q, labeller),
            urls=urls,
            data=data,
        )
    )


# -- search -----------------------------------------------------------------------------------
def search(
    store: Store, queue: str, q: str, retriever: str, k: int = K, cache_dir: Path | None = None
) -> list[dict[str, Any]]:
    """The passages the queue's search finds, as JSON-ready dicts; the index's chunking and
    BM25 files are kept in ``cache_dir`` (the lab's cache folder), so a restarted lab reads
    them instead of building them again."""
    from ..workflows import labelling

    if not q.strip():
        return []
    if retriever not in retrievers():
        raise UsageError(
            f"retriever {retriever!r} is not offered here; choose one of {', '.join(retrievers())}"
        )
    return labelling.search(
        store, queue, q, retriever=retriever, k=max(1, min(k, K_MAX)), cache_dir=cache_dir
    )


_WARMING: set[tuple[str, str]] = set()
_WARMING_LOCK = threading.Lock()


def warm_search(store: Store, queue: str, cache_dir: Path | None) -> None:
    """Build the queue's BM25 index in a background thread, once per queue and process, when
    a labeller opens a question: on a large corpus (SciFact: seconds) the first search then
    finds it ready instead of waiting for it."""
    from ..workflows import labelling

    key = (store.url, queue)
    with _WARMING_LOCK:
        if key in _WARMING:
            return
        _WARMING.add(key)

    def build() -> None:
        try:
            labelling.prepare_search(store, queue, retriever="bm25", cache_dir=cache_dir)
        except RagmeterError:  # the search itself reports it, to the labeller who asked
            with _WARMING_LOCK:
                _WARMING.discard(key)

    threading.Thread(target=build, name=f"ragmeter-index-{queue}", daemon=True).start()


# -- saving -----------------------------------------------------------------------------------
def label_json(lb: LabelRow | None) -> dict[str, Any] | None:
    if lb is None:
        return None
    return {
        "revision": lb.revision,
        "payload": dict(lb.payload),
        "labeller": lb.labeller,
        "role": lb.role,
        "updated_at": when(lb.updated_at),
    }


def expected_revision(body: Mapping[str, Any]) -> int:
    rev = body.get("expected_revision")
    if isinstance(rev, str) and rev.strip().isdigit():
        rev = int(rev.strip())
    if not isinstance(rev, int) or isinstance(rev, bool) or rev < 0:
        raise UsageError(
            f"expected_revision is the revision you edited (0 for a new label); got {rev!r}"
        )
    return rev


def refusal(exc: RagmeterError) -> tuple[int, dict[str, Any]]:
    """A refused save or delete as (HTTP status, JSON): 409 with the stored label on an edit
    conflict, 404 for what is not there, else 400 with the reason."""
    from ..store import EditConflict

    if isinstance(exc, EditConflict):
        return 409, {"error": str(exc), "stored": label_json(exc.stored)}
    if isinstance(exc, NotFoundError):
        return 404, {"error": str(exc)}
    return 400, {"error": str(exc)}


def save(
    store: Store, queue: str, item_id: str | int, labeller: str, body: Mapping[str, Any]
) -> tuple[int, dict[str, Any]]:
    """Save the labeller's label from a request body ``{payload, expected_revision}``: (HTTP
    status, JSON answer). 409 carries the stored label; 400 says what is wrong."""
    from ..workflows import labelling

    try:
        q = store.queue(queue)
        it = item_of(store, q, item_id)
        payload = body.get("payload")
        if not isinstance(payload, Mapping):
            raise UsageError("the request names no label: send {payload, expected_revision}")
        rev = expected_revision(body)
        labelling.ensure_labeller(store, labeller)
        saved = labelling.save(store, q.name, it.id, labeller, dict(payload), rev)
    except RagmeterError as exc:
        return refusal(exc)
    out = label_json(saved)
    assert out is not None
    return 200, out


def delete(
    store: Store, queue: str, item_id: str | int, labeller: str, body: Mapping[str, Any]
) -> tuple[int, dict[str, Any]]:
    from ..workflows import labelling

    try:
        q = store.queue(queue)
        it = item_of(store, q, item_id)
        rev = expected_revision(body)
        labelling.delete(store, q.name, it.id, labeller, rev)
    except RagmeterError as exc:
        return refusal(exc)
    return 200, {"deleted": True}
