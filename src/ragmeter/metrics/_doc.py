"""The metric reference, generated from the registry: rows for ``ragmeter metrics`` and the
README's metric table, so neither can drift from what the grammar accepts and the engine computes.

``python -m ragmeter.metrics._doc`` prints the Markdown table; ``--write README.md`` replaces the
table between the README's markers; ``--check README.md`` exits 1 when they differ.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .._errors import InputError
from ..io import atomic_write
from ._guide import GUIDES
from ._registry import REGISTRY, MetricInfo, Param
from ._spec import parse

START = (
    "<!-- metric-table:start (generated from the metric registry: "
    "python -m ragmeter.metrics._doc --write README.md) -->"
)
END = "<!-- metric-table:end -->"

#: how the labels a metric is computed on are named to a reader
LABELS = {"rank": "items", "span": "spans"}


def option_text(p: Param) -> str:
    """``rel=1`` (the default) or ``gains=G:V,...`` (no default)."""
    return f"{p.name}=G:V,..." if p.default is None else f"{p.name}={p.default}"


def labels_of(info: MetricInfo) -> list[str]:
    return [LABELS[level] for level in ("rank", "span") if level in info.levels]


def metric_rows(names: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """One plain record per metric, in registry order (``ragmeter metrics --format json``);
    ``names`` (names, aliases or whole metrics such as ``nDCG@10``) picks some; UsageError for
    an unknown one."""
    infos = list(REGISTRY.values())
    if names:
        wanted = {parse(n, default_k=1).name for n in names}
        infos = [m for m in infos if m.name in wanted]
    return [
        {
            "name": m.name,
            "title": m.title,
            "forms": list(m.forms),
            "aliases": list(m.aliases),
            "definition": m.definition,
            "formula": m.formula,
            "options": [{"name": p.name, "default": p.default, "doc": p.doc} for p in m.params],
            "cutoff": m.cutoff,
            "binary": m.binary,
            "labels": labels_of(m),
            "trec_eval": list(m.trec_eval),
            "guide": GUIDES[m.name].to_dict() if m.name in GUIDES else None,
        }
        for m in infos
    ]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown_table() -> str:
    """The README's metric table (no trailing newline)."""
    lines = ["| metric | meaning | options | labels | trec_eval |", "|---|---|---|---|---|"]
    for m in REGISTRY.values():
        name = ", ".join(f"`{f}`" for f in m.forms)
        if m.aliases:
            name += " (alias " + ", ".join(f"`{a}`" for a in m.aliases) + ")"
        meaning = f"{m.definition}: `{m.formula}`"
        options = ", ".join(f"`{option_text(p)}`" for p in m.params) or "—"
        trec = ", ".join(f"`{t}`" for t in m.trec_eval) or "—"
        lines.append(
            f"| {name} | {_cell(meaning)} | {options} | {', '.join(labels_of(m))} | {trec} |"
        )
    return "\n".join(lines)


def block() -> str:
    """The table with its markers, as it stands in the README."""
    return f"{START}\n{markdown_table()}\n{END}"


def current_block(text: str, path: str = "README.md") -> tuple[int, int]:
    """Start and end offsets of the marked block in ``text``; InputError without markers."""
    start = text.find(START)
    end = text.find(END)
    if start < 0 or end < start:
        raise InputError(
            "has no metric-table markers; put the two marker comments where the table belongs",
            path=path,
        )
    return start, end + len(END)


def rewrite(text: str, path: str = "README.md") -> str:
    """``text`` with the marked block replaced by the registry's table."""
    start, end = current_block(text, path)
    return text[:start] + block() + text[end:]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] in ("--write", "--check"):
        path = Path(args[1])
        text = path.read_text(encoding="utf-8")
        new = rewrite(text, str(path))
        if args[0] == "--check":
            if new != text:
                print(
                    f"{path}: the metric table differs from the registry; run "
                    f"python -m ragmeter.metrics._doc --write {path}",
                    file=sys.stderr,
                )
                return 1
            return 0
        if new != text:
            atomic_write(path, new)
        return 0
    if args:
        print("usage: python -m ragmeter.metrics._doc [--write|--check README.md]", file=sys.stderr)
        return 2
    print(markdown_table())
    return 0


if __name__ == "__main__":  # pragma: no cover - exercised through main() in the tests
    sys.exit(main())
