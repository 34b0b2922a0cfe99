"""``/lab`` and ``/lab/question``: the lab's controls, metric cards, per-question table and each
question's ranked list with its evidence marked (the model is built by :mod:`.._lab_page`)."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Query, Request
from starlette.responses import HTMLResponse, Response

from ..._errors import NotFoundError, RagmeterError, UsageError
from .._app_state import state_of
from .._lab_csv import csv_text
from .._lab_page import cutoff_of, empty_page, lab_context, lab_url, question_model
from .._render import fragment, page

router = APIRouter()


# -- routes ----------------------------------------------------------------------------------
@router.get("/lab")
def lab_page(
    request: Request,
    experiment: str | None = None,
    method: str | None = None,
    chunking: str | None = None,
    run: str | None = None,
    cut: str | None = None,
    k: str | None = None,
    budget: str | None = None,
    baseline: str | None = None,
    metric: str | None = None,
    sort: str | None = None,
    show: str | None = None,
    page_no: str | None = Query(None, alias="page"),
    slice: str | None = None,
    q: str | None = None,
) -> HTMLResponse:
    try:
        ctx = _context(request, dict(locals()), page_no=_whole("page", page_no) or 1)
    except RagmeterError as exc:
        code = 404 if isinstance(exc, NotFoundError) else 400
        return _swappable(
            page(request, "lab.html", code, title="Lab", error=str(exc), **empty_page())
        )
    title = "Lab"
    if ctx.view is not None and ctx.run is not None and ctx.cutoff is not None:
        title = f"Lab · {ctx.run.name} at {ctx.cutoff.label}"
    return page(request, "lab.html", title=title, error=None, **ctx)


@router.get("/lab/questions.csv", response_model=None)
def lab_questions_csv(
    request: Request,
    experiment: str | None = None,
    method: str | None = None,
    chunking: str | None = None,
    run: str | None = None,
    cut: str | None = None,
    k: str | None = None,
    budget: str | None = None,
    baseline: str | None = None,
    metric: str | None = None,
    sort: str | None = None,
    show: str | None = None,
    slice: str | None = None,
    q: str | None = None,
) -> Response:
    """The per-question table as CSV: every row ``/lab`` with the same parameters keeps (all
    its pages), in its order, with its columns."""
    try:
        ctx = _context(request, dict(locals()), every=True)
    except RagmeterError as exc:  # a page saying why, as /lab says it (never a bare text)
        code = 404 if isinstance(exc, NotFoundError) else 400
        return page(request, "lab.html", code, title="Lab", error=str(exc), **empty_page())
    v = ctx.view
    if v is None or ctx.cutoff is None:
        why = "no finished run matches these choices: nothing to download"
        return page(request, "lab.html", 404, title="Lab", error=why, **empty_page())
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", f"run-{v.run.id}-{ctx.cutoff.label}").strip("-")
    return Response(
        csv_text(v.csv_head, (r.csv for r in v.rows)),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}.csv"'},
    )


def _context(request: Request, p: dict[str, Any], **more: Any) -> Any:
    """:func:`lab_context` on a route's URL parameters ``p`` (empty text: not given)."""
    state = state_of(request)
    return lab_context(
        state.store,
        state.contexts,
        experiment=p["experiment"] or None,
        method=p["method"] or None,
        chunking=p["chunking"] or None,
        run=_whole("run", p["run"]),
        cut=p["cut"] or None,
        k=_whole("k", p["k"]),
        budget=_whole("budget", p["budget"]),
        baseline=p["baseline"] or None,
        metric=p["metric"],
        sort=p["sort"],
        show=p["show"],
        slice=p["slice"] or None,
        search=p["q"] or None,
        **more,
    )


def _whole(name: str, text: str | None) -> int | None:
    """A whole-number URL parameter (empty: not given); UsageError naming it otherwise."""
    if text is None or not text.strip():
        return None
    try:
        return int(text.strip())
    except ValueError:
        raise UsageError(f"{name} must be a whole number, got {text!r}") from None


@router.get("/lab/question")
def lab_question(
    request: Request,
    run: str,
    qid: str,
    k: str | None = None,
    budget: str | None = None,
    baseline: str | None = None,
    all: str | None = None,
) -> HTMLResponse:
    state = state_of(request)
    htmx = request.headers.get("hx-request") == "true"
    try:
        run_id = _whole("run", run)
        base_id = _whole("baseline", baseline) if baseline != "none" else None
        rec = state.store.run(int(run_id or 0))
        cutoff = cutoff_of(None, _whole("k", k), _whole("budget", budget), rec)
        model = question_model(
            state.store, state.contexts, rec.id, qid, cutoff, base_id, full=bool(all)
        )
    except RagmeterError as exc:
        code = 404 if isinstance(exc, NotFoundError) else 400
        if htmx:
            return _swappable(
                fragment(request, "_lab_error.html", status_code=code, error=str(exc))
            )
        return page(request, "_lab_question_page.html", code, title="Lab", error=str(exc), q=None)
    if htmx:
        return fragment(request, "_lab_question.html", q=model)
    back = {"run": rec.id, **cutoff.query, "baseline": base_id or "none"}
    return page(
        request,
        "_lab_question_page.html",
        title=f"{qid} · run {rec.id}",
        error=None,
        q=model,
        back=lab_url(back),
    )


def _swappable(response: HTMLResponse) -> HTMLResponse:
    """Mark a 4xx answer for lab.js, which lets htmx swap it in (the message replaces the
    content instead of nothing happening)."""
    response.headers["X-Ragmeter-Message"] = "1"
    return response
