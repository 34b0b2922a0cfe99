"""``ragmeter golden diff`` and ``golden freeze --parent``: outputs, lineage, stored versions,
exit codes (0 whatever changed, 2 for a usage or input error)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.data import golden_diff, load_golden, read_lock
from ragmeter.store import Store

LABELLERS = Path(__file__).parents[1] / "fixtures" / "labellers"
XSS = Path(__file__).parents[1] / "fixtures" / "xss"
runner = CliRunner()


def _golden(*args: object) -> tuple[int, str, str]:
    r = runner.invoke(app, ["golden", *map(str, args)], env={"COLUMNS": "200"})
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture()
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    monkeypatch.chdir(tmp_path)
    for name in ("a.jsonl", "b.jsonl", "corpus.jsonl"):
        shutil.copy(LABELLERS / name, tmp_path / name)
    return tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "corpus.jsonl"


def test_table_lists_every_kind_of_change_and_exits_0(files: tuple[Path, Path, Path]) -> None:
    a, b, corpus = files
    code, out, err = _golden("diff", a, b, "--corpus", corpus)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"golden diff: {a} (g-") and f"-> {b} (g-" in lines[0]
    assert "questions: 1 added, 1 removed, 7 changed, 1 unchanged" in out
    assert "spans (questions in both): 1 added, 3 removed, 4 moved; 3 grade(s)" in out
    assert "+ q7: 'Do infants fly free?' (0 span(s), unanswerable, tune)" in lines
    assert "- q6: 'Can I change a Basic fare online?' (1 span(s))" in lines
    assert (
        "    span moved: d1 0-30 -> 12-30 'Basic fares cannot be changed.' -> "
        "'cannot be changed.'" in lines
    )
    assert "    grade: d1 52-67 2 -> 1" in lines
    assert "    answerable: True -> False" in lines


def test_json_is_the_library_record(files: tuple[Path, Path, Path]) -> None:
    a, b, corpus = files
    code, out, _ = _golden("diff", a, b, "-c", corpus, "--format", "json")
    assert code == 0
    got = json.loads(out)
    want = golden_diff(load_golden(a, corpus), load_golden(b, corpus)).to_dict()
    assert got == json.loads(json.dumps(want))
    assert got["summary"]["questions_changed"] == 7 and got["lineage"] is None


def test_a_set_against_itself_says_no_difference(files: tuple[Path, Path, Path]) -> None:
    a, _, _ = files
    code, out, _ = _golden("diff", a, a)
    assert code == 0 and "no difference" in out
    code, out, _ = _golden("diff", a, a, "-f", "json")
    assert json.loads(out)["empty"] is True


def test_freeze_parent_by_file_lock_or_version_and_diff_shows_lineage(
    files: tuple[Path, Path, Path],
) -> None:
    a, b, corpus = files
    code, out, _ = _golden("freeze", a, "-c", corpus)
    v1 = read_lock(a.with_suffix(".lock.json"))["version"]
    assert code == 0 and ", parent " not in out
    code, out, err = _golden("freeze", b, "-c", corpus, "--parent", a)
    assert code == 0, err
    assert f", parent {v1} -> " in out
    assert read_lock(b.with_suffix(".lock.json"))["parent"] == v1
    for same in (a.with_suffix(".lock.json"), v1):  # the lock, or the version itself
        code, out, _ = _golden("freeze", b, "-c", corpus, "--parent", same)
        assert code == 0 and "already frozen" in out
    code, out, _ = _golden("freeze", b, "-c", corpus, "-f", "json")
    assert json.loads(out)["parent"] == v1
    code, out, _ = _golden("diff", a, b)  # no corpus: the versions come from the locks
    assert code == 0
    assert f"lineage: B was made from A (B's parent is {v1})" in out.splitlines()
    code, out, _ = _golden("diff", b, a, "-f", "json")
    assert json.loads(out)["lineage"] == "a-from-b"


def test_an_unfrozen_parent_file_gives_its_version_over_the_corpus(
    files: tuple[Path, Path, Path],
) -> None:
    a, b, corpus = files
    code, _, err = _golden("freeze", b, "-c", corpus, "--parent", a)
    assert code == 0, err
    assert read_lock(b.with_suffix(".lock.json"))["parent"] == load_golden(a, corpus).version
    assert not a.with_suffix(".lock.json").exists()  # the parent is read, never frozen


def test_freeze_parent_refusals_name_what_is_wrong(files: tuple[Path, Path, Path]) -> None:
    _, b, corpus = files
    code, _, err = _golden("freeze", b, "-c", corpus, "--parent", "v1")
    assert code == 2 and "parent 'v1': no such file, and not a golden-set version" in err
    code, _, err = _golden("freeze", b, "-c", corpus, "--parent", b.parent)
    assert code == 2 and "is a folder" in err
    code, _, err = _golden("freeze", b, "-c", corpus, "--check", "--parent", "g-000000000000")
    assert code == 2 and "--check" in err
    _golden("freeze", b, "-c", corpus)
    own = read_lock(b.with_suffix(".lock.json"))["version"]
    code, _, err = _golden("freeze", b, "-c", corpus, "--parent", own)
    assert code == 2 and "its own parent" in err
    code, _, err = _golden("freeze", b, "-c", corpus, "--parent", "g-000000000000")
    assert code == 2 and "--force" in err  # a lock with another lineage is never replaced
    assert read_lock(b.with_suffix(".lock.json")).get("parent") is None


def test_stored_versions_by_their_first_digits(
    files: tuple[Path, Path, Path], store_url: str
) -> None:
    a, b, corpus = files
    url = store_url  # SQLite, then PostgreSQL when the test server is set
    with Store.open(url, migrate=True) as store:
        va = store.put_golden(load_golden(a, corpus))
        vb = store.put_golden(load_golden(b, corpus))
    code, out, err = _golden("diff", va[:6], vb.removeprefix("g-")[:5], "--db", url, "-f", "json")
    assert code == 0, err
    got = json.loads(out)
    assert got["a"]["version"] == va and got["b"]["version"] == vb
    assert got["summary"]["questions_changed"] == 7
    # a file on one side, a stored version on the other
    code, out, _ = _golden("diff", a, vb, "--db", url, "-c", corpus, "-f", "json")
    assert code == 0 and json.loads(out)["summary"] == got["summary"]
    code, _, err = _golden("diff", "g-", vb, "--db", url)
    assert code == 2 and "2 stored versions" in err and va in err and vb in err
    code, _, err = _golden("diff", "g-abcabc", vb, "--db", url)
    assert code == 2 and "holds no golden-set version starting with 'g-abcabc'" in err
    code, _, err = _golden("diff", va, vb, "--db", url, "--corpus-a", corpus)
    assert code == 2 and "stored version" in err


def test_a_missing_file_is_an_error_and_no_store_is_made(
    files: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    a, _, corpus = files
    code, _, err = _golden("diff", a, "nosuch.jsonl")
    assert code == 2 and "B: nosuch.jsonl: no such file" in err
    assert not (tmp_path / ".ragmeter").exists()
    code, _, err = _golden("diff", a, a, "-c", corpus, "--corpus-a", corpus)
    assert code == 2 and "one corpus for both sets, or one for each" in err


def test_a_bad_golden_file_names_file_line_and_field(files: tuple[Path, Path, Path]) -> None:
    a, b, _ = files
    lines = b.read_text().splitlines()
    lines[2] = '{"id": "q3", "question": 5}'
    b.write_text("\n".join(lines) + "\n")
    code, _, err = _golden("diff", a, b)
    assert code == 2 and f"{b}:3" in err and "question" in err and "Traceback" not in err


def test_markup_in_question_text_prints_as_written(tmp_path: Path) -> None:
    a = XSS / "golden.jsonl"
    edited = tmp_path / "edited.jsonl"
    rows = [json.loads(x) for x in a.read_text().splitlines() if x.strip()]
    rows[0]["question"] += " [red]x[/red] :smile:"
    edited.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, _ = _golden("diff", a, edited, "-c", XSS / "corpus.jsonl")
    assert code == 0
    assert "[red]x[/red] :smile:" in out and "<script>alert(1)</script>" in out
