"""The ``judge usage`` table: what judging each answer set cost, one row per variant.

``ragmeter answers check --judge`` (one row per answers file) and ``ragmeter run`` (one row per
variant of an experiment with a ``[judge]``) print it through :func:`judge_usage_table`, so the
two commands use the same columns, the same words and the same rule for token counts a server
did not send (:func:`ragmeter.answers.judges.tokens_unknown`): a reply without counts is
counted under "unknown usage" (the tokens and cost are then a floor), and when no reply had
counts the tokens and the cost print as "-", never as a measured "0+0".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from .._literal import CAPTION, TITLE, lit

#: the widest the variant column asks for before it folds a long name
MAX_NAME = 16


def judge_usage_table(
    rows: Sequence[tuple[str, Mapping[str, Any] | None]],
    prices_from: str,
    width: int | None = None,
    *,
    priced: bool | None = None,
) -> Table | None:
    """The table of ``rows`` (a variant's name and its ``judge_usage``), or None when no row
    has usage (no judge, or the fake judge, which sends nothing and counts no token: a
    "0 tokens" row would suggest a real count). ``prices_from`` says where the prices came from
    (the cost's note); ``width`` is the variant column's width (default: the longest name, at
    most :data:`MAX_NAME`). ``priced``: whether the judge has prices, so the cost column stays
    (with "-") when no reply had token counts and every cost is None; None: priced when any row
    has a cost."""
    used = [(name, u) for name, u in rows if u is not None]
    if not used:
        return None
    if priced is None:
        priced = any(u.get("cost") is not None for _, u in used)
    unknown = any(u.get("unknown_usage") for _, u in used)
    notes = [
        "what judging each variant's answers took in this run: HTTP requests sent (retries "
        "included), replies read from the judge cache (they cost nothing), prompt+completion "
        "tokens as the server reported them"
    ]
    if priced:
        notes.append(f"cost from {prices_from}")
    if unknown:
        notes.append(
            "unknown usage: replies without token counts (the tokens and cost are then a "
            "floor; - when no reply had them)"
        )
    t = Table(
        title=lit("judge usage", TITLE),
        title_justify="left",
        caption=lit("; ".join(notes) + ".", CAPTION),
        caption_justify="left",
    )
    if width is None:
        width = min(max(len(name) for name, _ in used), MAX_NAME)
    t.add_column("variant", min_width=width, overflow="fold")
    cols = ["HTTP requests", "cache hits", "retries", "failures", "tokens"]
    cols += ["cost"] * priced + ["unknown usage"] * unknown
    for col in cols:
        t.add_column(col, justify="right", no_wrap=col == "tokens")
    for name, u in used:
        t.add_row(lit(name), *usage_cells(u, priced=priced, unknown=unknown))
    return t


def usage_cells(u: Mapping[str, Any], *, priced: bool, unknown: bool) -> list[str]:
    """One row's cells after the variant: counts, tokens ("-" when unknown, never "0+0"),
    the cost when ``priced`` ("-" without prices or tokens), unknown replies when ``unknown``."""
    from ..answers.judges import tokens_unknown

    blind = tokens_unknown(u)
    cells = [
        str(u["http_requests"]),
        str(u["cache_hits"]),
        str(u["retries"]),
        str(u["failures"]),
        "-" if blind else f"{u['prompt_tokens']}+{u['completion_tokens']}",
    ]
    if priced:
        cells.append("-" if u.get("cost") is None or blind else f"{u['cost']:.4f}")
    if unknown:
        cells.append(str(u.get("unknown_usage", 0)))
    return cells
