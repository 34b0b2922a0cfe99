"""``/repeats?run=ID``: a generating run made with ``repeat = N``: each repeat's rate and
difference against the baseline, the flaky questions (their verdict changes across repeats) with
each repeat's verdict beside the baseline's, and how much of the headline difference that noise
can explain (:mod:`.._data_repeats`)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse

from ..._errors import NotFoundError, RagmeterError
from .._app_state import state_of
from .._data_repeats import repeats_context
from .._render import page
from ._ids import stored_id

router = APIRouter()


@router.get("/repeats")
def repeats_page(request: Request, run: str | None = None) -> HTMLResponse:
    store = state_of(request).store
    try:
        run_id = stored_id(store, run)
        if run_id is None:
            raise NotFoundError("name a run made with repeat = N: /repeats?run=ID")
        v = repeats_context(store, run_id)
    except RagmeterError as exc:
        code = 404 if isinstance(exc, NotFoundError) else 400
        return page(request, "repeats.html", code, title="Repeats", v=None, error=str(exc))
    return page(
        request, "repeats.html", title=f"Repeats of run {v.run_id}: {v.run_name}", v=v, error=None
    )
