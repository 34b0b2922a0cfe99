"""``create_app``: the lab as a FastAPI application over one experiment store."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .._extras import require

if TYPE_CHECKING:
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException as StarletteHTTPException
    from starlette.responses import Response

    from ..store import Store


def create_app(
    store_url: str | None = None,
    *,
    host: str = "127.0.0.1",
    store: Store | None = None,
    root: str | Path | None = None,
    labeller: str | None = None,
    allowed_hosts: Sequence[str] = (),
) -> FastAPI:
    """The lab over the store at ``store_url`` (default: as every command, see docs/store.md).

    ``host`` is the address the server binds: requests must name it (or a loopback name) in
    their Host header. ``root`` is the lab's folder (default: the current one): the experiment
    and chunk files stored runs name are opened, and re-run, only inside it (see
    :mod:`._paths`). ``labeller`` names who labels on loopback (default: the operating
    system user; see :mod:`._labeller`).

    ``allowed_hosts`` are more Host names to answer (a reverse proxy's, ``--allowed-host``).
    Served beyond loopback (``host`` or one of those names not a loopback one) every request
    needs a labeller's token, and the app is refused (UsageError) while the store has no
    labeller with one (see :mod:`._auth`).
    """
    require("fastapi", "the lab (ragmeter lab)")
    from fastapi import FastAPI
    from fastapi.exceptions import RequestValidationError
    from fastapi.staticfiles import StaticFiles
    from starlette.exceptions import HTTPException as StarletteHTTPException
    from starlette.middleware.trustedhost import TrustedHostMiddleware

    from ..store import Store
    from ._app_state import LabState
    from ._auth import AuthMiddleware, Gate, beyond_loopback, refuse_without_tokens
    from ._auth import router as auth_router
    from ._commands import CommandFolder
    from ._labeller import checked_name
    from ._notices import SkippedRows
    from ._paths import LabCache
    from ._render import STATIC
    from ._security import SecurityMiddleware
    from ._security import allowed_hosts as host_list
    from .views import routers

    contexts = LabCache(root)  # a --root that is no folder fails before the store is opened
    app = FastAPI(title="ragmeter lab", docs_url=None, redoc_url=None, openapi_url=None)
    # a query parameter of the wrong type (/slider?k=abc) is the lab's 400 page, not JSON
    # (starlette types every handler as taking Exception; this one gets only its own class)
    app.add_exception_handler(RequestValidationError, bad_parameters)  # type: ignore[arg-type]
    # an unknown path is the lab's 404 page for a browser, JSON only when JSON is asked for
    app.add_exception_handler(StarletteHTTPException, http_error)  # type: ignore[arg-type]
    app.state.lab = LabState(
        store=store if store is not None else Store.open(store_url), contexts=contexts
    )
    app.state.labeller = None if labeller is None else checked_name(labeller)
    gate = Gate(required=beyond_loopback(host, allowed_hosts))
    if gate.required:
        try:
            refuse_without_tokens(app.state.lab.store, host, allowed_hosts)
        except BaseException:
            if store is None:  # opened here: nothing of it left open behind the refusal
                app.state.lab.store.close()
            raise
    app.state.auth = gate
    app.include_router(auth_router)
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    for router in routers():
        app.include_router(router)
    app.add_middleware(SkippedRows)  # innermost: one list of skipped rows per request
    # the command lines a page prints run from the lab's folder (paths relative to it)
    app.add_middleware(CommandFolder, root=contexts.root)
    app.add_middleware(AuthMiddleware, gate=gate)  # the labeller, inside the CSRF check
    # added last = outermost: the host check runs before anything else
    app.add_middleware(SecurityMiddleware)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=host_list(host, allowed_hosts))
    return app


async def bad_parameters(request: Request, exc: RequestValidationError) -> Response:
    """The lab's 400 page for a request whose parameters do not fit its route: one line per
    parameter, in words (never FastAPI's 422 JSON)."""
    from ._paths import shown
    from ._render import fragment, page

    problems = []
    for e in exc.errors():
        loc = [str(x) for x in e.get("loc", ()) if x not in ("query", "path", "body")]
        name = ".".join(loc) or "the request"
        given = e.get("input")
        if e.get("type") == "missing":
            problems.append(f"{name} is required")
        elif e.get("type", "").startswith("int"):
            problems.append(f"{name} must be a whole number, got {shown(repr(given))}")
        else:
            problems.append(f"{name}: {e.get('msg', 'not valid')} (got {shown(repr(given))})")
    error = "; ".join(problems)
    if request.headers.get("hx-request") == "true":  # htmx swaps a part of a page: one line
        response = fragment(request, "_lab_error.html", status_code=400, error=error)
    else:
        response = page(request, "bad_request.html", 400, title="Bad request", error=error)
    response.headers["X-Ragmeter-Message"] = "1"  # lab.js lets htmx swap a 4xx answer in
    return response


def wants_json(request: Request) -> bool:
    """Whether the client asked for JSON (``Accept: application/json``) rather than a page."""
    accept = request.headers.get("accept", "").lower()
    return "application/json" in accept and "text/html" not in accept


async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
    """An HTTP error (an unknown path above all) as the lab's page, saying what was asked for
    and where to go; JSON (FastAPI's ``{"detail": ...}``) only for ``Accept: application/json``."""
    from starlette.responses import JSONResponse

    from ._paths import shown
    from ._render import page

    headers = getattr(exc, "headers", None)
    if wants_json(request):
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=headers)
    if exc.status_code == 404:
        title = "Not found"
        error = f"the lab has no page at {shown(request.url.path)}"
    else:
        title = f"Error {exc.status_code}"
        error = f"{request.method} {shown(request.url.path)}: {exc.detail}"
    response = page(request, "not_found.html", exc.status_code, title=title, error=error)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response
