"""``/slider``: one labelled passage moved from rank 1 to 10; R@k, RR@k and nDCG@k follow."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse

from ..._errors import RagmeterError
from .._data_slider import slider_context
from .._render import page

router = APIRouter()


@router.get("/slider")
def slider_page(request: Request, k: int = 5) -> HTMLResponse:
    try:
        ctx = slider_context(k=k)
    except RagmeterError as exc:
        return page(request, "slider.html", 400, title="The slider", error=str(exc), s=None)
    return page(request, "slider.html", title="The slider", error=None, s=ctx)
