"""The store's listing and loading calls (``store/_listings.py``): typed records for golden-set
versions, comparisons, answer sets, judge validations, run pages and counts, the schema state;
a damaged row left out of a listing with a warning naming it, refused by name when loaded.
SQLite only: rows are damaged with raw SQL, as another program or a hand edit would."""

from __future__ import annotations

import dataclasses
import datetime as dt
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

from ragmeter import Evaluation
from ragmeter._errors import NotFoundError, RagmeterError
from ragmeter.metrics import parse
from ragmeter.paired import compare
from ragmeter.store import (
    AnswerSetRow,
    ComparisonRow,
    DamagedRowError,
    DamagedRowWarning,
    GoldenVersionRow,
    JudgeValidationRow,
    Store,
    StoredAnswerSet,
    StoredJudgeValidation,
    collect_skipped,
    export_files,
    row_label,
    schema_state,
    skipped_so_far,
    upgrade_schema,
)

FARE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"


def _evaluation(name: str, seed: int, golden: str = "g-list0000") -> Evaluation:
    rng = np.random.default_rng(seed)
    return Evaluation(
        run=name,
        metrics=(parse("R@1"), parse("RR")),
        query_ids=tuple(f"q{i}" for i in range(6)),
        values=rng.random((6, 2)),
        golden_version=golden,
        config={"retriever": "bm25", "seed": seed},
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(f"sqlite:///{tmp_path / 'store.db'}") as s:
        yield s


def _sql(store: Store, text: str, **params: object) -> None:
    with store.engine.begin() as conn:
        conn.execute(sa.text(text), params)


# -- records -------------------------------------------------------------------------------------
def test_a_record_is_typed_and_reads_as_the_mapping_of_its_columns(store: Store) -> None:
    a, b = (store.record_evaluation(_evaluation(n, i), name=n) for i, n in enumerate("ab"))
    with warnings.catch_warnings():  # a small comparison may warn about its size
        warnings.simplefilter("ignore")
        c = compare(store.evaluation(a), store.evaluation(b), "R@1", n_resamples=100, seed=1)
    cid = store.record_comparison(c, baseline_run=a, candidate_run=b)
    (row,) = store.comparisons()
    assert isinstance(row, ComparisonRow) and dataclasses.is_dataclass(row)
    assert (row.id, row.baseline_run_id, row.candidate_run_id) == (cid, a, b)
    assert row.baseline == "a" and row.metric == c.label and row.n == 6
    assert isinstance(row.created_at, dt.datetime) and row.created_at.tzinfo is not None
    # the mapping view: plain JSON values, as the listing gave before it was typed
    assert row["id"] == cid and row.get("nothing") is None and "wins" in row
    if row.fixed_ids is not None:
        assert isinstance(row.fixed_ids, tuple) and row["fixed_ids"] == list(row.fixed_ids)
    d = row.to_dict()
    assert d == dict(row) and list(d) == [f.name for f in dataclasses.fields(row)]
    assert {**row}["candidate"] == "b"
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.id = 7  # type: ignore[misc]
    with pytest.raises(KeyError):
        row["record"]
    assert store.comparisons(golden_version="g-other") == []


def test_golden_versions_are_listed_as_records(store: Store) -> None:
    from ragmeter import load_corpus, load_golden

    golden = load_golden(FARE / "golden.jsonl", load_corpus(FARE / "corpus.jsonl"))
    store.put_golden(golden, name="fare")
    (v,) = store.golden_versions()
    assert isinstance(v, GoldenVersionRow)
    assert (v.version, v.name, v.n_questions) == (golden.version, "fare", len(golden))
    assert dict(v.slices) == golden.slice_sizes() and v["slices"] == golden.slice_sizes()
    _sql(store, "UPDATE golden_versions SET splits = '[1]'")
    with pytest.warns(DamagedRowWarning, match=rf"golden-set version '{golden.version}'"):
        assert store.golden_versions() == []


def test_answer_sets_and_judge_validations_list_and_load(store: Store) -> None:
    run = store.record_evaluation(_evaluation("r", 1), name="r")
    older = store.record_answers(
        name="first", answers=[{"id": "q1", "answer": "yes"}], report={"n": 1}, run_id=run
    )
    newer = store.record_answers(
        name="second",
        answers=[{"id": "q1", "answer": "no"}, {"id": "q2", "answer": "maybe"}],
        report={"n": 2},
        golden_version="g-list0000",
        source="answers.jsonl",
    )
    sets = store.answer_sets()
    assert [s.id for s in sets] == [newer, older]  # newest first
    assert all(isinstance(s, AnswerSetRow) for s in sets)
    assert (sets[1].run_id, sets[1].n_answers, sets[1].golden_version) == (run, 1, None)
    assert [s.id for s in store.answer_sets(golden_version="g-list0000")] == [newer]
    one = store.answer_set(newer)
    assert isinstance(one, StoredAnswerSet)
    assert (one.name, one.source, one.n_answers, dict(one.report)) == (
        "second",
        "answers.jsonl",
        2,
        {"n": 2},
    )
    assert [a["answer"] for a in one.answers] == ["no", "maybe"]
    assert one.to_dict()["answers"] == [dict(a) for a in one.answers]
    assert "answers_blob" not in one.to_dict()
    assert store.answer_set(str(newer)) == one  # an id as the lab's URLs give it

    vid = store.record_judge_validation(
        judge="gpt",
        labels=[{"id": "q1", "label": "supported", "human": "unsupported"}],
        report={"kappa": 0.5, "agreement": 0.75, "n": 4},
        prompt="Is it supported?",
    )
    (row,) = store.judge_validations()
    assert isinstance(row, JudgeValidationRow)
    assert (row.id, row.judge, row.kappa, row.agreement, row.n) == (vid, "gpt", 0.5, 0.75, 4)
    assert "report" not in row.to_dict()
    jv = store.judge_validation(vid)
    assert isinstance(jv, StoredJudgeValidation)
    assert jv.prompt == "Is it supported?" and jv.prompt_hash and len(jv.prompt_hash) == 64
    assert jv.labels == ({"id": "q1", "label": "supported", "human": "unsupported"},)


def test_a_report_stored_as_json_text_still_reads(store: Store) -> None:
    """Older rows may hold a set's report as the text of a JSON object."""
    vid = store.record_judge_validation(judge="j", labels=[], report={"kappa": 0.1})
    _sql(store, "UPDATE judge_labels SET report = :r", r=json_text({"kappa": 0.2, "n": 3}))
    (row,) = store.judge_validations()
    assert (row.kappa, row.n) == (0.2, 3)
    assert store.judge_validation(vid).report == {"kappa": 0.2, "n": 3}


def json_text(value: object) -> str:
    import json

    return json.dumps(json.dumps(value))  # a JSON string holding the object's text


@pytest.mark.parametrize("bad", [2**63, -1, 0, "abc", "1e3"])
def test_an_id_no_row_can_have_is_not_found(store: Store, bad: object) -> None:
    with pytest.raises(NotFoundError, match="the store has no answer set"):
        store.answer_set(bad)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError, match="the store has no judge validation"):
        store.judge_validation(bad)  # type: ignore[arg-type]
    assert store.row_id(bad) is None
    with pytest.raises(NotFoundError, match=r"the store has no answer set 5$"):
        store.answer_set(5)
    assert store.row_id("5") == 5


