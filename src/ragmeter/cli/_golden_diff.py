"""``ragmeter golden diff A B``: what changed between two golden-set versions.

Added to the ``golden`` command group by :func:`add_diff`. A and B are golden files or, when no
such file exists, versions stored in the experiment store (named by their first digits). Exit
codes: 0 whatever the difference (a diff is a report, not a check); 2 usage or input error.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ._common import TableJson, console, handle_errors, lit, print_json
from ._store_options import db_option, open_required, store_errors

if TYPE_CHECKING:  # pragma: no cover
    from ..data import GoldenDiff

#: characters of a span's or a field's text shown in the table output (JSON has the whole text)
SNIPPET = 70


def add_diff(golden_app: typer.Typer) -> None:
    golden_app.command("diff")(diff)


def _short(value: object) -> str:
    if not isinstance(value, str):
        return repr(value)
    flat = " ".join(value.split())
    return repr(flat if len(flat) <= SNIPPET else flat[: SNIPPET - 1] + "…")


def _say(text: str) -> None:
    console.print(lit(text), soft_wrap=True)


@handle_errors
def diff(
    a: Annotated[
        str,
        typer.Argument(
            help="The older set: a golden file, or a stored version (g-1a2b or more digits)."
        ),
    ],
    b: Annotated[
        str,
        typer.Argument(
            help="The newer set: a golden file, or a stored version (g-1a2b or more digits)."
        ),
    ],
    corpus: Annotated[
        Path | None,
        typer.Option(
            "--corpus",
            "-c",
            help="Corpus of both golden files: spans checked, their text shown, versions computed.",
        ),
    ] = None,
    corpus_a: Annotated[
        Path | None, typer.Option("--corpus-a", help="Corpus of A (when A and B differ).")
    ] = None,
    corpus_b: Annotated[
        Path | None, typer.Option("--corpus-b", help="Corpus of B (when A and B differ).")
    ] = None,
    db: str | None = db_option(),
    fmt: Annotated[TableJson, typer.Option("--format", "-f", help="Output format.")] = (
        TableJson.table
    ),
) -> None:
    """Questions added, removed and changed from A to B; spans added, removed and moved;
    grades and required flags changed (exit 0 whatever changed)."""
    from ..workflows.golden import diff_golden, diff_needs_store

    # a side that is no file here is a stored version: only then is the store opened
    store = open_required(db) if diff_needs_store(a, b) else None
    try:
        with store_errors(db) if store is not None else contextlib.nullcontext():
            result = diff_golden(
                a, b, corpus=corpus, corpus_a=corpus_a, corpus_b=corpus_b, store=store
            )
    finally:
        if store is not None:
            store.close()
    if fmt is TableJson.json:
        print_json(result.to_dict())
    else:
        print_diff(result)


def _side(name: str, version: str | None) -> str:
    return f"{name} ({version})" if version and version != name else name


def print_diff(d: GoldenDiff) -> None:
    """The diff as plain lines: a header, the counts, then one block per question."""
    s = d.summary()
    _say(f"golden diff: {_side(d.a.name, d.a.version)} -> {_side(d.b.name, d.b.version)}")
    if d.lineage == "b-from-a":
        _say(f"lineage: B was made from A (B's parent is {d.b.parent})")
    elif d.lineage == "a-from-b":
        _say(f"lineage: A was made from B (A's parent is {d.a.parent}): the arguments are swapped?")
    else:
        for who, side in (("A", d.a), ("B", d.b)):
            if side.parent:
                _say(f"lineage: {who}'s parent is {side.parent}")
    _say(
        f"questions: {s['questions_added']} added, {s['questions_removed']} removed, "
        f"{s['questions_changed']} changed, {s['questions_unchanged']} unchanged"
    )
    _say(
        f"spans (questions in both): {s['spans_added']} added, {s['spans_removed']} removed, "
        f"{s['spans_moved']} moved; {s['grades_changed']} grade(s) and "
        f"{s['required_changed']} required flag(s) changed"
    )
    if d.documents_changed:
        _say(f"documents whose text changed: {', '.join(d.documents_changed)}")
    if d.empty:
        _say("no difference: the two sets hold the same questions and labels")
        return
    for q in d.added:
        kind = "answerable" if q.answerable else "unanswerable"
        _say(f"+ {q.id}: {_short(q.question)} ({q.spans} span(s), {kind}, {q.split})")
    for q in d.removed:
        _say(f"- {q.id}: {_short(q.question)} ({q.spans} span(s))")
    for c in d.changed:
        _say(f"~ {c.id}: {_short(c.question)}")
        for f in c.fields:
            _say(f"    {f.field}: {_short(f.old)} -> {_short(f.new)}")
        for sp in c.spans_added:
            req = ", required" if sp.required else ""
            _say(
                f"    span added: {sp.doc} {sp.start}-{sp.end} grade {sp.grade}{req} "
                f"{_short(sp.text)}"
            )
        for sp in c.spans_removed:
            _say(
                f"    span removed: {sp.doc} {sp.start}-{sp.end} grade {sp.grade} {_short(sp.text)}"
            )
        for m in c.spans_moved:
            _say(
                f"    span moved: {m.doc} {m.old[0]}-{m.old[1]} -> {m.new[0]}-{m.new[1]} "
                f"{_short(m.old_text)} -> {_short(m.new_text)}"
            )
        for g in c.grades_changed:
            _say(f"    grade: {g.doc} {g.start}-{g.end} {g.old} -> {g.new}")
        for r in c.required_changed:
            _say(f"    required: {r.doc} {r.start}-{r.end} {r.old} -> {r.new}")
        for t in c.texts_changed:
            _say(f"    recorded text: {t.doc} {t.start}-{t.end} {_short(t.old)} -> {_short(t.new)}")
        if c.spans_reordered:
            _say("    spans reordered")
