"""``/``: every experiment and run, filterable, with the selection ledger per golden version."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse

from .._app_state import state_of
from .._data_experiments import experiments_context
from .._render import page

router = APIRouter()


@router.get("/")
def experiments_page(
    request: Request,
    experiment: str | None = None,
    golden: str | None = None,
    status: str | None = None,
) -> HTMLResponse:
    ctx = experiments_context(
        state_of(request).store,
        experiment=experiment or None,
        golden=golden or None,
        status=status or None,
    )
    return page(request, "experiments.html", title="Experiments", **ctx)
