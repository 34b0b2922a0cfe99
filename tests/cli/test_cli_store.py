"""The experiment store on the command line: every command records by default, `runs list|show|
delete|export|import`, `db current|upgrade`, and `compare`/`gate` on stored run ids.

Each test uses its own store (``store_url``: a SQLite file, and a fresh PostgreSQL schema when
RAGMETER_TEST_DATABASE_URL is set). The experiment is the bundled fare-rules example made
BM25-only (a second or so per run)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from _experiment_files import FARE_RULES, fare_rules_experiment
from typer.testing import CliRunner

from ragmeter import Evaluation
from ragmeter.cli import app
from ragmeter.metrics import parse
from ragmeter.store import Store

TOY = Path(__file__).parents[1] / "fixtures" / "toy"
METRIC = "R@budget=1200"

EXPERIMENT = """\
name = "fare rules bm25"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
output = "runs"
k = 4
budget = 1200
headroom_k = 20
metrics = ["R", "AllR", "RR", "nDCG"]
cover = 0.5

[baseline]
name = "baseline"
chunker = "tokens:300:0"
retriever = "bm25"
depth = 50

[[variant]]
name = "smaller chunks"
chunker = "{chunker}"
k = {k}
"""


def cli(*args: str, columns: int = 200, input: str | None = None) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns)}, input=input)
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture()
def experiment(tmp_path: Path) -> Path:
    return fare_rules_experiment(tmp_path / "exp", EXPERIMENT.format(chunker="tokens:100:0", k=12))


@pytest.fixture()
def db(store_url: str) -> str:
    """``store_url`` migrated as a team migrates a server database: ``ragmeter db upgrade``
    (a SQLite store is migrated by any command that opens it)."""
    code, _, err = cli("db", "upgrade", "--db", store_url)
    assert code == 0, err
    return store_url


def run_experiment(path: Path, url: str) -> dict[str, int]:
    """`ragmeter run` into ``url``; {variant: run id} read back from the store."""
    code, out, err = cli("run", str(path), "--db", url, "--format", "json")
    assert code == 0, err
    json.loads(out)  # stdout stays the experiment's JSON
    assert "stored: runs " in err
    with Store.open(url) as store:
        newest = store.runs(limit=2)
    return {r.name: r.id for r in newest}


def same_numbers(a: dict, b: dict) -> None:
    for key in ("mean_delta", "ci", "wins", "losses", "ties", "fixed", "broken", "n"):
        assert a[key] == b[key], key
    assert a["per_query"] == b["per_query"]
    assert a["golden_version"] == b["golden_version"]


# -- the "done when" ----------------------------------------------------------------------
def test_two_invocations_listed_and_stored_ids_compare_like_the_files(
    experiment: Path, db: str
) -> None:
    first = run_experiment(experiment, db)
    experiment.write_text(EXPERIMENT.format(chunker="tokens:200:0", k=6), encoding="utf-8")
    second = run_experiment(experiment, db)
    assert set(first) == set(second) == {"baseline", "smaller chunks"}

    code, out, err = cli("runs", "list", "--db", db, "--format", "json")
    assert code == 0, err
    listed = json.loads(out)
    assert [r["id"] for r in listed] == sorted([*first.values(), *second.values()], reverse=True)
    assert {r["status"] for r in listed} == {"finished"}
    assert len({r["invocation"] for r in listed}) == 2
    chunkers = {r["id"]: r["config"]["settings"]["chunker"] for r in listed}
    assert chunkers[first["smaller chunks"]] == "tokens:100:0"
    assert chunkers[second["smaller chunks"]] == "tokens:200:0"

    base, cand = second["baseline"], second["smaller chunks"]
    folder = experiment.parent / "runs"
    code, stored, err = cli(
        "compare", str(base), f"run:{cand}", "-m", METRIC, "--format", "json", "--db", db
    )
    assert code == 0, err
    code, files, err = cli(
        "compare",
        str(folder / "baseline" / "evaluation.json"),
        str(folder / "smaller-chunks" / "evaluation.json"),
        "-m",
        METRIC,
        "--format",
        "json",
        "--db",
        db,
    )
    assert code == 0, err
    same_numbers(json.loads(stored), json.loads(files))
    # the comparison was recorded with the runs it read
    with Store.open(db) as store:
        rows = store.comparisons()
    assert [(r["baseline_run_id"], r["candidate_run_id"]) for r in rows] == [
        (None, None),
        (base, cand),
    ]


# -- compare and gate on stored runs -------------------------------------------------------------
def test_eval_json_stays_parseable_and_the_stored_line_is_on_stderr(db: str) -> None:
    code, out, err = cli(
        "eval",
        str(TOY / "qrels.txt"),
        str(TOY / "baseline.run"),
        str(TOY / "reranked.run"),
        "-m",
        "Hit@3",
        "--format",
        "json",
        "--db",
        db,
    )
    assert code == 0, err
    assert [o["run"] for o in json.loads(out)] == [
        str(TOY / "baseline.run"),
        str(TOY / "reranked.run"),
    ]
    assert "stored: runs 1-2 in " in err and "stored" not in out
    # the gate reads the stored runs; Hit@3 on the toy: 1 fixed, 0 broken (hand-checked in
    # test_cli_compare), so --max-broken 0 passes
    code, out, err = cli(
        "gate", "1", "2", "-m", "Hit@3", "--max-broken", "0", "--format", "json",
        "--db", db,
    )  # fmt: skip
    assert code == 0, err
    d = json.loads(out)
    assert d["passed"] is True and "stored: comparison 1 in " in err


def _stored_eval(store: Store, name: str, version: str, values: list[float]) -> int:
    e = Evaluation(
        run=name,
        metrics=(parse("Hit@3"),),
        query_ids=tuple(f"q{i}" for i in range(len(values))),
        values=np.array(values, dtype=np.float64).reshape(-1, 1),
        golden_version=version,
    )
    return store.record_evaluation(e)


def test_compare_is_refused_across_golden_versions(db: str) -> None:
    with Store.open(db) as store:
        a = _stored_eval(store, "a", "g-aaaaaaaaaaaa", [0, 1, 0, 1])
        b = _stored_eval(store, "b", "g-bbbbbbbbbbbb", [1, 1, 0, 1])
        c = _stored_eval(store, "c", "g-aaaaaaaaaaaa", [1, 1, 1, 1])
    code, out, err = cli("compare", str(a), str(b), "--db", db)
    assert code == 2 and "g-aaaaaaaaaaaa" in err and "g-bbbbbbbbbbbb" in err
    assert "Traceback" not in err
    code, out, err = cli("compare", str(a), str(c), "--format", "json", "--db", db)
    assert code == 0, err
    d = json.loads(out)
    # hand-computed: c - a = (1, 0, 1, 0): mean 0.5, 2 wins, 0 losses, 2 ties
    assert (d["mean_delta"], d["wins"], d["losses"], d["ties"]) == (0.5, 2, 0, 2)
    assert d["golden_version"] == "g-aaaaaaaaaaaa"


def test_compare_counts_variants_in_the_store_ledger(db: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with Store.open(db) as store:
        a = _stored_eval(store, "a", "g-aaaaaaaaaaaa", [0, 1, 0, 1])
        b = _stored_eval(store, "b", "g-aaaaaaaaaaaa", [1, 1, 0, 1])
        c = _stored_eval(store, "c", "g-aaaaaaaaaaaa", [1, 1, 1, 1])
    code, out, err = cli("compare", str(a), str(b), "--db", db)
    assert code == 0 and "Selection: 1 variant(s) tried on golden set g-aaaaaaaaaaaa." in out
    code, out, err = cli("compare", str(a), str(c), "--db", db)
    assert code == 0 and "Selection: 2 variant(s) tried on golden set g-aaaaaaaaaaaa" in out
    code, _, err = cli("compare", str(a), str(c), "--no-ledger", "--db", db)
    assert code == 0, err
    with Store.open(db) as store:
        assert [e["candidate"] for e in store.ledger.entries()] == ["b", "c"]
    assert not (tmp_path / ".ragmeter").exists()  # no file ledger beside the store


def test_unknown_ids_and_ambiguous_numbers_are_clear_errors(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for args in (
        ["runs", "show", "999"],
        ["compare", "999", "998"],
        ["runs", "export", "999", "-o", str(tmp_path)],
    ):
        code, _, err = cli(*args, "--db", db)
        assert code == 2 and "has no run 999" in err and "Traceback" not in err, args
    monkeypatch.chdir(tmp_path)
    (tmp_path / "12").write_text("{}")
    code, _, err = cli("compare", "12", "run:13", "--db", db)
    assert code == 2 and "./12" in err and "run:12" in err
    code, _, err = cli("compare", "run:x", "13", "--db", db)
    assert code == 2 and "run:ID" in err


# -- runs list / show -----------------------------------------------------------------------------
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_runs_list_fits_the_terminal_without_cutting_numbers(
    experiment: Path, columns: int, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path}/list.db"
    ids = run_experiment(experiment, url)
    code, out, err = cli("runs", "list", "--db", url, columns=columns)
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= columns
    with Store.open(url) as store:
        rec = store.run(ids["smaller chunks"])
    assert rec.golden_version is not None and rec.golden_version in out
    # the headline metrics, whole: name and value on one line
    assert f"R@budget=1200 {rec.metrics['R@budget=1200']:.3f}" in out
    assert "changes: chunking" in out or "chunking" in out
    code, out, err = cli("runs", "list", "--db", url, "--limit", "1", columns=columns)
    assert code == 0 and "… and 1 more (--limit 0 for all)" in err
    code, out, err = cli("runs", "list", "--db", url, "--experiment", "nope")
    assert code == 0 and out == "" and "no runs" in err
    code, out, err = cli("runs", "show", str(ids["baseline"]), "--db", url, columns=columns)
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= columns
    for word in ("span-level metrics", "chunk-level metrics", "ragmeter", "host", "baseline"):
        assert word in out


# -- delete ---------------------------------------------------------------------------------------
def test_delete_asks_refuses_without_a_terminal_and_deletes_with_yes(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragmeter.cli import _runs

    with Store.open(db) as store:
        a = _stored_eval(store, "a", "g-aaaaaaaaaaaa", [0, 1])
        b = _stored_eval(store, "b", "g-aaaaaaaaaaaa", [1, 1])

    def ids() -> list[int]:
        with Store.open(db) as store:
            return sorted(r.id for r in store.runs())

    code, _, err = cli("runs", "delete", str(a), "--db", db)  # no terminal, no --yes
    assert code == 2 and "--yes" in err and ids() == [a, b]
    monkeypatch.setattr(_runs, "can_ask", lambda: True)
    code, _, err = cli("runs", "delete", str(a), "--db", db, input="n\n")
    assert code == 0 and "Delete 1 run" in err and "nothing deleted" in err and ids() == [a, b]
    code, _, err = cli("runs", "delete", str(a), "--db", db, input="y\n")
    assert code == 0 and ids() == [b]
    monkeypatch.setattr(_runs, "can_ask", lambda: False)
    code, _, err = cli("runs", "delete", str(b), "--yes", "--db", db)
    assert code == 0 and ids() == []


# -- export / import ------------------------------------------------------------------------------
def test_export_then_import_round_trips_the_numbers(
    experiment: Path, db: str, tmp_path: Path
) -> None:
    ids = run_experiment(experiment, db)
    src = ids["smaller chunks"]
    out_dir = tmp_path / "exported"
    code, out, err = cli("runs", "export", str(src), "-o", str(out_dir), "--db", db)
    assert code == 0, err
    assert {p.name for p in out_dir.iterdir()} == {
        "evaluation.json", "chunk_evaluation.json", "config.json", "run.json", "run.trec",
    }  # fmt: skip
    before = (out_dir / "evaluation.json").read_bytes()
    code, out, err = cli("runs", "export", str(src), "-o", str(out_dir), "--db", db)
    assert code == 2 and "--force" in err and "evaluation.json" in err
    assert (out_dir / "evaluation.json").read_bytes() == before
    code, out, err = cli("runs", "export", str(src), "-o", str(out_dir), "--force", "--db", db)
    assert code == 0, err

    code, out, err = cli("runs", "import", str(out_dir), "--db", db)  # the same run: skipped
    assert code == 0 and f"already in the store as run {src}" in err, err
    other = f"sqlite:///{tmp_path / 'other.db'}"  # a store without it imports it
    code, out, err = cli("runs", "import", str(out_dir), "--db", other)
    assert code == 0, err
    new = int(out.split(": run ")[1].split()[0])
    with Store.open(db) as store, Store.open(other) as copy:
        old, imported = store.run(src), copy.run(new)
        assert (imported.experiment, imported.name) == (old.experiment, old.name)
        assert imported.metrics == old.metrics
        for level in ("span", "chunk"):
            a, b = store.evaluation(src, level), copy.evaluation(new, level)
            assert a.query_ids == b.query_ids and a.metrics == b.metrics
            np.testing.assert_array_equal(a.values, b.values)
            assert a.golden_version == b.golden_version
        # run.trec carries query, item, rank and score (not the chunks' documents and spans)
        cols = ["qid", "rank", "item", "score"]
        assert store.ranked(src).select(cols).equals(copy.ranked(new).select(cols))
    code, out, err = cli("compare", str(out_dir / "evaluation.json"), str(new), "-m", METRIC,
                         "--format", "json", "--no-ledger", "--db", other)  # fmt: skip
    assert code == 0, err
    d = json.loads(out)
    assert d["mean_delta"] == 0.0 and d["wins"] == d["losses"] == 0


# -- --no-store, the default store, the ledger -------------------------------------------------
def test_no_store_writes_no_database_and_keeps_the_file_ledger(
    experiment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv("RAGMETER_DATABASE_URL")
    code, _, err = cli("run", str(experiment), "--no-store")
    assert code == 0, err
    assert "stored" not in err
    folder = experiment.parent / "runs"
    files = [str(folder / "baseline" / "evaluation.json"),
             str(folder / "smaller-chunks" / "evaluation.json")]  # fmt: skip
    code, _, err = cli("compare", *files, "-m", METRIC, "--no-store")
    assert code == 0, err
    assert not (work / ".ragmeter" / "ragmeter.db").exists()
    assert len((work / ".ragmeter" / "ledger.jsonl").read_text().splitlines()) == 1
    code, _, err = cli("compare", "1", "2", "--no-store")
    assert code == 2 and "--no-store" in err
    # without --no-store: the default store under the current folder, and its ledger
    code, _, err = cli("compare", *files, "-m", METRIC)
    assert code == 0, err
    assert "stored: comparison 1 in sqlite:///.ragmeter/ragmeter.db" in err
    assert (work / ".ragmeter" / "ragmeter.db").exists()
    assert len((work / ".ragmeter" / "ledger.jsonl").read_text().splitlines()) == 1
    with Store.open() as store:
        assert len(store.ledger.entries()) == 1


# -- answers check and judge validate ------------------------------------------------------------
def test_answers_check_and_judge_validate_are_recorded(db: str, tmp_path: Path) -> None:
    answers = FARE_RULES / "answers" / "baseline.jsonl"
    code, out, err = cli(
        "answers", "check", str(answers), "--golden", str(FARE_RULES / "golden.jsonl"),
        "--corpus", str(FARE_RULES / "corpus.jsonl"), "--format", "json", "--db", db,
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert "stored: answer set 1 in " in err
    rows = Store.open(db).answer_set(1).answers
    given = [json.loads(x) for x in answers.read_text().splitlines() if x.strip()]
    assert [r["id"] for r in rows] == [g["id"] for g in given]
    assert [r["answer"] for r in rows] == [g["answer"] for g in given]
    with Store.open(db) as store:
        with store.engine.connect() as conn:
            stored = conn.execute(sa.text("SELECT report FROM answer_sets")).scalar_one()
    stored = json.loads(stored) if isinstance(stored, str) else stored
    assert stored == report  # the report as `answers check --format json` printed it

    info = {"name": "openai", "model": "judge-model-7b", "params": {}, "fake": False}
    prompt_file = Path(__file__).resolve().parents[2] / "src" / "ragmeter" / "answers"
    text = (prompt_file / "judges" / "prompts" / "faithfulness.v1.txt").read_text("utf-8")
    import hashlib

    prompt = {"id": "faithfulness.v1", "version": "v1",
              "sha256": hashlib.sha256(text.encode()).hexdigest()}  # fmt: skip
    h = tmp_path / "human.jsonl"
    j = tmp_path / "judge.jsonl"
    h.write_text('{"id":"a","label":"supported"}\n{"id":"b","label":"unsupported"}\n')
    j.write_text(
        "".join(
            json.dumps({"id": i, "label": "supported", "judge": info, "prompt": prompt}) + "\n"
            for i in ("a", "b")
        )
    )
    code, out, err = cli(
        "judge", "validate", "--human", str(h), "--judge", str(j), "--format", "json",
        "--db", db,
    )  # fmt: skip
    assert code == 0, err
    assert "stored: judge validation 1 in " in err
    json.loads(out)
    with Store.open(db) as store, store.engine.connect() as conn:
        row = conn.execute(sa.text("SELECT judge, prompt, n_labels FROM judge_labels")).one()
        labels = store.judge_validation(1).labels
    assert "judge-model-7b" in row.judge and row.prompt == text and row.n_labels == 2
    assert [(x["id"], x["label"], x["human"]) for x in labels] == [
        ("a", "supported", "supported"),
        ("b", "supported", "unsupported"),
    ]


# -- db current / upgrade -----------------------------------------------------------------------
def test_db_current_and_upgrade_on_a_fresh_database(store_url: str) -> None:
    from ragmeter.store import SchemaState

    HEAD = SchemaState(store_url, None).head  # the newest revision this ragmeter knows

    code, out, err = cli("db", "current", "--db", store_url, "--format", "json")
    assert code == 0, err
    assert json.loads(out) == {
        "url": json.loads(out)["url"], "revision": None, "head": HEAD, "up_to_date": False,
    }  # fmt: skip
    code, out, err = cli("db", "current", "--db", store_url)
    assert code == 0 and "revision: none" in out and "empty" in out
    code, out, err = cli("db", "upgrade", "--db", store_url)
    assert code == 0, err
    assert f"upgraded from empty to revision {HEAD}" in out
    code, out, err = cli("db", "upgrade", "--db", store_url)
    assert code == 0 and f"already at revision {HEAD}" in out
    code, out, err = cli("db", "current", "--db", store_url)
    assert code == 0 and "up to date" in out and f"revision: {HEAD}" in out


def test_an_unreachable_server_is_one_line_with_the_password_hidden() -> None:
    url = "postgresql+psycopg://ragmeter:s3cret@127.0.0.1:1/nowhere"
    for args in (["db", "current"], ["runs", "list"], ["compare", "1", "2"]):
        code, _, err = cli(*args, "--db", url)
        assert code == 2, (args, err)
        assert err.startswith("error: ") and "s3cret" not in err and "Traceback" not in err
        assert "127.0.0.1" in err


def test_a_server_url_without_the_postgres_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if ragmeter[postgres] were absent
    for args in (["runs", "list"], ["db", "current"], ["eval", "q", "r"]):
        code, _, err = cli(*args, "--db", "postgresql://u:pw@127.0.0.1:1/x")
        assert code == 2, (args, err)
        assert "pip install 'ragmeter[postgres]'" in err and len(err.splitlines()) == 1


def test_a_store_newer_than_this_ragmeter_is_refused(db: str) -> None:
    with Store.open(db) as store, store.engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    for args in (["runs", "list"], ["compare", "1", "2"], ["db", "upgrade"]):
        code, _, err = cli(*args, "--db", db)
        assert code == 2 and "9999" in err and "newer" in err, (args, err)
    code, out, err = cli("db", "current", "--db", db)
    assert code == 0 and "revision: 9999" in out and "newer than this ragmeter" in out
