"""``/golden/diff?a=V1&b=V2``: what changed between two stored golden-set versions (the lab
page of ``ragmeter golden diff``). Only stored versions: the page never reads a file."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse

from .._app_state import state_of
from .._data_golden_diff import golden_diff_context
from .._render import page

router = APIRouter()


@router.get("/golden/diff")
def golden_diff_page(request: Request, a: str | None = None, b: str | None = None) -> HTMLResponse:
    d = golden_diff_context(state_of(request).store, a, b)
    title = f"golden diff {d.a} → {d.b}" if d.diff is not None else "Golden-set diff"
    return page(request, "golden_diff.html", d.status, title=title, d=d)
