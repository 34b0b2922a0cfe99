"""``/diagnosis?answers=ID[&run=ID&large_k=N]``: the retrieval-by-answer table, the "where to
look first" path and the one next experiment, from a stored answer set and its run."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse

from ..._errors import NotFoundError, RagmeterError
from .._app_state import state_of
from .._data_diagnosis import diagnosis_context, diagnosis_list_context
from .._render import page
from ._ids import stored_id

router = APIRouter()


@router.get("/diagnosis")
def diagnosis_page(
    request: Request,
    answers: str | None = None,
    run: str | None = None,
    large_k: int | None = None,
) -> HTMLResponse:
    state = state_of(request)
    sets = diagnosis_list_context(state.store).answer_sets
    try:
        answers_id = stored_id(state.store, answers, "answer set")
        run_id = stored_id(state.store, run)
        if answers_id is None:
            return page(
                request, "diagnosis.html", title="Diagnosis", d=None, error=None, answer_sets=sets
            )
        d = diagnosis_context(
            state.store, answers_id, run_id=run_id, large_k=large_k, cache=state.contexts
        )
    except RagmeterError as exc:
        code = 404 if isinstance(exc, NotFoundError) else 400
        return page(
            request,
            "diagnosis.html",
            code,
            title="Diagnosis",
            d=None,
            error=str(exc),
            answer_sets=sets,
        )
    return page(
        request,
        "diagnosis.html",
        title=f"Diagnosis: {d.answers.name}",
        d=d,
        error=None,
        answer_sets=sets,
    )
