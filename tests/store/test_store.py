"""The experiment store holds what it is given: every record comes back field by field, golden
versions never change, blobs are stored once (inline or as files), deletes clean up, dead runs
are marked interrupted, and the store refuses schemas it does not know.

Every test runs on SQLite and, when RAGMETER_TEST_DATABASE_URL is set, on PostgreSQL
(``store_url`` in conftest.py)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter import compare, load_corpus, load_golden
from ragmeter._errors import NotFoundError, StoreSchemaError, UsageError
from ragmeter.experiments import slug
from ragmeter.experiments._ranked import RANKED_SCHEMA
from ragmeter.metrics import Evaluation, parse
from ragmeter.paired import Comparison, Ledger
from ragmeter.store import Store, _blobs
from ragmeter.store import _models as m
from ragmeter.store._migrate import HEAD
from ragmeter.store._url import artifact_root


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url, migrate=True) as s:
        yield s


# -- helpers -----------------------------------------------------------------------------------
def same_evaluation(a: Evaluation, b: Evaluation) -> None:
    """Every field of ``a`` equals ``b``'s (values bit for bit)."""
    assert a.run == b.run
    assert a.metrics == b.metrics
    assert a.query_ids == b.query_ids
    assert a.values.shape == b.values.shape
    assert a.values.dtype == b.values.dtype == np.float64
    assert a.values.tobytes() == b.values.tobytes()
    # the same layout too: numpy sums a C-ordered and an F-ordered array in different orders,
    # so the means would differ in the last bits
    assert b.values.flags.c_contiguous
    assert a.aggregate == b.aggregate
    assert a.missing_ids == b.missing_ids
    assert a.no_relevant_ids == b.no_relevant_ids
    assert a.golden_version == b.golden_version
    assert dict(a.config) == dict(b.config)
    assert dict(a.slices) == dict(b.slices)
    assert dict(a.splits) == dict(b.splits)
    assert {q: dict(v) for q, v in a.details.items()} == {q: dict(v) for q, v in b.details.items()}


def same_comparison(a: Comparison, b: Comparison) -> None:
    for f in dataclasses.fields(Comparison):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), f.name
        else:
            assert x == y, f.name
    assert a.to_dict() == b.to_dict()


def graded() -> Evaluation:
    """Three graded metrics over four questions, with every optional field filled."""
    return Evaluation(
        run="bm25 [tokens:300:0]",
        metrics=(parse("R@5"), parse("nDCG@10"), parse("RR")),
        query_ids=("q1", "q2", "q3", "q4"),
        values=np.array(
            [[1.0, 0.75, 0.5], [0.0, 0.0, 0.0], [0.5, 0.3010299956639812, 1 / 3], [1.0, 1.0, 1.0]]
        ),
        missing_ids=("q4",),
        no_relevant_ids=("q9", "q10"),
        golden_version="g-abc123",
        config={"retriever": {"kind": "bm25", "k1": 1.2}, "k": 4, "tags": ["a", "b"], "x": None},
        slices={"q1": ("fees", "stale-policy"), "q3": ("changes",)},
        splits={"q1": "tune", "q2": "heldout", "q3": "tune", "q4": "tune"},
        details={"q1": {"first_rank": 3}, "q2": {"first_rank": None, "why": "no hit"}},
    )


def binary(run: str = "hybrid", flip: tuple[int, ...] = ()) -> Evaluation:
    """Hit@3 and AllR@4 (0/1 values) over ten questions; ``flip`` inverts Hit@3 rows."""
    hit = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 1], dtype=np.float64)
    for i in flip:
        hit[i] = 1 - hit[i]
    allr = np.array([1, 0, 0, 1, 0, 0, 1, 0, 0, 1], dtype=np.float64)
    qids = tuple(f"q{i:02d}" for i in range(10))
    return Evaluation(
        run=run,
        metrics=(parse("Hit@3"), parse("AllR@4")),
        query_ids=qids,
        values=np.column_stack([hit, allr]),
        golden_version="g-1",
        config={"retriever": run, "k": 4},
        slices={q: ("even",) if i % 2 == 0 else ("odd", "hard") for i, q in enumerate(qids)},
        splits={q: "tune" if i < 7 else "heldout" for i, q in enumerate(qids)},
    )


