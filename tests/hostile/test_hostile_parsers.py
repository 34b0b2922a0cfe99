"""Hostile inputs for the parsers and ids (issue 11): TREC bytes, shifted columns, query and item
ids that match nothing, spans past what a chunking covers, chunk files with absurd offsets.

Each case test states what the reader did before (a silently wrong result or a traceback) and
asserts the clean outcome; the differential test feeds random bytes to every TREC parser path
and asserts they agree on every file: the same rows, or an error on the same lines.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter import InputError, RagmeterWarning, ValidationError, read_qrels, read_run
from ragmeter.io import _trec_check, _trec_columns, _trec_fast, _trec_lines, open_source
from ragmeter.io._trec_format import QRELS, RUN, Unclean


def write(tmp_path: Path, data: bytes | str, name: str = "run.txt") -> Path:
    p = tmp_path / name
    p.write_bytes(data.encode() if isinstance(data, str) else data)
    return p


def run_rows(run: Any) -> list[tuple[str, str, float]]:
    return list(zip(run.qid.to_pylist(), run.doc.to_pylist(), run.score.tolist(), strict=True))


# -- TREC bytes: both parsers read every byte alike, and refuse what trec_eval reads otherwise ---
def test_byte_order_mark_mid_file_is_an_error_naming_the_line(tmp_path: Path) -> None:
    """Before: ``cat a b`` of two BOM-prefixed runs put the second file's first row under the
    phantom query '\\ufeffq1' (R = 0 for its documents), silently."""
    p = write(tmp_path, b"\xef\xbb\xbfq1 Q0 d1 1 2.0 t\n\xef\xbb\xbfq1 Q0 d2 2 1.0 t\n")
    with pytest.raises(InputError) as e:
        read_run(p)
    assert e.value.line == 2 and "byte order mark" in str(e.value)
    q = write(tmp_path, b"q1 0 d1 1\n\xef\xbb\xbfq1 0 d2 1\n", "qrels.txt")
    with pytest.raises(InputError) as e:
        read_qrels(q)
    assert e.value.line == 2


def test_leading_byte_order_mark_is_still_skipped(tmp_path: Path) -> None:
    p = write(tmp_path, b"\xef\xbb\xbfq1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    assert run_rows(read_run(p)) == [("q1", "d1", 2.0), ("q1", "d2", 1.0)]


def test_lone_carriage_return_is_one_rule_in_every_parser(tmp_path: Path) -> None:
    """Before: inside a line the columnar parser read a lone CR as a space (one row) while the
    line-by-line parser read it as a line end (an error): refused by both now, naming line 2."""
    text = b"q1 Q0 d0 1 3.0 t\nq1 Q0 d1\r1 2.0 t\n"
    p = write(tmp_path, text)
    with pytest.raises(InputError) as e:
        read_run(p)
    assert e.value.line == 2 and "carriage return" in str(e.value)
    with pytest.raises(InputError) as slow:
        _trec_lines.parse_lines(open_source(p), RUN)
    assert slow.value.line == 2
    with pytest.raises(Unclean):
        _trec_columns._parse(
            _trec_columns._Normalising(open_source(p).open_binary()), open_source(p), RUN, " ", None
        )


def test_crlf_line_ends_are_still_read(tmp_path: Path) -> None:
    p = write(tmp_path, b"q1 Q0 d1 1 2.0 t\r\nq1 Q0 d2 2 1.0 t\r\n")
    assert run_rows(read_run(p)) == [("q1", "d1", 2.0), ("q1", "d2", 1.0)]


def test_nul_byte_in_an_id_is_an_error(tmp_path: Path) -> None:
    """Before: 'q1\\x00' was a query id of its own (trec_eval, reading C strings, sees 'q1')."""
    p = write(tmp_path, b"q1 Q0 d1 1 2.0 t\nq1\x00 Q0 d2 2 1.0 t\n")
    with pytest.raises(InputError) as e:
        read_run(p)
    assert e.value.line == 2 and "NUL" in str(e.value)


def test_doc_id_with_a_space_is_an_error_not_a_shifted_score(tmp_path: Path) -> None:
    """Before: 'doc one' gave doc 'doc', score 1.0 read from the rank field, and only a generic
    'extra fields ignored' warning."""
    p = write(tmp_path, "q1 Q0 d0 1 9.5 t\nq1 Q0 doc one 2 8.5 t\n")
    with pytest.raises(InputError) as e:
        read_run(p)
    assert e.value.line == 2 and "shifted" in str(e.value)
    numeric_tail = write(tmp_path, "q1 Q0 doc 7 2 8.5 t\n", "b.txt")  # rank '7' but tag '8.5'
    with pytest.raises(InputError, match=r"the tag '8\.5' is a number"):
        read_run(numeric_tail)


def test_trailing_text_after_the_tag_is_still_ignored(tmp_path: Path) -> None:
    """trec_eval's own results.trunc carries text after the tag: kept readable, with a warning."""
    p = write(tmp_path, "q1 Q0 d1 1 2.5 STANDARD more junk at\nq1 Q0 d2 2 1.5 STANDARD\n")
    with pytest.warns(RagmeterWarning, match="text after the 'tag' field"):
        assert run_rows(read_run(p)) == [("q1", "d1", 2.5), ("q1", "d2", 1.5)]


