"""`ragmeter chunk`, `ragmeter labels export|budget`: files, summaries and errors (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter.chunking import load_chunking
from ragmeter.cli import app

runner = CliRunner()
CORPUS_ROWS = [
    {
        "id": "fees",
        "text": "# Fees\n\nChange fee: $75 for Standard fares.\n\nName changes: not allowed.",
    },
    {"id": "refunds", "text": "Refunds are paid within 7 days. Cash refunds are not offered."},
]
GOLDEN_ROWS = [
    {
        "id": "q1",
        "question": "Change fee?",
        "answerable": True,
        "evidence": [{"doc": "fees", "start": 8, "end": 42, "grade": 2}],
    },
    {"id": "q2", "question": "Pets?", "answerable": False, "evidence": []},
]


def invoke(*args: str):
    r = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in CORPUS_ROWS), encoding="utf-8")
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(r) + "\n" for r in GOLDEN_ROWS), encoding="utf-8")
    return {"corpus": corpus, "golden": golden, "dir": tmp_path}


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_chunk_writes_the_table_and_prints_sizes(files, suffix):
    out = files["dir"] / f"chunks{suffix}"
    code, stdout, _ = invoke(
        "chunk",
        str(files["corpus"]),
        "--chunker",
        "sections:12",
        "-o",
        str(out),
        "--format",
        "json",
    )
    assert code == 0
    stats = json.loads(stdout)
    chunking = load_chunking(out)
    assert stats["n_chunks"] == len(chunking) == 4
    assert stats["chunking"] == chunking.name == "sections:12"
    assert stats["tokenizer"] == chunking.tokenizer == "minilm-wordpiece"
    assert stats["tokens_max"] == int(chunking.n_tokens.max()) <= 12
    assert chunking.text[0] == "# Fees\n\nChange fee: $75 for Standard fares."


def test_chunk_table_output_and_overwrite_refusal(files):
    out = files["dir"] / "c.parquet"
    code, stdout, _ = invoke("chunk", str(files["corpus"]), "-c", "tokens:8:2", "-o", str(out))
    assert code == 0 and "tokens:8:2" in stdout and "minilm-wordpiece" in stdout
    code, _, stderr = invoke("chunk", str(files["corpus"]), "-c", "tokens:8:2", "-o", str(out))
    assert code == 2 and "pass --force" in stderr
    code, _, _ = invoke(
        "chunk", str(files["corpus"]), "-c", "tokens:8:2", "-o", str(out), "--force"
    )
    assert code == 0


@pytest.mark.parametrize(
    "args,message",
    [
        (["-c", "token:8", "-o", "x.parquet"], "Valid forms: tokens:SIZE:OVERLAP"),
        (["-c", "tokens:8", "-o", "x.csv"], ".parquet or .jsonl"),
        (["-c", "tokens:8", "-o", "x.jsonl", "--tokenizer", "bpe"], "unknown tokenizer 'bpe'"),
    ],
)
def test_chunk_usage_errors(files, args, message):
    code, _, stderr = invoke("chunk", str(files["corpus"]), *args)
    assert code == 2 and message in " ".join(stderr.split())


def test_chunk_bad_corpus_names_file_and_line(files):
    bad = files["dir"] / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "ok"}\n{"id": "b"}\n', encoding="utf-8")
    code, _, stderr = invoke(
        "chunk", str(bad), "-c", "tokens:8", "-o", str(files["dir"] / "c.jsonl")
    )
    assert code == 2 and "bad.jsonl:2" in stderr


def test_labels_export_writes_trec_qrels(files):
    chunks = files["dir"] / "c.jsonl"
    assert invoke("chunk", str(files["corpus"]), "-c", "sections:12", "-o", str(chunks))[0] == 0
    qrels = files["dir"] / "qrels.txt"
    code, _, stderr = invoke(
        "labels",
        "export",
        "--golden",
        str(files["golden"]),
        "--chunks",
        str(chunks),
        "-o",
        str(qrels),
        "--corpus",
        str(files["corpus"]),
    )
    assert code == 0, stderr
    assert qrels.read_text().splitlines() == ["q1 0 fees#0-43 2"]
    assert "1 chunk judgements for 1 questions" in stderr
    code, _, stderr = invoke(
        "labels",
        "export",
        "--golden",
        str(files["golden"]),
        "--chunks",
        str(chunks),
        "-o",
        str(qrels),
        "--cover",
        "0",
    )
    assert code == 2 and "cover" in stderr


def test_labels_budget_reproduces_the_seed_table():
    code, stdout, _ = invoke("labels", "budget", "300x4", "900x4", "300x12", "--format", "json")
    assert code == 0
    got = json.loads(stdout)
    assert got["tolerance"] == 0.1
    assert [(v["context_tokens"], v["fair_with"]) for v in got["variants"]] == [
        (1200, []),
        (3600, ["300 x 12"]),
        (3600, ["900 x 4"]),
    ]
    code, _, stderr = invoke("labels", "budget", "300by4")
    assert code == 2 and "CHUNK_TOKENSxK" in stderr
