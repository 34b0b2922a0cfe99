"""Golden-set versions: the documented definition, stability, sensitivity, freeze and checks."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from ragmeter import UsageError, ValidationError
from ragmeter.data import (
    Corpus,
    check_frozen,
    freeze,
    load_corpus,
    load_golden,
    lock_path_for,
    write_corpus,
)

FIX = Path(__file__).parents[1] / "fixtures" / "data"


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    golden, corpus = tmp_path / "golden.jsonl", tmp_path / "corpus.jsonl"
    shutil.copy(FIX / "golden.jsonl", golden)
    shutil.copy(FIX / "corpus.jsonl", corpus)
    return golden, corpus


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _save(path: Path, records: list[dict], **dump: object) -> Path:
    path.write_text("".join(json.dumps(r, **dump) + "\n" for r in records), encoding="utf-8")
    return path


def _version(golden: Path, corpus: Path) -> str:
    return load_golden(golden, corpus).version


def test_version_follows_the_documented_definition() -> None:
    """Recompute docs/formats.md's definition independently of the implementation."""
    golden = load_golden(FIX / "golden.jsonl", FIX / "corpus.jsonl")
    corpus = golden.corpus
    assert corpus is not None
    lines = []
    for q in sorted(_records(FIX / "golden.jsonl"), key=lambda r: r["id"]):
        full = {"answer": None, "answerable": True, "slices": [], "split": "tune", **q}
        full["evidence"] = [
            {"grade": 1, "text": None, "required": None, **e} for e in q.get("evidence", [])
        ]
        lines.append(json.dumps(full, sort_keys=True, ensure_ascii=False, separators=(",", ":")))
    labels = hashlib.sha256("".join(x + "\n" for x in lines).encode()).hexdigest()
    docs = sorted({e["doc"] for q in _records(FIX / "golden.jsonl") for e in q["evidence"]})
    doc_lines = "".join(
        json.dumps([d, hashlib.sha256(corpus[d].text.encode()).hexdigest()], ensure_ascii=False)
        + "\n"
        for d in docs
    )
    documents = hashlib.sha256(doc_lines.encode()).hexdigest()
    digest = hashlib.sha256(f"ragmeter-golden-version/1\n{labels}\n{documents}\n".encode())
    assert golden.labels_digest == labels
    assert golden.version == "g-" + digest.hexdigest()[:12]


def test_reformatting_the_jsonl_keeps_the_version(files: tuple[Path, Path], tmp_path: Path) -> None:
    golden, corpus = files
    before = _version(golden, corpus)
    records = _records(golden)
    shuffled = [dict(reversed(list(r.items()))) for r in reversed(records)]
    for r in shuffled:
        if r.get("split") == "tune":
            del r["split"]  # an omitted default is the same label
    reformatted = _save(tmp_path / "other.jsonl", shuffled, indent=None, separators=(" , ", " : "))
    text = reformatted.read_text()
    reformatted.write_text("\n" + text.replace("\n", "\n\n"))  # blank lines too
    assert _version(reformatted, corpus) == before
    assert _version(golden, corpus) == before  # stable across calls


@pytest.mark.parametrize(
    "edit",
    [
        lambda r: r[0]["evidence"][0].update(grade=1),
        lambda r: r[0]["evidence"][0].update(
            end=r[0]["evidence"][0]["end"] - 1, text=r[0]["evidence"][0]["text"][:-1]
        ),
        lambda r: r[1].update(slices=["fees"]),
        lambda r: r[1].update(split="tune"),
        lambda r: r[3].update(question="What does a baby pay?"),
        lambda r: r[2]["evidence"].reverse(),
        lambda r: r.pop(),
    ],
)
def test_any_label_change_changes_the_version(files: tuple[Path, Path], edit) -> None:
    golden, corpus = files
    before = _version(golden, corpus)
    records = _records(golden)
    edit(records)
    assert _version(_save(golden, records), corpus) != before


def test_referenced_documents_count_unreferenced_do_not(files: tuple[Path, Path]) -> None:
    golden, corpus_path = files
    corpus = load_corpus(corpus_path)
    before = _version(golden, corpus_path)

    def edited(doc_id: str) -> Path:
        docs = [
            d.model_copy(update={"text": d.text + " Updated."}) if d.id == doc_id else d
            for d in corpus
        ]
        return write_corpus(Corpus(docs), corpus_path.with_name(f"{doc_id}.jsonl"))

    assert _version(golden, edited("infants")) != before  # referenced by q4
    assert _version(golden, edited("fees-2024")) == before  # referenced by nobody
    assert load_corpus(edited("fees-2024")).fingerprint != corpus.fingerprint