def test_bad_last_line_of_a_large_run_keeps_no_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the line-by-line pass kept every row of a 10M-line file before reporting its bad
    last line (1.7 GB); now a checking pass that keeps nothing finds it first."""
    kept: list[bool] = []
    real = _trec_lines.parse_lines

    def spy(src: Any, layout: Any, **kw: Any) -> Any:
        kept.append(kw.get("keep", True))
        return real(src, layout, **kw)

    monkeypatch.setattr(_trec_lines, "parse_lines", spy)
    body = "".join(f"q{i // 10} Q0 d{i} {i % 10 + 1} {1.0 / (i + 1)!r} t\n" for i in range(2000))
    p = write(tmp_path, body + "qX Q0 dX 1 notanumber t\n")
    with pytest.raises(InputError) as e:
        read_run(p)
    assert e.value.line == 2001 and e.value.field == "score"
    assert kept == [False]  # the row-keeping pass never ran


def test_tab_before_a_grade_past_the_sniffed_head_is_read(tmp_path: Path) -> None:
    """Found by the differential test. Before: a space-separated qrels file whose line after the
    first 64 KiB has a tab before the grade was split on spaces by the columnar parser, and the
    grade '\\t1' was reported as 'not an integer grade' (the line-by-line parser reads 1)."""
    body = "".join(f"q{i} 0 d{i} 1\n" for i in range(8000))  # > 64 KiB
    q = read_qrels(write(tmp_path, body + "q1 0 dX \t2\n", "qrels.txt"))
    assert (q.qid[-1].as_py(), q.doc[-1].as_py(), int(q.rel[-1])) == ("q1", "dX", 2)


# -- the differential property: every parser path agrees on random bytes ------------------------
_IDS = st.sampled_from(["q1", "q2", "d1", "d2", "d#3", "\u00e9", "1", "Q0", "0", "x" * 300])
_INTS = st.sampled_from(["1", "2", "0", "-1", "+3", "007"])
_FLOATS = st.sampled_from(["1", "-0", "2.5", ".5", "5.", "1e5", "-1.25E-3", "+3"])
_BAD_NUMS = st.sampled_from(
    ["1e999", "nan", "-Inf", "x", "0x10", "99999999999999999999", "1e", "#", "\u00e9"]
)
_JUNK = st.sampled_from(
    [
        *(b"\xef\xbb\xbf", b"\r", b"\r\n", b"\x00", b"\t", b"\x0b", b"\x0c", b"\xff", b"\xc3"),
        *(b"  ", b" ", b"#", b"\n", b"\n\n", b"x" * 5000),
    ]
)


@st.composite
def _trec_bytes(draw: st.DrawFn, width: int) -> bytes:
    """A run (width 6) or qrels (width 4) file: rows with varied separators, comment and blank
    lines, sometimes text after the last field, and a few hostile bytes injected anywhere."""
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.sampled_from([b"", b"# a comment", b"  \t"])))
            continue
        bad = draw(st.integers(0, 5)) == 0
        fields = [draw(_IDS), draw(_IDS), draw(_IDS), draw(_INTS)]  # qid iter doc rank|rel
        if width == 6:
            fields += [draw(_FLOATS), draw(st.sampled_from(["t", "t", "STANDARD", "1.5"]))]
        if bad:
            fields[draw(st.integers(3, width - 1))] = draw(_BAD_NUMS)
        if draw(st.integers(0, 7)) == 0:
            fields += draw(st.lists(_IDS, min_size=1, max_size=2))  # text after the last field
        line = b""
        for part in fields:
            sep = draw(st.sampled_from([b" ", b" ", b" ", b" ", b"\t", b"  ", b" \t"]))
            line += (sep if line else draw(st.sampled_from([b"", b"", b" "]))) + part.encode()
        lines.append(line)
    text = b"\n".join(lines) + draw(st.sampled_from([b"\n", b"\n", b"", b"\r\n"]))
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2, 3]))):  # hostile bytes, anywhere
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(_JUNK) + text[at:]
    if draw(st.booleans()):
        text = b"\xef\xbb\xbf" + text
    if draw(st.integers(0, 3)) == 0:  # every line ends in CRLF
        text = text.replace(b"\n", b"\r\n")
    return text


def _outcome(read: Any) -> tuple[Any, ...]:
    """('ok', rows, warnings) or ('error', [(line, field)...]) of one read."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            t = read()
        except ValidationError as e:
            return ("error", [(p.line, p.field) for p in e.problems])
        except InputError as e:
            return ("error", [(e.line, e.field)])
    cols = (t.qid.to_pylist(), t.doc.to_pylist(), np.asarray(t.value).tolist())
    texts = sorted(str(x.message) for x in w if issubclass(x.category, RagmeterWarning))
    return ("ok", cols, texts)


