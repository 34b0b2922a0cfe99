"""``/question?golden=VERSION&qid=ID``: one question across every stored run and answer."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse

from ..._errors import NotFoundError, RagmeterError
from .._app_state import state_of
from .._data_question import question_context
from .._render import page

router = APIRouter()


@router.get("/question")
def question_page(request: Request, golden: str = "", qid: str = "") -> HTMLResponse:
    state = state_of(request)
    if not golden or not qid:
        return page(
            request,
            "question.html",
            400,
            title="Question",
            q=None,
            error="name a golden-set version and a question: /question?golden=g-...&qid=...",
        )
    try:
        q = question_context(state.store, golden, qid, cache=state.contexts)
    except RagmeterError as exc:
        code = 404 if isinstance(exc, NotFoundError) else 400
        return page(request, "question.html", code, title="Question", q=None, error=str(exc))
    return page(request, "question.html", title=f"Question {qid}", q=q, error=None)
