"""How ``ragmeter.store._records`` writes and reads evaluations: ``ragmeter eval`` records the
engine's columns: per-query values and details (``first_rank``,
``n_retrieved``) go into the values Parquet blob as the columns the engine holds, never one
JSON object per query, and read back bit for bit, at every k that was scored; rows written
before (details as JSON) read as they did; a damaged detail column is a damaged row.

Every test runs on SQLite and, when RAGMETER_TEST_DATABASE_URL is set, on PostgreSQL
(``store_url`` in conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest

from ragmeter.metrics import ColumnDetails, Evaluation
from ragmeter.store import Store
from ragmeter.store._records import DETAIL_PREFIX, evaluation_from, evaluation_tables
from ragmeter.workflows.evaluate import record, score_runs

FIRST = f"{DETAIL_PREFIX}first_rank"
#: cutoffs from 1 to past the deepest list, and metrics without one
METRICS = "P@1,P@5,P@10,nDCG@3,nDCG@10,nDCG@50,R@20,RR@10,AP,R"


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url, migrate=True) as s:
        yield s


def write_files(folder: Path, n_queries: int, seed: int) -> tuple[Path, Path]:
    """Seeded TREC qrels and run of ``n_queries`` labelled queries: lists of 1-40 items with
    scores at two decimals (ties), some queries whose relevant items are never retrieved
    (``first_rank`` None), some absent from the run (missing), some with no relevant item."""
    rng = np.random.default_rng(seed)
    qrels, run = [], []
    for q in range(n_queries):
        qid = f"q{q:05d}"
        depth = int(rng.integers(1, 41))
        items = rng.choice(500, size=depth + 5, replace=False)
        judged = rng.choice(depth + 5, size=6, replace=False)
        kind = rng.random()
        for i in judged:
            grade = 0 if kind < 0.05 else int(rng.choice(4, p=[0.4, 0.3, 0.2, 0.1]))
            qrels.append(f"{qid} 0 d{items[i]} {grade}")
        if kind < 0.05:  # no relevant item: excluded, listed in no_relevant_ids
            qrels.append(f"{qid} 0 d9999 0")
        else:
            qrels.append(f"{qid} 0 r{q} 1")  # a relevant item no run retrieves
        if 0.05 <= kind < 0.08:
            continue  # labelled, absent from the run: missing (scored 0)
        scores = np.round(rng.random(depth) * 10, 2)
        for r, (item, score) in enumerate(zip(items[:depth], scores, strict=True), 1):
            run.append(f"{qid} Q0 d{item} {r} {score} s{seed}")
    qrels_path, run_path = folder / "qrels.txt", folder / "run.txt"
    qrels_path.write_text("\n".join(qrels) + "\n")
    run_path.write_text("\n".join(run) + "\n")
    return qrels_path, run_path


def same(a: Evaluation, b: Evaluation) -> None:
    """Every field equal, values bit for bit, details query by query."""
    assert (a.run, a.metrics, a.query_ids) == (b.run, b.metrics, b.query_ids)
    assert a.values.tobytes() == b.values.tobytes()
    assert b.values.flags.c_contiguous
    assert a.aggregate == b.aggregate
    assert (a.missing_ids, a.no_relevant_ids) == (b.missing_ids, b.no_relevant_ids)
    assert dict(a.config) == dict(b.config)
    assert {q: dict(v) for q, v in a.details.items()} == {q: dict(v) for q, v in b.details.items()}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_recorded_eval_run_reads_back_identical_at_every_k(
    store: Store, tmp_path: Path, seed: int
) -> None:
    qrels, run = write_files(tmp_path, 2_000, seed)
    scored = score_runs([qrels, run], metrics=METRICS)
    (e,) = scored.evaluations
    assert e.n_missing and e.n_no_relevant  # the shapes the generator promises
    firsts = [d["first_rank"] for d in e.details.values()]
    assert None in firsts and any(f is not None for f in firsts)
    (run_id,) = record(store, scored)
    back = store.evaluation(run_id, "eval")
    same(e, back)
    assert store.run(run_id).metrics == e.aggregate
    # each k's per-query values as scoring that metric alone gives them (a mean over one
    # column may differ from the table's column mean in the last bit: numpy sums differently)
    for name in METRICS.split(","):
        again = score_runs([qrels, run], metrics=name).evaluations[0]
        assert back.column(name) == again.column(name)


def test_details_are_columns_of_the_values_blob_not_json(tmp_path: Path) -> None:
    qrels, run = write_files(tmp_path, 300, 5)
    (e,) = score_runs([qrels, run], metrics="nDCG@10,RR@10").evaluations
    table, extras = evaluation_tables(e)
    assert extras["details"] == {}
    assert extras["detail_columns"] == {
        "names": ["first_rank", "n_retrieved"],
        "none_when_zero": ["first_rank"],
    }
    assert table.column_names == [
        "qid", "nDCG@10", "RR@10", f"{DETAIL_PREFIX}first_rank", f"{DETAIL_PREFIX}n_retrieved",
    ]  # fmt: skip
    want = [e.details[q]["n_retrieved"] for q in e.query_ids]
    assert table.column(f"{DETAIL_PREFIX}n_retrieved").to_pylist() == want


def test_rows_written_before_with_json_details_read_as_they_did(store: Store) -> None:
    """Details that are not the engine's columns (hand-made, imported, a golden set's
    ``effective_k``) stay JSON: the layout every row had before, read the same way."""
    e = Evaluation(
        run="old",
        metrics=(),
        query_ids=("q1", "q2"),
        values=np.zeros((2, 0)),
        details={"q1": {"first_rank": 3, "effective_k": {"1200": 4}}, "q2": {"first_rank": None}},
    )
    table, extras = evaluation_tables(e)
    assert "detail_columns" not in extras and table.column_names == ["qid"]
    same(e, store.evaluation(store.record_evaluation(e), "eval"))


def test_an_export_imports_back_as_the_run_it_was(store: Store, tmp_path: Path) -> None:
    qrels, run = write_files(tmp_path, 200, 7)
    (run_id,) = record(store, score_runs([qrels, run], metrics="nDCG@10,P@5"))
    store.export_run(run_id, tmp_path / "exported")
    assert store.import_path(tmp_path / "exported") == [run_id]  # already there: not twice


def _row(e: Evaluation) -> SimpleNamespace:
    """``e``'s ``evaluations`` row as the store reads one (its columns under ``_mapping``)."""
    names = [str(m) for m in e.metrics]
    mapping = {
        "run_name": e.run,
        "metrics": names,
        "config": dict(e.config),
        "golden_version": None,
    }
    return SimpleNamespace(_mapping=mapping)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda t, x: t.drop_columns([f"{DETAIL_PREFIX}n_retrieved"]), "do not read back"),
        (
            lambda t, x: t.set_column(
                t.column_names.index(FIRST), FIRST, pa.array(["a"] * t.num_rows)
            ),
            "is not whole numbers",
        ),
        (lambda t, x: x.update(detail_columns=[1]) or t, "not a JSON object"),
        (lambda t, x: x.update(detail_columns={"names": [3], "none_when_zero": []}) or t, "name"),
    ],
)
def test_a_damaged_detail_column_is_a_damaged_row(tmp_path: Path, change, said: str) -> None:
    qrels, run = write_files(tmp_path, 50, 3)
    (e,) = score_runs([qrels, run], metrics="P@5").evaluations
    table, extras = evaluation_tables(e)
    same(e, evaluation_from(_row(e), table, extras))  # as written, it reads back
    table = change(table, extras)
    with pytest.raises(Exception, match=said) as caught:
        evaluation_from(_row(e), table, extras)
    assert caught.typename == "Damage"  # what the store turns into a damaged-row error


def test_detail_columns_need_the_engines_columnar_details() -> None:
    """A ColumnDetails whose rows are not the evaluation's queries is written as JSON."""
    e = Evaluation(
        run="r",
        metrics=(),
        query_ids=("a", "b"),
        values=np.zeros((2, 0)),
        details=ColumnDetails(("b", "a"), {"n": np.array([1, 2])}),
    )
    _, extras = evaluation_tables(e)
    assert "detail_columns" not in extras
    assert extras["details"] == {"b": {"n": 1}, "a": {"n": 2}}
