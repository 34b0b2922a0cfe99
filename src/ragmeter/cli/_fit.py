"""Tables that fit the terminal without cutting a number, a date or an id.

rich shrinks a table that is too wide by narrowing its widest columns, then every column evenly,
and folds or ellipsizes what no longer fits: at 80 columns (CI logs, files) "0.80…",
"[+0.…", "version=202…" or "change-fee-b / asic". :func:`fit` plans the widths itself:

- a column's minimum is its longest word (text wraps between words, never inside one), or its
  longest cell for a right-justified or ``no_wrap`` column (numbers and intervals stay on one
  line);
- when the minimums fit, the spare width goes to the columns that want more, in proportion, and
  the table is drawn with those widths;
- when they do not, the table is *stacked*: one block per row, ``header  value`` lines under the
  row's first cell, wrapped between words at the full width.

The CLI's consoles (cli/_common.py) pass every table they print through :func:`fit`.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable
from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text


def fit(table: Table) -> Fitted:
    """A renderable that draws ``table`` at the console's width without cutting a word."""
    return Fitted(table)


class Fitted:
    """:func:`fit`'s renderable: plans the widths when the width is known (at render time)."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.table)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        t = self.table
        # numbers and intervals on one line if that fits; else wrapped between their words
        # ("[-0.062," / "+0.100]": each number whole); else stacked
        widths = _plan(console, options, t, whole=True) or _plan(console, options, t, whole=False)
        if widths is not None:
            planned = copy.copy(t)
            planned.columns = [
                dataclasses.replace(
                    c, width=w, min_width=None, max_width=None, overflow="fold", no_wrap=False
                )
                for c, w in zip(t.columns, widths, strict=True)
            ]
            yield planned
        elif not t.show_header:  # a layout grid: nothing to stack under
            yield t
        else:
            yield _stacked(console, t)


def _text(console: Console, cell: Any) -> Text | None:
    if isinstance(cell, Text):
        return cell
    if isinstance(cell, str):
        return console.render_str(cell, emoji=False, highlight=False)
    return None


def _longest(parts: Iterable[str]) -> int:
    return max((cell_len(p) for p in parts), default=0)


def _plan(console: Console, options: ConsoleOptions, t: Table, *, whole: bool) -> list[int] | None:
    """Content widths per column (padding excluded), or None when the words cannot fit.
    ``whole``: right-justified and no_wrap columns keep each cell line on one line."""
    mins: list[int] = []
    maxes: list[int] = []
    for column in t.columns:
        lo = hi = 0
        header = _text(console, column.header) if t.show_header else Text("")
        if header is None:
            return None
        lo, hi = _longest(header.plain.split()), _longest(header.plain.split("\n"))
        keep = column.no_wrap or (whole and column.justify == "right")
        for cell in column.cells:
            text = _text(console, cell)
            if text is None:  # a nested renderable: let rich measure it
                m = Measurement.get(console, options, cell)
                lo, hi = max(lo, m.minimum), max(hi, m.maximum)
                continue
            lines = text.plain.split("\n")
            lo = max(lo, _longest(lines) if keep else _longest(text.plain.split()))
            hi = max(hi, _longest(lines))
        if column.width is not None:
            lo = hi = max(column.width, lo)
        if column.min_width is not None:
            lo, hi = max(lo, column.min_width), max(hi, column.min_width)
        mins.append(max(lo, 1))
        maxes.append(max(hi, lo, 1))
    pads = [t._get_padding_width(i) for i in range(len(t.columns))]
    room = options.max_width - t._extra_width - sum(pads)
    if t.width is not None:
        room = min(room, t.width - t._extra_width - sum(pads))
    if sum(mins) > room:
        return None
    spare = room - sum(mins)
    want = [hi - lo for lo, hi in zip(mins, maxes, strict=True)]
    if sum(want) <= spare:
        return maxes
    # water-filling: the columns that want least get all they want first (a "400 USD" value
    # stays on one line), the rest share what is left equally
    give = [0] * len(want)
    order = sorted(range(len(want)), key=lambda i: want[i])
    for n, i in enumerate(order):
        give[i] = min(want[i], spare // (len(order) - n))
        spare -= give[i]
    return [lo + g for lo, g in zip(mins, give, strict=True)]


def _stacked(console: Console, t: Table) -> Group:
    """One block per row: the first cell, then ``header  value`` for the other columns."""
    parts: list[Any] = []
    if t.title is not None:
        title = _text(console, t.title)
        parts.append(title if title is not None else t.title)
    headers = [_text(console, c.header) or Text("") for c in t.columns]
    label = max((cell_len(h.plain) for h in headers[1:]), default=0)
    rows = list(zip(*(list(c.cells) for c in t.columns), strict=True))
    for row in rows:
        first = _text(console, row[0])
        head = Text(headers[0].plain + ": ", style="bold") if headers[0].plain else Text()
        parts.append(head.append_text(first) if first is not None else row[0])
        grid = Table.grid(padding=(0, 2), pad_edge=False)
        grid.add_column(no_wrap=True, min_width=label + 2, style="dim")
        grid.add_column(overflow="fold")
        for header, cell in zip(headers[1:], row[1:], strict=True):
            grid.add_row(Text("  ") + header, cell)
        parts.append(grid)
    if t.caption is not None:
        caption = _text(console, t.caption)
        parts.append(caption if caption is not None else t.caption)
    return Group(*parts)
