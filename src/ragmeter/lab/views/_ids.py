"""Ids in the lab's URLs and forms: a stored row's id, or not found.

Every route that takes an id takes it as text and reads it here, so a value no stored row can
have (``2**63``, ``10**30``, ``-1``, ``0``, ``abc``, ``1e3``) is a 404 page saying so, the
same answer as an id that is simply absent, never a validation error in JSON or a 500 from the
database driver. What a valid id is: :func:`ragmeter.store.row_id`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._errors import NotFoundError

if TYPE_CHECKING:
    from ...store import Store


def stored_id(store: Store, text: str | None, what: str = "run") -> int | None:
    """The id ``text`` names (None when the parameter is absent or empty); NotFoundError when it
    cannot name a stored ``what``."""
    from ...store import row_id

    if text is None or not text.strip():
        return None
    found = row_id(text, store.engine.dialect.name)
    if found is None:
        raise NotFoundError(f"the store has no {what} {text.strip()[:40]!r}")
    return found
