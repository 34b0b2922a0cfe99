"""``/judges`` (the stored judge validations) and ``/judges/ID`` (one of them)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse

from ..._errors import NotFoundError
from .._app_state import state_of
from .._data_judges import judge_context, judges_list_context
from .._render import page

router = APIRouter()


@router.get("/judges")
def judges_page(request: Request) -> HTMLResponse:
    ctx = judges_list_context(state_of(request).store)
    return page(request, "judges.html", title="Judge validations", j=None, error=None, **ctx)


@router.get("/judges/{vid}")
def judge_page(request: Request, vid: int) -> HTMLResponse:
    try:
        j = judge_context(state_of(request).store, vid)
    except NotFoundError as exc:
        return page(
            request,
            "judges.html",
            404,
            title="Judge validation",
            j=None,
            validations=[],
            error=str(exc),
        )
    return page(
        request, "judges.html", title=f"judge validation {vid}", j=j, validations=[], error=None
    )
