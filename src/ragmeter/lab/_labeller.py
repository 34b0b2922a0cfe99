"""Who is labelling: the single seam between the lab's label views and authentication.

Served beyond loopback, the auth middleware names the labeller of each request (the owner of
its token) in ``request.state.labeller``. On loopback one person needs no token: that is the
lab's local labeller, named by ``ragmeter lab --labeller NAME`` (default: the operating system
user's name), created in the store (with no token) the first time they open a queue or save.
"""

from __future__ import annotations

import getpass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from starlette.requests import Request

#: the local labeller's name when the operating system names no user
FALLBACK = "local"


def default_labeller() -> str:
    """The operating system user's name (``local`` when there is none, or it is not usable)."""
    try:
        name = getpass.getuser().strip()
    except Exception:  # no user name at all (a container without one): keep labelling
        return FALLBACK
    return name if name and name.isprintable() and len(name) <= 100 else FALLBACK


def checked_name(name: str) -> str:
    """``name`` as a labeller's name: the store's rule (:meth:`LabellerRow.check_name`), its
    UsageError naming the option."""
    from .._errors import UsageError
    from ..store import LabellerRow

    try:
        return LabellerRow.check_name(name)
    except UsageError as exc:
        raise UsageError(f"--labeller: {exc}") from None


def current_labeller(request: Request) -> str:
    """The labeller of this request: the authenticated one, else the lab's local labeller."""
    named = getattr(request.state, "labeller", None)
    if named:
        return str(getattr(named, "name", named))
    local: str | None = getattr(request.app.state, "labeller", None)
    return local or default_labeller()
