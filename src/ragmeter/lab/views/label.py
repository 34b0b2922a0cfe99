"""The label views: the golden-set workbench's browser side (docs/labelling.md).

``GET /label`` lists the queues; ``GET /label/Q`` opens the next question for the current
labeller; ``GET /label/Q/item/ID`` is the label page; ``GET /label/Q/search`` and
``GET /label/Q/doc/DOC`` feed it (JSON); ``POST /label/Q/item/ID`` saves a label (JSON
``{payload, expected_revision}``, CSRF-checked by the security middleware; 409 with the stored
label on an edit conflict) and ``POST .../delete`` deletes it; ``GET /label/Q/agreement`` shows
the two labellers' agreement, ``GET /label/Q/disagreement/ID`` one question's two labels over
the document, and ``POST /label/Q/item/ID/resolve`` records the adjudication. An answers
queue's pages are the answer review's (``/review/Q``, views/review.py): its ``/label`` pages
redirect there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from ..._errors import NotFoundError, RagmeterError
from .._app_state import state_of
from .._data_label import (
    K,
    delete,
    document,
    item_page,
    next_item_id,
    queues_page,
    save,
    search,
    warm_search,
)
from .._data_label_agreement import agreement_page, disagreement_page, resolve
from .._labeller import current_labeller
from .._render import page

router = APIRouter()


def _refused(request: Request, exc: RagmeterError, title: str) -> HTMLResponse:
    code = 404 if isinstance(exc, NotFoundError) else 400
    return page(request, "bad_request.html", code, title=title, error=str(exc))


def _cache_dir(request: Request) -> Path:
    """The lab's cache folder, beside the experiments' (``ROOT/.ragmeter-cache``)."""
    return state_of(request).root / ".ragmeter-cache"


def _accepts_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "")


def _wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("content-type", "") or (
        "application/json" in request.headers.get("accept", "")
    )


async def _body(request: Request) -> dict[str, Any]:
    """The request's JSON object, or its form fields."""
    if "application/json" in request.headers.get("content-type", ""):
        try:
            data = json.loads(await request.body())
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}
    form = await request.form()
    return {k: str(v) for k, v in form.items()}


@router.get("/label")
def queues(request: Request) -> HTMLResponse:
    store = state_of(request).store
    return page(
        request, "label_queues.html", title="Label", **queues_page(store, current_labeller(request))
    )


def _answers(request: Request, queue: str) -> bool:
    """An answers queue: its pages are the answer review's (``/review``)."""
    try:
        return state_of(request).store.queue(queue).kind == "answers"
    except RagmeterError:
        return False  # the view says what is wrong with the name


@router.get("/label/{queue}")
def next_question(request: Request, queue: str, after: str | None = None) -> Response:
    store = state_of(request).store
    labeller = current_labeller(request)
    if _answers(request, queue):
        return RedirectResponse(f"/review/{queue}", status_code=303)
    try:
        found = next_item_id(store, queue, labeller, store.row_id(after) if after else None)
    except RagmeterError as exc:
        return _refused(request, exc, "Label")
    if found is None:
        return page(
            request,
            "label_queues.html",
            title="Label",
            **queues_page(
                store,
                labeller,
                message=f"Nothing left to label in {queue} for {labeller}: every question has "
                "its labels.",
            ),
        )
    return RedirectResponse(f"/label/{queue}/item/{found}", status_code=303)


@router.get("/label/{queue}/item/{item_id}")
def item(request: Request, queue: str, item_id: str) -> Response:
    store = state_of(request).store
    labeller = current_labeller(request)
    if _answers(request, queue):
        return RedirectResponse(f"/review/{queue}/item/{item_id}", status_code=303)
    try:
        model = item_page(store, queue, item_id, labeller)
    except RagmeterError as exc:
        return _refused(request, exc, "Label")
    warm_search(store, queue, _cache_dir(request))  # ready by the labeller's first search
    return page(request, "label.html", title=f"Label {model.view.item.qid}", **model)


@router.post("/label/{queue}/item/{item_id}")
async def save_item(request: Request, queue: str, item_id: str) -> Response:
    store = state_of(request).store
    body = await _body(request)
    # the store call runs in the thread pool, as the sync routes do: a save never stalls the loop
    status, answer = await run_in_threadpool(
        save, store, queue, item_id, current_labeller(request), body
    )
    return JSONResponse(answer, status_code=status)


