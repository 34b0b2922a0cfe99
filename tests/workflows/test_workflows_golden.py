"""``ragmeter.workflows.golden``: the golden-set jobs called directly, as the lab's labelling
workbench will call them. Each returns the records of ``ragmeter.data`` (the same numbers as the
data layer), writes only the files it is asked to, prints nothing, and asks its questions through
callbacks (``freeze`` replacing a lock)."""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

import pytest

from ragmeter._errors import UsageError, ValidationError
from ragmeter.data import compare_traffic as data_compare_traffic
from ragmeter.data import (
    label_agreement,
    load_corpus,
    load_golden,
    lock_path_for,
    read_log,
    sample_log,
    write_corpus,
)
from ragmeter.workflows import golden as wf

FIX = Path(__file__).parents[1] / "fixtures"
DATA, LABELLERS, TRAFFIC = FIX / "data", FIX / "labellers", FIX / "traffic"


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    golden, corpus = tmp_path / "golden.jsonl", tmp_path / "corpus.jsonl"
    shutil.copy(DATA / "golden.jsonl", golden)
    shutil.copy(DATA / "corpus.jsonl", corpus)
    return golden, corpus


# -- import -------------------------------------------------------------------------------------
def test_import_writes_both_files_and_says_what_it_read(tmp_path: Path) -> None:
    said: list[str] = []

    def status(text: str) -> contextlib.nullcontext[None]:
        said.append(text)
        return contextlib.nullcontext()

    out = tmp_path / "sq"
    done = wf.import_golden("squad", DATA / "squad.json", out, status=status)
    assert (done.corpus_file, done.golden_file) == wf.import_files(out)
    assert said == [f"reading {DATA / 'squad.json'}"]
    gold = load_golden(done.golden_file, done.corpus_file)
    assert (done.documents, done.questions) == (2, 4) and gold.ids == ["sb1", "sb2", "sb3", "nt1"]
    assert done.spans == gold.stats()["spans"] and done.version == gold.stats()["version"]
    beir = wf.import_golden("beir", DATA / "beir", tmp_path / "b", split="train")
    assert beir.questions == 1 and beir.golden_file.exists()


def test_import_refuses_an_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="beir, squad"):
        wf.import_golden("csv", DATA / "squad.json", tmp_path)
    assert not any(tmp_path.iterdir())


# -- validate -----------------------------------------------------------------------------------
def test_validate_a_good_set_gives_its_stats_and_no_lock_note(files: tuple[Path, Path]) -> None:
    golden, corpus = files
    result = wf.validate(golden, corpus)
    assert result.ok and result.corpus_checked and result.frozen is None
    assert result.stats == load_golden(golden, corpus).stats()
    d = result.to_dict()
    assert d["ok"] is True and d["problems"] == [] and d["frozen"] is None
    assert d["questions"] == 5 and d["spans"] == 6 and d["version"].startswith("g-")
    # without a corpus: document checks skipped, no version, never a lock check
    bare = wf.validate(golden)
    assert bare.ok and not bare.corpus_checked and bare.stats is not None
    assert bare.stats["version"] is None


def test_validate_lists_every_problem_without_raising(files: tuple[Path, Path]) -> None:
    golden, corpus = files
    lines = golden.read_text().splitlines()
    lines[0] = lines[0].replace('"doc": "fees"', '"doc": "nowhere"')
    golden.write_text("\n".join(lines) + "\n")
    result = wf.validate(golden, load_corpus(corpus))  # a loaded corpus works as a path does
    assert not result.ok and result.stats is None
    assert [(p.line, p.field) for p in result.problems] == [(1, "evidence[0].doc")]
    assert result.to_dict() == {
        "ok": False,
        "problems": [wf.problem_dict(p) for p in result.problems],
    }
    assert wf.problem_dict(result.problems[0])["line"] == 1


def test_validate_compares_with_the_lock_when_one_is_beside_the_set(
    files: tuple[Path, Path],
) -> None:
    golden, corpus = files
    wf.freeze_golden(golden, corpus)
    fresh = wf.validate(golden, corpus)
    assert fresh.frozen is not None and fresh.frozen.ok
    assert wf.frozen_note(fresh.frozen) == fresh.to_dict()["frozen"]
    assert list(fresh.to_dict()["frozen"]) == [
        "lock",
        "locked_version",
        "current_version",
        "ok",
        "changes",
    ]
    # a document outside the spans changed: the version holds, the note says the corpus moved
    docs = load_corpus(corpus)
    extra = docs["fees"].model_copy(update={"id": "unrelated", "text": "nothing labelled here"})
    write_corpus([*docs, extra], corpus)
    moved = wf.validate(golden, corpus)
    assert moved.ok and moved.frozen is not None and moved.frozen.ok
    assert moved.frozen.corpus_changed


# -- freeze -------------------------------------------------------------------------------------
def test_freeze_writes_the_lock_once_and_check_sees_changes(files: tuple[Path, Path]) -> None:
    golden, corpus = files
    done = wf.freeze_golden(golden, corpus)
    assert done is not None and done.written and done.lock_path == lock_path_for(golden)
    d = wf.freeze_dict(done)
    assert list(d) == [
        "lock",
        "written",
        "previous_version",
        "version",
        "counts",
        "corpus",
        "frozen_at",
        "parent",
    ]
    assert d["lock"] == str(lock_path_for(golden)) and d["version"] == done.lock["version"]
    again = wf.freeze_golden(golden, corpus)
    assert again is not None and not again.written  # the same version: nothing to do

    check = wf.check_golden(golden, corpus)
    assert check.ok and check.describe() == []
    assert list(wf.check_dict(check)) == [
        "lock",
        "ok",
        "locked_version",
        "current_version",
        "changes",
    ]
    docs = load_corpus(corpus)
    write_corpus(
        [d.model_copy(update={"text": d.text.upper()}) if d.id == "infants" else d for d in docs],
        corpus,
    )
    changed = wf.check_golden(golden, corpus)
    assert not changed.ok and changed.changed_documents == ["infants"]
    assert wf.check_dict(changed)["changes"] == changed.describe()


