"""``/compare?base=ID&cand=ID&metric=M`` (computed now on the stored evaluations) and
``/comparisons/ID`` (a stored ``ragmeter compare``)."""

from __future__ import annotations

from dataclasses import replace

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse

from ..._errors import NotFoundError, RagmeterError
from .._app_state import state_of
from .._data_comparison import (
    NoSharedMetric,
    choices,
    default_pair,
    live_comparison_context,
    stored_comparison_context,
)
from .._render import page
from ._ids import stored_id

router = APIRouter()


@router.get("/compare")
def compare_page(
    request: Request,
    base: str | None = None,
    cand: str | None = None,
    metric: str | None = None,
    level: str | None = None,
) -> HTMLResponse:
    store = state_of(request).store
    form = replace(choices(store), base=base, cand=cand, metric=metric or "")
    try:
        base_id, cand_id = stored_id(store, base), stored_id(store, cand)
        if base_id is None and cand_id is None:  # first open: the baseline against the newest
            base_id, cand_id = default_pair(form) or (None, None)
        form = replace(form, base=base_id, cand=cand_id)  # (the form's choices are ids)
        if base_id is None or cand_id is None:
            return page(
                request, "comparison.html", title="Comparison", form=form, c=None, error=None
            )
        c = live_comparison_context(store, base_id, cand_id, metric or None, level or None)
    except NoSharedMetric as exc:  # runs that share no k or budget: ragmeter run's note
        pair = exc.choice
        return page(request, "comparison.html", title="Comparison", form=form, c=None,
                    error=None, pair=pair)  # fmt: skip
    except RagmeterError as exc:
        code = 404 if isinstance(exc, NotFoundError) else 400
        return page(
            request, "comparison.html", code, title="Comparison", form=form, c=None, error=str(exc)
        )
    form = replace(form, metric=c.metric)
    from .._data_repeats import repeats_note

    return page(
        request,
        "comparison.html",
        title=f"{c.candidate} vs {c.baseline}",
        form=form,
        c=c,
        error=None,
        repeats=repeats_note(store, base_id, cand_id),  # made with repeat = N: the noise
    )


@router.get("/comparisons/{comparison_id}")
def stored_comparison_page(request: Request, comparison_id: str) -> HTMLResponse:
    store = state_of(request).store
    try:
        cid = stored_id(store, comparison_id, "comparison")
        if cid is None:
            raise NotFoundError("name a stored comparison: /comparisons/ID")
        c = stored_comparison_context(store, cid)
    except RagmeterError as exc:  # not there, or damaged (the error names what is wrong)
        code = 404 if isinstance(exc, NotFoundError) else 400
        return page(
            request, "comparison.html", code, title="Comparison", form=None, c=None, error=str(exc)
        )
    return page(request, "comparison.html", title=f"comparison {cid}", form=None, c=c, error=None)
