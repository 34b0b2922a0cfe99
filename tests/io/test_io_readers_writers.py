"""One reader, one writer: every loader gets the same clean error for the same broken file, and
every file ragmeter writes is whole or not there.

The same set of broken files (a non-UTF-8 byte, a lone surrogate escape, truncated JSON, a JSON
array where an object belongs, a repeated key, a byte order mark mid-file, a NUL byte) is fed to
each loader through its Python API and through the CLI command that reads it: each names the
file and line 2 (where the damage is), the CLI exits 2 and never shows a traceback. CRLF line
endings and blank lines are read as the same records; an empty file is an error naming the file.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragmeter._errors import InputError, ValidationError
from ragmeter.cli import app
from ragmeter.io import (
    append_line,
    atomic_path,
    atomic_write,
    iter_jsonl,
    read_json,
    write_text_lines,
)

EXAMPLE = Path(__file__).parents[2] / "examples" / "fare-rules"
GOLDEN = EXAMPLE / "golden.jsonl"
CORPUS = EXAMPLE / "corpus.jsonl"
BOM = b"\xef\xbb\xbf"


def _lines(path: Path, n: int = 2) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()[:n]]


# -- the broken files ---------------------------------------------------------------------------
def _dumps(rec: dict[str, Any]) -> bytes:
    return json.dumps(rec, ensure_ascii=False).encode("utf-8")


def _duplicate(rec: dict[str, Any]) -> bytes:
    """``rec`` with its first key written a second time (a JSON reader keeps the last)."""
    key = next(iter(rec))
    return _dumps(rec)[:-1] + f', "{key}": {json.dumps(rec[key])}}}'.encode()


#: name -> (line 2 of the file given a valid record, words the error must hold, field or None)
BROKEN: dict[str, tuple[Callable[[dict[str, Any]], bytes], str]] = {
    "non-utf8": (lambda r: b'{"id": "caf\xe9"}', "not valid UTF-8: byte 0xe9 at byte offset"),
    "lone-surrogate": (lambda r: b'{"id": "x\\ud800y"}', "lone surrogate escape \\ud800"),
    "truncated": (lambda r: _dumps(r)[:-7], "invalid JSON"),
    "array-line": (lambda r: b'["id", 1]', "expected a JSON object, got list"),
    "duplicate-key": (_duplicate, "appears twice in one object"),
    "mid-file-bom": (lambda r: BOM + _dumps(r), "byte order mark (U+FEFF)"),
    "nul-byte": (lambda r: _dumps(r)[:-1] + b', "x": "a\x00b"}', "a NUL byte at byte offset"),
}


def broken_file(folder: Path, name: str, kind: str, records: list[dict[str, Any]]) -> Path:
    """A file whose line 1 is a valid record and line 2 the damage ``kind``."""
    make, _ = BROKEN[kind]
    path = folder / f"{name}-{kind}.jsonl"
    path.write_bytes(_dumps(records[0]) + b"\n" + make(records[1]) + b"\n")
    return path


def assert_names_line_2(exc: InputError, path: Path, words: str) -> None:
    """A clean error: the file, line 2 and the words (a ValidationError may list more)."""
    if isinstance(exc, ValidationError):
        hits = [p for p in exc.problems if p.line == 2 and words in p.message]
        assert hits and all(p.path == str(path) for p in hits), str(exc)
    else:
        assert (exc.path, exc.line) == (str(path), 2) and words in exc.message, str(exc)
    assert f"{path}:2:" in str(exc)


# -- the loaders: (records, Python call, CLI arguments or None) ---------------------------------
def _ids() -> list[str]:
    return [q["id"] for q in _lines(GOLDEN)]


def _golden_records() -> list[dict[str, Any]]:
    return _lines(GOLDEN)


def _run_records() -> list[dict[str, Any]]:
    return [{"qid": "q1", "doc": "d1", "score": 2.0}, {"qid": "q1", "doc": "d2", "score": 1.0}]


def _qrels_records() -> list[dict[str, Any]]:
    return [{"qid": "q1", "doc": "d1", "rel": 1}, {"qid": "q1", "doc": "d2", "rel": 0}]


def _answers() -> list[dict[str, Any]]:
    return [{"id": i, "answer": "$75"} for i in _ids()]


def _labels() -> list[dict[str, Any]]:
    return [{"id": "a", "label": "yes"}, {"id": "b", "label": "no"}]


def _table() -> list[dict[str, Any]]:
    return [{"id": i, "evidence_in_context": True, "answer_ok": True} for i in _ids()]


def _ledger() -> list[dict[str, Any]]:
    return [
        {"golden_version": "g-1", "candidate": "a"},
        {"golden_version": "g-1", "candidate": "b"},
    ]


def _chunks() -> list[dict[str, Any]]:
    text = "The change fee is $75."
    return [
        {"id": f"d{i}#0-22", "doc": f"d{i}", "start": 0, "end": 22, "text": text, "n_tokens": 6}
        for i in (1, 2)
    ]


def _byo() -> list[dict[str, Any]]:
    return [
        {"qid": "q1", "chunk": "d1#0-22", "score": 2.0},
        {"qid": "q1", "chunk": "d2#0-22", "score": 1.0},
    ]


def _good(folder: Path, name: str, records: list[dict[str, Any]]) -> Path:
    path = folder / name
    path.write_bytes(b"".join(_dumps(r) + b"\n" for r in records))
    return path


def _load_golden(p: Path) -> Any:
    from ragmeter.data import load_golden

    return load_golden(p)


def _load_corpus(p: Path) -> Any:
    from ragmeter.data import load_corpus

    return load_corpus(p)


def _load_answers(p: Path) -> Any:
    from ragmeter.answers import load_answers

    return load_answers(p)


def _load_judge(p: Path) -> Any:
    from ragmeter.answers.judge_validation import load_judge_labels

    return load_judge_labels(p)


def _load_human(p: Path) -> Any:
    from ragmeter.answers.judge_validation import load_human_labels

    return load_human_labels(p)


def _load_ledger(p: Path) -> Any:
    from ragmeter.paired import Ledger

    return Ledger(p).entries()


def _load_table(p: Path) -> Any:
    from ragmeter.diagnosis import table_from_file

    return table_from_file(p)


def _load_run(p: Path) -> Any:
    from ragmeter.io.jsonl import read_run_jsonl

    return read_run_jsonl(p)


def _load_qrels(p: Path) -> Any:
    from ragmeter.io.jsonl import read_qrels_jsonl

    return read_qrels_jsonl(p)


def _load_log(p: Path) -> Any:
    from ragmeter.data import read_log

    return read_log(p)


def _load_agree(p: Path) -> Any:
    from ragmeter.data import label_agreement, load_golden

    return label_agreement(load_golden(p), load_golden(GOLDEN))


def _load_chunks(p: Path) -> Any:
    from ragmeter.chunking import load_chunking

    return load_chunking(p)


def _load_byo(p: Path) -> Any:
    from ragmeter.retrieval.byo import read_byo_run

    return read_byo_run(p)


def _experiment(folder: Path, run: Path) -> Path:
    """An experiment whose baseline is the bring-your-own run ``run``."""
    corpus = [
        {"id": "d1", "text": "The change fee is $75."},
        {"id": "d2", "text": "The change fee is $75."},
    ]
    golden = [{"id": "q1", "question": "fee?", "evidence": [{"doc": "d1", "start": 18, "end": 21}]}]
    _good(folder, "corpus.jsonl", corpus)
    _good(folder, "golden.jsonl", golden)
    exp = folder / "experiment.toml"
    exp.write_text(
        f'name = "byo"\ngolden = "golden.jsonl"\ncorpus = "corpus.jsonl"\n'
        f'output = "out"\nk = 1\nmetrics = ["R"]\n\n[baseline]\n'
        f'chunker = "document"\nrun = "{run.name}"\n'
    )
    return exp


#: loader name -> (records, API call, CLI arguments for the file at the path, or None)
LOADERS: dict[
    str,
    tuple[
        Callable[[], list[dict[str, Any]]],
        Callable[[Path], Any],
        Callable[[Path, Path], list[str]] | None,
    ],
] = {
    "golden": (_golden_records, _load_golden, lambda p, d: ["golden", "validate", str(p)]),
    "corpus": (
        lambda: _lines(CORPUS),
        _load_corpus,
        lambda p, d: ["chunk", str(p), "-c", "document", "-o", str(d / "c.jsonl")],
    ),
    "answers": (
        _answers,
        _load_answers,
        lambda p, d: ["answers", "check", str(p), "--golden", str(GOLDEN)],
    ),
    "judge-labels": (
        _labels,
        _load_judge,
        lambda p, d: [
            "judge",
            "validate",
            "--human",
            str(_good(d, "human.jsonl", _labels())),
            "--judge",
            str(p),
        ],
    ),
    "human-labels": (
        _labels,
        _load_human,
        lambda p, d: [
            "judge",
            "validate",
            "--human",
            str(p),
            "--judge",
            str(_good(d, "judged.jsonl", _labels())),
        ],
    ),
    "ledger": (
        _ledger,
        _load_ledger,
        lambda p, d: [
            "compare",
            str(EXAMPLE / "runs" / "baseline" / "evaluation.json"),
            str(EXAMPLE / "runs" / "reranker" / "evaluation.json"),
            "-m",
            "R@4",
            "--ledger",
            str(p),
        ],
    ),
    "diagnose-table": (_table, _load_table, lambda p, d: ["diagnose", "--table", str(p)]),
    "jsonl-run": (
        _run_records,
        _load_run,
        lambda p, d: ["eval", str(_good(d, "q.jsonl", _qrels_records())), str(p)],
    ),
    "jsonl-qrels": (
        _qrels_records,
        _load_qrels,
        lambda p, d: ["eval", str(p), str(_good(d, "r.jsonl", _run_records()))],
    ),
    "traffic-log": (
        lambda: [{"question": "a?"}, {"question": "b?"}],
        _load_log,
        lambda p, d: ["golden", "sample", str(p), "-n", "1"],
    ),
    "labeller": (
        _golden_records,
        _load_agree,
        lambda p, d: ["golden", "agree", str(p), str(GOLDEN)],
    ),
    "chunk-file": (
        _chunks,
        _load_chunks,
        lambda p, d: [
            "labels",
            "export",
            "--golden",
            str(GOLDEN),
            "--chunks",
            str(p),
            "-o",
            str(d / "q.txt"),
        ],
    ),
    "byo-run": (_byo, _load_byo, lambda p, d: ["run", str(_experiment(d, p))]),
}

runner = CliRunner()


def cli(args: list[str]) -> tuple[int, str, Any]:
    """Exit code, everything printed (``golden validate`` lists problems on stdout), exception."""
    r = runner.invoke(app, args, env={"COLUMNS": "200"})
    return r.exit_code, r.stdout + r.stderr, r.exception


@pytest.mark.parametrize("kind", sorted(BROKEN))
@pytest.mark.parametrize("loader", sorted(LOADERS))
def test_every_loader_names_the_file_and_line_of_a_broken_file(
    tmp_path: Path, loader: str, kind: str
) -> None:
    records, load, _ = LOADERS[loader]
    path = broken_file(tmp_path, loader, kind, records())
    with pytest.raises(InputError) as info:
        load(path)
    assert_names_line_2(info.value, path, BROKEN[kind][1])


@pytest.mark.parametrize("kind", sorted(BROKEN))
@pytest.mark.parametrize("loader", sorted(LOADERS))
def test_every_cli_command_exits_2_naming_the_file_and_line(
    tmp_path: Path, loader: str, kind: str
) -> None:
    records, _, command = LOADERS[loader]
    assert command is not None
    path = broken_file(tmp_path, loader, kind, records())
    code, err, exc = cli(command(path, tmp_path))
    assert code == 2, (err, exc)
    assert isinstance(exc, SystemExit) and "Traceback" not in err
    flat = " ".join(err.split())
    assert f"{path}:2:" in flat and BROKEN[kind][1] in flat, err


@pytest.mark.parametrize("loader", sorted(LOADERS))
def test_crlf_blank_lines_and_a_leading_bom_read_as_the_same_records(
    tmp_path: Path, loader: str
) -> None:
    records, load, _ = LOADERS[loader]
    recs = records()
    plain = _good(tmp_path, "plain.jsonl", recs)
    odd = tmp_path / "odd.jsonl"
    odd.write_bytes(BOM + b"\r\n  \r\n" + b"\r\n\r\n".join(_dumps(r) for r in recs) + b"\r\n\n")
    assert _summary(load(odd)) == _summary(load(plain))


def _summary(value: Any) -> Any:
    """Something comparable of what a loader returned (sources and paths differ)."""
    if isinstance(value, (list, tuple, dict)):
        return repr(value) if not isinstance(value, tuple) else repr(value[0])
    if hasattr(value, "lines") and all(hasattr(x, "record") for x in value.lines):
        return repr([x.record for x in value.lines])  # a traffic log: lines differ, records not
    for attr in ("questions", "ids", "answers", "lines"):
        if hasattr(value, attr):
            return repr(getattr(value, attr))
    if hasattr(value, "qid"):
        return (value.qid.to_pylist(), value.doc.to_pylist())
    if hasattr(value, "run"):
        return (value.run.qid.to_pylist(), value.run.doc.to_pylist())
    return type(value).__name__ + repr(getattr(value, "to_dict", lambda: None)())


def test_blank_lines_keep_physical_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    good = _dumps(_golden_records()[0])
    path.write_bytes(b"\n  \n" + good + b"\n\n" + b'{"id": \n')
    reader = iter_jsonl(path, [])
    assert [n for n, _ in reader] == [3]
    assert (reader.blank_lines, reader.records, reader.bad_lines) == (3, 1, 1)
    with pytest.raises(ValidationError) as info:
        _load_golden(path)
    assert [p.line for p in info.value.problems] == [5]


@pytest.mark.parametrize("loader", sorted(set(LOADERS) - {"ledger"}))
def test_an_empty_file_is_an_error_naming_the_file(tmp_path: Path, loader: str) -> None:
    _, load, command = LOADERS[loader]
    for body in (b"", b"\n \r\n"):
        path = tmp_path / "empty.jsonl"
        path.write_bytes(body)
        with pytest.raises(InputError) as info:
            load(path)
        assert info.value.path == str(path) and info.value.line is None
        assert (
            "empty" in str(info.value) or "blank" in str(info.value) or "no " in str(info.value)
        ), str(info.value)
        assert command is not None
        code, err, exc = cli(command(path, tmp_path))
        assert code == 2 and isinstance(exc, SystemExit) and str(path) in " ".join(err.split())


def test_an_empty_ledger_has_recorded_nothing(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    path.write_bytes(b"")
    assert _load_ledger(path) == []
    path.write_bytes(_dumps(_ledger()[0]) + b'\n{"golden_ver')  # a writer killed mid-line
    assert _load_ledger(path) == [_ledger()[0]]


def test_the_reader_rules_one_by_one(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    p.write_bytes(gzip.compress(b'{"a": 1}\n{"b": "\\ud83d\\ude00"}\r{"c": "\\\\ud800"}'))
    assert list(iter_jsonl(p)) == [(1, {"a": 1}), (2, {"b": "\U0001f600"}), (3, {"c": "\\ud800"})]
    p.write_bytes(b'[1]\n"x"\n')
    assert list(iter_jsonl(p, objects=False)) == [(1, [1]), (2, "x")]
    p.write_bytes(b'{"qid": "q", "x": 1, "x": 2}\n')  # repeats of keys a reader ignores
    assert list(iter_jsonl(p, unique_keys={"qid"})) == [(1, {"qid": "q", "x": 2})]
    p.write_bytes(b'{"a": {"b": 1, "b": 2}}\n')
    with pytest.raises(InputError) as info:
        list(iter_jsonl(p))
    assert info.value.field == "b" and "the object at column 7" in info.value.message
    p.write_bytes(b'{"a": [{"b": "\\udc00"}]}\n')
    with pytest.raises(InputError) as info:
        list(iter_jsonl(p))
    assert info.value.field == "a[0].b" and "at column 15" in info.value.message
    p.write_bytes(b'{"a": "\xe2\x82"}\n')  # a multi-byte character cut short
    with pytest.raises(InputError, match=r"byte 0xe2 at byte offset 7 \(column 8\)"):
        list(iter_jsonl(p))
    p.write_bytes("\ufeff".encode("utf-16-le") + '{"a": 1}\n'.encode("utf-16-le"))
    with pytest.raises(InputError, match=r"NUL byte.*UTF-16"):
        list(iter_jsonl(p))
    with pytest.raises(InputError, match="file not found"):
        list(iter_jsonl(tmp_path / "absent.jsonl"))
    with pytest.raises(InputError, match="not a regular file"):
        list(iter_jsonl(tmp_path))


# -- whole JSON documents: comparison for plan, SQuAD, lock files -------------------------------
def _comparison() -> dict[str, Any]:
    return {
        "metric": "Hit@5",
        "binary": True,
        "per_query": {
            "q1": {"baseline": 1, "candidate": 0},
            "q2": {"baseline": 0, "candidate": 1},
            "q3": {"baseline": 1, "candidate": 1},
        },
    }


def _squad() -> dict[str, Any]:
    return {
        "version": "1.1",
        "data": [
            {
                "title": "Fees",
                "paragraphs": [
                    {
                        "context": "The fee is $75.",
                        "qas": [
                            {
                                "id": "s1",
                                "question": "fee?",
                                "answers": [{"text": "$75", "answer_start": 11}],
                            }
                        ],
                    }
                ],
            }
        ],
    }


def _lock() -> dict[str, Any]:
    return {
        "format": "ragmeter-golden-lock/1",
        "version": "g-0",
        "labels_sha256": "0",
        "documents": {},
    }


#: kind -> (line 2 given the first key and value of a document, words, line of the error)
DOC_BROKEN: dict[str, tuple[Callable[[str, Any], bytes], str, int]] = {
    "non-utf8": (lambda k, v: b'"x": "caf\xe9",', "not valid UTF-8", 2),
    "lone-surrogate": (lambda k, v: b'"x": "\\ud800",', "lone surrogate escape", 2),
    "truncated": (lambda k, v: b'"x": "y', "invalid JSON", 2),
    "duplicate-key": (lambda k, v: f'"{k}": {json.dumps(v)},'.encode(), "appears twice", 1),
    "mid-file-bom": (lambda k, v: BOM + b'"x": 1,', "byte order mark (U+FEFF)", 2),
    "nul-byte": (lambda k, v: b'"x": "a\x00",', "a NUL byte", 2),
}


def _document(doc: dict[str, Any], line2: bytes) -> bytes:
    head = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in doc.items()]
    return b"{\n" + line2 + b"\n" + ",\n".join(head).encode() + b"\n}\n"


def _plan(p: Path) -> Any:
    from ragmeter.paired import read_comparison

    return read_comparison(p)


def _load_squad(p: Path) -> Any:
    from ragmeter.data import load_squad

    return load_squad(p)


def _read_lock(p: Path) -> Any:
    from ragmeter.data import read_lock

    return read_lock(p)


DOCUMENTS: dict[
    str,
    tuple[
        Callable[[], dict[str, Any]],
        Callable[[Path], Any],
        Callable[[Path, Path], list[str]] | None,
    ],
] = {
    "plan-comparison": (_comparison, _plan, lambda p, d: ["plan", "--from", str(p)]),
    "squad": (
        _squad,
        _load_squad,
        lambda p, d: ["golden", "import", "squad", str(p), "-o", str(d / "sq")],
    ),
    "lock-file": (_lock, _read_lock, None),
}


@pytest.mark.parametrize("kind", sorted(DOC_BROKEN))
@pytest.mark.parametrize("loader", sorted(DOCUMENTS))
def test_every_json_document_reader_names_file_and_line(
    tmp_path: Path, loader: str, kind: str
) -> None:
    make_doc, load, command = DOCUMENTS[loader]
    doc = make_doc()
    key, value = next(iter(doc.items()))
    make, words, line = DOC_BROKEN[kind]
    path = tmp_path / f"{loader}-{kind}.json"
    path.write_bytes(_document(doc, make(key, value)))
    with pytest.raises(InputError) as info:
        load(path)
    assert (info.value.path, info.value.line) == (str(path), line), str(info.value)
    assert words in info.value.message
    if command is not None:
        code, err, exc = cli(command(path, tmp_path))
        assert code == 2 and isinstance(exc, SystemExit), (err, exc)
        assert f"{path}:{line}:" in " ".join(err.split()) and words in err


@pytest.mark.parametrize("loader", sorted(DOCUMENTS))
def test_json_documents_accept_crlf_and_blank_lines_and_refuse_empty_files(
    tmp_path: Path, loader: str
) -> None:
    make_doc, load, _ = DOCUMENTS[loader]
    doc = make_doc()
    text = json.dumps(doc, indent=2).encode()
    plain, odd = tmp_path / "plain.json", tmp_path / "odd.json"
    plain.write_bytes(text)
    odd.write_bytes(BOM + b"\r\n\r\n" + text.replace(b"\n", b"\r\n") + b"\r\n\n")
    assert repr(load(odd)) == repr(load(plain)) or loader == "squad"
    for body in (b"", b" \n"):
        plain.write_bytes(body)
        with pytest.raises(InputError) as info:
            load(plain)
        assert info.value.path == str(plain) and "no JSON" in info.value.message
    p = tmp_path / "list.json"
    p.write_text("[]")
    with pytest.raises(InputError) as info:  # the wrong shape: a clean error too
        load(p)
    assert info.value.path == str(p)


def test_read_json_reports_line_and_column(tmp_path: Path) -> None:
    p = tmp_path / "d.json"
    p.write_bytes(b'{\n  "a": 1,\n  "b": {"c": 1, "c": 2}\n}')
    with pytest.raises(InputError) as info:
        read_json(p)
    assert info.value.line == 3 and info.value.field == "c"
    assert "the object at line 3, column 8" in info.value.message
    p.write_bytes(b'{\n  "a": "\xff"\n}')
    with pytest.raises(InputError, match=r"byte offset 10 \(line 2, column 9\)"):
        read_json(p)
    p.write_bytes(gzip.compress(b'{"a": [1, 2]}'))
    assert read_json(p) == {"a": [1, 2]}


# -- the atomic writer --------------------------------------------------------------------------
def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_atomic_write_replaces_the_file_in_one_step(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "out.json"
    assert atomic_write(target, "é\n") == target  # folders are made, text is UTF-8
    assert target.read_bytes() == "é\n".encode()
    atomic_write(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    atomic_write(target, lambda fh: fh.write(b"by a writer"))
    assert target.read_bytes() == b"by a writer"
    assert _leftovers(target.parent) == ["out.json"]
    write_text_lines(target, ["a", "b"])
    assert target.read_bytes() == b"a\nb\n"


def test_atomic_write_keeps_the_file_mode_and_umask(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    old = os.umask(0o022)
    try:
        atomic_write(target, "x")
    finally:
        os.umask(old)
    assert target.stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600
    target.chmod(0o640)
    atomic_write(target, "y")
    assert target.stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize(
    "error", [OSError(28, "No space left on device"), RuntimeError("boom"), KeyboardInterrupt()]
)
def test_a_failure_mid_write_leaves_the_old_file_and_no_temp_file(
    tmp_path: Path, error: BaseException
) -> None:
    target = tmp_path / "golden.jsonl"
    target.write_text("old\n")

    def writer(fh: Any) -> None:
        fh.write(b"half of the new")
        raise error

    expected = InputError if isinstance(error, OSError) else type(error)
    with pytest.raises(expected) as info:
        atomic_write(target, writer)
    if isinstance(error, OSError):
        assert getattr(info.value, "path", None) == str(target)
        assert "cannot write the file: No space left on device" in str(info.value)
    assert target.read_text() == "old\n" and _leftovers(tmp_path) == ["golden.jsonl"]


def test_a_generator_that_fails_leaves_no_new_file(tmp_path: Path) -> None:
    target = tmp_path / "new.jsonl"

    def lines() -> Any:
        yield "first"
        raise InputError("chunk 'x' is not a chunk")

    with pytest.raises(InputError, match="not a chunk"):
        write_text_lines(target, lines())
    assert _leftovers(tmp_path) == []  # no 0-byte file, no temp file


def test_a_parent_that_is_a_file_is_a_clean_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    for write in (lambda p: atomic_write(p, "x"), lambda p: append_line(p, "x")):
        with pytest.raises(InputError) as info:
            write(blocker / "sub" / "out.txt")
        assert info.value.path == str(blocker / "sub" / "out.txt")
        assert "is not a folder" in str(info.value)
    (tmp_path / "dir").mkdir()
    with pytest.raises(InputError, match="a folder has that name"):
        atomic_write(tmp_path / "dir", "x")
    assert _leftovers(tmp_path) == ["dir", "file"]


def test_atomic_path_for_writers_that_want_a_path(tmp_path: Path) -> None:
    target = tmp_path / "index"
    with atomic_path(target) as tmp:
        assert tmp.name == "index" and tmp.parent != tmp_path
        tmp.mkdir()
        (tmp / "part").write_text("1")
    assert (target / "part").read_text() == "1" and _leftovers(tmp_path) == ["index"]
    with pytest.raises(RuntimeError), atomic_path(tmp_path / "f.parquet") as tmp:
        tmp.write_text("half")
        raise RuntimeError
    assert _leftovers(tmp_path) == ["index"]


def test_writers_go_through_atomic_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each writer, failing mid-write, leaves the old file (the old file proves it)."""
    from ragmeter.data import load_corpus, load_golden, write_corpus, write_golden
    from ragmeter.io import _atomic
    from ragmeter.io.trec import write_qrels

    golden, corpus = load_golden(GOLDEN), load_corpus(CORPUS)
    qrels = golden.doc_qrels()
    real = _atomic.os.replace

    def refuse(src: Any, dst: Any) -> None:
        raise OSError(30, "Read-only file system")

    writers = {
        "golden.jsonl": lambda p: write_golden(golden, p),
        "corpus.jsonl": lambda p: write_corpus(corpus, p),
        "qrels.txt": lambda p: write_qrels(qrels, p),
    }
    for name, write in writers.items():
        target = tmp_path / name
        target.write_text("old\n")
        monkeypatch.setattr(_atomic.os, "replace", refuse)
        with pytest.raises(InputError, match="Read-only file system") as info:
            write(target)
        assert info.value.path == str(target)
        monkeypatch.setattr(_atomic.os, "replace", real)
        assert target.read_text() == "old\n"
        write(target)
        assert target.read_text() != "old\n"
    assert _leftovers(tmp_path) == sorted(writers)


def test_cli_output_that_cannot_be_written_is_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    chunks = EXAMPLE / "runs" / "chunks-300.jsonl"  # the chunking of GOLDEN's corpus
    shutil.copy(GOLDEN, tmp_path / "g.jsonl")
    code, err, exc = cli(
        [
            "labels",
            "export",
            "--golden",
            str(tmp_path / "g.jsonl"),
            "--chunks",
            str(chunks),
            "-o",
            str(blocker / "q.txt"),
        ]
    )
    assert code == 2 and isinstance(exc, SystemExit), (err, exc)
    assert "is not a folder" in err and "Traceback" not in err