@router.post("/label/{queue}/item/{item_id}/delete")
async def delete_item(request: Request, queue: str, item_id: str) -> Response:
    store = state_of(request).store
    json_request = _wants_json(request)
    body = await _body(request)
    status, answer = await run_in_threadpool(
        delete, store, queue, item_id, current_labeller(request), body
    )
    if json_request:
        return JSONResponse(answer, status_code=status)
    if status == 200:  # the list's delete button: back to where it was
        return RedirectResponse(f"/label/{queue}/item/{item_id}", status_code=303)
    return page(request, "bad_request.html", status, title="Not deleted", error=answer["error"])


@router.get("/label/{queue}/search")
def search_queue(
    request: Request, queue: str, q: str = "", retriever: str = "bm25", k: int = K
) -> Response:
    """The passages found: JSON for label.js (``Accept: application/json``), else a page."""
    store = state_of(request).store
    status, results, error = 200, [], None
    try:
        results = search(store, queue, q, retriever, k, _cache_dir(request))
    except RagmeterError as exc:
        status, error = (404 if isinstance(exc, NotFoundError) else 400), str(exc)
    if _accepts_json(request):
        if error is not None:
            return JSONResponse({"error": error}, status_code=status)
        return JSONResponse({"query": q, "retriever": retriever, "results": results})
    return page(
        request,
        "label_search.html",
        status,
        title=f"Search · {queue}",
        queue=queue,
        q=q,
        results=results,
        error=error,
    )


@router.get("/label/{queue}/doc/{doc_id:path}")
def doc(
    request: Request, queue: str, doc_id: str, start: int | None = None, end: int | None = None
) -> Response:
    """One document: JSON for label.js, else a page (``start``/``end`` mark a passage)."""
    store = state_of(request).store
    try:
        found = document(store, queue, doc_id)
    except RagmeterError as exc:
        status = 404 if isinstance(exc, NotFoundError) else 400
        if _accepts_json(request):
            return JSONResponse({"error": str(exc)}, status_code=status)
        return page(
            request,
            "label_doc.html",
            status,
            title="Document",
            queue=queue,
            doc_id=doc_id,
            error=str(exc),
        )
    if _accepts_json(request):
        return JSONResponse(found)
    text = found["text"]
    lo = start if start is not None and 0 <= start <= len(text) else len(text)
    hi = end if end is not None and lo <= end <= len(text) else lo
    return page(
        request,
        "label_doc.html",
        title=found["title"] or doc_id,
        queue=queue,
        doc_id=doc_id,
        error=None,
        before=text[:lo],
        passage=text[lo:hi],
        after=text[hi:],
    )


@router.get("/label/{queue}/agreement")
def agreement(request: Request, queue: str) -> Response:
    store = state_of(request).store
    if _answers(request, queue):  # the review page shows its kappa panel
        return RedirectResponse(f"/review/{queue}", status_code=303)
    try:
        model = agreement_page(store, queue)
    except RagmeterError as exc:
        return _refused(request, exc, "Agreement")
    return page(request, "label_agreement.html", title=f"Agreement · {queue}", **model)


@router.get("/label/{queue}/disagreement/{item_id}")
def disagreement(request: Request, queue: str, item_id: str) -> HTMLResponse:
    store = state_of(request).store
    try:
        model = disagreement_page(store, queue, item_id)
    except RagmeterError as exc:
        return _refused(request, exc, "Disagreement")
    return page(
        request, "label_disagreement.html", title=f"Disagreement · {model.item.qid}", **model
    )


@router.post("/label/{queue}/item/{item_id}/resolve")
async def resolve_item(request: Request, queue: str, item_id: str) -> Response:
    store = state_of(request).store
    body = await _body(request)
    status, error = await run_in_threadpool(
        resolve,
        store,
        queue,
        item_id,
        current_labeller(request),
        str(body.get("take", "")),
        str(body.get("expected_revision", "0")),
    )
    if status == 200:
        return RedirectResponse(f"/label/{queue}/disagreement/{item_id}", status_code=303)
    try:
        model = disagreement_page(store, queue, item_id, error=error)
    except RagmeterError as exc:
        return _refused(request, exc, "Disagreement")
    return page(
        request,
        "label_disagreement.html",
        status,
        title=f"Disagreement · {model.item.qid}",
        **model,
    )
