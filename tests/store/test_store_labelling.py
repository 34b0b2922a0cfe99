"""The workbench's tables: labellers with hashed tokens, queues holding their corpus and items,
labels with revisions. A stale revision always conflicts and never overwrites; two labellers'
saves of one item are both kept, also when they race; a store of schema 0001 upgrades with its
data kept.

Every test runs on SQLite and, when RAGMETER_TEST_DATABASE_URL is set, on PostgreSQL
(``store_url`` in conftest.py)."""

from __future__ import annotations

import datetime as dt
import hashlib
import threading
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.pool import NullPool

from ragmeter._errors import NotFoundError, UsageError
from ragmeter.data import Corpus, Document
from ragmeter.store import EditConflict, NewItem, Store
from ragmeter.store import _models as m
from ragmeter.store._labelling import token_hash
from ragmeter.store._migrate import HEAD, alembic_config, current_revision

CORPUS = Corpus(
    [
        Document(id="d1", text="Refunds take 7 days.\nFees: 5€ 🎉", title="Refunds"),
        Document(id="d2", text="東京 has 雨 today", metadata={"lang": "ja", "n": 2}),
    ]
)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url, migrate=True) as s:
        yield s


def _queue(store: Store, name: str = "q1", n: int = 3) -> int:
    items = [NewItem(qid=f"x{i}", question=f"question {i}?", origin="logged") for i in range(n)]
    return store.create_queue(name, corpus=CORPUS, items=items, source="sample.jsonl").id


# -- labellers ---------------------------------------------------------------------------------
def test_a_labeller_token_is_shown_once_and_stored_hashed(store: Store) -> None:
    row, token = store.add_labeller("ana")
    assert token is not None and len(token) >= 40
    assert row.name == "ana" and row.has_token
    assert store.labeller_by_token(token) == row
    assert store.labeller_by_token(token + "x") is None
    assert store.labeller_by_token("") is None
    with store.engine.connect() as conn:
        stored = conn.execute(sa.select(m.labellers.c.token_hash)).scalar_one()
    assert stored == hashlib.sha256(token.encode()).hexdigest() == token_hash(token)
    assert token not in stored


def test_the_loopback_labeller_has_no_token_and_names_are_checked(store: Store) -> None:
    local, token = store.add_labeller("me", token=False)
    assert token is None and not local.has_token
    store.add_labeller("bo")
    assert [x.name for x in store.labellers()] == ["bo", "me"]
    with pytest.raises(UsageError, match="already exists"):
        store.add_labeller("me")
    for bad in ("", " me", "a\nb", "x" * 101):
        with pytest.raises(UsageError, match="printable"):
            store.add_labeller(bad)
    with pytest.raises(NotFoundError, match="'bo', 'me'"):
        store.labeller("zed")


# -- queues ------------------------------------------------------------------------------------
def test_a_queue_keeps_its_corpus_and_items_in_order(store: Store) -> None:
    qid = _queue(store)
    q = store.queue("q1")
    assert q.id == qid and store.queue(qid) == q and store.queue(str(qid)) == q
    assert (q.kind, q.double_share, q.n_docs, q.source) == ("evidence", 0.2, 2, "sample.jsonl")
    assert q.corpus_fingerprint == CORPUS.fingerprint
    back = store.queue_corpus("q1")
    assert back.fingerprint == CORPUS.fingerprint
    assert [d.model_dump() for d in back] == [d.model_dump() for d in CORPUS]
    assert [i.qid for i in store.items("q1")] == ["x0", "x1", "x2"]
    added = store.add_items("q1", [NewItem("y", "why?", context={"answer": "because"})])
    assert added[0].position == 3 and dict(added[0].context) == {"answer": "because"}
    assert store.item(added[0].id) == added[0]
    with pytest.raises(UsageError, match="already has"):
        store.add_items("q1", [NewItem("y", "again")])
    assert [q.name for q in store.queues()] == ["q1"]


def test_unknown_and_bad_queues_are_refused_naming_what_exists(store: Store) -> None:
    _queue(store, "alpha")
    with pytest.raises(NotFoundError, match="the queues are: 'alpha'"):
        store.queue("beta")
    with pytest.raises(UsageError, match="already exists"):
        _queue(store, "alpha")
    for bad in ("", "a b", "../x", "-x"):
        with pytest.raises(UsageError, match="queue name"):
            store.create_queue(bad)
    with pytest.raises(UsageError, match="kind"):
        store.create_queue("k", kind="spans")
    with pytest.raises(UsageError, match="given twice"):
        store.create_queue("dup", items=[NewItem("a", "?"), NewItem("a", "?")])
    with pytest.raises(NotFoundError):
        store.item(10**6)


