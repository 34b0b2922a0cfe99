"""Question logs as CSV and as OpenInference span exports (ragmeter.data._traffic_formats):
the three shapes Arize Phoenix exports read the same, a CSV log samples like its JSONL twin,
logged context rides beside the question, and junk lines are reported, never raised on."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter import InputError, UsageError, ValidationError
from ragmeter.cli import app
from ragmeter.data import load_golden, read_log, sample_log
from ragmeter.data._traffic_formats import detect_format, question_text

FIX = Path(__file__).parents[1] / "fixtures" / "traffic"
SPANS = FIX / "phoenix_spans.jsonl"  # REST API shape, newest span first
NESTED = FIX / "phoenix_spans_nested.jsonl"  # legacy span JSON, nested attributes
FRAME = FIX / "phoenix_spans_dataframe.jsonl"  # get_spans_dataframe().to_json(lines=True)
LOG, LOG_CSV, GOLDEN = FIX / "log.jsonl", FIX / "log.csv", FIX / "golden.jsonl"
runner = CliRunner()

# the span fixtures (make_spans.py): 30 traces, 119 spans; 28 traces ask a question (one repeats
# another up to case and spaces), 2 are indexing traces of EMBEDDING spans only.


def _golden(*args: object) -> tuple[int, str, str]:
    r = runner.invoke(app, ["golden", *map(str, args)], env={"COLUMNS": "200"})
    return r.exit_code, r.stdout, r.stderr


def _raw_spans(path: Path = SPANS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _trace_of(question: str) -> list[dict[str, Any]]:
    """The REST-shape spans of the trace whose retriever was asked ``question``."""
    spans = _raw_spans()
    trace = next(
        s["context"]["trace_id"]
        for s in spans
        if s["span_kind"] == "RETRIEVER" and s["attributes"]["input.value"] == question
    )
    return [s for s in spans if s["context"]["trace_id"] == trace]


# --- OpenInference span exports ------------------------------------------------------------------


def test_the_three_phoenix_export_shapes_read_the_same() -> None:
    logs = [read_log(p) for p in (SPANS, NESTED, FRAME)]
    assert [log.format for log in logs] == ["openinference"] * 3
    records = [[line.record for line in log.lines] for log in logs]
    assert records[0] == records[1] == records[2]
    assert len(records[0]) == 28
    # traces in the order they started, though the REST file lists the newest span first
    assert records[0][0]["question"] == "How much is the change fee for a Standard fare?"
    assert records[0][-1]["question"] == "Can a group of 12 people book together?"
    for log in logs:
        assert len(log.notes) == 1 and log.notes[0].startswith("2 of 30 traces have no question")


def test_a_trace_gives_its_question_metadata_and_logged_context() -> None:
    by_q = {line.question: line.record for line in read_log(SPANS).lines}
    spans = _trace_of("What is the fee for a second checked bag?")
    root = next(s for s in spans if s["parent_id"] is None)
    retriever = next(s for s in spans if s["span_kind"] == "RETRIEVER")["attributes"]
    llm = next(s for s in spans if s["span_kind"] == "LLM")["attributes"]
    record = by_q["What is the fee for a second checked bag?"]
    assert record["trace_id"] == root["context"]["trace_id"]
    assert record["slice"] == "fees" and record["channel"] == "web"
    assert record["session_id"] == root["attributes"]["session.id"]
    assert record["user_id"] == root["attributes"]["user.id"]
    assert record["logged"] == {
        "retrieved": [
            {
                "id": retriever[f"retrieval.documents.{i}.document.id"],
                "content": retriever[f"retrieval.documents.{i}.document.content"],
                "score": retriever[f"retrieval.documents.{i}.document.score"],
            }
            for i in range(3)
        ],
        "answer": llm["llm.output_messages.0.message.content"],
    }
    assert next(iter(record)) == "question" and list(record)[-1] == "logged"


def test_question_from_json_input_agent_root_or_the_retriever() -> None:
    by_q = {line.question: line.record for line in read_log(SPANS).lines}
    # LangChain: the root's input.value is {"query": ...} (application/json); tags from tag.tags
    lc = by_q["What does it cost to change a Basic ticket?"]
    assert lc["tags"] == ["prod", "app"]
    root = next(
        s for s in _trace_of("What does it cost to change a Basic ticket?") if not s["parent_id"]
    )
    assert json.loads(root["attributes"]["input.value"]) == {
        "query": "What does it cost to change a Basic ticket?"
    }
    # an AGENT root
    assert "Do I pay a fee for seat selection?" in by_q
    # a root CHAIN with no input.value: the retriever's query is the question
    noroot = _trace_of("How much is the name change fee?")
    assert all("input.value" not in s["attributes"] for s in noroot if not s["parent_id"])
    assert by_q["How much is the name change fee?"]["slice"] == "fees"
    # a query-rewriting LLM ran first: the answer is the last LLM span's, not the rewrite
    rewrite = by_q["How long does a refund take?"]["logged"]["answer"]
    assert rewrite != "refund processing time" and "(Source:" in rewrite
    # no metadata slice: no slice field (its own stratum)
    assert "slice" not in by_q["Where do I find my fare basis code?"]


def test_question_text_of_input_values() -> None:
    assert question_text("  Can I? ") == "Can I?"
    assert question_text('{"question": "a?", "k": 3}', "application/json") == "a?"
    assert question_text('{"input": "b?"}') == "b?"
    assert question_text('"c?"') == "c?"
    assert question_text('{"messages": [{"role": "user", "content": "d?"}]}') == "d?"
    assert question_text('{"x": 1, "y": 2}') is None
    assert question_text("[1, 2]", "application/json") is None
    assert question_text("{not json", "application/json") == "{not json"
    assert question_text("   ") is None


def test_otlp_json_and_metadata_as_a_json_string(tmp_path: Path) -> None:
    def kv(key: str, value: Any) -> dict[str, Any]:
        if isinstance(value, float):
            return {"key": key, "value": {"doubleValue": value}}
        return {"key": key, "value": {"stringValue": value}}

    root = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "name": "query",
        "startTimeUnixNano": "1700000000000000000",
        "attributes": [
            kv("openinference.span.kind", "CHAIN"),
            kv("input.value", "Is there wifi?"),
            kv("metadata", '{"slice": "onboard", "question": "not copied"}'),
        ],
    }
    retriever = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b175",
        "parentSpanId": "eee19b7ec3c1b174",
        "startTimeUnixNano": "1700000000100000000",
        "attributes": [
            kv("openinference.span.kind", "RETRIEVER"),
            kv("input.value", "wifi"),
            kv("retrieval.documents.0.document.id", "onboard"),
            kv("retrieval.documents.0.document.content", "Wifi is free."),
            kv("retrieval.documents.0.document.score", 0.5),
        ],
    }
    path = tmp_path / "otel.json"
    batch = {"resourceSpans": [{"scopeSpans": [{"spans": [retriever, root]}]}]}
    path.write_text(json.dumps(batch) + "\n")
    log = read_log(path)
    assert log.format == "openinference"
    assert [line.record for line in log.lines] == [
        {
            "question": "Is there wifi?",
            "trace_id": "5b8efff798038103d269b633813fc60c",
            "slice": "onboard",
            "logged": {
                "retrieved": [{"id": "onboard", "content": "Wifi is free.", "score": 0.5}],
                "answer": None,
            },
        }
    ]


def test_bad_span_lines_name_file_line_and_field(tmp_path: Path) -> None:
    good = {
        "context": {"trace_id": "t1", "span_id": "s1"},
        "span_kind": "CHAIN",
        "parent_id": None,
        "attributes": {"input.value": "fine?"},
    }
    lines = [
        json.dumps(good),
        "not json",
        json.dumps({"span_kind": "LLM", "attributes": {}}),
        json.dumps({**good, "context": {"trace_id": "t2"}, "attributes": "x"}),
        json.dumps(
            {
                **good,
                "context": {"trace_id": "t3"},
                "span_kind": "RETRIEVER",
                "attributes": {
                    "input.value": "q3",
                    "retrieval.documents.0.document.content": 7,
                    "retrieval.documents.0.document.score": "high",
                },
            }
        ),
        json.dumps({**good, "context": {"trace_id": "t4"}, "attributes": {"input.value": 5}}),
    ]
    path = tmp_path / "spans.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValidationError) as info:
        read_log(path)
    assert [str(p) for p in info.value.problems] == [
        f"{path}:2: invalid JSON: Expecting value (column 1)",
        f"{path}:3: field 'context.trace_id': trace id missing: a span export line has "
        "context.trace_id",
        f"{path}:4: field 'attributes': expected an object of attributes (got \"x\")",
        f"{path}:5: field 'attributes.retrieval.documents.0.document.content': expected a "
        "string (got 7)",
        f"{path}:5: field 'attributes.retrieval.documents.0.document.score': expected a number "
        '(got "high")',
        f"{path}:6: field 'attributes.input.value': expected a string (got 5)",
    ]


def test_forcing_openinference_on_a_question_log_is_a_clean_error() -> None:
    code, out, err = _golden("sample", LOG, "-n", "3", "--log-format", "openinference")
    assert code == 2 and out == "" and "Traceback" not in err
    assert f"{LOG}:1: field 'context.trace_id': trace id missing" in " ".join(err.split())
    with pytest.raises(UsageError, match="unknown log format 'xml'"):
        read_log(LOG, "xml")
    code, _, err = _golden("sample", LOG, "-n", "3", "--log-format", "xml")
    assert code == 2 and "Traceback" not in err


# --- CSV -----------------------------------------------------------------------------------------


def test_csv_log_reads_like_its_jsonl_twin() -> None:
    jsonl, csv_log = read_log(LOG), read_log(LOG_CSV)
    assert csv_log.format == "csv" and jsonl.format == "jsonl"
    assert [line.record for line in csv_log.lines] == [line.record for line in jsonl.lines]
    assert [line.line for line in csv_log.lines] == list(range(2, 22))
    for seed in range(40):
        for by in (None, "slice", "channel"):
            a = sample_log(jsonl, 7, by=by, seed=seed)
            b = sample_log(csv_log, 7, by=by, seed=seed)
            assert a.to_jsonl() == b.to_jsonl()
            assert a.summary() == {**b.summary()}


def test_bad_csv_rows_name_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    path.write_text(
        'question,slice\n"ok, with a comma",fees\n,fees\n"two\nlines",x\na,b,c\nshort\n'
    )
    with pytest.raises(ValidationError) as info:
        read_log(path)
    assert [str(p) for p in info.value.problems] == [
        f"{path}:3: field 'question': must be a non-empty string (got '')",
        f"{path}:6: 3 cells but the header has 2 columns",
    ]
    path.write_text("slice,channel\nfees,web\n")
    with pytest.raises(ValidationError, match=r"log\.csv:1: field 'question': the header has no"):
        read_log(path)
    path.write_text('question\n"never closed\n')
    with pytest.raises(ValidationError, match=r"log\.csv:2: not CSV"):
        read_log(path)
    path.write_bytes(b"question\nok\n\xff\xfe\n")
    with pytest.raises(ValidationError, match=r"log\.csv:3: not UTF-8"):
        read_log(path)
    path.write_text("question,question\na,b\n")
    with pytest.raises(ValidationError, match="repeated column name"):
        read_log(path)
    path.write_text("\n\n")
    with pytest.raises(InputError, match="no header line"):
        read_log(path)


def test_multiline_cells_keep_their_starting_line(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    path.write_text('question,slice\n"two\nlines",x\n\nthird,\n')
    log = read_log(path)
    assert [(line.line, line.record) for line in log.lines] == [
        (2, {"question": "two\nlines", "slice": "x"}),
        (5, {"question": "third"}),
    ]


def test_format_detection(tmp_path: Path) -> None:
    assert detect_format(LOG) == "jsonl" and detect_format(LOG_CSV) == "csv"
    assert {detect_format(p) for p in (SPANS, NESTED, FRAME)} == {"openinference"}
    text = tmp_path / "questions.txt"
    text.write_text("question\nWhy?\n")
    assert detect_format(text) == "csv"
    long = tmp_path / "spans.log"  # a first line longer than the sniffed head
    long.write_text(json.dumps({"context": {"trace_id": "t"}, "x": "y" * 100_000}) + "\n")
    assert detect_format(long) == "openinference"
    # a broken first line: the next JSON object decides; a .jsonl name is never CSV
    spans = tmp_path / "broken.jsonl"
    spans.write_text("oops\n" + SPANS.read_text(encoding="utf-8"))
    assert detect_format(spans) == "openinference"
    with pytest.raises(ValidationError) as info:
        read_log(spans)
    assert [p.line for p in info.value.problems] == [1]
    junk = tmp_path / "junk.jsonl"
    junk.write_text('oops\n{"question": "Why?"}\n')
    assert detect_format(junk) == "jsonl"
    tsv = tmp_path / "log.tsv"
    tsv.write_text("question\tslice\nWhy, though?\tfees\n")
    assert [line.record for line in read_log(tsv).lines] == [
        {"question": "Why, though?", "slice": "fees"}
    ]


# --- properties ----------------------------------------------------------------------------------

_text = st.text(
    st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from('\n,"; '),
    min_size=1,
    max_size=30,
).filter(lambda s: s.strip() != "")
_rows = st.lists(
    st.tuples(_text, st.sampled_from(["a", "b", "c", None]), st.sampled_from(["x", None])),
    min_size=1,
    max_size=40,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=_rows, n=st.integers(1, 12), seed=st.integers(0, 10_000))
def test_a_jsonl_log_and_the_same_log_as_csv_sample_the_same(
    tmp_path: Path, rows: list[tuple[str, str | None, str | None]], n: int, seed: int
) -> None:
    records = [
        {"question": q, **({} if s is None else {"slice": s}), **({} if c is None else {"ch": c})}
        for q, s, c in rows
    ]
    jsonl = tmp_path / "log.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["question", "slice", "ch"])
    for r in records:
        w.writerow([r["question"], r.get("slice", ""), r.get("ch", "")])
    as_csv = tmp_path / "log.csv"
    as_csv.write_text(buf.getvalue(), encoding="utf-8", newline="")
    a, b = read_log(jsonl), read_log(as_csv)
    assert [line.record for line in a.lines] == [line.record for line in b.lines]
    for by in (None, "slice", "ch"):
        assert sample_log(a, n, by=by, seed=seed).to_jsonl() == (
            sample_log(b, n, by=by, seed=seed).to_jsonl()
        )


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "context",
                    "trace_id",
                    "span_kind",
                    "parent_id",
                    "attributes",
                    "input.value",
                    "retrieval.documents.0.document.content",
                    "attributes.input.value",
                    "resourceSpans",
                    "metadata",
                    "question",
                    "x",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)
_junk = st.one_of(
    st.text(max_size=40).map(lambda s: s.replace("\n", " ").replace("\r", " ")),
    _json.map(json.dumps),
)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    junk=st.lists(st.tuples(st.integers(0, 119), _junk), min_size=1, max_size=6),
    fmt=st.sampled_from([None, "openinference", "jsonl", "csv"]),
)
def test_junk_lines_are_reported_never_raised_on(
    tmp_path: Path, junk: list[tuple[int, str]], fmt: str | None
) -> None:
    lines = SPANS.read_text(encoding="utf-8").splitlines()
    for at, text in sorted(junk, reverse=True):
        lines.insert(at, text)
    path = tmp_path / "spans.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        log = read_log(path, fmt)
    except ValidationError as exc:
        assert exc.problems
        assert all(p.path == str(path) and p.line is not None for p in exc.problems)
    except InputError as exc:  # a whole-file refusal (no questions): named, not a traceback
        assert str(path) in str(exc)
    else:
        assert len(log) >= 1


# --- the commands --------------------------------------------------------------------------------


def test_cli_sample_of_a_span_export_carries_the_logged_context(tmp_path: Path) -> None:
    out = tmp_path / "next.jsonl"
    code, _, err = _golden("sample", SPANS, "-n", "10", "--by", "slice", "-o", out)
    assert code == 0, err
    flat = " ".join(err.split())
    assert f"read 28 traces from {SPANS}; dropped 1 repeated question(s)" in flat
    assert "note: 2 of 30 traces have no question" in flat
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 10
    for r in records:
        assert set(r["logged"]) == {"retrieved", "answer"} and r["logged"]["answer"]
        assert all(set(d) == {"id", "content", "score"} for d in r["logged"]["retrieved"])
    # the same sample whatever the export's shape, and with the format named
    for other in (NESTED, FRAME):
        other_out = tmp_path / f"{other.stem}.jsonl"
        args = ("sample", other, "-n", "10", "--by", "slice", "-o", other_out)
        assert _golden(*args, "--log-format", "openinference")[0] == 0
        assert other_out.read_text() == out.read_text()


def test_cli_compare_traffic_reads_spans_and_csv() -> None:
    code, out, err = _golden("compare-traffic", GOLDEN, SPANS, "--format", "json")
    assert code == 0, err
    result = json.loads(out)
    assert result["log_lines"] == 28 and result["notes"][0].startswith("2 of 30 traces")
    shares = {s["slice"]: s["log"] for s in result["slices"]}
    assert shares["fees"] == 8 and shares["family"] == 3 and result["log_without_field"] == 3
    assert "note: 2 of 30 traces" in " ".join(err.split())
    code, out_csv, err = _golden("compare-traffic", GOLDEN, LOG_CSV, "--format", "json")
    code2, out_jsonl, _ = _golden("compare-traffic", GOLDEN, LOG, "--format", "json")
    assert code == code2 == 0, err
    a, b = json.loads(out_csv), json.loads(out_jsonl)
    assert a.pop("log") == str(LOG_CSV) and b.pop("log") == str(LOG)
    assert a == b
    assert load_golden(GOLDEN).questions  # the golden fixture is the one test_golden_traffic uses
