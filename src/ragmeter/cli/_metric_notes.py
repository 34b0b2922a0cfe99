"""A note on stderr when a metric was given by its trec_eval name (``map`` is read as ``AP``), so
the output's canonical column names are never a surprise."""

from __future__ import annotations

from .._errors import UsageError
from ._common import err_console, lit


def note_trec_eval_names(metrics: str) -> None:
    """Print "read trec_eval's 'map' as AP, 'P_5' as P@5" for the trec_eval names in ``metrics``
    (nothing when there are none; a metric that does not parse is left to the parser's error)."""
    from ..metrics import trec_eval_aliases

    try:
        aliases = trec_eval_aliases(metrics)
    except UsageError:  # the real parse reports it, with its own message
        return
    if aliases:
        pairs = ", ".join(f"'{a}' as {c}" for a, c in aliases.items())
        err_console.print(lit(f"read trec_eval's {pairs}"))
