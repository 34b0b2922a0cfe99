"""JSONL runs and qrels: reading, errors with line and field, gzip, duplicates, round trips."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter import InputError, RagmeterWarning, ValidationError
from ragmeter.io.jsonl import read_qrels_jsonl, read_run_jsonl, write_qrels_jsonl, write_run_jsonl


def rows(run) -> list[tuple[str, str, float]]:
    return list(zip(run.qid.to_pylist(), run.doc.to_pylist(), run.score.tolist(), strict=True))


def jsonl(tmp_path: Path, records: list, name: str = "run.jsonl", raw: str | None = None) -> Path:
    p = tmp_path / name
    p.write_text(raw if raw is not None else "".join(json.dumps(r) + "\n" for r in records))
    return p


def test_reads_run(tmp_path: Path) -> None:
    p = jsonl(
        tmp_path,
        [
            {"qid": "q1", "doc": "d1", "score": 2.5, "rank": 1, "text": "ignored"},
            {"qid": "q1", "doc": "d2", "score": 1},
        ],
    )
    run = read_run_jsonl(p)
    assert rows(run) == [("q1", "d1", 2.5), ("q1", "d2", 1.0)]
    assert run.name == str(p) and run.score.dtype.name == "float64"


def test_integer_ids_and_blank_lines(tmp_path: Path) -> None:
    raw = '{"qid": 301, "doc": "d1", "score": 0.5}\n\n{"qid": "302", "doc": 7, "score": -1e-300}\n'
    run = read_run_jsonl(jsonl(tmp_path, [], raw=raw))
    assert rows(run) == [("301", "d1", 0.5), ("302", "7", -1e-300)]


def test_scores_exact(tmp_path: Path) -> None:
    scores = [0.1, 0.30000000000000004, 5e-324, 1.7976931348623157e308, -0.0, 123456789.12345678]
    p = jsonl(tmp_path, [{"qid": "q", "doc": f"d{i}", "score": s} for i, s in enumerate(scores)])
    assert [s.hex() for s in read_run_jsonl(p).score.tolist()] == [s.hex() for s in scores]


def test_qrels(tmp_path: Path) -> None:
    p = jsonl(
        tmp_path,
        [{"qid": "q1", "doc": "d1", "rel": 2}, {"qid": "q1", "doc": "d2", "rel": 0}],
        "q.jsonl",
    )
    q = read_qrels_jsonl(p)
    assert list(zip(q.qid.to_pylist(), q.doc.to_pylist(), q.rel.tolist(), strict=True)) == [
        ("q1", "d1", 2),
        ("q1", "d2", 0),
    ]
    assert q.rel.dtype.name == "int64"


def test_gzip(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl.gz"
    p.write_bytes(gzip.compress(b'{"qid": "q", "doc": "d", "score": 1.5}\n'))
    assert rows(read_run_jsonl(p)) == [("q", "d", 1.5)]


@pytest.mark.parametrize(
    "line, field, words",
    [
        (
            '{"qid": "q", "doc": "d", "score": "high"}',
            "score",
            "'score' must be a number, got string",
        ),
        (
            '{"qid": "q", "doc": "d", "score": NaN}',
            "score",
            "NaN at column 35 is not JSON (JSON has no NaN or infinity): write a finite number",
        ),
        ('{"qid": "q", "doc": "d", "score": Infinity}', "score", "Infinity at column 35 is not"),
        ('{"qid": "q", "doc": "d", "score": 1e999}', "score", "must be a finite number"),
        ('{"qid": "q", "doc": "d", "score": true}', "score", "must be a number, got boolean"),
        ('{"qid": "q", "doc": "d"}', "score", "'score' is missing"),
        ('{"qid": "q", "score": 1}', "doc", "'doc' is missing"),
        ('{"qid": "", "doc": "d", "score": 1}', "qid", "'qid' is an empty string"),
        ('{"qid": 1.5, "doc": "d", "score": 1}', "qid", "'qid' must be a string, got float"),
        ('{"qid": ["q"], "doc": "d", "score": 1}', "qid", "'qid' must be a string, got array"),
        ('{"qid": "q", "doc": "d", "score": 1, "rank": 0}', "rank", "'rank' 0 must be 1 or more"),
        ('{"qid": "q", "doc": "d", "score": 1, "rank": "1"}', "rank", "must be a number"),
        ('["q", "d", 1]', None, "expected a JSON object, got list"),
        ('{"qid": "q", "doc": "d", "score": 1', None, "invalid JSON"),
    ],
)
def test_run_errors_name_line_and_field(
    tmp_path: Path, line: str, field: str | None, words: str
) -> None:
    good = '{"qid": "q", "doc": "ok", "score": 1}\n'
    p = jsonl(tmp_path, [], raw=good + "\n" + line + "\n" + good.replace("ok", "ok2"))
    with pytest.raises(InputError) as e:
        read_run_jsonl(p)
    assert (e.value.path, e.value.line, e.value.field) == (str(p), 3, field)
    assert str(e.value).startswith(f"{p}:3:") and words in str(e.value), str(e.value)


def test_qrels_errors(tmp_path: Path) -> None:
    raw = (
        '{"qid": "q", "doc": "a", "rel": 1.5}\n{"qid": "q", "doc": "b", "rel": 2.0}\n'
        '{"qid": "q", "doc": "c", "rel": "1"}\n'
    )
    with pytest.raises(ValidationError) as e:
        read_qrels_jsonl(jsonl(tmp_path, [], "q.jsonl", raw=raw))
    assert [(p.line, p.field) for p in e.value.problems] == [(1, "rel"), (3, "rel")]
    assert "'rel' 1.5 is not an integer" in str(e.value)


def test_empty_and_blank_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="the file is empty"):
        read_run_jsonl(jsonl(tmp_path, [], raw=""))
    with pytest.raises(InputError, match="only blank lines"):
        read_run_jsonl(jsonl(tmp_path, [], raw="\n  \n"))


def test_duplicates(tmp_path: Path) -> None:
    p = jsonl(
        tmp_path,
        [
            {"qid": "q", "doc": "a", "score": 1},
            {"qid": "q", "doc": "b", "score": 2},
            {"qid": "q", "doc": "a", "score": 3},
        ],
    )
    with pytest.warns(RagmeterWarning, match=r"run\.jsonl:3: 1 duplicate row"):
        assert rows(read_run_jsonl(p)) == [("q", "b", 2.0), ("q", "a", 3.0)]
    with pytest.raises(InputError) as e:
        read_run_jsonl(p, duplicates="error")
    assert e.value.line == 3 and e.value.field == "doc"
    q = jsonl(
        tmp_path,
        [{"qid": "q", "doc": "a", "rel": 1}, {"qid": "q", "doc": "a", "rel": 0}],
        "q.jsonl",
    )
    with pytest.raises(InputError, match="judged twice with different grades"):
        read_qrels_jsonl(q)


def test_line_numbers_survive_blank_lines(tmp_path: Path) -> None:
    recs = [json.dumps({"qid": "q", "doc": f"d{i}", "score": i}) for i in range(5000)]
    raw = "\n".join(recs[:4000]) + "\n\n\n" + "\n".join(recs[4000:])
    raw += "\n" + json.dumps({"qid": "q", "doc": "d3", "score": -1}) + "\n"
    p = jsonl(tmp_path, [], raw=raw)
    with pytest.warns(RagmeterWarning, match=r"run\.jsonl:5003: 1 duplicate row.*also at line 4\)"):
        assert len(read_run_jsonl(p)) == 5000
    mixed = jsonl(
        tmp_path,
        [],
        "m.jsonl",
        raw='{"qid": "q", "doc": "a", "score": 1, "rank": 1}\n'
        '{"qid": "q", "doc": "b", "score": 0}\n',
    )
    assert rows(read_run_jsonl(mixed)) == [("q", "a", 1.0), ("q", "b", 0.0)]


def test_round_trip_and_format(tmp_path: Path) -> None:
    run = {"q1": {"a b": 1.0, 'c"d': 2.5, "é": 2.5}, "q0": {"x": -0.0}}
    write_run_jsonl(run, tmp_path / "r.jsonl")
    lines = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert lines == [
        {"qid": "q0", "doc": "x", "score": -0.0, "rank": 1},
        {"qid": "q1", "doc": "é", "score": 2.5, "rank": 1},
        {"qid": "q1", "doc": 'c"d', "score": 2.5, "rank": 2},
        {"qid": "q1", "doc": "a b", "score": 1.0, "rank": 3},
    ]
    write_qrels_jsonl({"q": {"b": 1, "a": 0}}, tmp_path / "q.jsonl.gz")
    assert gzip.decompress((tmp_path / "q.jsonl.gz").read_bytes()).decode().splitlines() == [
        '{"qid": "q", "doc": "a", "rel": 0}',
        '{"qid": "q", "doc": "b", "rel": 1}',
    ]


IDS = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=8)


@settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    run=st.dictionaries(
        IDS,
        st.dictionaries(
            IDS, st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=5
        ),
        min_size=1,
        max_size=4,
    )
)
def test_hypothesis_round_trip(tmp_path: Path, run: dict[str, dict[str, float]]) -> None:
    p = tmp_path / "h.jsonl"
    write_run_jsonl(run, p)
    got = {(q, d): s.hex() for q, d, s in rows(read_run_jsonl(p, duplicates="error"))}
    assert got == {(q, d): float(s).hex() for q, docs in run.items() for d, s in docs.items()}