def ranked_table(n_q: int = 3, depth: int = 4) -> pa.Table:
    rows = [
        (f"q{q}", r + 1, f"d{q}-{r}", f"d{q}", 10 * r, 10 * r + 9, 1.0 - r / 10)
        for q in range(n_q)
        for r in range(depth)
    ]
    cols = list(zip(*rows, strict=True))
    return pa.Table.from_arrays(
        [pa.array(c, f.type) for c, f in zip(cols, RANKED_SCHEMA, strict=True)],
        schema=RANKED_SCHEMA,
    )


def count(store: Store, table: sa.Table, *where: object) -> int:
    with store.engine.connect() as conn:
        return int(
            conn.execute(sa.select(sa.func.count()).select_from(table).where(*where)).scalar_one()
        )


# -- evaluations -------------------------------------------------------------------------------
def test_a_graded_evaluation_comes_back_field_by_field(store: Store) -> None:
    e = graded()
    run_id = store.record_evaluation(e, name="scored")
    back = store.evaluation(run_id)
    same_evaluation(e, back)
    rec = store.run(run_id)
    assert rec.status == "finished" and rec.levels == ("eval",)
    assert rec.name == "scored" and rec.golden_version == "g-abc123"
    assert rec.n_queries == 4
    assert rec.metrics == pytest.approx(
        {"R@5": 0.625, "nDCG@10": 0.5127574989159953, "RR": (0.5 + 0 + 1 / 3 + 1) / 4}
    )


def test_a_binary_run_with_span_and_chunk_levels_comes_back(store: Store) -> None:
    span, chunk = binary("span side"), binary("chunk side", flip=(1, 2))
    run_id = store.start_run(experiment="e", name="v", config={"k": 4}, golden_version="g-1")
    assert store.run(run_id).status == "running"
    store.finish_run(run_id, evaluations={"span": span, "chunk": chunk}, metrics=span.aggregate)
    assert store.run(run_id).levels == ("span", "chunk")
    same_evaluation(span, store.evaluation(run_id))  # the first level by default
    same_evaluation(span, store.evaluation(run_id, "span"))
    same_evaluation(chunk, store.evaluation(run_id, "chunk"))
    with pytest.raises(NotFoundError, match="no document-level"):
        store.evaluation(run_id, "document")


_text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12)
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | _text
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)
_metric_names = ["R@5", "nDCG@10", "RR", "Hit@3", "P@2", "AllR@4", "R"]


@st.composite
def evaluations(draw: st.DrawFn) -> Evaluation:
    qids = tuple(draw(st.lists(_text, max_size=8, unique=True)))
    names = draw(st.lists(st.sampled_from(_metric_names), min_size=1, max_size=4, unique=True))
    metrics = tuple(parse(n) for n in names)
    values = np.array(
        [[draw(st.floats(0.0, 1.0)) for _ in metrics] for _ in qids], dtype=np.float64
    ).reshape(len(qids), len(metrics))
    some = st.lists(st.sampled_from(qids), unique=True) if qids else st.just([])
    return Evaluation(
        run=draw(_text),
        metrics=metrics,
        query_ids=qids,
        values=values,
        missing_ids=tuple(draw(some)),
        no_relevant_ids=tuple(draw(st.lists(_text, max_size=3, unique=True))),
        golden_version=draw(st.none() | st.text("0123456789abcdef", min_size=8, max_size=16)),
        config=draw(st.dictionaries(_text, _json, max_size=4)),
        slices={q: tuple(draw(st.lists(_text, max_size=3, unique=True))) for q in draw(some)},
        splits={q: draw(st.sampled_from(["tune", "heldout"])) for q in draw(some)},
        details={q: draw(st.dictionaries(_text, _json, max_size=3)) for q in draw(some)},
    )


