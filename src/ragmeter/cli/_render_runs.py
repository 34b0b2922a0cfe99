"""How ``ragmeter runs list`` and ``runs show`` lay out stored runs at any terminal width.

Numbers, metric strings and golden-set versions are never wrapped or cut: at 120 columns and
more a run is one row; below, the variant's changes go under its name and the finish time under
the golden version; when even that does not fit, each run is a block of lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich import box
from rich.table import Table
from rich.text import Text

from ._common import TITLE, console, lit

if TYPE_CHECKING:  # pragma: no cover
    import datetime as dt

    from rich.console import RenderableType

    from ..store import RunRecord

#: under this width the list stacks changes under the variant and the time under the version
WIDE = 120
HEADLINE = 3


def local_minute(value: dt.datetime | None) -> str:
    """A stored UTC time in the local time zone, to the minute ('' when absent)."""
    return "" if value is None else value.astimezone().strftime("%Y-%m-%d %H:%M")


def headline(metrics: Mapping[str, float | None], n: int = HEADLINE) -> list[tuple[str, str]]:
    """A run's first ``n`` metrics, those at the token budget first (variants are compared at an
    equal budget), as (canonical metric string, value)."""
    names = sorted(metrics, key=lambda k: "budget=" not in k)[:n]
    return [(k, "-" if metrics[k] is None else f"{metrics[k]:.3f}") for k in names]


def _groups(records: list[RunRecord]) -> list[tuple[str, list[RunRecord]]]:
    """Consecutive runs of one experiment (an invocation's runs are consecutive ids)."""
    out: list[tuple[str, list[RunRecord]]] = []
    for r in records:
        if out and out[-1][0] == r.experiment:
            out[-1][1].append(r)
        else:
            out.append((r.experiment, [r]))
    return out


def runs_tables(records: list[RunRecord], width: int) -> list[RenderableType]:
    """The runs as one table per experiment group under the experiment's name (printed whole,
    whatever its length), the header once, every column the same width in every group so they
    read as one table. Under ``WIDE`` columns the baseline flag and changes go under the variant
    and the finish time under the golden version. Numbers and versions are never wrapped."""
    wide = width >= WIDE
    rows = [_cells(r, wide) for r in records]
    heads = ["id", "variant", "status", "base", "golden", "finished", "metrics", "changes"]
    if not wide:
        heads = ["id", "variant", "status", "golden / finished", "metrics"]
    widths = [
        max([len(h), *(len(line) for row in rows for line in row[i].plain.splitlines())])
        for i, h in enumerate(heads)
    ]
    folding = heads.index("variant")
    last = len(heads) - 1 if wide else folding  # the columns that may fold: variant, changes
    # no edges; between two columns a divider and a space of padding on each side
    fixed = sum(w for i, w in enumerate(widths) if i not in (folding, last)) + 3 * (len(heads) - 1)
    room = width - fixed
    if room < 12:  # too narrow for columns: one block of lines per run, wrapped at spaces
        return _stacked(records)
    if wide:  # variant and changes share what is left
        widths[last] = min(widths[last], max(room - widths[folding], room // 2))
    widths[folding] = min(widths[folding], room - (widths[last] if wide else 0))
    out: list[RenderableType] = []
    for n, (experiment, group) in enumerate(_groups(records)):
        out.append(Text(experiment, "bold"))
        t = Table(
            box=box.SIMPLE_HEAD if n == 0 else None,
            pad_edge=False,
            show_edge=False,
            show_header=n == 0,
        )
        for i, h in enumerate(heads):
            may_fold = i in (folding, last)
            t.add_column(
                h,
                justify="right" if h == "id" else "left",
                width=widths[i],
                no_wrap=not may_fold,
                overflow="fold" if may_fold else "ellipsis",
            )
        for r in group:
            t.add_row(*_cells(r, wide))
        out.append(t)
    return out


def _stacked(records: list[RunRecord]) -> list[RenderableType]:
    out: list[RenderableType] = []
    for experiment, group in _groups(records):
        out.append(Text(experiment, "bold"))
        for r in group:
            head = Text(f"{r.id}  ")
            head.append(r.name, "bold")
            changes = ", ".join(r.changes)
            head.append(
                f"  {r.status}"
                + (
                    " (the baseline)"
                    if r.is_baseline
                    else f" (changes: {changes})"
                    if changes
                    else ""
                )
            )
            when = local_minute(r.finished_at)
            facts = f"golden {r.golden_version or '-'}" + (f", finished {when}" if when else "")
            lines = [f"\n  {k} {v}" for k, v in headline(dict(r.metrics))]
            out.append(Text.assemble(head, "\n  ", facts, *lines))
    return out


def _cells(r: RunRecord, wide: bool) -> list[Text]:
    """Literal cells (never markup): a run's row."""
    metrics = Text("\n".join(f"{k} {v}" for k, v in headline(dict(r.metrics))))
    golden = r.golden_version or "-"
    changes = ", ".join(r.changes)
    if wide:
        return [
            Text(str(r.id)),
            Text(r.name),
            Text(r.status),
            Text("yes" if r.is_baseline else ""),
            Text(golden),
            Text(local_minute(r.finished_at)),
            metrics,
            Text(changes or ("baseline" if r.is_baseline else "")),
        ]
    who = Text(r.name)
    if r.is_baseline:
        who.append("\n(the baseline)", "dim")
    elif changes:
        who.append(f"\nchanges: {changes}", "dim")
    when = Text(f"{golden}\n{local_minute(r.finished_at)}".rstrip())
    return [Text(str(r.id)), who, Text(r.status), when, metrics]


def record_table(r: RunRecord) -> Table:
    console.print(lit(f"run {r.id}", TITLE))
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_header=False)
    t.add_column("field", no_wrap=True)
    t.add_column("value", overflow="fold")
    git = (
        "-"
        if r.git_commit is None
        else r.git_commit + (" (uncommitted changes)" if r.git_dirty else "")
    )
    timings = ", ".join(f"{k} {v:.2f}s" for k, v in r.timings.items())
    rows = [
        ("experiment", r.experiment),
        ("variant", r.name + (" (baseline)" if r.is_baseline else "")),
        ("pipeline", r.label or "-"),
        ("kind", r.kind),
        ("status", r.status),
        ("message", r.message or ""),
        ("golden set", r.golden_version or "-"),
        ("questions", "-" if r.n_queries is None else str(r.n_queries)),
        ("context tokens", "-" if r.context_tokens is None else f"{r.context_tokens:.0f}"),
        ("changes", ", ".join(r.changes) or "-"),
        ("started", local_minute(r.started_at)),
        ("finished", local_minute(r.finished_at) or "-"),
        ("seconds", "-" if r.seconds is None else f"{r.seconds:.2f}"),
        ("timings", timings or "-"),
        ("ragmeter", r.ragmeter_version),
        ("git commit", git),
        ("host", f"{r.host} (pid {r.pid})"),
        ("source", r.source or "-"),
        ("levels", ", ".join(r.levels) or "-"),
        ("ranked lists", "stored" if r.has_ranked else "-"),
        ("config hash", r.config_hash[:16]),
        *(("note", n) for n in r.notes),
    ]
    for k, v in rows:
        if k == "message" and not v:
            continue
        t.add_row(k, lit(str(v)))
    return t
