"""TREC qrels and run files: parsing, every bad-input error with its line, gzip, writers."""

from __future__ import annotations

import gzip
import warnings
from pathlib import Path

import numpy as np
import pytest
from _peer_data import SKIP_REASON, peer_data_dir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter import InputError, RagmeterWarning, UsageError, ValidationError, read_qrels, read_run
from ragmeter.io import _trec_columns, _trec_fast, _trec_lines, open_source
from ragmeter.io._duplicates import pair_hashes, string_hashes
from ragmeter.io._trec_format import RUN as RUN_LAYOUT
from ragmeter.io._trec_format import Unclean
from ragmeter.io.trec import write_qrels, write_run

FIX = Path(__file__).parents[1] / "fixtures" / "io"


def rows(run) -> list[tuple[str, str, float]]:
    return list(zip(run.qid.to_pylist(), run.doc.to_pylist(), run.score.tolist(), strict=True))


def qrows(qrels) -> list[tuple[str, str, int]]:
    return list(zip(qrels.qid.to_pylist(), qrels.doc.to_pylist(), qrels.rel.tolist(), strict=True))


def write(tmp_path: Path, text: str | bytes, name: str = "run.txt") -> Path:
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


@pytest.fixture
def no_line_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail if the line-by-line parser runs: the file must be read columnar."""

    def boom(*a: object, **k: object) -> None:
        raise AssertionError("the line-by-line pass ran on a file the columnar parser should read")

    monkeypatch.setattr(_trec_lines, "parse_lines", boom)


# -- reading ------------------------------------------------------------------------------------
def test_reads_run_in_file_order(tmp_path: Path, no_line_pass: None) -> None:
    p = write(tmp_path, "q2 Q0 d9 1 2.5 sys\nq1 Q0 d2 1 1.5 sys\nq1 Q0 d1 2 1.5 sys\n")
    run = read_run(p)
    assert rows(run) == [("q2", "d9", 2.5), ("q1", "d2", 1.5), ("q1", "d1", 1.5)]
    assert run.name == str(p)
    assert str(run.qid.type) == "string" and run.score.dtype == np.float64
    assert read_run(p, name="bm25").name == "bm25"


def test_score_keeps_every_digit(tmp_path: Path) -> None:
    scores = [
        "0.1",
        "0.30000000000000004",
        "1e-300",
        "-2.5e+300",
        "4.9406564584124654e-324",
        "123456789.12345678",
        "7",
        "-0",
        ".5",
        "5.",
        "1.e5",
    ]
    text = "".join(f"q Q0 d{i} {i + 1} {s} t\n" for i, s in enumerate(scores))
    run = read_run(write(tmp_path, text))
    assert [x.hex() for x in run.score.tolist()] == [float(s).hex() for s in scores]


def test_tabs_spaces_and_blank_runs_read_the_same(tmp_path: Path) -> None:
    clean = "q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 1.5 sys\nq2 Q0 d3 1 0.5 sys\n"
    variants = [
        clean.replace(" ", "\t"),
        clean.replace(" ", "  \t "),
        clean.replace("\n", "\r\n"),
        "\n".join("   " + line + "\t " for line in clean.splitlines()) + "\n",
        clean.replace("\n", "\n\n"),
        "# header\n" + clean + "# trailer",
    ]
    expected = rows(read_run(write(tmp_path, clean)))
    for i, text in enumerate(variants):
        assert rows(read_run(write(tmp_path, text, f"v{i}.txt"))) == expected, text


def test_messy_fixture(no_line_pass: None) -> None:
    run = read_run(FIX / "messy.run")
    assert rows(run) == [("q1", "d1", 2.5), ("q1", "d2", 1.5), ("q2", "d#1", -0.25)]


def test_tab_separated_file_is_read_columnar(tmp_path: Path, no_line_pass: None) -> None:
    text = "q1\tQ0\td1\t1\t2.5\tsys\nq1\tQ0\td2\t2\t1.5\tsys\n"
    assert rows(read_run(write(tmp_path, text))) == [("q1", "d1", 2.5), ("q1", "d2", 1.5)]


def test_qrels(tmp_path: Path, no_line_pass: None) -> None:
    p = write(tmp_path, "q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 -1\nq2 0 d3 3\n", "qrels.txt")
    q = read_qrels(p)
    assert qrows(q) == [("q1", "d1", 1), ("q1", "d2", 0), ("q2", "d1", -1), ("q2", "d3", 3)]
    assert q.rel.dtype == np.int64 and q.source == str(p)


def test_gzip_detected_by_magic_bytes_not_name(tmp_path: Path) -> None:
    text = b"q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 1.5 sys\n"
    disguised = tmp_path / "run.txt"  # gzip content, plain name
    disguised.write_bytes(gzip.compress(text))
    plain_named_gz = tmp_path / "run.txt.gz"  # plain content, .gz name
    plain_named_gz.write_bytes(text)
    expected = [("q1", "d1", 2.5), ("q1", "d2", 1.5)]
    assert rows(read_run(disguised)) == expected
    assert rows(read_run(plain_named_gz)) == expected
    messy = tmp_path / "messy.gz"
    messy.write_bytes(gzip.compress(b"# c\n" + text.replace(b" ", b"\t ")))
    assert rows(read_run(messy)) == expected
    q = tmp_path / "qrels.gz"
    q.write_bytes(gzip.compress(b"q1 0 d1 2\n"))
    assert qrows(read_qrels(q)) == [("q1", "d1", 2)]


def test_corrupt_gzip(tmp_path: Path) -> None:
    p = write(tmp_path, b"\x1f\x8b" + b"not really gzip" * 10)
    with pytest.raises(InputError) as e:
        read_run(p)
    expect(e, p, None, None, "cannot read the file")


def test_lone_cr_is_refused(tmp_path: Path) -> None:
    """trec_eval reads a lone CR as a blank inside the line, other tools as a line end: refused
    (only \\n ends a line, so both lines here are line 1)."""
    p = write(tmp_path, b"q1 Q0 d1 1 2.5 s\rq1 Q0 d2 2 x s\r")
    with pytest.raises(InputError) as e:
        read_run(p)
    expect(e, p, 1, None, "carriage return")


def test_utf8_byte_order_mark_is_skipped(tmp_path: Path) -> None:
    p = write(tmp_path, b"\xef\xbb\xbfq1 Q0 d1 1 2.5 sys\n")
    assert rows(read_run(p)) == [("q1", "d1", 2.5)]


def test_extra_run_fields_are_ignored_with_a_warning(tmp_path: Path) -> None:
    p = write(tmp_path, "q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 1.5 sys junk here\n")
    with pytest.warns(RagmeterWarning, match=r"run\.txt:2: 1 line\(s\) have text after the"):
        run = read_run(p)
    assert rows(run) == [("q1", "d1", 2.5), ("q1", "d2", 1.5)]


# -- trec_eval's own files with comments ----------------------------------------------------------
@pytest.fixture
def peer() -> Path:
    d = peer_data_dir()
    if d is None:
        # justified: trec_eval's files live in shared/, outside the repo; CI always has them
        pytest.skip(SKIP_REASON)
    return d


def test_trec_eval_comment_files(peer: Path) -> None:
    # the same judgements, except that one doc id carries a '#' (data, not a comment)
    expected = [
        (q, "CR#93E-1860" if d == "CR93E-1860" else d, r)
        for q, d, r in qrows(read_qrels(peer / "qrels.test"))
    ]
    assert qrows(read_qrels(peer / "qrels.test.with-comments")) == expected
    run = read_run(peer / "results.comment.test")
    assert len(run) == 30100 and "#" in run.doc[0].as_py()  # '#' inside ids is data
    q = read_qrels(peer / "qrels.comment.test")
    assert len(q) == 5890 and q.doc[0].as_py() == "msmarco_v2.1_doc_00_880019750#4_1633802806"


def test_trec_eval_files_match_a_plain_split(peer: Path) -> None:
    for name, is_run in [
        ("results.test", True),
        ("results.trunc", True),
        ("qrels.rel_level", False),
    ]:
        ref = []
        for line in (peer / name).read_text().splitlines():
            t = line.split()
            ref.append((t[0], t[2], float(t[4]) if is_run else int(t[3])))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RagmeterWarning)  # results.trunc has trailing junk
            got = rows(read_run(peer / name)) if is_run else qrows(read_qrels(peer / name))
        assert got == ref, name


# -- errors: file, line and field ---------------------------------------------------------------
def expect(
    exc: pytest.ExceptionInfo[InputError],
    path: Path,
    line: int | None,
    field: str | None,
    words: str,
) -> None:
    err = exc.value
    assert err.path == str(path)
    assert err.line == line
    assert err.field == field
    where = f"{path}:{line}" if line else str(path)
    assert str(err).startswith(where), str(err)
    assert words in str(err), str(err)


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(InputError) as e:
        read_run(tmp_path / "nope.txt")
    expect(e, tmp_path / "nope.txt", None, None, "file not found")
    with pytest.raises(InputError) as e:
        read_run(tmp_path)
    expect(e, tmp_path, None, None, "not a regular file")
    with pytest.raises(InputError) as e:
        read_run(FIX / "empty.run")
    expect(e, FIX / "empty.run", None, None, "the file is empty")
    with pytest.raises(InputError) as e:
        read_qrels(FIX / "comments_only.run")
    expect(e, FIX / "comments_only.run", None, None, "no data lines")
    gz = tmp_path / "empty.gz"
    gz.write_bytes(gzip.compress(b""))
    with pytest.raises(InputError, match="the file is empty"):
        read_run(gz)


def test_wrong_column_count() -> None:
    with pytest.raises(InputError) as e:
        read_run(FIX / "short_line.run")
    expect(
        e, FIX / "short_line.run", 3, None, "expected 6 fields (qid Q0 doc rank score tag), found 5"
    )


def test_qrels_with_extra_field_is_an_error(tmp_path: Path) -> None:
    p = write(tmp_path, "q1 0 d1 1\nq1 0 d2 1 extra\n", "qrels.txt")
    with pytest.raises(InputError) as e:
        read_qrels(p)
    expect(e, p, 2, None, "expected 4 fields (qid iter doc rel), found 5")


def test_non_numeric_score() -> None:
    with pytest.raises(InputError) as e:
        read_run(FIX / "bad_score.run")
    expect(e, FIX / "bad_score.run", 2, "score", "score 'high' is not a number")


@pytest.mark.parametrize("token", ["NaN", "nan", "inf", "-Infinity", "1e400"])
@pytest.mark.parametrize("messy", [False, True])
def test_nan_and_inf_scores(tmp_path: Path, token: str, messy: bool) -> None:
    text = f"q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 1.5 sys\nq1 Q0 d3 3 {token} sys\n"
    if messy:  # a comment line first: the columnar parse loses lines, the line pass finds it
        text = "q1 Q0 d0 0 9 sys\n# c\n" + text
    p = write(tmp_path, text)
    with pytest.raises(InputError) as e:
        read_run(p)
    line = 5 if messy else 3
    expect(e, p, line, "score", "score")
    assert any(w in str(e.value) for w in ("NaN", "inf", "too large")), str(e.value)


def test_nan_fixture() -> None:
    with pytest.raises(InputError) as e:
        read_run(FIX / "nan_score.run")
    expect(e, FIX / "nan_score.run", 3, "score", "score is NaN")


@pytest.mark.parametrize("messy", [False, True])
def test_non_integer_rel(tmp_path: Path, messy: bool) -> None:
    if messy:
        p = write(tmp_path, "# c\n" + (FIX / "bad_rel.qrels").read_text(), "q.txt")
        line = 3
    else:
        p, line = FIX / "bad_rel.qrels", 2
    with pytest.raises(InputError) as e:
        read_qrels(p)
    expect(e, p, line, "rel", "rel '1.5' is not an integer grade")


def test_every_bad_line_is_reported(tmp_path: Path) -> None:
    p = write(tmp_path, "q Q0 d1 1 x t\nq Q0 d2 2 1 t\nq Q0 d3 3 y t\nq Q0 d4 4\n")
    with pytest.raises(ValidationError) as e:
        read_run(p)
    assert [(pr.line, pr.field) for pr in e.value.problems] == [
        (1, "score"),
        (3, "score"),
        (4, None),
    ]
    assert f"{p}:3: field 'score': score 'y' is not a number" in str(e.value)


def test_invalid_utf8(tmp_path: Path) -> None:
    p = write(tmp_path, b"q1 Q0 d1 1 2.5 sys\nq1 Q0 d\xff 2 1.5 sys\n")
    with pytest.raises(InputError) as e:
        read_run(p)
    expect(e, p, 2, None, "not valid UTF-8")


def test_bad_duplicates_option() -> None:
    with pytest.raises(UsageError, match="duplicates must be 'best' or 'error'"):
        read_run(FIX / "duplicate.run", duplicates="first")


# -- duplicates ---------------------------------------------------------------------------------
@pytest.mark.parametrize("messy", [False, True])
def test_duplicate_doc_keeps_best_and_warns(tmp_path: Path, messy: bool) -> None:
    text = (FIX / "duplicate.run").read_text()
    p = write(tmp_path, text.replace(" ", "\t ") if messy else text)
    with pytest.warns(RagmeterWarning) as w:
        run = read_run(p)
    msg = str(w[0].message)
    assert msg.startswith(f"{p}:4: 1 duplicate row(s)") and "also at line 1" in msg, msg
    assert rows(run) == [("q1", "d2", 1.5), ("q1", "d3", 0.5), ("q1", "d1", 3.5), ("q2", "d1", 0.5)]


def test_duplicate_doc_error_mode() -> None:
    with pytest.raises(InputError) as e:
        read_run(FIX / "duplicate.run", duplicates="error")
    expect(
        e, FIX / "duplicate.run", 4, "doc", "document 'd1' in query 'q1' is listed more than once"
    )


def test_duplicate_tie_keeps_first_row(tmp_path: Path) -> None:
    p = write(tmp_path, "q Q0 a 1 1 first\nq Q0 b 2 0.5 x\nq Q0 a 3 1 second\n")
    with pytest.warns(RagmeterWarning, match=":3:"):
        assert rows(read_run(p)) == [("q", "a", 1.0), ("q", "b", 0.5)]


@pytest.mark.parametrize("grouped", [True, False])
def test_duplicates_across_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grouped: bool
) -> None:
    """Tiny parse blocks: duplicates within, across and far apart from block edges are found."""
    monkeypatch.setattr(_trec_columns, "BLOCK_SIZE", 256)
    monkeypatch.setattr(_trec_fast, "BLOCK_SIZE", 256)
    lines = [f"q{q} Q0 d{d} {d} {100 - d} s\n" for q in range(6) for d in range(40)]
    if not grouped:
        lines = lines[::2] + lines[1::2]
    clean = write(tmp_path, "".join(lines), "clean.txt")
    assert len(read_run(clean, duplicates="error")) == len(lines)
    for pos in (5, 30, 41, 120, 239):  # a repeat of q0/d0: same block, next block, far
        dup = [*lines[:pos], "q0 Q0 d0 0 1000 s\n", *lines[pos:]]
        p = write(tmp_path, "".join(dup), f"dup{pos}.txt")
        with pytest.raises(InputError) as e:
            read_run(p, duplicates="error")
        assert e.value.line == pos + 1, e.value  # the original q0/d0 is line 1
        with pytest.warns(RagmeterWarning):
            assert len(read_run(p)) == len(lines)


def test_qrels_identical_repeat_warns(tmp_path: Path) -> None:
    p = write(tmp_path, "q1 0 d1 1\nq1 0 d2 0\nq1 0 d1 1\n", "q.txt")
    with pytest.warns(RagmeterWarning, match=r"q\.txt:3: 1 repeated judgement"):
        assert qrows(read_qrels(p)) == [("q1", "d1", 1), ("q1", "d2", 0)]


def test_qrels_conflicting_grades() -> None:
    with pytest.raises(InputError) as e:
        read_qrels(FIX / "conflict.qrels")
    expect(
        e,
        FIX / "conflict.qrels",
        3,
        "rel",
        (
            "document 'd1' in query 'q1' is judged twice with different grades "
            "(1 at line 1, 2 at line 3)"
        ),
    )


# -- writers ------------------------------------------------------------------------------------
def test_write_run_engine_order_and_ranks(tmp_path: Path) -> None:
    run = {"q2": {"a": 1.0}, "q1": {"a": 1.0, "c": 1.0, "b": 2.0, "z": 0.5}}
    p = tmp_path / "out.run"
    write_run(run, p)
    assert p.read_text().splitlines() == [
        "q1 Q0 b 1 2 ragmeter",
        "q1 Q0 c 2 1 ragmeter",
        "q1 Q0 a 3 1 ragmeter",
        "q1 Q0 z 4 0.5 ragmeter",
        "q2 Q0 a 1 1 ragmeter",
    ]
    write_run(read_run(p), tmp_path / "again.run", tag="bm25")
    assert (tmp_path / "again.run").read_text().splitlines()[0] == "q1 Q0 b 1 2 bm25"
    write_run(read_run(p), tmp_path / "named.run")
    assert (tmp_path / "named.run").read_text().split()[5] == "out.run"


def test_writers_gzip_by_extension(tmp_path: Path) -> None:
    write_run({"q": {"d": 0.25}}, tmp_path / "r.txt.gz")
    write_qrels({"q": {"d": 2}}, tmp_path / "q.txt.gz")
    assert (tmp_path / "r.txt.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert gzip.decompress((tmp_path / "q.txt.gz").read_bytes()) == b"q 0 d 2\n"
    assert rows(read_run(tmp_path / "r.txt.gz")) == [("q", "d", 0.25)]


@pytest.mark.parametrize(
    "bad",
    [
        {"q": {"a b": 1.0}},
        {"q": {"": 1.0}},
        {"#q": {"a": 1.0}},
        {"q": {"a\tb": 1.0}},
        {"q": {"a": float("nan")}},
    ],
)
def test_write_run_refuses_what_trec_cannot_hold(tmp_path: Path, bad: dict) -> None:
    with pytest.raises(InputError):
        write_run(bad, tmp_path / "x.run")


def test_write_qrels_round_trip(tmp_path: Path) -> None:
    qrels = {"q2": {"b": 0, "a": 3}, "q1": {"x": -1}}
    write_qrels(qrels, tmp_path / "q.txt")
    assert (tmp_path / "q.txt").read_text() == "q1 0 x -1\nq2 0 a 3\nq2 0 b 0\n"
    assert sorted(qrows(read_qrels(tmp_path / "q.txt"))) == [
        ("q1", "x", -1),
        ("q2", "a", 3),
        ("q2", "b", 0),
    ]


IDS = st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp")), min_size=1, max_size=10
).filter(lambda s: not s.startswith("#"))
SCORES = st.floats(allow_nan=False, allow_infinity=False)


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    run=st.dictionaries(
        IDS, st.dictionaries(IDS, SCORES, min_size=1, max_size=6), min_size=1, max_size=4
    )
)
def test_hypothesis_round_trip(tmp_path: Path, run: dict[str, dict[str, float]]) -> None:
    p = tmp_path / "h.run"
    write_run(run, p)
    back = read_run(p, duplicates="error")
    got = {(q, d): s.hex() for q, d, s in rows(back)}
    assert got == {(q, d): float(s).hex() for q, docs in run.items() for d, s in docs.items()}


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_hypothesis_any_whitespace_reads_alike(tmp_path: Path, data: st.DataObject) -> None:
    """Random separators, indentation, blank and comment lines never change what is read."""
    table = data.draw(
        st.lists(
            st.tuples(IDS, IDS, SCORES), min_size=1, max_size=8, unique_by=lambda r: (r[0], r[1])
        )
    )
    sep = st.sampled_from([" ", "\t", "  ", " \t", "\t\t "])
    out = []
    for q, d, s in table:
        if data.draw(st.booleans()):
            out.append(data.draw(st.sampled_from(["", "  ", "# note", "\t# x y z 1 2 3"])))
        f = [q, "Q0", d, "1", repr(s), "tag"]
        line = data.draw(st.sampled_from(["", " ", "\t"])) + f[0]
        for field in f[1:]:
            line += data.draw(sep) + field
        out.append(line + data.draw(st.sampled_from(["", " ", "\t", "\r"])))
    p = tmp_path / "w.run"
    p.write_text("\n".join(out) + "\n")
    expected = [(q, d, s.hex()) for q, d, s in table]
    assert [(q, d, s.hex()) for q, d, s in rows(read_run(p))] == expected
    # the line-by-line pass (used for errors) reads exactly the same
    parsed = _trec_lines.parse_lines(open_source(p), RUN_LAYOUT)
    got = zip(parsed.qid.to_pylist(), parsed.doc.to_pylist(), parsed.value.tolist(), strict=True)
    assert [(q, d, s.hex()) for q, d, s in got] == expected


# -- the fast path for clean runs (_trec_fast) --------------------------------------------------
def fast(path: Path) -> list[tuple[str, str, float]]:
    parsed = _trec_fast.parse_clean_run(open_source(path), RUN_LAYOUT)
    assert not parsed.maybe_duplicates
    return list(
        zip(parsed.qid.to_pylist(), parsed.doc.to_pylist(), parsed.value.tolist(), strict=True)
    )


def test_fast_path_reads_a_clean_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_trec_fast, "BLOCK_SIZE", 256)  # many blocks, queries straddling them
    lines = [
        f"q{q} Q0 doc-{q}-{d}-long-id {d} {1.0 / (d + 1)!r} tag\n"
        for q in range(20)
        for d in range(15)
    ]
    p = write(tmp_path, "".join(lines))
    expected = [
        (f"q{q}", f"doc-{q}-{d}-long-id", 1.0 / (d + 1)) for q in range(20) for d in range(15)
    ]
    assert fast(p) == expected
    assert fast(write(tmp_path, "".join(lines)[:-1], "no-final-newline.txt")) == expected
    with pytest.raises(Unclean):  # lone CR line ends are refused (see _trec_bytes)
        fast(write(tmp_path, "".join(lines).replace("\n", "\r"), "cr.txt"))
    assert fast(write(tmp_path, gzip.compress("".join(lines).encode()), "run.gz")) == expected
    assert fast(write(tmp_path, b"\xef\xbb\xbf" + "".join(lines).encode(), "bom.txt")) == expected
    interleaved = write(tmp_path, "".join(lines[::2] + lines[1::2]), "interleaved.txt")
    assert sorted(fast(interleaved)) == sorted(expected)


def test_read_run_takes_the_fast_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*a: object, **k: object) -> None:
        raise AssertionError("a slower parser ran on a clean run")

    monkeypatch.setattr(_trec_columns, "_parse", boom)
    monkeypatch.setattr(_trec_lines, "parse_lines", boom)
    p = write(tmp_path, "q1 Q0 d1 1 2.5 s\nq1 Q0 d2 2 1.5 s\nq0 Q0 d1 1 0.5 s\n")
    assert rows(read_run(p)) == [("q1", "d1", 2.5), ("q1", "d2", 1.5), ("q0", "d1", 0.5)]


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ("q1 Q0 d1 1 0.5 s\nq1 Q0 d2  0.4 s\n", 2, None),  # empty rank field: 5 fields
        ("q1 Q0 d1 1 0.5 s\nq1 Q0 d2 2 0.4 \n", 2, None),  # trailing space: empty tag
        ("q1 Q0 d1 1 0.5 s\n q1 Q0 d2 2 0.4\n", 2, None),  # leading space: empty qid
        ("q1 Q0 d1 1 0.5 s\nq1 Q0 d2 2 0.4\n", 2, None),  # 5 fields
        ("q1 Q0 d1 1 0.5 s\nq1 Q0 d2 2 nan s\n", 2, "score"),
    ],
)
def test_fast_path_guards(tmp_path: Path, text: str, line: int, field: str | None) -> None:
    """Each file the fast path cannot vouch for is refused by it, and read_run still names the
    line (the general parsers take over; a non-finite score is reported by the fast path)."""
    p = write(tmp_path, text)
    if "nan" not in text:
        with pytest.raises(Unclean):
            _trec_fast.parse_clean_run(open_source(p), RUN_LAYOUT)
    with pytest.raises(InputError) as e:
        read_run(p)
    assert e.value.line == line and e.value.path == str(p), e.value
    if field:
        assert e.value.field == field, e.value


@pytest.mark.parametrize(
    "text",
    [
        "q1 Q0 d1 1 0.5 s\r\nq1 Q0 d2 2 0.4 s\r\n",  # CRLF
        "q1 Q0 d1 1 0.5 s\n# a comment\nq1 Q0 d2 2 0.4 s\n",
        "q1 Q0 d1 1 0.5 s\n\nq1 Q0 d2 2 0.4 s\n",  # blank line
        "q1 Q0 d1 1 0.5 s\nq1 Q0 d2 2 0.4 s\x0c\n",  # form feed ends a field
    ],
)
def test_fast_path_hands_over_files_it_cannot_vouch_for(tmp_path: Path, text: str) -> None:
    p = write(tmp_path, text)
    with pytest.raises(Unclean):
        _trec_fast.parse_clean_run(open_source(p), RUN_LAYOUT)
    assert rows(read_run(p)) == [("q1", "d1", 0.5), ("q1", "d2", 0.4)]


def test_fast_path_tab_inside_a_skipped_field(tmp_path: Path) -> None:
    """Split on spaces the line has 6 fields, split on whitespace 7: whitespace wins, and the
    columns are shifted (rank 'd2'), so the line is refused rather than read as doc 'x'."""
    p = write(tmp_path, "q1 Q0 d1 1 0.5 s\nq1 Q0\tx d2 1 0.4 s\n")
    with pytest.raises(Unclean):
        _trec_fast.parse_clean_run(open_source(p), RUN_LAYOUT)
    with pytest.raises(InputError) as e:
        read_run(p)
    expect(e, p, 2, None, "the rank 'd2' is not an integer")


def test_fast_path_non_ascii_ids(tmp_path: Path) -> None:
    p = write(tmp_path, "q\u00e9 Q0 d\u00fc 1 0.5 s\nq\u00e9 Q0 d\u00fc\u00fc 2 0.4 s\n")
    assert fast(p) == [("q\u00e9", "d\u00fc", 0.5), ("q\u00e9", "d\u00fc\u00fc", 0.4)]


def test_string_hashes_agree_across_widths_and_rarely_collide() -> None:
    rng = np.random.default_rng(7)
    alphabet = np.array(list("abcdefghij0123456789_-#"))
    ids = sorted({"".join(rng.choice(alphabet, rng.integers(1, 30))) for _ in range(20000)})
    h = string_hashes(pa_strings(ids))
    assert len(np.unique(h)) == len(ids)
    short = [i for i in ids if len(i) <= 9]  # same strings, padded to 16 instead of 32 bytes
    assert np.array_equal(string_hashes(pa_strings(short)), h[[ids.index(i) for i in short]])
    pairs = pair_hashes(pa_strings(["q1", "q1", "q2"]), pa_strings(["d", "d", "d"]))
    assert pairs is not None and pairs[0] == pairs[1] != pairs[2]


def pa_strings(values: list[str]):  # type: ignore[no-untyped-def]
    import pyarrow as pa

    return pa.array(values, type=pa.string())


# -- the fast path's columns, filled block by block ----------------------------------------------
def _random_file(rng: np.random.Generator, qrels: bool) -> tuple[str, list[tuple[str, str, str]]]:
    """A clean file (one space between fields) of contiguous queries with ids of uneven lengths
    (some non-ASCII), and its rows; a duplicate (qid, doc) pair in some of them."""
    alphabet = np.array(list("abcxyz0123456789_-#\u00e9\u4e2d"))
    rows: list[tuple[str, str, str]] = []
    for q in range(int(rng.integers(1, 40))):
        qid = f"q{q}" + "".join(rng.choice(alphabet, int(rng.integers(0, 12))))
        docs = {"".join(rng.choice(alphabet, int(rng.integers(1, 25)))) for _ in range(30)}
        for d in sorted(docs)[: int(rng.integers(1, 30))]:
            value = str(int(rng.integers(-2, 4))) if qrels else repr(float(rng.normal()))
            rows.append((qid, d, value))
    if rng.random() < 0.3:  # a repeated pair, right after its first row or far from it
        at = int(rng.integers(0, len(rows)))
        qid, doc, _ = rows[at]
        end = max(i for i, r in enumerate(rows) if r[0] == qid)
        rows.insert(int(rng.integers(at + 1, end + 2)), (qid, doc, "1"))
    text = "".join(
        f"{q} 0 {d} {v}\n" if qrels else f"{q} Q0 {d} {i} {v} tag\n"
        for i, (q, d, v) in enumerate(rows)
    )
    return text, rows


@pytest.mark.parametrize("seed", range(40))
def test_fast_path_columns_equal_the_line_pass_over_many_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Property over seeds: the fast path's columns, copied block by block into place by the
    workers (blocks of a few rows to one block), are the line-by-line parser's exactly, with
    every doc's hash, every query run's first row, and a duplicate found whenever there is one."""
    from ragmeter.io._trec_format import QRELS as QRELS_LAYOUT

    rng = np.random.default_rng(seed)
    qrels = bool(seed % 2)
    layout = QRELS_LAYOUT if qrels else RUN_LAYOUT
    monkeypatch.setattr(_trec_fast, "BLOCK_SIZE", int(rng.choice([256, 512, 2048, 1 << 20])))
    text, expected = _random_file(rng, qrels)
    p = write(tmp_path, text)
    parsed = _trec_fast.parse_clean_run(open_source(p), layout)
    lines = _trec_lines.parse_lines(open_source(p), layout)
    assert parsed.qid.to_pylist() == lines.qid.to_pylist() == [r[0] for r in expected]
    assert parsed.doc.to_pylist() == lines.doc.to_pylist() == [r[1] for r in expected]
    assert parsed.value.dtype == lines.value.dtype
    assert np.array_equal(parsed.value, lines.value)
    assert str(parsed.qid.type) == str(parsed.doc.type) == "string"
    assert np.array_equal(parsed.doc_hashes, string_hashes(lines.doc))
    qids = [r[0] for r in expected]
    runs = [i for i in range(len(qids)) if i == 0 or qids[i] != qids[i - 1]]
    assert parsed.qid_starts is not None and parsed.qid_starts.tolist() == runs
    pairs = [(q, d) for q, d, _ in expected]
    if len(set(pairs)) < len(pairs):
        assert parsed.maybe_duplicates
    else:  # no false alarm on these small files (a false one would only cost the exact check)
        assert not parsed.maybe_duplicates


