"""``/compare?base=ID&cand=ID&metric=M`` (computed now on the stored evaluations) and
``/comparisons/ID`` (a stored ``ragmeter compare``)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse

from ..._errors import NotFoundError, RagmeterError
from .._app_state import state_of
from .._data_comparison import choices, live_comparison_context, stored_comparison_context
from .._render import page

router = APIRouter()


@router.get("/compare")
def compare_page(
    request: Request,
    base: int | None = None,
    cand: int | None = None,
    metric: str | None = None,
    level: str | None = None,
) -> HTMLResponse:
    store = state_of(request).store
    form = {"base": base, "cand": cand, "metric": metric or "", **choices(store)}
    if base is None or cand is None:
        return page(request, "comparison.html", title="Comparison", form=form, c=None, error=None)
    try:
        c = live_comparison_context(store, base, cand, metric or None, level or None)
    except RagmeterError as exc:
        code = 404 if isinstance(exc, NotFoundError) else 400
        return page(
            request, "comparison.html", code, title="Comparison", form=form, c=None, error=str(exc)
        )
    form["metric"] = c["metric"]
    return page(
        request,
        "comparison.html",
        title=f"{c['candidate']} vs {c['baseline']}",
        form=form,
        c=c,
        error=None,
    )


@router.get("/comparisons/{comparison_id}")
def stored_comparison_page(request: Request, comparison_id: int) -> HTMLResponse:
    store = state_of(request).store
    try:
        c = stored_comparison_context(store, comparison_id)
    except NotFoundError as exc:
        return page(
            request, "comparison.html", 404, title="Comparison", form=None, c=None, error=str(exc)
        )
    return page(
        request, "comparison.html", title=f"comparison {comparison_id}", form=None, c=c, error=None
    )