def test_version_without_corpus_needs_a_lock(files: tuple[Path, Path]) -> None:
    golden, corpus = files
    with pytest.raises(UsageError, match="corpus"):
        _ = load_golden(golden).version
    freeze(golden, corpus)
    assert load_golden(golden).version == _version(golden, corpus)
    records = _records(golden)
    records[0]["answer"] = "seventy-five euros"
    _save(golden, records)
    with pytest.raises(UsageError, match="changed since it was frozen"):
        _ = load_golden(golden).version


def test_freeze_writes_a_lock_and_never_overwrites_silently(files: tuple[Path, Path]) -> None:
    golden, corpus = files
    first = freeze(golden, corpus)
    lock_file = golden.with_name("golden.lock.json")
    assert first.written and first.lock_path == lock_file == lock_path_for(golden)
    lock = json.loads(lock_file.read_text())
    assert lock["version"] == _version(golden, corpus)
    assert lock["counts"] == {
        "questions": 5,
        "answerable": 4,
        "unanswerable": 1,
        "spans": 6,
        "documents_referenced": 3,
        "tune": 3,
        "heldout": 2,
    }
    assert sorted(lock["documents"]) == ["fees", "infants", "refunds"]
    assert lock["corpus"]["documents"] == 4 and lock["frozen_at"].endswith("Z")

    again = freeze(golden, corpus)  # same version: nothing rewritten
    assert not again.written and again.lock == lock

    records = _records(golden)
    records[0]["evidence"][0]["grade"] = 1
    _save(golden, records)
    with pytest.raises(UsageError, match=r"already records version g-\w+.*--force"):
        freeze(golden, corpus)
    assert json.loads(lock_file.read_text()) == lock  # untouched
    forced = freeze(golden, corpus, force=True)
    assert forced.written and forced.previous_version == lock["version"]
    assert forced.lock["version"] != lock["version"]


def test_freeze_refuses_an_invalid_golden_set(files: tuple[Path, Path]) -> None:
    golden, corpus = files
    records = _records(golden)
    records[0]["evidence"][0]["doc"] = "missing"
    _save(golden, records)
    with pytest.raises(ValidationError, match="unknown document 'missing'"):
        freeze(golden, corpus)
    assert not lock_path_for(golden).exists()


def test_check_frozen_names_what_changed(files: tuple[Path, Path]) -> None:
    golden, corpus_path = files
    freeze(golden, corpus_path)
    check = check_frozen(golden, corpus_path)
    assert check.ok and check.describe() == []

    records = _records(golden)
    records[1]["answer"] = "R16"
    removed = records.pop(3)
    records.append({"id": "q9", "question": "new?", "answerable": False})
    _save(golden, records)
    corpus = load_corpus(corpus_path)
    docs = [
        d.model_copy(update={"text": "Refunds changed."}) if d.id == "refunds" else d
        for d in corpus
        if d.id != "infants"
    ]
    write_corpus(docs, corpus_path)

    check = check_frozen(golden, corpus_path)
    assert not check.ok
    assert check.changed_questions == ["q2"]
    assert check.removed_questions == [removed["id"]]
    assert check.added_questions == ["q9"]
    assert check.changed_documents == ["refunds"]
    assert check.missing_documents == ["infants"]  # q4 was removed but the lock references it
    assert check.corpus_changed and check.current_version is None
    text = "\n".join(check.describe())
    assert "questions changed: q2" in text and "referenced documents changed: refunds" in text


def test_check_frozen_notes_unreferenced_corpus_edits(files: tuple[Path, Path]) -> None:
    golden, corpus_path = files
    freeze(golden, corpus_path)
    corpus = load_corpus(corpus_path)
    write_corpus([*corpus, corpus["fees"].model_copy(update={"id": "new"})], corpus_path)
    check = check_frozen(golden, corpus_path)
    assert check.ok and check.corpus_changed
    assert "outside the referenced documents" in check.describe()[0]