@pytest.mark.parametrize("seed", range(20))
def test_run_pair_keys_match_combined_hashes(seed: int) -> None:
    """Property over seeds: the per-run pair keys are equal exactly where ``combine_hashes`` are
    (its finaliser is one-to-one), on structured ids that collide without mixing."""
    from ragmeter.io._duplicates import combine_hashes, mix, run_pair_keys

    rng = np.random.default_rng(seed)
    n_runs = int(rng.integers(1, 300))
    lengths = rng.integers(1, 20, n_runs)
    queries = [f"q{int(rng.integers(0, 50))}" for _ in range(n_runs)]
    docs = [f"J{int(rng.integers(0, 40))}" for _ in range(int(lengths.sum()))]
    hq = string_hashes(pa_strings(queries))
    hd = string_hashes(pa_strings(docs))
    assert hq is not None and hd is not None
    mixed = mix(hq.copy())
    keys = run_pair_keys(mixed, lengths, hd)
    assert np.array_equal(mixed, mix(hq.copy()))  # the query hashes are left unchanged
    combined = combine_hashes(np.repeat(mixed, lengths), hd)
    same_keys = keys[:, None] == keys[None, :]
    assert np.array_equal(same_keys, combined[:, None] == combined[None, :])
    pairs = list(zip(np.repeat(queries, lengths).tolist(), docs, strict=True))
    same_pairs = np.array([[a == b for b in pairs] for a in pairs])
    assert np.array_equal(same_keys, same_pairs)  # no collision on these ids


def test_string_hashes_into_a_given_array() -> None:
    ids = pa_strings(["a", "bb", "a-much-longer-id-than-eight", ""])
    out = np.zeros(6, dtype=np.uint64)
    got = string_hashes(ids, out[1:5])
    assert got is not None and np.shares_memory(got, out)
    assert np.array_equal(out[1:5], string_hashes(ids)) and out[0] == out[5] == 0


def test_string_column_fills_sliced_blocks_in_any_order() -> None:
    """Blocks that are slices of larger arrays (offsets not starting at 0), filled out of order
    (as worker threads finish), give the concatenation."""
    import pyarrow as pa

    whole = pa_strings(["x", "abc", "", "d\u00e9", "efgh", "i", "jk"])
    chunks = [whole.slice(1, 2), whole.slice(3, 0), whole.slice(3, 4)]
    column = _trec_fast.StringColumn(chunks)
    for b in (2, 0, 1):
        column.fill(b, chunks[b])
    got = column.array()
    assert got.type == pa.string()
    assert got.to_pylist() == ["abc", "", "d\u00e9", "efgh", "i", "jk"]
    got.validate(full=True)
