"""``/sweeps?runs=1,2&metric=R[&kind=k|budget&cutoffs=1..20]``: metric vs k or budget."""

from __future__ import annotations

from dataclasses import replace

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse

from ..._errors import NotFoundError, RagmeterError
from .._app_state import state_of
from .._data_sweeps import parse_ids, sweep_choices, sweeps_context
from .._render import page

router = APIRouter()


@router.get("/sweeps")
def sweeps_page(
    request: Request,
    runs: str | None = None,
    metric: str = "R",
    kind: str | None = None,
    cutoffs: str | None = None,
) -> HTMLResponse:
    state = state_of(request)
    form = replace(
        sweep_choices(state.store),
        runs=runs or "",
        metric=metric,
        kind=kind or "",
        cutoffs=cutoffs or "",
    )
    try:
        ids = parse_ids(runs)
        if not ids:
            return page(request, "sweeps.html", title="Sweeps", form=form, s=None, error=None)
        s = sweeps_context(
            state.store,
            ids,
            metric=metric,
            kind=kind or None,
            cutoffs=cutoffs or None,
            cache=state.contexts,
        )
    except RagmeterError as exc:
        code = 404 if isinstance(exc, NotFoundError) else 400
        return page(request, "sweeps.html", code, title="Sweeps", form=form, s=None, error=str(exc))
    form = replace(form, selected=ids)
    return page(request, "sweeps.html", title=f"Sweep: {s.label}", form=form, s=s, error=None)
