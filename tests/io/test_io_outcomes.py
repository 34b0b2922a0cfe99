"""Per-question outcome files (ragmeter.io.outcomes): both forms read to the same values, and
every bad row is refused with its file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter import InputError
from ragmeter.io.outcomes import is_outcome_file, read_outcomes


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_and_jsonl_read_the_same_values(tmp_path: Path) -> None:
    c = read_outcomes(_write(tmp_path / "a.csv", "id,correct\nq1,1\nq2,0\nq3,true\n"))
    j = read_outcomes(
        _write(
            tmp_path / "a.jsonl",
            "".join(
                json.dumps({"id": q, "correct": v}) + "\n"
                for q, v in (("q1", 1), ("q2", False), ("q3", True))
            ),
        )
    )
    assert c.values == j.values == {"q1": 1.0, "q2": 0.0, "q3": 1.0}
    assert c.column == j.column == "correct" and c.binary


def test_a_csv_with_one_other_column_takes_it_and_numbers_stay_numbers(tmp_path: Path) -> None:
    o = read_outcomes(_write(tmp_path / "a.csv", "qid,f1\nq1,0.25\nq2,1e-1\n"))
    assert o.column == "f1" and o.values == {"q1": 0.25, "q2": 0.1} and not o.binary


@pytest.mark.parametrize(
    ("name", "text", "line", "field", "words"),
    [
        ("a.csv", "id,correct\nq1,1\nq1,0\n", 3, "id", "appears twice (first on line 2)"),
        ("a.csv", "id,correct\nq1,yes\n", 2, "correct", "'yes' is not a number"),
        ("a.csv", "id,correct\nq1,nan\n", 2, "correct", "not a finite number"),
        ("a.csv", "id,correct\n,1\n", 2, "id", "empty question id"),
        ("a.csv", "id,correct\nq1\n", 2, None, "1 fields where the header has 2"),
        ("a.csv", "question,correct\nq1,1\n", 1, None, "no id column"),
        ("a.csv", "id,a,b\nq1,1,0\n", 1, None, "no value column"),
        ("a.jsonl", '{"id": "q1", "correct": 1}\n{"id": "q2"}\n', 2, None, "no value field"),
        (
            "a.jsonl",
            '{"id": "q1", "correct": 1}\n{"id": "q2", "value": 1}\n',
            2,
            "value",
            "one column per file",
        ),
        ("a.jsonl", '{"id": "q1", "correct": 1}\n[1]\n', 2, None, "a JSON object"),
        ("a.jsonl", '{"id": "q1", "correct": "x"}\n', 1, "correct", "not a number"),
        ("a.jsonl", "{oops\n", 1, None, "not JSON"),
    ],
)
def test_bad_rows_name_file_line_and_field(tmp_path, name, text, line, field, words) -> None:
    path = _write(tmp_path / name, text)
    with pytest.raises(InputError) as e:
        read_outcomes(path)
    assert e.value.path == str(path) and e.value.line == line and e.value.field == field
    assert words in e.value.message


def test_an_empty_or_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no outcome rows"):
        read_outcomes(_write(tmp_path / "a.csv", "id,correct\n"))
    with pytest.raises(InputError, match="no such outcome file"):
        read_outcomes(tmp_path / "missing.jsonl")


def test_the_suffix_names_an_outcome_file() -> None:
    assert is_outcome_file("a.csv") and is_outcome_file("x/B.JSONL")
    assert not is_outcome_file("eval.json") and not is_outcome_file("run.trec")


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True),
                       st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=30))  # fmt: skip
def test_values_round_trip_through_both_forms(tmp_path_factory, values) -> None:
    folder = tmp_path_factory.mktemp("o")
    csv_text = "id,value\n" + "".join(f"{q},{v!r}\n" for q, v in values.items())
    jsonl_text = "".join(json.dumps({"id": q, "value": v}) + "\n" for q, v in values.items())
    assert read_outcomes(_write(folder / "a.csv", csv_text)).values == values
    assert read_outcomes(_write(folder / "a.jsonl", jsonl_text)).values == values
