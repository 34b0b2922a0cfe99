"""A huge TREC file with one bad line fails at about the cost of one read, naming the line.

No wall clock: the tests check which passes run (the slow normalised re-parse must not) and how
many lines reach the line-by-line checks (only those near the bad one).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter._errors import InputError
from ragmeter.io import _trec_check, _trec_columns, open_source
from ragmeter.io._trec_format import QRELS, RUN
from ragmeter.io.trec import read_qrels, read_run


def _run_lines(n: int) -> list[str]:
    return [f"q{i // 10} Q0 d{i} {i % 10 + 1} {100 - (i % 10) * 0.5} tag\n" for i in range(n)]


def _no_normalised_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the normalised columnar re-parse ran")

    monkeypatch.setattr(_trec_columns, "_Normalising", refuse)


def test_bad_score_on_the_last_line_skips_the_normalised_reparse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = tmp_path / "big.run"
    p.write_text("".join(_run_lines(3000)) + "q299 Q0 dX 11 notanumber tag\n")
    _no_normalised_pass(monkeypatch)
    with pytest.raises(InputError) as e:
        read_run(p)
    assert (e.value.path, e.value.line, e.value.field) == (str(p), 3001, "score")


def test_only_lines_near_the_bad_one_reach_the_line_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocks of 8 KiB: the block holding the bad line is cut into pieces, and only the piece
    with the bad line goes line by line (at most SUB_BLOCK bytes of lines)."""
    p = tmp_path / "big.run"
    p.write_text("".join(_run_lines(5000)) + "q499 Q0 dX 11 1.0\n")  # 5 fields
    monkeypatch.setattr(_trec_check, "BLOCK_SIZE", 1 << 13)
    monkeypatch.setattr(_trec_check, "SUB_BLOCK", 1 << 10)
    tally = _trec_check.Tally()
    lines = list(_trec_check.unvouched_lines(open_source(p), RUN, tally))
    assert lines[-1] == (5001, b"q499 Q0 dX 11 1.0\n")
    assert sum(len(text) for _, text in lines) <= 1 << 10
    assert tally.rows + len(lines) == 5001
    with pytest.raises(InputError) as e:
        read_run(p)
    assert (e.value.line, e.value.field) == (5001, None)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 400),
    bad_at=st.integers(0, 399),
    kind=st.sampled_from(["score", "fields", "tab-ok", "double-space-ok", "comment-ok"]),
)
def test_unvouched_lines_agree_with_the_line_parser(
    tmp_path_factory: pytest.TempPathFactory, n: int, bad_at: int, kind: str
) -> None:
    """Whatever is vouched for or not, the error (or the rows) is the line parser's."""
    lines = _run_lines(n)
    i = bad_at % n
    if kind == "score":
        lines[i] = " ".join([*lines[i].split()[:4], "1.0e", "tag"]) + "\n"
    elif kind == "fields":
        lines[i] = " ".join(lines[i].split()[:5]) + "\n"
    elif kind == "tab-ok":
        lines[i] = lines[i].replace(" ", "\t", 1)
    elif kind == "double-space-ok":
        lines[i] = lines[i].replace(" ", "  ", 1)
    else:
        lines.insert(i, "# a comment\n")
    folder = tmp_path_factory.mktemp("runs")
    p = folder / "r.run"
    p.write_text("".join(lines))
    src = open_source(p)
    saved = _trec_check.BLOCK_SIZE, _trec_check.SUB_BLOCK
    _trec_check.BLOCK_SIZE, _trec_check.SUB_BLOCK = 1 << 12, 1 << 9
    try:
        tally = _trec_check.Tally()
        got = list(_trec_check.unvouched_lines(src, RUN, tally))
    finally:
        _trec_check.BLOCK_SIZE, _trec_check.SUB_BLOCK = saved
    assert tally.rows + sum(1 for _, t in got if t.strip() and not t.startswith(b"#")) == n
    if kind in ("score", "fields"):
        assert (i + 1, lines[i].encode()) in got
        with pytest.raises(InputError) as e:
            read_run(p)
        assert e.value.line == i + 1
    else:
        assert len(read_run(p).qid) == n


def test_bad_grade_in_big_qrels_names_the_line(tmp_path: Path) -> None:
    p = tmp_path / "big.qrels"
    body = "".join(f"q{i // 5} 0 d{i} {i % 3}\n" for i in range(4000))
    p.write_text(body + "q799 0 dX high\n")
    with pytest.raises(InputError) as e:
        read_qrels(p)
    assert (e.value.line, e.value.field) == (4001, "rel")
    tally = _trec_check.Tally()
    assert list(_trec_check.unvouched_lines(open_source(p), QRELS, tally))[-1][0] == 4001
