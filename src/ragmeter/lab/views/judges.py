"""``/judges`` (the stored judge validations) and ``/judges/ID`` (one of them)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse

from ..._errors import NotFoundError, RagmeterError
from .._app_state import state_of
from .._data_judges import judge_context, judges_list_context
from .._render import page
from ._ids import stored_id

router = APIRouter()


@router.get("/judges")
def judges_page(request: Request) -> HTMLResponse:
    listing = judges_list_context(state_of(request).store)
    return page(
        request,
        "judges.html",
        title="Judge validations",
        j=None,
        error=None,
        validations=listing.validations,
    )


@router.get("/judges/{vid}")
def judge_page(request: Request, vid: str) -> HTMLResponse:
    store = state_of(request).store
    try:
        found = stored_id(store, vid, "judge validation")
        if found is None:
            raise NotFoundError("name a stored judge validation: /judges/ID")
        j = judge_context(store, found)
    except RagmeterError as exc:  # not there, or damaged (the error names what is wrong)
        return page(
            request,
            "judges.html",
            404 if isinstance(exc, NotFoundError) else 400,
            title="Judge validation",
            j=None,
            validations=[],
            error=str(exc),
        )
    return page(
        request, "judges.html", title=f"judge validation {found}", j=j, validations=[], error=None
    )
