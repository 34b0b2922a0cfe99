"""The golden-set workbench's tables: labellers, label queues, their items and labels
(docs/labelling.md).

A *queue* holds the questions to label (its *items*) and the corpus they are labelled against (a
columnar blob, so the lab shows documents with no file around). A *label* is one labeller's
label of one item, or the item's adjudicated (``resolved``) label; each has a ``revision`` that
starts at 1 and grows by one per save. A save or a delete names the revision it edits
(``expected_revision``, 0 to create): any other revision stored is an :class:`EditConflict`
carrying the stored label, so an edit made in another tab or by an adjudicator is never
overwritten silently. Two labellers' labels of one item are different rows and never conflict.

Each save and delete is one transaction. The revision check is made by the ``UPDATE ... WHERE
revision = expected`` itself (and by the unique constraint for a create), so two writers racing
on one row see one success and one conflict on SQLite and PostgreSQL alike.

The payload is stored as given (JSON); :mod:`ragmeter.workflows.labelling` checks it first.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._errors import NotFoundError, UsageError
from . import _models as m
from ._engine import insert_row, reading, writing
from ._values import json_ready, now

if TYPE_CHECKING:  # pragma: no cover
    from sqlalchemy.engine import Connection

    from ..data import Corpus
    from ._store import Store

__all__ = [
    "EditConflict",
    "ItemRow",
    "LabelRow",
    "LabellerRow",
    "NewItem",
    "QueueRow",
]

#: a queue's name: it appears in URLs (``/label/NAME``) and file names
QUEUE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
#: the longest labeller name
LABELLER_NAME_MAX = 100


class EditConflict(UsageError):
    """A save or delete named a revision that is not the stored one: someone (another tab,
    another labeller's adjudication) changed the label meanwhile. ``stored`` is the label as
    stored now (None: there is none, it was deleted or never made); nothing was written."""

    def __init__(self, stored: LabelRow | None, expected: int) -> None:
        self.stored = stored
        self.expected = expected
        now_is = "none (deleted)" if stored is None else f"revision {stored.revision}"
        super().__init__(
            f"edit conflict: this edit was made on revision {expected} of the label, and the "
            f"stored label is now {now_is}; reload it, then keep yours or the stored one"
        )


@dataclass(frozen=True)
class LabellerRow:
    """A labeller: a name, and whether a token lets them in beyond loopback."""

    id: int
    name: str
    has_token: bool
    created_at: dt.datetime

    @staticmethod
    def check_name(name: object) -> str:
        """``name`` if it can name a labeller, else UsageError saying what a name is."""
        return check_labeller_name(name)


@dataclass(frozen=True)
class QueueRow:
    """A labelling queue: what it labels (``evidence`` or ``answers``), its corpus, the share of
    items two labellers label and the golden version it reviews or extends."""

    id: int
    name: str
    kind: str
    double_share: float
    seed: int
    parent_version: str | None
    source: str | None
    corpus_fingerprint: str | None
    n_docs: int
    created_at: dt.datetime

    @staticmethod
    def check_name(name: object) -> str:
        """``name`` if it can name a queue (it is part of the lab's addresses), else
        UsageError saying what a name is."""
        return check_queue_name(name)


@dataclass(frozen=True)
class ItemRow:
    """One question of a queue."""

    id: int
    queue_id: int
    qid: str
    question: str
    position: int
    #: how the question was made: logged, written, drafted or golden
    origin: str
    #: False only for a drafted question no labeller accepted yet (never frozen)
    accepted: bool
    #: two labellers label it
    double: bool
    #: shown beside the question (logged passages and answer; an answer to review), never a label
    context: Mapping[str, Any]
    #: the label of a reviewed golden set, shown as a starting point
    prefill: Mapping[str, Any] | None


@dataclass(frozen=True)
class LabelRow:
    """One labeller's label of an item (``role="label"``), or its adjudication
    (``role="resolved"``, ``labeller`` = who resolved it last)."""

    id: int
    item_id: int
    labeller: str
    labeller_id: int
    role: str
    revision: int
    payload: Mapping[str, Any]
    created_at: dt.datetime
    updated_at: dt.datetime


@dataclass(frozen=True)
class NewItem:
    """An item to add to a queue (:meth:`Store.add_items`)."""

    qid: str
    question: str
    origin: str = "written"
    accepted: bool = True
    double: bool = False
    context: Mapping[str, Any] = field(default_factory=dict)
    prefill: Mapping[str, Any] | None = None


# -- rows to records -------------------------------------------------------------------------
def _when(value: Any) -> dt.datetime:
    if isinstance(value, dt.datetime) and value.tzinfo is None:  # SQLite keeps no zone
        return value.replace(tzinfo=dt.UTC)
    return value  # type: ignore[no-any-return]


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _labeller(r: Any) -> LabellerRow:
    return LabellerRow(int(r.id), str(r.name), r.token_hash is not None, _when(r.created_at))


def _queue(r: Any) -> QueueRow:
    return QueueRow(
        id=int(r.id),
        name=str(r.name),
        kind=str(r.kind),
        double_share=float(r.double_share),
        seed=int(r.seed),
        parent_version=r.parent_version,
        source=r.source,
        corpus_fingerprint=r.corpus_fingerprint,
        n_docs=int(r.n_docs),
        created_at=_when(r.created_at),
    )


def _item(r: Any) -> ItemRow:
    return ItemRow(
        id=int(r.id),
        queue_id=int(r.queue_id),
        qid=str(r.qid),
        question=str(r.question),
        position=int(r.position),
        origin=str(r.origin),
        accepted=bool(r.accepted),
        double=bool(r.double),
        context=_json(r.context) or {},
        prefill=_json(r.prefill),
    )


def _label(r: Any) -> LabelRow:
    return LabelRow(
        id=int(r.id),
        item_id=int(r.item_id),
        labeller=str(r.labeller),
        labeller_id=int(r.labeller_id),
        role=str(r.role),
        revision=int(r.revision),
        payload=_json(r.payload),
        created_at=_when(r.created_at),
        updated_at=_when(r.updated_at),
    )


def _label_select() -> Any:
    import sqlalchemy as sa

    t = m.labels
    return sa.select(*t.c, m.labellers.c.name.label("labeller")).join(
        m.labellers, m.labellers.c.id == t.c.labeller_id
    )


# -- labellers -------------------------------------------------------------------------------
def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def check_labeller_name(name: object) -> str:
    if (
        not isinstance(name, str)
        or not name.strip()
        or name != name.strip()
        or len(name) > LABELLER_NAME_MAX
        or not name.isprintable()
    ):
        raise UsageError(
            f"a labeller name is 1-{LABELLER_NAME_MAX} printable characters with no space at "
            f"either end; got {name!r}"
        )
    return name


def add_labeller(store: Store, name: str, *, token: bool = True) -> tuple[LabellerRow, str | None]:
    """A new labeller and their token (printed once, stored hashed; None with ``token=False``:
    the loopback labeller, who needs none)."""
    import sqlalchemy as sa

    check_labeller_name(name)
    secret = secrets.token_urlsafe(32) if token else None
    with writing(store.engine) as conn:
        if conn.execute(sa.select(m.labellers.c.id).where(m.labellers.c.name == name)).first():
            raise UsageError(f"a labeller named {name!r} already exists")
        new = insert_row(
            conn,
            m.labellers.insert().values(
                name=name,
                token_hash=None if secret is None else token_hash(secret),
                created_at=now(),
            ),
        )
        row = conn.execute(sa.select(m.labellers).where(m.labellers.c.id == new)).one()
    return _labeller(row), secret


def _labeller_in(conn: Connection, name: str) -> Any:
    import sqlalchemy as sa

    row = conn.execute(sa.select(m.labellers).where(m.labellers.c.name == name)).first()
    if row is None:
        names = [r.name for r in conn.execute(sa.select(m.labellers.c.name).order_by("name"))]
        there = ", ".join(repr(n) for n in names) if names else "none yet"
        raise NotFoundError(f"no labeller named {name!r}; the labellers are: {there}")
    return row


def labeller(store: Store, name: str) -> LabellerRow:
    with reading(store.engine) as conn:
        return _labeller(_labeller_in(conn, name))


def labeller_by_token(store: Store, token: str) -> LabellerRow | None:
    """The labeller whose token this is (None: no one's)."""
    import sqlalchemy as sa

    if not isinstance(token, str) or not token:
        return None
    digest = token_hash(token)
    with reading(store.engine) as conn:
        row = conn.execute(sa.select(m.labellers).where(m.labellers.c.token_hash == digest)).first()
    if row is None or not hmac.compare_digest(str(row.token_hash), digest):
        return None
    return _labeller(row)


def labellers(store: Store) -> list[LabellerRow]:
    import sqlalchemy as sa

    with reading(store.engine) as conn:
        rows = conn.execute(sa.select(m.labellers).order_by(m.labellers.c.name)).all()
    return [_labeller(r) for r in rows]


def issue_token(store: Store, name: str) -> tuple[LabellerRow, str]:
    """A new token for a labeller who has none (the loopback labeller, or one whose token was
    revoked); their labels stay theirs. UsageError when they have one already."""
    import sqlalchemy as sa

    secret = secrets.token_urlsafe(32)
    t = m.labellers
    with writing(store.engine) as conn:
        row = _labeller_in(conn, name)  # NotFoundError listing the labellers
        done = conn.execute(
            t.update()
            .where(t.c.id == row.id, t.c.token_hash.is_(None))
            .values(token_hash=token_hash(secret))
        )
        if done.rowcount != 1:
            raise UsageError(f"labeller {name!r} already has a token")
        row = conn.execute(sa.select(t).where(t.c.id == row.id)).one()
    return _labeller(row), secret


def revoke_token(store: Store, name: str) -> LabellerRow:
    """Take a labeller's token away (they can no longer sign in); the labeller and their labels
    stay. A labeller with no token: nothing changes."""
    import sqlalchemy as sa

    t = m.labellers
    with writing(store.engine) as conn:
        row = _labeller_in(conn, name)
        conn.execute(t.update().where(t.c.id == row.id).values(token_hash=None))
        row = conn.execute(sa.select(t).where(t.c.id == row.id)).one()
    return _labeller(row)


# -- queues and items ------------------------------------------------------------------------
def check_queue_name(name: object) -> str:
    if not isinstance(name, str) or not QUEUE_NAME.fullmatch(name):
        raise UsageError(
            "a queue name is 1-200 letters, digits, '.', '_' or '-', starting with a letter or "
            f"digit (it is part of the lab's addresses); got {name!r}"
        )
    return name


def corpus_table(corpus: Corpus) -> Any:
    import pyarrow as pa

    docs = list(corpus)
    return pa.table(
        {
            "id": pa.array([d.id for d in docs], pa.string()),
            "text": pa.array([d.text for d in docs], pa.large_string()),
            "title": pa.array([d.title for d in docs], pa.string()),
            "metadata": pa.array(
                [json.dumps(d.metadata, ensure_ascii=False) if d.metadata else None for d in docs],
                pa.string(),
            ),
        }
    )


def create_queue(
    store: Store,
    name: str,
    *,
    kind: str = "evidence",
    corpus: Corpus | None = None,
    items: Sequence[NewItem] = (),
    double_share: float = 0.2,
    seed: int = 0,
    parent_version: str | None = None,
    source: str | None = None,
) -> QueueRow:
    """A new queue with its corpus and items, in one transaction."""
    import sqlalchemy as sa

    check_queue_name(name)
    if kind not in m.QUEUE_KINDS:
        raise UsageError(f"a queue's kind is one of {', '.join(m.QUEUE_KINDS)}; got {kind!r}")
    if not 0.0 <= double_share <= 1.0:
        raise UsageError(f"double_share is a share between 0 and 1; got {double_share!r}")
    table = None if corpus is None else corpus_table(corpus)
    with writing(store.engine) as conn:
        if conn.execute(
            sa.select(m.label_queues.c.id).where(m.label_queues.c.name == name)
        ).first():
            raise UsageError(f"a queue named {name!r} already exists")
        blob = None if table is None else store.blobs.put_table(conn, table)
        qid = insert_row(
            conn,
            m.label_queues.insert().values(
                name=name,
                kind=kind,
                corpus_blob=blob,
                corpus_fingerprint=None if corpus is None else corpus.fingerprint,
                n_docs=0 if corpus is None else len(corpus),
                double_share=float(double_share),
                seed=int(seed),
                parent_version=parent_version,
                source=source,
                created_at=now(),
            ),
        )
        _insert_items(conn, qid, items, 0)
        row = conn.execute(sa.select(m.label_queues).where(m.label_queues.c.id == qid)).one()
    return _queue(row)


def _insert_items(conn: Connection, queue_id: int, items: Sequence[NewItem], first: int) -> None:
    seen: set[str] = set()
    for it in items:
        if it.qid in seen:
            raise UsageError(f"question id {it.qid!r} is given twice")
        seen.add(it.qid)
        if it.origin not in m.ORIGINS:
            raise UsageError(
                f"an item's origin is one of {', '.join(m.ORIGINS)}; got {it.origin!r}"
            )
    rows = [
        dict(
            queue_id=queue_id,
            qid=it.qid,
            question=it.question,
            position=first + i,
            origin=it.origin,
            accepted=bool(it.accepted),
            double=bool(it.double),
            context=json_ready(dict(it.context)),
            prefill=None if it.prefill is None else json_ready(dict(it.prefill)),
        )
        for i, it in enumerate(items)
    ]
    if rows:
        conn.execute(m.label_items.insert(), rows)


def _queue_in(conn: Connection, id_or_name: int | str) -> Any:
    import sqlalchemy as sa

    t = m.label_queues
    row = None
    if isinstance(id_or_name, str):
        row = conn.execute(sa.select(t).where(t.c.name == id_or_name)).first()
    if row is None and (
        (isinstance(id_or_name, int) and not isinstance(id_or_name, bool))
        or (isinstance(id_or_name, str) and id_or_name.isdigit() and len(id_or_name) < 10)
    ):
        row = conn.execute(sa.select(t).where(t.c.id == int(id_or_name))).first()
    if row is None:
        names = [r.name for r in conn.execute(sa.select(t.c.name).order_by(t.c.name))]
        there = ", ".join(repr(n) for n in names) if names else "none yet"
        raise NotFoundError(f"no label queue {id_or_name!r}; the queues are: {there}")
    return row


def queue(store: Store, id_or_name: int | str) -> QueueRow:
    with reading(store.engine) as conn:
        return _queue(_queue_in(conn, id_or_name))


def queues(store: Store) -> list[QueueRow]:
    import sqlalchemy as sa

    with reading(store.engine) as conn:
        rows = conn.execute(sa.select(m.label_queues).order_by(m.label_queues.c.id)).all()
    return [_queue(r) for r in rows]


def delete_queue(store: Store, id_or_name: int | str) -> None:
    """Delete a queue with its items and labels (its corpus blob goes when nothing uses it)."""
    import sqlalchemy as sa

    with writing(store.engine) as conn:
        row = _queue_in(conn, id_or_name)
        ids = sa.select(m.label_items.c.id).where(m.label_items.c.queue_id == row.id)
        conn.execute(sa.delete(m.labels).where(m.labels.c.item_id.in_(ids)))
        conn.execute(sa.delete(m.label_items).where(m.label_items.c.queue_id == row.id))
        conn.execute(sa.delete(m.label_queues).where(m.label_queues.c.id == row.id))
        files = store.blobs.collect(conn)
    for f in files:
        f.unlink(missing_ok=True)


def add_items(store: Store, queue_id: int | str, items: Sequence[NewItem]) -> list[ItemRow]:
    """Append items to a queue (after its last); their records."""
    import sqlalchemy as sa

    t = m.label_items
    with writing(store.engine) as conn:
        q = _queue_in(conn, queue_id)
        there = set(conn.execute(sa.select(t.c.qid).where(t.c.queue_id == q.id)).scalars())
        again = [it.qid for it in items if it.qid in there]
        if again:
            raise UsageError(
                f"queue {q.name!r} already has question(s) {', '.join(map(repr, again[:10]))}"
            )
        last = conn.execute(sa.select(sa.func.max(t.c.position)).where(t.c.queue_id == q.id))
        top = last.scalar()
        _insert_items(conn, q.id, items, 0 if top is None else int(top) + 1)
        qids = [it.qid for it in items]
        rows = conn.execute(
            sa.select(t).where(t.c.queue_id == q.id, t.c.qid.in_(qids)).order_by(t.c.position)
        ).all()
    return [_item(r) for r in rows]


def items(store: Store, queue_id: int | str) -> list[ItemRow]:
    import sqlalchemy as sa

    t = m.label_items
    with reading(store.engine) as conn:
        q = _queue_in(conn, queue_id)
        rows = conn.execute(sa.select(t).where(t.c.queue_id == q.id).order_by(t.c.position)).all()
    return [_item(r) for r in rows]


def item(store: Store, item_id: int | str) -> ItemRow:
    import sqlalchemy as sa

    iid = store.row_id(item_id)
    row = None
    if iid is not None:
        with reading(store.engine) as conn:
            row = conn.execute(sa.select(m.label_items).where(m.label_items.c.id == iid)).first()
    if row is None:
        raise NotFoundError(f"the store {store.display_url} has no label item {item_id!r}")
    return _item(row)


def queue_corpus(store: Store, queue_id: int | str) -> Corpus:
    """The corpus a queue was made with, as it was then."""
    from ..data import Corpus, Document
    from ._damage import part_of

    with reading(store.engine) as conn:
        q = _queue_in(conn, queue_id)
        if q.corpus_blob is None:
            return Corpus([], source=f"queue {q.name}")
        with part_of("label_queues", q.id, "its corpus"):
            table = store.blobs.get_table(conn, q.corpus_blob)
    cols = table.to_pydict()
    docs = [
        Document(
            id=i,
            text=x,
            title=t,
            metadata=json.loads(md) if md else {},
        )
        for i, x, t, md in zip(
            cols["id"], cols["text"], cols["title"], cols["metadata"], strict=True
        )
    ]
    return Corpus(docs, source=q.source or f"queue {q.name}")


# -- labels ----------------------------------------------------------------------------------
def labels(
    store: Store,
    *,
    queue_id: int | str | None = None,
    item_id: int | str | None = None,
    labeller: str | None = None,
) -> list[LabelRow]:
    """Labels of a queue or of one item (either, or both), optionally of one labeller; by item
    position, then by when each label was first saved."""

    if queue_id is None and item_id is None:
        raise UsageError("name the queue or the item whose labels to list")
    t = m.labels
    query = _label_select().join(m.label_items, m.label_items.c.id == t.c.item_id)
    with reading(store.engine) as conn:
        if queue_id is not None:
            q = _queue_in(conn, queue_id)
            query = query.where(m.label_items.c.queue_id == q.id)
        if item_id is not None:
            iid = store.row_id(item_id)
            if iid is None:
                return []
            query = query.where(t.c.item_id == iid)
        if labeller is not None:
            query = query.where(t.c.labeller_id == _labeller_in(conn, labeller).id)
        rows = conn.execute(query.order_by(m.label_items.c.position, t.c.created_at, t.c.id)).all()
    return [_label(r) for r in rows]


def _stored(conn: Connection, item_id: int, role: str, slot: int) -> Any:

    t = m.labels
    return conn.execute(
        _label_select().where(t.c.item_id == item_id, t.c.role == role, t.c.slot == slot)
    ).first()


def _check_edit(role: str, expected_revision: int) -> None:
    if role not in m.ROLES:
        raise UsageError(f"a label's role is one of {', '.join(m.ROLES)}; got {role!r}")
    if (
        not isinstance(expected_revision, int)
        or isinstance(expected_revision, bool)
        or expected_revision < 0
    ):
        raise UsageError(
            f"expected_revision is the revision edited (0: a new label); got {expected_revision!r}"
        )


class _Raced(Exception):
    """The row changed between reading it and writing it (another writer's commit)."""


def _after_race(store: Store, item_id: int, role: str, labeller: str, expected: int) -> Any:
    with reading(store.engine) as conn:
        lab = _labeller_in(conn, labeller)
        row = _stored(conn, item_id, role, lab.id if role == "label" else 0)
    return EditConflict(None if row is None else _label(row), expected)


def save_label(
    store: Store,
    item_id: int | str,
    labeller: str,
    payload: Mapping[str, Any],
    expected_revision: int,
    *,
    role: str = "label",
    accept: bool = False,
) -> LabelRow:
    """Save ``labeller``'s label of an item (``role="resolved"``: the item's adjudication);
    ``expected_revision`` is the revision edited, 0 for a new label. Any other stored revision
    raises :class:`EditConflict` and writes nothing. ``accept``: the item (a draft) is accepted
    in the same transaction."""
    import sqlalchemy as sa
    import sqlalchemy.exc as sa_exc

    _check_edit(role, expected_revision)
    iid = store.row_id(item_id)
    if iid is None:
        raise NotFoundError(f"the store {store.display_url} has no label item {item_id!r}")
    data = json_ready(dict(payload))
    t = m.labels
    try:
        with writing(store.engine) as conn:
            lab = _labeller_in(conn, labeller)
            found = conn.execute(
                sa.select(m.label_items.c.id).where(m.label_items.c.id == iid)
            ).first()
            if found is None:
                raise NotFoundError(f"the store {store.display_url} has no label item {item_id!r}")
            slot = lab.id if role == "label" else 0
            row = _stored(conn, iid, role, slot)
            when = now()
            if row is None:
                if expected_revision != 0:
                    raise EditConflict(None, expected_revision)
                insert_row(
                    conn,
                    t.insert().values(
                        item_id=iid,
                        labeller_id=lab.id,
                        role=role,
                        slot=slot,
                        revision=1,
                        payload=data,
                        created_at=when,
                        updated_at=when,
                    ),
                )
            else:
                if int(row.revision) != expected_revision:
                    raise EditConflict(_label(row), expected_revision)
                done = conn.execute(
                    sa.update(t)
                    .where(t.c.id == row.id, t.c.revision == expected_revision)
                    .values(
                        revision=expected_revision + 1,
                        payload=data,
                        labeller_id=lab.id,
                        updated_at=when,
                    )
                )
                if done.rowcount != 1:
                    raise _Raced
            if accept:
                conn.execute(
                    sa.update(m.label_items).where(m.label_items.c.id == iid).values(accepted=True)
                )
            saved = _stored(conn, iid, role, slot)
    except (_Raced, sa_exc.IntegrityError):
        raise _after_race(store, iid, role, labeller, expected_revision) from None
    return _label(saved)


def delete_label(
    store: Store,
    item_id: int | str,
    labeller: str,
    expected_revision: int,
    *,
    role: str = "label",
) -> None:
    """Delete ``labeller``'s label of an item (``role="resolved"``: its adjudication), if the
    stored revision is ``expected_revision`` (else :class:`EditConflict`, nothing deleted)."""
    import sqlalchemy as sa

    _check_edit(role, expected_revision)
    iid = store.row_id(item_id)
    if iid is None:
        raise NotFoundError(f"the store {store.display_url} has no label item {item_id!r}")
    t = m.labels
    try:
        with writing(store.engine) as conn:
            lab = _labeller_in(conn, labeller)
            slot = lab.id if role == "label" else 0
            row = _stored(conn, iid, role, slot)
            if row is None or int(row.revision) != expected_revision:
                raise EditConflict(None if row is None else _label(row), expected_revision)
            done = conn.execute(
                sa.delete(t).where(t.c.id == row.id, t.c.revision == expected_revision)
            )
            if done.rowcount != 1:
                raise _Raced
    except _Raced:
        raise _after_race(store, iid, role, labeller, expected_revision) from None