# -- damaged rows --------------------------------------------------------------------------------
def test_damaged_rows_are_left_out_of_listings_and_refused_by_id(store: Store) -> None:
    good, bad = (
        store.record_answers(name=n, answers=[{"id": "q1", "answer": n}], report={})
        for n in ("good", "bad")
    )
    jgood, jbad = (
        store.record_judge_validation(judge=n, labels=[], report={"kappa": 1.0})
        for n in ("good", "bad")
    )
    _sql(store, "UPDATE answer_sets SET created_at = 'a while ago' WHERE id = :i", i=bad)
    _sql(store, "UPDATE judge_labels SET report = '[1]' WHERE id = :i", i=jbad)
    with collect_skipped() as found:
        with pytest.warns(DamagedRowWarning, match=rf"answer set {bad} is damaged"):
            assert [s.id for s in store.answer_sets()] == [good]
        with pytest.warns(DamagedRowWarning, match=rf"judge validation {jbad} is damaged"):
            assert [v.id for v in store.judge_validations()] == [jgood]
        assert [(d.table, d.key) for d in skipped_so_far()] == [
            ("answer_sets", bad),
            ("judge_labels", jbad),
        ]
    assert [d.key for d in found] == [bad, jbad]
    assert skipped_so_far() == []  # outside the block: nothing collected
    with pytest.raises(DamagedRowError, match=rf"answer set {bad} is damaged"):
        store.answer_set(bad)
    with pytest.raises(DamagedRowError, match=rf"judge validation {jbad} is damaged"):
        store.judge_validation(jbad)
    assert store.answer_set(good).name == "good"
    # a value of the wrong type is damage too, named by its column
    _sql(store, "UPDATE answer_sets SET n_answers = 'many' WHERE id = :i", i=good)
    with pytest.raises(DamagedRowError, match="n_answers is not a whole number"):
        store.answer_set(good)
    with pytest.warns(DamagedRowWarning):
        assert store.answer_sets() == []
    assert row_label("answer_sets") == "answer set"


