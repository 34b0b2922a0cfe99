"""Damaged rows a page left out, said on that page.

A listing leaves a damaged row out with a warning (:func:`ragmeter.store.skipped`);
in the lab that warning reaches only the server's console, so the person reading the page
would not know its list is short. Each request gets its own list of the rows left out while
it was answered (:func:`ragmeter.store.collect_skipped`, a context variable: requests are
answered in threads, and a warning filter is one for the whole process), and the page says, in
one line, what it left out ("1 damaged run was left out: run 7 (config is not JSON)"). The
report collects the same way and says it at its top.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from starlette.types import ASGIApp, Receive, Scope, Send

    from ..store import DamagedRowError

#: rows named in the notice; more are counted
MAX_NAMED = 10
#: a kind of row in the plural
_PLURAL = {"ledger entry": "ledger entries"}


class SkippedRows:
    """ASGI middleware: a fresh list of skipped rows for each request (see the module)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with collecting():  # the request's threads run in a copy of this context: same list
            await self.app(scope, receive, send)


@contextlib.contextmanager
def collecting() -> Iterator[list[DamagedRowError]]:
    """Collect the rows listings leave out inside the block (and in the threads it starts
    with its context)."""
    from ..store import collect_skipped

    with collect_skipped() as found:
        yield found


def notice(found: Sequence[DamagedRowError] | None = None) -> str | None:
    """One line naming the damaged rows left out so far (default: in this request), each once;
    None when there are none."""
    from ..store import row_label, skipped_so_far

    if found is None:
        found = skipped_so_far()
    rows: dict[tuple[str, str], str] = {}
    for d in found:
        rows.setdefault((str(d.table), str(d.key)), str(d.what))
    if not rows:
        return None
    kinds = {row_label(table) for table, _ in rows}
    kind = kinds.pop() if len(kinds) == 1 else "row"
    n = len(rows)
    if n > 1:
        kind = _PLURAL.get(kind, f"{kind}s")
    named = [
        f"{row_label(table)} {key} ({what})"
        for (table, key), what in list(rows.items())[:MAX_NAMED]
    ]
    more = f"; and {n - MAX_NAMED} more" if n > MAX_NAMED else ""
    verb = "was" if n == 1 else "were"
    return f"{n} damaged {kind} {verb} left out: {'; '.join(named)}{more}"
