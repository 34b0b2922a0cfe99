"""``/trace?run=ID&q=QID`` (``&vs=ID`` beside another run's): one question's answer as it was
made, the prompt as sent, the context, the citations, the usage and the judge's verdicts."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse

from ..._errors import NotFoundError, RagmeterError
from .._app_state import state_of
from .._data_trace import trace_context
from .._render import page

router = APIRouter()


@router.get("/trace")
def trace_page(
    request: Request,
    q: str = "",
    run: int | None = None,
    answers: int | None = None,
    vs: int | None = None,
    vs_answers: int | None = None,
) -> HTMLResponse:
    state = state_of(request)
    if not q or (run is None and answers is None):
        return page(
            request,
            "trace.html",
            400,
            title="Trace",
            t=None,
            error="name a run and a question: /trace?run=ID&q=QID (&vs=ID beside another run)",
        )
    try:
        t = trace_context(state.store, q, run=run, answers=answers, vs=vs, vs_answers=vs_answers)
    except RagmeterError as exc:
        code = 404 if isinstance(exc, NotFoundError) else 400
        return page(request, "trace.html", code, title="Trace", t=None, error=str(exc))
    return page(request, "trace.html", title=f"Trace {q}", t=t, error=None)