def test_deleting_a_queue_removes_its_items_labels_and_corpus(store: Store) -> None:
    _queue(store)
    store.add_labeller("ana")
    item = store.items("q1")[0]
    store.save_label(item.id, "ana", {"spans": []}, 0)
    store.delete_queue("q1")
    assert store.queues() == []
    with store.engine.connect() as conn:
        for t in (m.label_items, m.labels, m.blobs):
            assert conn.execute(sa.select(sa.func.count()).select_from(t)).scalar() == 0


# -- labels ------------------------------------------------------------------------------------
def test_revisions_grow_and_a_stale_edit_conflicts(store: Store) -> None:
    _queue(store)
    store.add_labeller("ana")
    item = store.items("q1")[0]
    first = store.save_label(item.id, "ana", {"note": "one"}, 0)
    assert (first.revision, first.labeller, first.role) == (1, "ana", "label")
    second = store.save_label(item.id, "ana", {"note": "two"}, 1)
    assert second.revision == 2 and second.created_at == first.created_at
    with pytest.raises(EditConflict) as info:
        store.save_label(item.id, "ana", {"note": "stale"}, 1)
    assert info.value.stored is not None and info.value.stored.payload == {"note": "two"}
    with pytest.raises(EditConflict):
        store.save_label(item.id, "ana", {"note": "new again"}, 0)
    with pytest.raises(EditConflict):
        store.delete_label(item.id, "ana", 1)
    store.delete_label(item.id, "ana", 2)
    assert store.labels(item_id=item.id) == []
    with pytest.raises(EditConflict) as gone:
        store.save_label(item.id, "ana", {"note": "edit of a deleted label"}, 2)
    assert gone.value.stored is None


def test_two_labellers_of_one_item_and_one_adjudication(store: Store) -> None:
    _queue(store)
    for name in ("ana", "bo", "cy"):
        store.add_labeller(name)
    item = store.items("q1")[1]
    store.save_label(item.id, "ana", {"who": "ana"}, 0)
    store.save_label(item.id, "bo", {"who": "bo"}, 0)
    assert [(x.labeller, x.payload["who"]) for x in store.labels(queue_id="q1")] == [
        ("ana", "ana"),
        ("bo", "bo"),
    ]
    assert [x.labeller for x in store.labels(queue_id="q1", labeller="bo")] == ["bo"]
    store.save_label(item.id, "cy", {"who": "cy"}, 0, role="resolved")
    with pytest.raises(EditConflict):  # one resolution per item, whoever resolves
        store.save_label(item.id, "ana", {"who": "ana again"}, 0, role="resolved")
    edited = store.save_label(item.id, "ana", {"who": "ana"}, 1, role="resolved")
    assert (edited.labeller, edited.revision, edited.role) == ("ana", 2, "resolved")
    with pytest.raises(UsageError, match="role"):
        store.save_label(item.id, "ana", {}, 0, role="boss")
    with pytest.raises(UsageError, match="expected_revision"):
        store.save_label(item.id, "ana", {}, -1)
    with pytest.raises(NotFoundError, match="labellers are"):
        store.save_label(item.id, "nobody", {}, 0)


def test_saving_a_draft_can_accept_it(store: Store) -> None:
    store.create_queue("d", items=[NewItem("q", "drafted?", origin="drafted", accepted=False)])
    store.add_labeller("ana")
    item = store.items("d")[0]
    assert not item.accepted
    store.save_label(item.id, "ana", {}, 0, accept=True)
    assert store.item(item.id).accepted


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(st.tuples(st.integers(0, 6), st.booleans()), min_size=1, max_size=12))
def test_only_the_stored_revision_edits_and_a_stale_one_never_overwrites(
    store: Store, steps: list[tuple[int, bool]]
) -> None:
    """Random saves and deletes naming random revisions against a model of the row: each
    succeeds exactly when it names the stored revision (0 when there is none), and a refused
    one leaves the stored payload as it was."""
    if not store.queues():
        _queue(store)
        store.add_labeller("ana")
    item = store.items("q1")[0]
    rows = store.labels(item_id=item.id)
    stored = rows[0] if rows else None
    for n, (expected, delete) in enumerate(steps):
        current = 0 if stored is None else stored.revision
        ok = expected == current and not (delete and stored is None)
        try:
            if delete:
                store.delete_label(item.id, "ana", expected)
                stored = None
            else:
                stored = store.save_label(item.id, "ana", {"step": n}, expected)
                assert stored.revision == current + 1
            assert ok
        except EditConflict as exc:
            assert not ok
            assert exc.stored == stored
        now = store.labels(item_id=item.id)
        assert (now[0] if now else None) == stored


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(saves=st.lists(st.tuples(st.sampled_from(["ana", "bo", "cy"]), st.integers()), max_size=15))
def test_interleaved_saves_of_several_labellers_keep_each_ones_last(
    store: Store, saves: list[tuple[str, int]]
) -> None:
    """Labellers saving one item in any order: each keeps their own label, at their last save,
    with one revision per save of theirs; no one's save touches another's."""
    name = f"i{len(store.queues())}"
    store.create_queue(name, items=[NewItem("x", "?")])
    item = store.items(name)[0].id
    for who in ("ana", "bo", "cy"):
        if who not in {x.name for x in store.labellers()}:
            store.add_labeller(who)
    revision: dict[str, int] = {}
    last: dict[str, int] = {}
    for who, value in saves:
        row = store.save_label(item, who, {"v": value}, revision.get(who, 0))
        revision[who] = row.revision
        last[who] = value
    stored = {x.labeller: x for x in store.labels(item_id=item)}
    assert {w: x.payload["v"] for w, x in stored.items()} == last
    assert {w: x.revision for w, x in stored.items()} == {
        w: sum(1 for v, _ in saves if v == w) for w in last
    }


