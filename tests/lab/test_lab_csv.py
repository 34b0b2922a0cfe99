"""The lab table's CSV (``ragmeter.lab._lab_csv``): any text reads back through Python's csv
reader as written, numbers print with six decimals at most, and a question that starts like a
spreadsheet formula is shown, not run."""

from __future__ import annotations

import csv
import io

from hypothesis import given
from hypothesis import strategies as st

from ragmeter.lab._lab_csv import csv_text, fields, head, number_cell, text_cell

FIELD = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


@given(st.lists(st.lists(FIELD, min_size=2, max_size=6), min_size=1, max_size=8))
def test_any_fields_read_back_as_written(lines: list[list[str]]) -> None:
    width = len(lines[0])
    lines = [(line * width)[:width] for line in lines]
    text = csv_text(lines[0], lines[1:])
    assert list(csv.reader(io.StringIO(text, newline=""))) == lines
    assert text.count("\n") >= len(lines)


@given(st.text(max_size=20))
def test_text_that_starts_like_a_formula_is_defused(text: str) -> None:
    out = text_cell(text)
    assert not out.startswith(("=", "+", "-", "@", "\t", "\r"))
    assert out.removeprefix("'") == text or out == text


def test_numbers_and_the_row() -> None:
    assert [number_cell(x) for x in (None, 0.0, -0.0, 1.0, 0.5, 1 / 3, -1e-9, -0.25)] == [
        "", "0", "0", "1", "0.5", "0.333333", "0", "-0.25",
    ]  # fmt: skip
    names = {"R": "R@4", "RR": "RR@4"}
    assert head(names, ["R", "RR"], "R", compared=False) == [
        "qid",
        "question",
        "slices",
        "R@4",
        "RR@4",
    ]
    assert head(names, ["R"], "R", compared=True)[-3:] == ["baseline R@4", "change R@4", "moved"]
    row = fields(
        "=cmd|' /C calc'!A0", "a, \"b\"\nc", ["fees", "changes"], {"R": 0.5, "RR": None},
        ["R", "RR"], compared=True, base=1.0, delta=-0.5, marks=["lost"],
    )  # fmt: skip
    assert row == [
        "'=cmd|' /C calc'!A0",
        'a, "b"\nc',
        "fees;changes",
        "0.5",
        "",
        "1",
        "-0.5",
        "lost",
    ]
    assert csv_text(["a", "b"], [row[:2]]) == 'a,b\n\'=cmd|\' /C calc\'!A0,"a, ""b""\nc"\n'
