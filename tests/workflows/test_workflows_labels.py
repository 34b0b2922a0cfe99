"""``ragmeter.workflows.labels``: the chunking and labelling jobs called directly, as the lab's
labelling workbench will call them. Chunking checks its names and its output's suffix before any
file is read and reports its progress through a callback; the chunk-qrels export gives what the
labels layer gives, written to the file, with its warnings kept in the record."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ragmeter._errors import RagmeterWarning, UsageError
from ragmeter.chunking import chunk_corpus, from_ranges, load_chunking
from ragmeter.data import Document, Evidence, Question, load_corpus, write_corpus, write_golden
from ragmeter.io import to_qrels
from ragmeter.labels import chunk_qrels
from ragmeter.workflows import labels as wf

FIX = Path(__file__).parents[1] / "fixtures" / "data"
DOC = Document(id="d", text="x" * 400)


def test_plan_checks_both_names_before_any_work() -> None:
    plan = wf.plan_chunking("tokens:30", "regex-words")
    assert plan.chunker.name == "tokens:30:0" and plan.tokenizer.name == "regex-words"
    with pytest.raises(UsageError, match="bad chunker name"):
        wf.plan_chunking("tokens:x", "regex-words")
    with pytest.raises(UsageError):
        wf.plan_chunking("tokens:30", "no-such-tokenizer")


def test_chunk_files_writes_what_chunk_corpus_makes_and_reports_progress(tmp_path: Path) -> None:
    calls: list[tuple[str, int]] = []
    done_counts: list[int] = []

    @contextmanager
    def progress(description: str, total: int) -> Iterator[Callable[[int, int], None]]:
        calls.append((description, total))
        yield lambda done, _total: done_counts.append(done)

    out = tmp_path / "chunks.jsonl"
    plan = wf.plan_chunking("tokens:20:5", "regex-words")
    done = wf.chunk_files(FIX / "corpus.jsonl", plan, out, progress=progress)
    docs = load_corpus(FIX / "corpus.jsonl")
    same = chunk_corpus(docs, "tokens:20:5", tokenizer="regex-words")
    assert calls == [("chunking tokens:20:5", len(docs))] and done_counts[-1] == len(docs)
    assert done.output == out and list(done.chunking.ids) == list(same.ids)
    assert list(load_chunking(out).ids) == list(same.ids)
    assert done.stats() == dict(same.stats(), path=str(out))
    # without a progress callback, and from a loaded corpus: the same chunks
    quiet = wf.chunk_files(docs, plan, tmp_path / "again.parquet")
    assert list(quiet.chunking.ids) == list(same.ids) and quiet.stats()["path"].endswith(".parquet")


def test_chunk_files_refuses_a_bad_suffix_before_reading_the_corpus(tmp_path: Path) -> None:
    plan = wf.plan_chunking("document", "regex-words")
    with pytest.raises(UsageError, match=r"\.parquet or \.jsonl"):
        wf.chunk_files(tmp_path / "no-such-corpus.jsonl", plan, tmp_path / "chunks.csv")
    assert not (tmp_path / "chunks.csv").exists()


def _files(tmp_path: Path, evidence: list[Evidence]) -> tuple[Path, Path, Path]:
    corpus = write_corpus([DOC], tmp_path / "corpus.jsonl")
    golden = write_golden([Question(id="q", question="?", evidence=evidence)], tmp_path / "g.jsonl")
    chunking = from_ranges(
        [DOC], [("d", 0, 100), ("d", 100, 200), ("d", 200, 400)], name="c", tokenizer="regex-words"
    )
    chunks = chunking.save(tmp_path / "chunks.jsonl")
    return golden, chunks, corpus


def test_export_writes_the_qrels_chunk_qrels_gives(tmp_path: Path) -> None:
    spans = [Evidence(doc="d", start=10, end=20, grade=1), Evidence(doc="d", start=120, end=190)]
    golden, chunks, corpus = _files(tmp_path, spans)
    out = tmp_path / "qrels.txt"
    done = wf.export_chunk_qrels(golden, chunks, out, cover=0.5, corpus=corpus)
    same = chunk_qrels(
        [Question(id="q", question="?", evidence=spans)], load_chunking(chunks), cover=0.5
    )
    written = to_qrels(out)
    assert written.doc.to_pylist() == same.doc.to_pylist() == ["d#0-100", "d#100-200"]
    assert written.rel.tolist() == same.rel.tolist()
    assert (done.output, done.judgements, done.questions) == (out, 2, 1)
    assert (done.chunking, done.cover, done.warnings) == ("c", 0.5, [])


def test_export_keeps_the_warnings_in_the_record(tmp_path: Path) -> None:
    # 50 characters in each of two chunks: half the span and half of the first chunk
    golden, chunks, _ = _files(tmp_path, [Evidence(doc="d", start=50, end=150)])
    out = tmp_path / "qrels.txt"
    with warnings.catch_warnings():
        warnings.simplefilter("error", RagmeterWarning)  # none escapes
        done = wf.export_chunk_qrels(golden, chunks, out, cover=0.7)
    assert done.judgements == 0 and done.questions == 0 and out.exists()
    assert len(done.warnings) == 1 and "1 question" in done.warnings[0]


def test_export_refuses_a_bad_cover_before_writing(tmp_path: Path) -> None:
    golden, chunks, _ = _files(tmp_path, [Evidence(doc="d", start=10, end=20)])
    with pytest.raises(UsageError, match="cover"):
        wf.export_chunk_qrels(golden, chunks, tmp_path / "q.txt", cover=1.5)
    assert not (tmp_path / "q.txt").exists()
