"""Chunk tables on disk: Parquet and JSONL round trips, and every bad-file case."""

from __future__ import annotations

import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragmeter import InputError, UsageError, ValidationError
from ragmeter.chunking import chunk_corpus, load_chunking
from ragmeter.data import Document

DOCS = [
    Document(id="fees", text="# Fees\n\nChange fee: $75. Name change: not allowed. ½ price 😀."),
    Document(id="rules/16.md", text="Rule 16 — penalties.\n\n東京 refunds within 7 days."),
]


@pytest.fixture(scope="module")
def chunking():
    return chunk_corpus(DOCS, "tokens:6:2")


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_round_trip(tmp_path, chunking, suffix):
    path = chunking.save(tmp_path / f"chunks{suffix}")
    back = load_chunking(path, corpus=DOCS)
    assert back.name == "tokens:6:2" and back.tokenizer == "minilm-wordpiece"
    assert back.ids == chunking.ids and back.doc == chunking.doc and back.text == chunking.text
    assert back.start.tolist() == chunking.start.tolist()
    assert back.end.tolist() == chunking.end.tolist()
    assert back.n_tokens.tolist() == chunking.n_tokens.tolist()


def test_parquet_columns_and_metadata(tmp_path, chunking):
    table = pq.read_table(chunking.save(tmp_path / "c.parquet"))
    assert table.column_names == ["id", "doc", "start", "end", "text", "n_tokens"]
    meta = json.loads(table.schema.metadata[b"ragmeter.chunking"])
    assert meta == {"name": "tokens:6:2", "tokenizer": "minilm-wordpiece", "format": 1}


def test_jsonl_rows_carry_the_columns(tmp_path, chunking):
    rows = [json.loads(x) for x in chunking.save(tmp_path / "c.jsonl").read_text().splitlines()]
    assert len(rows) == len(chunking)
    assert set(rows[0]) == {
        "id",
        "doc",
        "start",
        "end",
        "text",
        "n_tokens",
        "chunking",
        "tokenizer",
    }


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_jsonl_from_another_tool_gets_a_name(tmp_path):
    p = write_jsonl(
        tmp_path / "mine.jsonl",
        [{"id": "c1", "doc": "fees", "start": 0, "end": 6, "text": "# Fees", "n_tokens": 2}],
    )
    c = load_chunking(p, corpus=DOCS)
    assert c.name == "mine" and c.tokenizer == "unknown"


def test_jsonl_problems_are_all_reported_with_line_and_field(tmp_path):
    good = {"id": "c1", "doc": "fees", "start": 0, "end": 6, "text": "# Fees", "n_tokens": 2}
    p = write_jsonl(
        tmp_path / "bad.jsonl",
        [
            good,
            {**good, "id": "c1"},  # line 2: duplicate id
            {k: v for k, v in good.items() if k != "text"} | {"id": "c3"},  # line 3: missing text
            {**good, "id": "c4", "start": "0"},  # line 4: not an integer
            {**good, "id": "c5", "end": 0},  # line 5: end <= start
            {**good, "id": "c6", "text": "# Fee"},  # line 6: text length != end - start
        ],
    )
    with pytest.raises(ValidationError) as err:
        load_chunking(p)
    got = {(pr.line, pr.field) for pr in err.value.problems}
    assert got == {(2, "id"), (3, "text"), (4, "start"), (5, "end"), (6, "text")}
    assert all(pr.path == str(p) for pr in err.value.problems)


def test_text_checked_against_the_corpus(tmp_path):
    p = write_jsonl(
        tmp_path / "c.jsonl",
        [
            {"id": "a", "doc": "fees", "start": 0, "end": 6, "text": "# FEES", "n_tokens": 2},
            {"id": "b", "doc": "nope", "start": 0, "end": 1, "text": "x", "n_tokens": 1},
        ],
    )
    with pytest.raises(ValidationError) as err:
        load_chunking(p, corpus=DOCS)
    msgs = [str(pr) for pr in err.value.problems]
    assert "corpus edited" in msgs[0] and "unknown document 'nope'" in msgs[1]


def test_parquet_missing_column_and_duplicates(tmp_path):
    p = tmp_path / "c.parquet"
    pq.write_table(
        pa.table({"id": ["a"], "doc": ["fees"], "start": [0], "end": [6], "text": ["# Fees"]}), p
    )
    with pytest.raises(InputError) as err:
        load_chunking(p)
    assert err.value.field == "n_tokens" and err.value.path == str(p)
    pq.write_table(
        pa.table(
            {
                "id": ["a", "a"],
                "doc": ["fees"] * 2,
                "start": [0, 2],
                "end": [6, 6],
                "text": ["# Fees", "Fees"],
                "n_tokens": [2, 1],
            }
        ),
        p,
    )
    with pytest.raises(ValidationError, match="duplicate chunk id 'a'"):
        load_chunking(p)


def test_bad_paths(tmp_path):
    with pytest.raises(UsageError, match=re.escape(".parquet or .jsonl")):
        load_chunking(tmp_path / "c.csv")
    with pytest.raises(InputError, match="file not found"):
        load_chunking(tmp_path / "missing.jsonl")
    (tmp_path / "junk.parquet").write_text("not parquet")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        load_chunking(tmp_path / "junk.parquet")
