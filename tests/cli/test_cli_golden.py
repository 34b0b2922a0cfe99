"""`ragmeter golden`: outputs and exit codes of import, validate, freeze, relocate and stats."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.data import load_corpus, load_golden, write_corpus

FIX = Path(__file__).parents[1] / "fixtures" / "data"
runner = CliRunner()


def _golden(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, ["golden", *map(str, args)], env={"COLUMNS": "200"})
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    golden, corpus = tmp_path / "golden.jsonl", tmp_path / "corpus.jsonl"
    shutil.copy(FIX / "golden.jsonl", golden)
    shutil.copy(FIX / "corpus.jsonl", corpus)
    return golden, corpus


def test_import_squad_and_beir_write_both_files_and_refuse_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "sq"
    code, stdout, _ = _golden("import", "squad", FIX / "squad.json", "-o", out)
    assert code == 0
    assert "wrote 2 documents" in stdout and "4 questions" in stdout and "version g-" in stdout
    assert load_golden(out / "golden.jsonl", out / "corpus.jsonl").ids == [
        "sb1",
        "sb2",
        "sb3",
        "nt1",
    ]
    code, _, stderr = _golden("import", "squad", FIX / "squad.json", "-o", out)
    assert code == 2 and "already exist" in stderr and "--force" in stderr
    assert _golden("import", "squad", FIX / "squad.json", "-o", out, "--force")[0] == 0

    code, stdout, _ = _golden(
        "import", "beir", FIX / "beir", "-o", tmp_path / "b", "--split", "train"
    )
    assert code == 0 and "1 questions" in stdout
    assert len(load_corpus(tmp_path / "b" / "corpus.jsonl")) == 4


def test_import_bad_source_is_exit_2(tmp_path: Path) -> None:
    code, _, stderr = _golden("import", "squad", tmp_path / "nope.json", "-o", tmp_path / "x")
    assert code == 2 and "file not found" in stderr
    assert _golden("import", "csv", FIX / "squad.json", "-o", tmp_path / "x")[0] == 2


def test_validate_ok_prints_a_summary(files: tuple[Path, Path]) -> None:
    golden, corpus = files
    code, stdout, _ = _golden("validate", golden, "--corpus", corpus)
    assert code == 0
    assert stdout.splitlines()[0] == (
        f"ok: {golden}: 5 questions (4 answerable, 1 unanswerable), 6 spans over 3 documents, "
        "0 problems"
    )
    assert stdout.splitlines()[1].startswith("version: g-")
    code, stdout, _ = _golden("validate", golden, "--format", "json")
    got = json.loads(stdout)
    assert code == 0 and got["ok"] and got["questions"] == 5 and got["version"] is None


def test_validate_lists_every_problem_and_exits_2(files: tuple[Path, Path]) -> None:
    golden, corpus = files
    lines = golden.read_text().splitlines()
    q1 = json.loads(lines[0])
    q1["evidence"][0]["doc"] = "feez"
    q2 = json.loads(lines[1])
    q2["evidence"][0]["start"] = q2["evidence"][0]["end"]
    golden.write_text("\n".join([json.dumps(q1), json.dumps(q2), *lines[2:], lines[3]]) + "\n")
    code, stdout, stderr = _golden("validate", golden, "--corpus", corpus)
    assert code == 2
    assert stdout.splitlines() == [
        (
            f"{golden}:1: field 'evidence[0].doc': unknown document 'feez': not in the corpus; "
            "did you mean 'fees'?"
        ),
        (
            f"{golden}:2: field 'evidence[0].end': empty span: end (178) must be greater than "
            "start (178)"
        ),
        f"{golden}:6: field 'id': duplicate question id 'q4' (first on line 4)",
    ]
    assert "3 problem(s)" in stderr
    code, stdout, _ = _golden("validate", golden, "--corpus", corpus, "--format", "json")
    got = json.loads(stdout)
    assert code == 2 and not got["ok"]
    assert [(p["line"], p["field"]) for p in got["problems"]] == [
        (1, "evidence[0].doc"),
        (2, "evidence[0].end"),
        (6, "id"),
    ]


def test_validate_with_a_bad_corpus_is_exit_2(files: tuple[Path, Path]) -> None:
    golden, corpus = files
    corpus.write_text('{"id": "a"}\n')
    code, _, stderr = _golden("validate", golden, "--corpus", corpus)
    assert code == 2 and ":1: field 'text'" in stderr


def test_freeze_check_and_forced_refreeze(files: tuple[Path, Path]) -> None:
    golden, corpus = files
    code, stdout, _ = _golden("freeze", golden, "--corpus", corpus)
    lock = golden.with_name("golden.lock.json")
    assert code == 0 and lock.exists()
    version = json.loads(lock.read_text())["version"]
    assert f"at {version}" in stdout and "5 questions, 6 spans, 3 documents" in stdout
    code, stdout, _ = _golden("freeze", golden, "--corpus", corpus)
    assert code == 0 and "nothing to do" in stdout
    code, stdout, _ = _golden("freeze", golden, "--corpus", corpus, "--check")
    assert code == 0 and f"unchanged since frozen: {version}" in stdout

    docs = load_corpus(corpus)
    write_corpus(
        [d.model_copy(update={"text": d.text.upper()}) if d.id == "infants" else d for d in docs],
        corpus,
    )
    code, stdout, _ = _golden("freeze", golden, "--corpus", corpus, "--check")
    assert code == 1 and "referenced documents changed: infants" in stdout
    code, stdout, stderr = _golden("validate", golden, "--corpus", corpus)
    assert code == 2  # q4's span text no longer matches
    assert "ragmeter golden relocate" in stdout

    golden.write_text(golden.read_text().replace('"grade": 1', '"grade": 2'))
    write_corpus(docs, corpus)
    code, _, stderr = _golden("freeze", golden, "--corpus", corpus)  # stdin is not a tty
    assert code == 2 and f"already records version {version}" in stderr
    assert json.loads(lock.read_text())["version"] == version
    code, stdout, _ = _golden("validate", golden, "--corpus", corpus)
    assert code == 0
    code, stdout, _ = _golden("freeze", golden, "--corpus", corpus, "--force", "--format", "json")
    got = json.loads(stdout)
    assert code == 0 and got["written"] and got["previous_version"] == version
    assert got["version"] != version


def test_relocate_repairs_what_it_can_and_exits_1_for_the_rest(files: tuple[Path, Path]) -> None:
    golden, corpus = files
    docs = load_corpus(corpus)
    edits = {
        "fees": lambda t: "Updated 2025.\n" + t,  # exact move
        "infants": lambda t: t.replace(" years ", "\n  years "),  # whitespace move
        "refunds": lambda t: t.replace("taxes are refunded", "taxes are kept"),
    }  # lost
    write_corpus(
        [d.model_copy(update={"text": edits[d.id](d.text)}) if d.id in edits else d for d in docs],
        corpus,
    )
    out = golden.with_name("relocated.jsonl")
    code, stdout, _ = _golden("relocate", golden, "--corpus", corpus, "-o", out)
    assert code == 1
    assert "4 moved, 1 unchanged, 0 unchecked (no text recorded), 1 not re-anchored" in stdout
    assert "(whitespace)" in stdout and "(exact)" in stdout
    assert "not re-anchored (kept as it was): q3 evidence[1] on 'refunds'" in stdout
    relocated = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(relocated) == 5 and len(relocated[2]["evidence"]) == 3  # nothing dropped

    code, _, stderr = _golden("relocate", golden, "--corpus", corpus, "-o", out)
    assert code == 2 and "--force" in stderr
    code, stdout, _ = _golden(
        "relocate", golden, "--corpus", corpus, "-o", out, "--force", "--format", "json"
    )
    got = json.loads(stdout)
    assert code == 1 and len(got["moved"]) == 4 and got["unresolved"][0]["question"] == "q3"


def test_relocate_all_repaired_exits_0(files: tuple[Path, Path]) -> None:
    golden, corpus = files
    docs = load_corpus(corpus)
    write_corpus([d.model_copy(update={"text": "Preface.\n" + d.text}) for d in docs], corpus)
    out = golden.with_name("relocated.jsonl")
    code, stdout, _ = _golden("relocate", golden, "--corpus", corpus, "-o", out)
    assert code == 0 and "6 moved" in stdout
    assert _golden("validate", out, "--corpus", corpus)[0] == 0


def test_stats_table_and_json(files: tuple[Path, Path]) -> None:
    golden, corpus = files
    code, stdout, stderr = _golden("stats", golden, "--corpus", corpus)
    assert code == 0
    for text in (
        "questions",
        "tune / heldout",
        "3 / 2",
        "1: 1, 2: 5",
        "multi-passage",
        "g-",
        "1 / 1 / 1.5 / 3",
    ):
        assert text in stdout
    assert "warning: slice 'fees' has 2 question(s), under 10" in stderr
    code, stdout, _ = _golden("stats", golden, "--format", "json")
    got = json.loads(stdout)
    assert code == 0 and got["questions"] == 5 and got["slices"]["fees"] == 2
    assert got["version"] is None and got["splits"] == {"tune": 3, "heldout": 2}
