"""Corpora: JSONL and folder loading, every bad line reported at once, hashes, round trips."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from ragmeter import InputError, ValidationError
from ragmeter.data import Corpus, Document, load_corpus, write_corpus

FIX = Path(__file__).parents[1] / "fixtures" / "data"


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_jsonl_corpus_loads_in_order_with_lookup() -> None:
    corpus = load_corpus(FIX / "corpus.jsonl")
    assert corpus.ids == ["fees", "fees-2024", "infants", "refunds"]
    assert len(corpus) == 4
    assert "fees" in corpus and "nope" not in corpus
    assert [d.id for d in corpus] == corpus.ids
    assert corpus["fees-2024"].metadata == {"effective_date": "2024-01-01", "version": "2024.2"}
    assert corpus["refunds"].title is None
    with pytest.raises(KeyError, match="nope"):
        corpus["nope"]


def test_content_hash_is_sha256_of_utf8_text() -> None:
    corpus = load_corpus(FIX / "corpus.jsonl")
    text = corpus["infants"].text
    assert corpus.content_hash("infants") == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_fingerprint_ignores_order_but_not_content() -> None:
    corpus = load_corpus(FIX / "corpus.jsonl")
    reversed_ = Corpus(reversed(list(corpus)))
    assert reversed_.fingerprint == corpus.fingerprint
    edited = Corpus(
        [d if d.id != "refunds" else d.model_copy(update={"text": d.text + "!"}) for d in corpus]
    )
    assert edited.fingerprint != corpus.fingerprint
    retitled = Corpus(
        [d if d.id != "fees" else d.model_copy(update={"title": "Fees"}) for d in corpus]
    )
    assert retitled.fingerprint != corpus.fingerprint


def test_every_bad_line_is_reported_with_line_and_field(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "c.jsonl",
        [
            '{"id": "a", "text": "one"}',
            '{"id": "b", "text": "two"',  # 2: bad JSON
            "",  # 3: blank, skipped
            '{"id": "c"}',  # 4: missing text
            '{"id": "a", "text": "dup"}',  # 5: duplicate id
            '["not", "an", "object"]',  # 6: not an object
            '{"id": "d", "text": "x", "colour": "red"}',  # 7: unknown field
            '{"id": "", "text": "x"}',  # 8: empty id
            '{"id": "e", "text": 5}',  # 9: text not a string
        ],
    )
    with pytest.raises(ValidationError) as info:
        load_corpus(path)
    got = {(p.line, p.field) for p in info.value.problems}
    assert got == {
        (2, None),
        (4, "text"),
        (5, "id"),
        (6, None),
        (7, "colour"),
        (8, "id"),
        (9, "text"),
    }
    message = str(info.value)
    assert f"{path}:5: field 'id': duplicate document id 'a' (first on line 1)" in message
    assert "invalid JSON" in message and "expected a JSON object, got list" in message


def test_missing_file_and_empty_corpus(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        load_corpus(tmp_path / "missing.jsonl")
    empty = _write(tmp_path / "empty.jsonl", [""])
    with pytest.raises(InputError, match="no documents"):
        load_corpus(empty)
    (tmp_path / "dir").mkdir()
    with pytest.raises(InputError, match=re.escape("no .txt or .md files")):
        load_corpus(tmp_path / "dir")


def test_folder_corpus_uses_relative_posix_ids_and_exact_text() -> None:
    corpus = load_corpus(FIX / "folder")
    assert corpus.ids == ["a.md", "sub/b.txt"]  # .rst, hidden files and folders skipped
    assert corpus["a.md"].text == "# Fees\r\n\r\nA change costs 75 EUR.\r\n"  # no newline rewrite
    assert corpus["sub/b.txt"].text == "Café rules: été only.\n"


def test_folder_with_bad_utf8_is_reported(tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_text("fine", encoding="utf-8")
    (tmp_path / "bad.md").write_bytes(b"caf\xe9")
    with pytest.raises(ValidationError, match=r"bad\.md.*not valid UTF-8"):
        load_corpus(tmp_path)


def test_write_and_reload_round_trip(tmp_path: Path) -> None:
    corpus = load_corpus(FIX / "corpus.jsonl")
    out = write_corpus(corpus, tmp_path / "sub" / "corpus.jsonl")
    again = load_corpus(out)
    assert [d.model_dump() for d in again] == [d.model_dump() for d in corpus]
    first = json.loads(out.read_text(encoding="utf-8").splitlines()[3])
    assert first == {"id": "refunds", "text": corpus["refunds"].text}  # unset fields omitted
    assert not list(out.parent.glob(".*.tmp"))


def test_duplicate_ids_in_memory_are_refused() -> None:
    with pytest.raises(InputError, match="duplicate document id 'a'"):
        Corpus([Document(id="a", text="x"), Document(id="a", text="y")])