def test_racing_saves_keep_both_labellers_and_one_of_a_single_labellers(store_url: str) -> None:
    """Threads, each with its own store (as two lab processes would be): two labellers saving
    one item at once both keep their labels; two tabs of one labeller creating the same label
    give one save and one conflict, never a lost or doubled row."""
    with Store.open(store_url, migrate=True) as setup:
        _queue(setup)
        setup.add_labeller("ana")
        setup.add_labeller("bo")
        item = setup.items("q1")[0].id
    start = threading.Barrier(4)
    outcome: list[str] = []
    lock = threading.Lock()

    def save(name: str, tag: str) -> None:
        with Store.open(store_url) as s:
            start.wait()
            try:
                s.save_label(item, name, {"tag": tag}, 0)
                result = f"saved {name}"
            except EditConflict:
                result = f"conflict {name}"
        with lock:
            outcome.append(result)

    threads = [
        threading.Thread(target=save, args=a)
        for a in (("ana", "a1"), ("ana", "a2"), ("bo", "b1"), ("bo", "b2"))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcome) == ["conflict ana", "conflict bo", "saved ana", "saved bo"]
    with Store.open(store_url) as s:
        assert sorted(x.labeller for x in s.labels(item_id=item)) == ["ana", "bo"]


# -- schema ------------------------------------------------------------------------------------
def test_a_store_of_schema_0001_upgrades_keeping_its_golden_versions(store_url: str) -> None:
    from alembic import command

    from ragmeter.data import GoldenSet, Question

    engine = sa.create_engine(store_url, poolclass=NullPool)
    try:
        with engine.connect() as conn, conn.begin():
            command.upgrade(alembic_config(conn), "0001")
        assert current_revision(engine) == "0001"
        with engine.connect() as conn, conn.begin():
            assert not sa.inspect(conn).has_table("labels")
            when = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
            conn.execute(
                sa.text(
                    "INSERT INTO blobs (hash, kind, size, data, created_at) "
                    "VALUES (:h, 'json.gz', 0, :d, :t)"
                ),
                {"h": "a" * 64, "d": b"", "t": when},
            )
            conn.execute(
                sa.text(
                    "INSERT INTO golden_versions (version, name, n_questions, n_spans, "
                    "labels_digest, slices, splits, questions_blob, created_at) VALUES "
                    "('old1', 'before', 3, 4, :h, '{}', '{}', :h, :t)"
                ),
                {"h": "a" * 64, "t": when},
            )
    finally:
        engine.dispose()
    with Store.open(store_url, migrate=True) as s:
        assert current_revision(s.engine) == HEAD == "0002"
        kept = s.golden_versions()
        assert [(g.version, g.name, g.n_questions, g.parent) for g in kept] == [
            ("old1", "before", 3, None)
        ]
        golden = GoldenSet([Question(id="a", question="?", answerable=False)], corpus=CORPUS)
        version = s.put_golden(golden, name="v", parent="abc123")
        with s.engine.connect() as conn:
            parent = conn.execute(
                sa.select(m.golden_versions.c.parent).where(m.golden_versions.c.version == version)
            ).scalar_one()
        assert parent == "abc123" and s.golden(version).ids == ["a"]
        assert {g.version: g.parent for g in s.golden_versions()}[version] == "abc123"
        _queue(s)
        assert len(s.items("q1")) == 3


def test_a_token_is_issued_to_a_labeller_without_one_and_revoked(store: Store) -> None:
    store.add_labeller("me", token=False)
    row, token = store.issue_token("me")
    assert row.has_token and store.labeller_by_token(token) == row
    with pytest.raises(UsageError, match="already has a token"):
        store.issue_token("me")
    _queue(store)
    item = store.items("q1")[0].id
    store.save_label(item, "me", {"kept": True}, 0)
    gone = store.revoke_token("me")
    assert not gone.has_token and store.labeller_by_token(token) is None
    assert store.revoke_token("me") == gone  # nothing to revoke: unchanged
    assert [x.payload for x in store.labels(item_id=item)] == [{"kept": True}]
    with pytest.raises(NotFoundError, match="labellers are"):
        store.issue_token("nobody")