def _paths(src: Any, layout: Any) -> dict[str, Any]:
    """Each columnar path alone (each may refuse with Unclean)."""
    from ragmeter.io._trec_bytes import GuardedStream

    out = {
        "direct": lambda: _trec_columns._parse(
            GuardedStream(src.arrow_stream()), src, layout, " ", _trec_columns.rows_are_lines
        ),
        "normalised": lambda: _trec_columns._parse(
            _trec_columns._Normalising(src.open_binary()), src, layout, " ", None
        ),
    }
    if layout is RUN:
        out["fast"] = lambda: _trec_fast.parse_clean_run(src, layout)
    return out


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_every_trec_parser_path_agrees_on_random_bytes(tmp_path: Path, data: st.DataObject) -> None:
    is_run = data.draw(st.booleans())
    layout = RUN if is_run else QRELS
    text = data.draw(_trec_bytes(6 if is_run else 4))
    p = tmp_path / "f.txt"
    p.write_bytes(text)
    if not text:
        with pytest.raises(InputError, match="empty"):
            (read_run if is_run else read_qrels)(p)
        return
    from ragmeter.io import _trec_read
    from ragmeter.io._duplicates import Table

    def reference() -> Any:  # the line-by-line parser alone, with the same duplicate handling
        parsed = _trec_lines.parse_lines(open_source(p), layout)
        return _dedupe(p, layout)(Table(parsed.qid, parsed.doc, parsed.value), parsed.line_of)

    expected = _outcome(reference)
    got = _outcome(lambda: _trec_read._read(open_source(p), layout, _dedupe(p, layout)))
    assert got == expected, text
    # the checking pass (blocks vouched for are skipped) finds exactly the parser's problems
    block = data.draw(st.sampled_from([1 << 22, 7, 64]))
    with mock.patch.object(_trec_check, "BLOCK_SIZE", block):
        checked = _outcome(lambda: _check_only(p, layout))
    assert checked[:2] == _outcome(lambda: _parse_only(p, layout))[:2], (block, text)
    src = open_source(p)
    for name, parse in _paths(src, layout).items():
        try:
            parsed = _outcome(parse)
        except Unclean:
            continue
        if expected[0] == "ok":
            assert parsed[0] == "ok", (name, text)
            assert parsed[1] == _undeduped(p, layout), (name, text)
        else:  # a columnar path may report only its own kind of problem, on the same lines
            assert parsed[0] == "error" and set(parsed[1]) <= set(expected[1]), (name, text)


def _dedupe(p: Path, layout: Any) -> Any:
    from ragmeter.io._duplicates import dedupe_qrels, dedupe_run

    def dedupe(t: Any, line_of: Any) -> Any:
        if layout is RUN:
            return dedupe_run(t, policy="best", source=str(p), line_of=line_of)
        return dedupe_qrels(t, source=str(p), line_of=line_of)

    return dedupe


