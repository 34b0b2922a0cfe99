"""Damaged rows a page left out, said on that page.

A listing leaves a damaged row out with a warning (:func:`ragmeter.store._damage.skipped`);
in the lab that warning reaches only the server's console, so the person reading the page
would not know its list is short. Each request gets its own list of the rows left out while
it was answered (:data:`~ragmeter.store._damage.SKIPPED`, a context variable: requests are
answered in threads, and a warning filter is one for the whole process), and the page says, in
one line, what it left out ("1 damaged run was left out: run 7 (config is not JSON)"). The
report collects the same way and says it at its top.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

#: rows named in the notice; more are counted
MAX_NAMED = 10
#: a kind of row in the plural
_PLURAL = {"ledger entry": "ledger entries"}


class SkippedRows:
    """ASGI middleware: a fresh list of skipped rows for each request (see the module)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with collecting():  # the request's threads run in a copy of this context: same list
            await self.app(scope, receive, send)


@contextlib.contextmanager
def collecting() -> Iterator[list[Any]]:
    """Collect the rows listings leave out inside the block (and in the threads it starts
    with its context)."""
    from ..store._damage import SKIPPED

    found: list[Any] = []
    token = SKIPPED.set(found)
    try:
        yield found
    finally:
        SKIPPED.reset(token)


def notice(found: Sequence[Any] | None = None) -> str | None:
    """One line naming the damaged rows left out so far (default: in this request), each once;
    None when there are none."""
    from ..store._damage import LABEL, SKIPPED

    if found is None:
        found = SKIPPED.get() or ()
    rows: dict[tuple[str, str], str] = {}
    for d in found:
        rows.setdefault((str(d.table), str(d.key)), str(d.what))
    if not rows:
        return None
    kinds = {LABEL.get(table, table) for table, _ in rows}
    kind = kinds.pop() if len(kinds) == 1 else "row"
    n = len(rows)
    if n > 1:
        kind = _PLURAL.get(kind, f"{kind}s")
    named = [
        f"{LABEL.get(table, table)} {key} ({what})"
        for (table, key), what in list(rows.items())[:MAX_NAMED]
    ]
    more = f"; and {n - MAX_NAMED} more" if n > MAX_NAMED else ""
    verb = "was" if n == 1 else "were"
    return f"{n} damaged {kind} {verb} left out: {'; '.join(named)}{more}"
