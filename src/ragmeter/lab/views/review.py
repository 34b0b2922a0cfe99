"""The answer review views (docs/labelling.md, "Reviewing answers").

``GET /review`` lists the answers queues; ``GET /review/Q`` opens the current labeller's next
answer (or, when none is left, the queue's agreement panel); ``GET /review/Q/item/ID`` is the
review page; ``POST /review/Q/item/ID`` saves a review (JSON ``{payload,
expected_revision}``, CSRF-checked by the security middleware; 409 with the stored review on an
edit conflict) and ``POST .../delete`` deletes it.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from ..._errors import NotFoundError, RagmeterError
from .._app_state import state_of
from .._data_review import delete, done_page, next_item_id, queues_page, review_page, save
from .._labeller import current_labeller
from .._render import page

router = APIRouter()


def _refused(request: Request, exc: RagmeterError) -> HTMLResponse:
    code = 404 if isinstance(exc, NotFoundError) else 400
    return page(request, "bad_request.html", code, title="Review", error=str(exc))


async def _body(request: Request) -> dict[str, Any]:
    try:
        data = json.loads(await request.body())
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


@router.get("/review")
def queues(request: Request) -> HTMLResponse:
    store = state_of(request).store
    return page(
        request,
        "review_queues.html",
        title="Review",
        **queues_page(store, current_labeller(request)),
    )


@router.get("/review/{queue}")
def next_answer(request: Request, queue: str, after: str | None = None) -> Response:
    store = state_of(request).store
    labeller = current_labeller(request)
    try:
        found = next_item_id(store, queue, labeller, store.row_id(after) if after else None)
        if found is None:
            model = done_page(store, queue, labeller)
    except RagmeterError as exc:
        return _refused(request, exc)
    if found is None:
        return page(request, "review_done.html", title=f"Review · {queue}", **model)
    return RedirectResponse(f"/review/{queue}/item/{found}", status_code=303)


@router.get("/review/{queue}/item/{item_id}")
def item(request: Request, queue: str, item_id: str) -> HTMLResponse:
    store = state_of(request).store
    try:
        model = review_page(store, queue, item_id, current_labeller(request))
    except RagmeterError as exc:
        return _refused(request, exc)
    return page(request, "review.html", title=f"Review {model.view.item.qid}", **model)


@router.post("/review/{queue}/item/{item_id}")
async def save_item(request: Request, queue: str, item_id: str) -> Response:
    store = state_of(request).store
    status, answer = save(store, queue, item_id, current_labeller(request), await _body(request))
    return JSONResponse(answer, status_code=status)


@router.post("/review/{queue}/item/{item_id}/delete")
async def delete_item(request: Request, queue: str, item_id: str) -> Response:
    store = state_of(request).store
    status, answer = delete(store, queue, item_id, current_labeller(request), await _body(request))
    return JSONResponse(answer, status_code=status)
