"""The lab's per-question table as CSV: the header and each row's fields (strings, so the page's
"CSV of the rows shown" and ``/lab/questions.csv`` write the same bytes), and the text.

``lab.js`` joins the same fields the same way in the browser: a field is quoted when it holds a
comma, a double quote, a carriage return or a new line, its double quotes doubled; lines end
with a new line. Question text is untrusted: a text field starting with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return gets a leading ``'`` so a spreadsheet shows it instead of
running it as a formula (numbers are written by this module and are never prefixed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

#: a spreadsheet runs a cell starting with one of these as a formula
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def text_cell(text: str) -> str:
    """An untrusted text field, defused for spreadsheets."""
    return "'" + text if text.startswith(FORMULA_START) else text


def number_cell(x: float | None) -> str:
    """A value: six decimals (trailing zeros dropped), empty when there is none."""
    if x is None:
        return ""
    out = f"{x:.6f}".rstrip("0").rstrip(".")
    return "0" if out in ("-0", "") else out


def head(
    names: Mapping[str, str], keys: Sequence[str], metric: str, *, compared: bool
) -> list[str]:
    """The header: question id, question, slices, each metric's name, then (against a baseline)
    the chosen metric's baseline value, its change and how the question moved."""
    out = ["qid", "question", "slices", *(names[k] for k in keys)]
    if compared:
        out += [f"baseline {names[metric]}", f"change {names[metric]}", "moved"]
    return out


def fields(
    qid: str,
    question: str,
    slices: Iterable[str],
    values: Mapping[str, float | None],
    keys: Sequence[str],
    *,
    compared: bool,
    base: float | None,
    delta: float | None,
    marks: Sequence[str],
) -> list[str]:
    """One question's row, in :func:`head`'s order."""
    out = [text_cell(qid), text_cell(question), text_cell(";".join(slices))]
    out += [number_cell(values.get(k)) for k in keys]
    if compared:
        out += [number_cell(base), number_cell(delta), " ".join(marks)]
    return out


def _quoted(field: str) -> str:
    if any(c in field for c in ',"\r\n'):
        return '"' + field.replace('"', '""') + '"'
    return field


def csv_text(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """The CSV text: the header line, then one line per row."""
    return "".join(",".join(_quoted(f) for f in line) + "\n" for line in (header, *rows))