def _undeduped(p: Path, layout: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = _trec_lines.parse_lines(open_source(p), layout)
    return (t.qid.to_pylist(), t.doc.to_pylist(), np.asarray(t.value).tolist())


# -- ids that match nothing: refused, or counted loudly -----------------------------------------
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"
GOLDEN, CHUNKS = EXAMPLE / "golden.jsonl", EXAMPLE / "runs" / "chunks-300.jsonl"
BASELINE = EXAMPLE / "runs" / "baseline" / "run.trec"


def _prefixed_run(tmp_path: Path, every: int) -> Path:
    """The baseline run with 'X' before the query id of every ``every``-th line."""
    lines = BASELINE.read_text().splitlines(keepends=True)
    out = ["X" + line if i % every == 0 else line for i, line in enumerate(lines)]
    return write(tmp_path, "".join(out), "prefixed.trec")


def test_span_run_whose_query_ids_match_no_question_is_refused(tmp_path: Path) -> None:
    """Before: R = 0.000 for every question, no warning (80 questions 'missing from the run')."""
    from ragmeter.labels import evaluate_spans_files

    with pytest.raises(InputError) as e:
        evaluate_spans_files([_prefixed_run(tmp_path, 1)], golden=GOLDEN, chunks=CHUNKS)
    assert e.value.field == "qid" and "none of the run's 90 query id(s)" in str(e.value)
    assert "'X24h-rule-advance'" in str(e.value)


def test_span_run_with_some_unknown_query_ids_warns_with_counts(tmp_path: Path) -> None:
    """Before: half the rows went to phantom queries, silently."""
    from ragmeter.labels import evaluate_spans_files

    with pytest.warns(RagmeterWarning, match=r"90 of the run's 180 query id\(s\) are not queries"):
        evaluate_spans_files([_prefixed_run(tmp_path, 2)], golden=GOLDEN, chunks=CHUNKS)


def test_imported_byo_run_for_other_questions_is_refused(tmp_path: Path) -> None:
    """An experiment's ``run = ...`` variant is scored by evaluate_spans: same refusal."""
    from ragmeter.chunking import load_chunking
    from ragmeter.data.golden import load_golden
    from ragmeter.labels import evaluate_spans
    from ragmeter.retrieval import read_byo_run

    chunking = load_chunking(CHUNKS)
    recs = [{"qid": f"other-{i}", "chunk": chunking.ids[i], "score": 1.0} for i in range(3)]
    p = write(tmp_path, "".join(json.dumps(r) + "\n" for r in recs), "byo.jsonl")
    imported = read_byo_run(p, chunking=chunking)
    with pytest.raises(InputError, match="none of the run's 3 query id"):
        evaluate_spans(load_golden(GOLDEN), chunking, imported.run)


def test_item_run_against_qrels_with_no_common_query_is_refused() -> None:
    from ragmeter import evaluate

    with pytest.raises(InputError, match="none of the run's 1 query id"):
        evaluate({"q1": {"d1": 1}}, {"Q1": {"d1": 1.0}}, "R@10")


def test_chunk_run_against_document_qrels_warns_about_the_id_spaces() -> None:
    """Before: every score 0.000 and nothing said (chunk ids are never document ids)."""
    from ragmeter import evaluate

    qrels = {"q1": {"fees": 1}, "q2": {"refunds": 2}}
    run = {"q1": {"fees#0-100": 2.0, "refunds#0-90": 1.0}, "q2": {"refunds#0-90": 1.0}}
    with pytest.warns(RagmeterWarning, match="ragmeter labels export") as w:
        ev = evaluate(qrels, run, "R@10")
    assert "none of the 2 item id(s) the run retrieves" in str(w[0].message)
    assert ev.aggregate["R@10"] == 0.0


# -- spans past the end of what a chunking covers -----------------------------------------------
def test_span_past_the_chunked_document_is_refused_without_a_corpus(tmp_path: Path) -> None:
    """Before: ``eval --golden --chunks`` without ``--corpus`` scored a span at 50000-50010 of a
    1560-character document as simply never found."""
    from ragmeter.labels import evaluate_spans_files

    questions = [json.loads(line) for line in GOLDEN.read_text().splitlines()]
    q = next(q for q in questions if q.get("evidence"))
    q["evidence"][0].update(start=50000, end=50010)
    q["evidence"][0].pop("text", None)
    golden = write(tmp_path, "".join(json.dumps(x) + "\n" for x in questions), "golden.jsonl")
    with pytest.raises(InputError) as e:
        evaluate_spans_files([BASELINE], golden=golden, chunks=CHUNKS)
    assert f"question {q['id']!r}: span 50000-50010" in str(e.value)
    assert "evidence[0].end" in str(e.value)


# -- chunk files with absurd offsets ------------------------------------------------------------
def _chunk_file(tmp_path: Path, **change: Any) -> Path:
    rows = [json.loads(line) for line in CHUNKS.read_text().splitlines()[:5]]
    rows[2].update(change)
    return write(tmp_path, "".join(json.dumps(r) + "\n" for r in rows), "chunks.jsonl")


@pytest.mark.parametrize("field", ["start", "end", "n_tokens"])
def test_huge_integer_in_a_chunk_file_is_a_clean_error(tmp_path: Path, field: str) -> None:
    """Before: OverflowError (Python int too large to convert to C long), a traceback."""
    from ragmeter.chunking import load_chunking

    p = _chunk_file(tmp_path, **{field: 10**30})
    with pytest.raises(InputError) as e:
        load_chunking(p)
    assert f"chunks.jsonl:3: field '{field}'" in str(e.value) and "out of range" in str(e.value)


def test_huge_unsigned_offset_in_a_parquet_chunk_file_is_a_clean_error(tmp_path: Path) -> None:
    """Before: a uint64 offset above 2**63 wrapped to a negative number."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ragmeter.chunking import load_chunking

    rows = [json.loads(line) for line in CHUNKS.read_text().splitlines()[:3]]
    cols = {c: [r[c] for r in rows] for c in ("id", "doc", "text")}
    table = pa.table(
        {
            "id": cols["id"],
            "doc": cols["doc"],
            "start": pa.array([0, 0, 2**63 + 5], pa.uint64()),
            "end": pa.array([r["end"] for r in rows], pa.uint64()),
            "text": cols["text"],
            "n_tokens": pa.array([r["n_tokens"] for r in rows], pa.int64()),
        }
    )
    p = tmp_path / "chunks.parquet"
    pq.write_table(table, p)
    with pytest.raises(InputError, match="field 'start': integer 9223372036854775813 is out"):
        load_chunking(p)


@pytest.mark.parametrize(
    ("change", "field"), [({"start": -5}, "start"), ({"start": 900, "end": 10}, "end")]
)
def test_negative_or_reversed_offsets_are_clean_errors(
    tmp_path: Path, change: dict[str, int], field: str
) -> None:
    from ragmeter.chunking import load_chunking

    with pytest.raises(InputError) as e:
        load_chunking(_chunk_file(tmp_path, **change))
    assert f"chunks.jsonl:3: field '{field}'" in str(e.value)


def _check_only(p: Path, layout: Any) -> Any:
    """The checking pass, shaped like a parse: an empty table when it finds no problem."""
    from ragmeter.io._duplicates import Table
    from ragmeter.io._trec_read import check_file

    check_file(open_source(p), layout)
    return Table(pa.array([], pa.string()), pa.array([], pa.string()), np.zeros(0))


def _parse_only(p: Path, layout: Any) -> Any:
    from ragmeter.io._duplicates import Table

    _trec_lines.parse_lines(open_source(p), layout)
    return Table(pa.array([], pa.string()), pa.array([], pa.string()), np.zeros(0))


# -- NaN / Infinity literals: not JSON, refused by the shared reader on every route -------------
@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_literal_in_a_json_document_names_line_column_and_field(
    tmp_path: Path, literal: str
) -> None:
    from ragmeter.io import read_json

    p = write(tmp_path, '{\n  "run": "a",\n  "n_queries": ' + literal + "\n}\n", "eval.json")
    with pytest.raises(InputError) as e:
        read_json(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}:3: field 'n_queries': {literal} at line 3, column 16 ")
    assert "not JSON" in msg


def test_nan_literal_in_an_evaluation_file_is_refused(tmp_path: Path) -> None:
    from ragmeter.metrics import Evaluation

    ev = {"run": "a", "metrics": ["R@5"], "n_queries": 1, "aggregate": {"R@5": 0.5}}
    text = json.dumps(ev).replace('"n_queries": 1', '"n_queries": NaN')
    with pytest.raises(InputError, match="field 'n_queries': NaN at line 1"):
        Evaluation.load(write(tmp_path, text, "eval.json"))


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_literal_in_a_jsonl_record_names_the_column(tmp_path: Path, literal: str) -> None:
    from ragmeter.io import iter_jsonl

    p = write(tmp_path, '{"a": 1}\n{"a": [1, ' + literal + "]}\n", "x.jsonl")
    with pytest.raises(InputError) as e:
        list(iter_jsonl(p))
    assert str(e.value).startswith(f"{p}:2: field 'a[1]': {literal} at column 11 ")


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=12),
        lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids),
        max_leaves=8,
    ),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1.5"]),
)
def test_only_a_constant_outside_strings_is_refused(value: Any, literal: str) -> None:
    """Strings may hold the words NaN and Infinity; a bare literal anywhere is refused."""
    from ragmeter.io._reading import _Bad, _make_decoder, _parse

    text = json.dumps({"s": "NaN -Infinity \\" + '"Infinity', "v": value, "x": None})
    assert _parse(text, _make_decoder(None)) == json.loads(text)  # words in strings: fine
    hostile = text[:-1] + f', "y": {literal}}}'
    if literal == "1.5":
        assert _parse(hostile, _make_decoder(None))["y"] == 1.5
        return
    with pytest.raises(_Bad) as e:
        _parse(hostile, _make_decoder(None))
    assert e.value.field == "y"
    assert e.value.message.startswith(f"{literal} at column {hostile.rindex(literal) + 1} ")


# -- JSONL runs and qrels: the columnar path keeps the shared reader's byte rules ----------------
_QREL = b'{"qid": "q1", "doc": "d1", "rel": 1}\n'
_RUNROW = b'{"qid": "q1", "doc": "d1", "score": 1.5}\n'


@pytest.mark.parametrize(
    ("line", "bad"),
    [
        (b'{"qid": "q\xe9", "doc": "d1", "X": 1}\n', 0xE9),  # in an id
        (b'{"qid": "q1", "doc": "d1", "X": 1, "note": "\xff"}\n', 0xFF),  # an ignored field
        (b'{"qid": "q1", "doc": "d1", "X": 1, "\xc3": 2}\n', 0xC3),  # an ignored key
    ],
)
@pytest.mark.parametrize("kind", ["run", "qrels"])
@pytest.mark.parametrize("first", [True, False])
def test_invalid_utf8_in_a_jsonl_run_or_qrels_names_offset_and_line(
    tmp_path: Path, line: bytes, bad: int, kind: str, first: bool
) -> None:
    from ragmeter.io.jsonl import read_qrels_jsonl, read_run_jsonl

    field, reader, good = (
        ("score", read_run_jsonl, _RUNROW) if kind == "run" else ("rel", read_qrels_jsonl, _QREL)
    )
    line = line.replace(b'"X"', f'"{field}"'.encode())
    at = line.index(bytes([bad]))
    good = b"" if first else good  # the bad line first, or after a good one
    p = write(tmp_path, good + line, "f.jsonl")
    with pytest.raises(InputError) as e:
        reader(p)
    assert str(e.value) == (
        f"{p}:{1 if first else 2}: not valid UTF-8: byte 0x{bad:02x} at byte offset "
        f"{len(good) + at} "
        f"(column {at + 1}); save the file as UTF-8"
    )


def test_invalid_utf8_jsonl_through_the_cli_is_exit_2(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ragmeter.cli import app

    qrels = write(tmp_path, b'{"qid": "q\xe9", "doc": "d1", "rel": 1}\n', "qrels.jsonl")
    run = write(tmp_path, _RUNROW, "base.jsonl")
    r = CliRunner().invoke(app, ["eval", str(qrels), str(run)])
    assert r.exit_code == 2, r.output
    assert "not valid UTF-8: byte 0xe9 at byte offset 10 (column 11)" in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.binary(min_size=0, max_size=6), min_size=1, max_size=4), st.data())
def test_columnar_and_line_reads_agree_on_any_bytes(
    tmp_path: Path, junk: list[bytes], data: st.DataObject
) -> None:
    """Random bytes in ids, ignored fields and keys: the JSONL reader (columnar first) and the
    line-by-line read give the same rows or the same error, never a raw exception."""
    from ragmeter.io._jsonl_read import QRELS_FIELDS, _read_lines, read_records

    rows = []
    for i, b in enumerate(junk):
        where = data.draw(st.sampled_from(["qid", "extra", "key"]))
        qid, extra, key = b"q%d" % i, b"x", b"note"
        if where == "qid":
            qid += b
        elif where == "extra":
            extra = b
        else:
            key = b or b"k"
        rows.append(
            b'{"qid": "' + qid + b'", "doc": "d", "rel": 1, "' + key + b'": "' + extra + b'"}\n'
        )
    p = write(tmp_path, b"".join(rows), "h.jsonl")
    src = open_source(p)

    def outcome(read: Any) -> Any:
        try:
            rec = read()
        except InputError as exc:
            return ("error", str(exc))
        return ("rows", rec.columns["qid"].to_pylist(), rec.columns["rel"].tolist())

    assert outcome(lambda: read_records(src, QRELS_FIELDS)) == outcome(
        lambda: _read_lines(src, QRELS_FIELDS)
    )
