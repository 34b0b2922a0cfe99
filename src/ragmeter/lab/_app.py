"""``create_app``: the lab as a FastAPI application over one experiment store."""

from __future__ import annotations

from typing import Any

from .._extras import require


def create_app(store_url: str | None = None, *, host: str = "127.0.0.1", store: Any = None) -> Any:
    """The lab over the store at ``store_url`` (default: as every command, see docs/store.md).

    ``host`` is the address the server binds: requests must name it (or a loopback name) in
    their Host header.
    """
    require("fastapi", "the lab (ragmeter lab)")
    from fastapi import FastAPI
    from fastapi.staticfiles import StaticFiles
    from starlette.middleware.trustedhost import TrustedHostMiddleware

    from ..store import Store
    from ._app_state import LabState
    from ._render import STATIC
    from ._security import SecurityMiddleware, allowed_hosts
    from .views import routers

    app = FastAPI(title="ragmeter lab", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.lab = LabState(store=store if store is not None else Store.open(store_url))
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    for router in routers():
        app.include_router(router)
    # added last = outermost: the host check runs before anything else
    app.add_middleware(SecurityMiddleware)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(host))
    return app