def test_a_set_whose_records_do_not_read_back_is_damaged(store: Store) -> None:
    sid = store.record_answers(name="x", answers=[{"id": "q1"}], report={})
    with store.engine.begin() as conn:
        blob = conn.execute(sa.text("SELECT answers_blob FROM answer_sets")).scalar_one()
        conn.execute(
            sa.text("UPDATE blobs SET data = :d WHERE hash = :h"), {"d": b"junk", "h": blob}
        )
    with pytest.raises(DamagedRowError, match=rf"answer set {sid} is damaged \(its records"):
        store.answer_set(sid)
    assert [s.id for s in store.answer_sets()] == [sid]  # the listing reads no blob


def test_a_damaged_comparison_is_left_out(store: Store) -> None:
    a, b = (store.record_evaluation(_evaluation(n, i), name=n) for i, n in enumerate("ab"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = compare(store.evaluation(a), store.evaluation(b), "R@1", n_resamples=100, seed=1)
    ids = [store.record_comparison(c) for _ in range(2)]
    _sql(store, "UPDATE comparisons SET wins = 'x' WHERE id = :i", i=ids[0])
    with pytest.warns(DamagedRowWarning, match=rf"comparison {ids[0]} is damaged \(wins"):
        assert [r.id for r in store.comparisons()] == [ids[1]]


# -- runs ----------------------------------------------------------------------------------------
def test_a_run_page_counts_every_run_and_names_the_damaged(store: Store) -> None:
    ids = [store.record_evaluation(_evaluation(f"r{i}", i), name=f"r{i}") for i in range(4)]
    _sql(store, "UPDATE runs SET config = 'x' WHERE id = :i", i=ids[3])
    assert store.count_runs() == 4
    assert store.count_runs(experiment="eval", status="finished") == 4
    assert store.count_runs(golden_version="g-other") == store.count_runs(experiment="x") == 0
    with pytest.warns(DamagedRowWarning, match=rf"run {ids[3]} is damaged"):
        page = store.runs_page(limit=2)
    assert [r.id for r in page.records] == [ids[2]]  # the newest two: one of them damaged
    assert [d.key for d in page.damaged] == [ids[3]] and page.total == 4
    with pytest.warns(DamagedRowWarning):
        page = store.runs_page()
    assert [r.id for r in page.records] == ids[2::-1] and page.total == 4
    assert export_files(page.records[0]) == ["evaluation.json", "config.json", "run.json"]


# -- schema ----------------------------------------------------------------------------------------
def test_the_schema_state_reads_and_upgrades_without_creating_files(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    state = schema_state(url)
    assert state.revision is None and state.is_sqlite and not state.up_to_date
    assert not (tmp_path / "new.db").exists()
    before, after = upgrade_schema(url)
    assert before.revision is None and after.up_to_date and not after.newer
    assert schema_state(url) == after and after.display_url == url
    other = tmp_path / "other.db"
    import sqlite3

    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE mine (x)")
    with pytest.raises(RagmeterError, match="is not a ragmeter store"):
        schema_state(f"sqlite:///{other}")