def test_freeze_asks_before_replacing_a_lock_of_another_version(
    files: tuple[Path, Path],
) -> None:
    golden, corpus = files
    first = wf.freeze_golden(golden, corpus)
    assert first is not None
    version = first.lock["version"]
    golden.write_text(golden.read_text().replace('"grade": 1', '"grade": 2'))

    with pytest.raises(UsageError, match=f"already records version {version}"):
        wf.freeze_golden(golden, corpus)  # nobody to ask: the lock stands
    asked: list[tuple[Path, str]] = []

    def no(lock: Path, old: str) -> bool:
        asked.append((lock, old))
        return False

    assert wf.freeze_golden(golden, corpus, confirm=no) is None
    assert asked == [(lock_path_for(golden), version)]
    assert json.loads(lock_path_for(golden).read_text())["version"] == version

    replaced = wf.freeze_golden(golden, corpus, confirm=lambda _lock, _old: True)
    assert replaced is not None and replaced.written and replaced.previous_version == version
    assert replaced.lock["version"] != version
    # --force never asks
    golden.write_text(golden.read_text().replace('"grade": 2', '"grade": 1', 1))
    forced = wf.freeze_golden(golden, corpus, force=True, confirm=no)
    assert forced is not None and forced.written and len(asked) == 1


# -- relocate -----------------------------------------------------------------------------------
def test_relocate_writes_the_whole_set_and_reports_each_span(files: tuple[Path, Path]) -> None:
    golden, corpus = files
    docs = load_corpus(corpus)
    edits = {
        "fees": lambda t: "Updated 2025.\n" + t,
        "refunds": lambda t: t.replace("taxes are refunded", "taxes are kept"),
    }
    write_corpus(
        [d.model_copy(update={"text": edits[d.id](d.text)}) if d.id in edits else d for d in docs],
        corpus,
    )
    out = golden.with_name("relocated.jsonl")
    done = wf.relocate_golden(golden, corpus, out)
    assert done.output == out and not done.report.ok
    assert [u.question for u in done.report.unresolved] == ["q3"]
    assert len(load_golden(out)) == 5  # nothing dropped
    d = done.to_dict()
    assert d["output"] == str(out) and d["ok"] is False
    assert len(d["moved"]) == len(done.report.moved) and d["unresolved"][0]["question"] == "q3"
    assert set(d["moved"][0]) == {"question", "evidence", "doc", "old", "new", "method"}


def test_relocate_refuses_a_golden_set_that_does_not_load(tmp_path: Path) -> None:
    bad = tmp_path / "golden.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(ValidationError):
        wf.relocate_golden(bad, DATA / "corpus.jsonl", tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()


# -- describe -----------------------------------------------------------------------------------
def test_describe_is_the_sets_stats(files: tuple[Path, Path]) -> None:
    golden, corpus = files
    s = wf.describe(golden, corpus)
    assert s == load_golden(golden, corpus).stats()
    assert s["questions"] == 5 and s["version"].startswith("g-")
    assert wf.describe(golden)["version"] is None


# -- agree --------------------------------------------------------------------------------------
def test_agree_is_label_agreement_with_the_corpus_kept_for_the_text() -> None:
    a, b, corpus = LABELLERS / "a.jsonl", LABELLERS / "b.jsonl", LABELLERS / "corpus.jsonl"
    got = wf.agree(a, b, corpus)
    docs = load_corpus(corpus)
    same = label_agreement(load_golden(a, docs), load_golden(b, docs))
    assert got.corpus is not None and len(got.corpus) == len(docs)
    assert got.result.f1 == same.f1 and got.result.worst(3) == same.worst(3)
    assert got.to_dict(3) == same.to_dict(docs, 3)
    bare = wf.agree(a, b)
    assert bare.corpus is None and bare.to_dict(2) == same.to_dict(None, 2)


# -- traffic ------------------------------------------------------------------------------------
def test_sample_traffic_draws_as_sample_log_and_writes_only_when_asked(tmp_path: Path) -> None:
    log = TRAFFIC / "log.jsonl"
    same = sample_log(read_log(log), 5, by="slice", seed=3)
    got = wf.sample_traffic(log, 5, by="slice", seed=3)
    assert got.to_jsonl() == same.to_jsonl() and got.strata == same.strata
    assert not any(tmp_path.iterdir())
    out = tmp_path / "sample.jsonl"
    written = wf.sample_traffic(log, 5, by="slice", seed=3, out=out)
    assert out.read_text().splitlines() == written.to_jsonl() == same.to_jsonl()


def test_compare_traffic_takes_a_path_or_a_loaded_set() -> None:
    golden, log = TRAFFIC / "golden.jsonl", TRAFFIC / "log.jsonl"
    same = data_compare_traffic(load_golden(golden), read_log(log), field="slice", factor=1.5)
    by_path = wf.compare_traffic(golden, log, factor=1.5)
    by_set = wf.compare_traffic(load_golden(golden), log, factor=1.5)
    assert by_path.to_dict() == by_set.to_dict() == same.to_dict()
    assert by_path.factor == 1.5