@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(e=evaluations())
def test_any_evaluation_round_trips(store: Store, e: Evaluation) -> None:
    same_evaluation(e, store.evaluation(store.record_evaluation(e)))


# -- comparisons -------------------------------------------------------------------------------
def test_a_binary_comparison_comes_back_field_by_field(store: Store, tmp_path: Path) -> None:
    base, cand = binary("baseline"), binary("candidate", flip=(1, 4, 6))
    book = Ledger(tmp_path / "ledger.jsonl")
    for name in ("a", "b"):  # two variants tried before: the comparison carries selection
        book.record(golden_version="g-1", metric="Hit@3", baseline="baseline", candidate=name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = compare(
            base,
            cand,
            "Hit@3",
            n_resamples=400,
            seed=11,
            randomisation=True,
            ledger=book,
            selection_searches=50,
        )
    assert c.fixed_ids == ("q01", "q04") and c.broken_ids == ("q06",)
    assert c.selection is not None and c.randomisation is not None and c.slices
    b_id = store.record_evaluation(base)
    c_id = store.record_evaluation(cand)
    cid = store.record_comparison(c, baseline_run=b_id, candidate_run=c_id)
    same_comparison(c, store.comparison(cid))
    (row,) = store.comparisons()
    assert (row["id"], row["baseline_run_id"], row["candidate_run_id"]) == (cid, b_id, c_id)
    assert (row["wins"], row["losses"], row["ties"]) == (2, 1, 7)
    assert row["fixed_ids"] == ["q01", "q04"] and row["broken_ids"] == ["q06"]
    assert row["mean_delta"] == pytest.approx(0.1)


def test_a_graded_comparison_comes_back_field_by_field(store: Store) -> None:
    base = graded()
    cand = dataclasses.replace(
        base, run="rerank", values=base.values[::-1].copy(), config={**base.config, "k": 8}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = compare(base, cand, "nDCG@10", n_resamples=300, seed=3)
    assert c.fixed_ids is None and c.config_diff
    same_comparison(c, store.comparison(store.record_comparison(c)))


# -- golden sets -------------------------------------------------------------------------------
def test_a_golden_version_is_stored_once_and_never_changes(
    store: Store, fare_rules_dir: Path
) -> None:
    corpus = load_corpus(fare_rules_dir / "corpus.jsonl")
    golden = load_golden(fare_rules_dir / "golden.jsonl", corpus)
    assert store.put_golden(golden, name="first") == golden.version
    assert store.put_golden(golden, name="second") == golden.version
    (v,) = store.golden_versions()
    assert v["name"] == "first" and v["version"] == golden.version
    assert v["n_questions"] == len(golden) == 90
    assert v["n_spans"] == sum(len(q.evidence) for q in golden)
    assert v["slices"] == golden.slice_sizes()
    back = store.golden(golden.version)
    assert list(back) == list(golden)
    assert back.labels_digest == golden.labels_digest
    assert back.splits == golden.splits and back.slices == golden.slices
    assert count(store, m.golden_versions) == 1


# -- ranked lists and blobs --------------------------------------------------------------------
def test_ranked_lists_round_trip(store: Store) -> None:
    table = ranked_table()
    run_id = store.start_run(experiment="e", name="v")
    store.finish_run(run_id, evaluations={"span": binary()}, ranked=table)
    back = store.ranked(run_id)
    assert back.schema.equals(RANKED_SCHEMA)
    assert back.equals(table)
    assert store.run(run_id).has_ranked
    plain = store.record_evaluation(binary())
    with pytest.raises(NotFoundError, match="no stored ranked lists"):
        store.ranked(plain)


def blob_rows(store: Store) -> list[sa.Row]:
    with store.engine.connect() as conn:
        return list(
            conn.execute(sa.select(m.blobs.c.hash, m.blobs.c.data, m.blobs.c.path, m.blobs.c.size))
        )


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def test_small_blobs_stay_in_the_database(store: Store) -> None:
    store.record_evaluation(graded())
    rows = blob_rows(store)
    assert len(rows) == 2  # values and extras
    assert all(r.data is not None and r.path is None and len(r.data) == r.size for r in rows)
    assert files_under(artifact_root(store.url)) == []


def test_large_blobs_go_to_files_and_come_back(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_blobs, "INLINE_MAX", 64)
    e, table = graded(), ranked_table(5, 10)
    run_id = store.start_run(experiment="e", name="v")
    store.finish_run(run_id, evaluations={"span": e}, ranked=table)
    rows = blob_rows(store)
    assert len(rows) == 3 and all(r.data is None and r.path for r in rows)
    root = artifact_root(store.url)
    assert files_under(root) == sorted(root / r.path for r in rows)
    for r in rows:
        assert (root / r.path).stat().st_size == r.size
        assert r.hash in r.path
    same_evaluation(e, store.evaluation(run_id))
    assert store.ranked(run_id).equals(table)


def test_a_large_table_that_compresses_small_stays_in_the_database(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over the limit in memory, under it as Parquet: the row holds it, no file is left."""
    monkeypatch.setattr(_blobs, "INLINE_MAX", 50_000)
    n = 20_000
    table = pa.Table.from_arrays(
        [
            pa.array(["q"] * n, pa.string()),
            pa.array([1] * n, pa.int32()),
            pa.array(["d#0"] * n, pa.string()),
            pa.array(["d"] * n, pa.string()),
            pa.array([0] * n, pa.int64()),
            pa.array([9] * n, pa.int64()),
            pa.array([0.5] * n, pa.float64()),
        ],
        schema=RANKED_SCHEMA,
    )
    assert table.nbytes > _blobs.INLINE_MAX
    run_id = store.start_run(experiment="e", name="v")
    store.finish_run(run_id, evaluations={"span": binary()}, ranked=table)
    assert all(r.data is not None and r.path is None for r in blob_rows(store))
    assert files_under(artifact_root(store.url)) == []
    assert store.ranked(run_id).equals(table)


def test_the_same_values_are_stored_once(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_blobs, "INLINE_MAX", 64)
    e = graded()
    first = store.record_evaluation(e)
    before = blob_rows(store)
    second = store.record_evaluation(e)
    assert first != second and count(store, m.evaluations) == 2
    assert blob_rows(store) == before
    assert len(files_under(artifact_root(store.url))) == len(before) == 2


# -- delete ------------------------------------------------------------------------------------
def test_delete_removes_a_run_its_rows_and_unshared_blobs(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_blobs, "INLINE_MAX", 64)
    shared = binary("shared")
    gone = store.start_run(experiment="e", name="gone")
    store.finish_run(gone, evaluations={"span": graded(), "chunk": shared}, ranked=ranked_table())
    kept = store.record_evaluation(shared)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = compare(shared, binary("cand", flip=(0,)), "Hit@3", n_resamples=200)
    cid = store.record_comparison(c, baseline_run=gone, candidate_run=kept)
    root = artifact_root(store.url)
    before = {r.hash for r in blob_rows(store)}
    kept_blobs = set()
    with store.engine.connect() as conn:
        for col in (m.evaluations.c.values_blob, m.evaluations.c.extras_blob):
            kept_blobs |= set(
                conn.execute(sa.select(col).where(m.evaluations.c.run_id == kept)).scalars()
            )
        kept_blobs.add(conn.execute(sa.select(m.comparisons.c.values_blob)).scalar_one())

    store.delete_run(gone)

    with pytest.raises(NotFoundError):
        store.run(gone)
    assert count(store, m.evaluations, m.evaluations.c.run_id == gone) == 0
    assert count(store, m.runs) == 1
    after = {r.hash for r in blob_rows(store)}
    assert after == kept_blobs and after < before
    assert files_under(root) == sorted(root / r.path for r in blob_rows(store))
    same_evaluation(shared, store.evaluation(kept))
    (row,) = store.comparisons()
    assert row["baseline_run_id"] is None and row["candidate_run_id"] == kept
    same_comparison(c, store.comparison(cid))


# -- run life cycle ----------------------------------------------------------------------------
def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_reap_marks_dead_runs_interrupted_and_leaves_live_ones(store: Store) -> None:
    dead = store.start_run(experiment="e", name="dead")
    live = store.start_run(experiment="e", name="live")
    elsewhere = store.start_run(experiment="e", name="on another machine")
    pid = dead_pid()
    with store.engine.begin() as conn:
        conn.execute(sa.update(m.runs).where(m.runs.c.id.in_([dead, elsewhere])).values(pid=pid))
        conn.execute(sa.update(m.runs).where(m.runs.c.id == elsewhere).values(host="elsewhere"))
    statuses = {r.id: r.status for r in store.runs()}  # runs() reaps first
    assert statuses == {dead: "interrupted", live: "running", elsewhere: "running"}
    assert "ended before it finished" in (store.run(dead).message or "")
    assert store.run(dead).finished_at is not None
    assert store.reap() == 0
    assert store.run(live).pid == os.getpid()


def test_a_finished_run_cannot_be_finished_or_failed_again(store: Store) -> None:
    run_id = store.start_run(experiment="e", name="v")
    store.finish_run(run_id, evaluations={"span": binary()})
    with pytest.raises(UsageError, match="is finished"):
        store.finish_run(run_id, evaluations={"span": binary("other")})
    store.fail_run(run_id, status="interrupted", message="late signal")
    rec = store.run(run_id)
    assert rec.status == "finished" and rec.message is None
    assert count(store, m.evaluations) == 1
    stopped = store.start_run(experiment="e", name="w")
    store.fail_run(stopped, status="failed", message="boom")
    assert store.run(stopped).status == "failed" and store.run(stopped).message == "boom"
    with pytest.raises(UsageError, match="is failed"):
        store.finish_run(stopped, evaluations={"span": binary()})
    assert store.run(stopped).levels == ()


# -- ledger ------------------------------------------------------------------------------------
def test_the_store_ledger_counts_like_the_jsonl_ledger(store: Store, tmp_path: Path) -> None:
    book = Ledger(tmp_path / "ledger.jsonl")
    calls = [
        dict(golden_version="v1", metric="R@5", baseline="base", candidate="a"),
        dict(golden_version="v1", metric="R@5", baseline="base", candidate="a"),
        dict(
            golden_version="v1",
            metric="RR",
            baseline="base",
            candidate="b",
            candidate_config={"k": 8},
        ),
        dict(
            golden_version="v2",
            metric="R@5",
            baseline="a",
            candidate="c",
            n=10,
            mean_delta=0.1,
            ci=(0.0, 0.2),
        ),
        dict(golden_version=None, metric="R@5", baseline="x", candidate="y"),
    ]
    for call in calls:
        book.record(**call)
        store.ledger.record(**call)
    for version in ("v1", "v2", None, "v3"):
        assert store.ledger.summary(version) == book.summary(version)
    assert store.ledger.summary("v1").n_variants == 2  # a, b#<config>
    assert store.ledger.summary("v1").n_comparisons == 3
    strip = [{k: v for k, v in e.items() if k != "time"} for e in book.entries()]
    assert [{k: v for k, v in e.items() if k != "time"} for e in store.ledger.entries()] == strip


def test_compare_counts_variants_through_the_store_ledger(store: Store, tmp_path: Path) -> None:
    base = binary("base")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, flip in enumerate([(1,), (4,), (1, 4)]):
            cand = binary(f"cand{i}", flip=flip)
            a = compare(
                base, cand, "Hit@3", n_resamples=100, ledger=store.ledger, selection_searches=20
            )
            b = compare(
                base,
                cand,
                "Hit@3",
                n_resamples=100,
                ledger=tmp_path / "l.jsonl",
                selection_searches=20,
            )
            assert a.n_variants_tried == b.n_variants_tried == i + 1
            assert a.to_dict() == b.to_dict()


# -- files in and out --------------------------------------------------------------------------
def test_an_experiment_folder_imports_and_exports(
    store: Store, fare_rules_dir: Path, tmp_path: Path
) -> None:
    from ragmeter.io import read_json
    from ragmeter.io.trec import read_run

    runs = fare_rules_dir / "runs"
    summary = read_json(runs / "summary.json")
    ids = store.import_path(runs)
    names = [v["name"] for v in summary["variants"]]
    assert len(ids) == len(names) == 4
    for run_id, v in zip(ids, summary["variants"], strict=True):
        folder = runs / slug(v["name"])
        rec = store.run(run_id)
        assert (rec.name, rec.status, rec.kind) == (v["name"], "finished", "import")
        assert rec.experiment == summary["experiment"]
        assert rec.is_baseline == (v["name"] == "baseline")
        span = Evaluation.load(folder / "evaluation.json")
        assert store.evaluation(run_id, "span").aggregate == span.aggregate
        assert rec.metrics == v["metrics"]
        chunk = Evaluation.load(folder / "chunk_evaluation.json")
        same_evaluation(chunk, store.evaluation(run_id, "chunk"))
        out = tmp_path / slug(v["name"])
        store.export_run(run_id, out)
        same_evaluation(span, Evaluation.load(out / "evaluation.json"))
        same_evaluation(chunk, Evaluation.load(out / "chunk_evaluation.json"))
        assert read_json(out / "config.json") == rec.config
        theirs, ours = read_run(folder / "run.trec"), read_run(out / "run.trec")
        assert sorted(zip(theirs.qid.to_pylist(), theirs.doc.to_pylist(), strict=True)) == sorted(
            zip(ours.qid.to_pylist(), ours.doc.to_pylist(), strict=True)
        )
    # the exported folder reads back as one variant with the same values
    (again,) = store.import_path(tmp_path / slug(names[1]))
    same_evaluation(store.evaluation(ids[1], "span"), store.evaluation(again, "span"))


def test_an_unfinished_run_is_not_exported(store: Store, tmp_path: Path) -> None:
    run_id = store.start_run(experiment="e", name="v")
    with pytest.raises(UsageError, match="running"):
        store.export_run(run_id, tmp_path / "out")
    assert not (tmp_path / "out").exists()


# -- schemas and unknown ids -------------------------------------------------------------------
def test_a_newer_schema_is_refused_naming_both_revisions(store_url: str) -> None:
    Store.open(store_url, migrate=True).close()
    engine = sa.create_engine(store_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    with pytest.raises(StoreSchemaError) as info:
        Store.open(store_url)
    assert "9999" in str(info.value) and HEAD in str(info.value)
    with pytest.raises(StoreSchemaError, match="9999"):
        Store.open(store_url, migrate=True)  # not even when asked to migrate


def test_a_database_without_tables(store_url: str) -> None:
    """SQLite is migrated on open; a server database is refused until `ragmeter db upgrade`."""
    if store_url.startswith("sqlite"):
        with Store.open(store_url) as s:
            assert s.runs() == []
        return
    with pytest.raises(StoreSchemaError, match="has no ragmeter tables") as info:
        Store.open(store_url)
    assert "ragmeter db upgrade --db" in str(info.value)
    with Store.open(store_url, migrate=True) as s:
        assert s.runs() == []
    Store.open(store_url).close()  # now at head: opens without migrating


def test_unknown_ids_raise_not_found(store: Store) -> None:
    for call in (
        lambda: store.run(404),
        lambda: store.evaluation(404),
        lambda: store.ranked(404),
        lambda: store.delete_run(404),
        lambda: store.comparison(404),
        lambda: store.golden("no-such-version"),
        lambda: store.export_run(404, "unused"),
    ):
        with pytest.raises(NotFoundError):
            call()
