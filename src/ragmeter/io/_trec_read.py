"""Reading TREC qrels and runs (the formats are described in ``ragmeter.io.trec``): the columnar
parse when it can vouch for the file, else the line-by-line pass that names every bad line.
Kept apart from the writers so that ``convert`` can read paths without importing the writers
that call it.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ._duplicates import Table, check_policy, dedupe_qrels, dedupe_run
from ._source import Source, open_source
from ._tables import Qrels, ReadHints, Run
from ._trec_format import QRELS, RUN, Layout, LineOf, Unclean

__all__ = ["read_qrels", "read_run"]


def read_run(
    path: str | os.PathLike[str], *, duplicates: str = "best", name: str | None = None
) -> Run:
    """Read a TREC run file into a columnar Run (rows in file order).

    ``duplicates``: what to do with a document listed twice for one query - ``"best"`` keeps
    the best-scored row and warns (RagmeterWarning naming the first repeated line), ``"error"``
    raises InputError. ``name`` defaults to the path as given.
    """
    check_policy(duplicates)
    src = open_source(path)

    def dedupe(t: Table, line_of: LineOf | None) -> Table:
        return dedupe_run(t, policy=duplicates, source=src.display, line_of=line_of)

    t, hints = _read_hinted(src, RUN, dedupe)
    display = src.display if name is None else name
    return Run(qid=t.qid, doc=t.doc, score=t.value, name=display, hints=hints)


def read_qrels(path: str | os.PathLike[str]) -> Qrels:
    """Read a TREC qrels file (``qid iter doc rel``) into columnar Qrels.

    A (qid, doc) pair judged twice with the same grade is kept once (with a warning); judged
    twice with different grades it is an InputError.
    """
    src = open_source(path)

    def dedupe(t: Table, line_of: LineOf | None) -> Table:
        return dedupe_qrels(t, source=src.display, line_of=line_of)

    t, hints = _read_hinted(src, QRELS, dedupe)
    return Qrels(qid=t.qid, doc=t.doc, rel=t.value, source=src.display, hints=hints)


def _read(src: Source, layout: Layout, dedupe: Callable[[Table, LineOf | None], Table]) -> Table:
    """Columnar parse when it can vouch for the file, else the line-by-line pass."""
    return _read_hinted(src, layout, dedupe)[0]


def _read_hinted(
    src: Source, layout: Layout, dedupe: Callable[[Table, LineOf | None], Table]
) -> tuple[Table, ReadHints | None]:
    """Columnar parse when it can vouch for the file, else the line-by-line pass; with the
    parse's hints for the engine (None when the parse had none or duplicates changed the rows)."""
    from ._trec_columns import parse_columnar
    from ._trec_lines import parse_lines

    try:
        parsed = parse_columnar(src, layout)
        table = Table(parsed.qid, parsed.doc, parsed.value)
        kept = dedupe(table, parsed.line_of) if parsed.maybe_duplicates else table
    except Unclean:
        pass
    else:
        if kept is not table or (parsed.doc_hashes is None and parsed.qid_starts is None):
            return kept, None
        return kept, ReadHints(kept.qid, kept.doc, parsed.doc_hashes, parsed.qid_starts)
    check_file(src, layout)
    parsed = parse_lines(src, layout)
    return dedupe(Table(parsed.qid, parsed.doc, parsed.value), parsed.line_of), None


def check_file(src: Source, layout: Layout) -> None:
    """Raise the problems of a file no columnar pass vouched for, keeping no row.

    Such a file is most often a bad one: one bad line at the end of a huge file then costs
    about a columnar read (blocks a columnar parse vouches for are skipped, ``_trec_check``),
    not a Python pass that keeps every row before it."""
    from ._trec_check import Tally, unvouched_lines
    from ._trec_lines import parse_lines

    tally = Tally()
    lines = unvouched_lines(src, layout, tally)
    skipped = lambda: (tally.rows, tally.bytes)  # noqa: E731
    parse_lines(src, layout, keep=False, numbered_lines=lines, skipped=skipped)
