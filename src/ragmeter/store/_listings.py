"""Listing and loading what the store holds besides runs and evaluations: golden-set versions,
comparisons' headline columns, answer sets and judge validations; and counting runs.

Each call returns typed records (frozen dataclasses). A damaged row is handled as everywhere in
the store (:mod:`._damage`): a listing leaves it out with a warning naming it, loading it by its
id raises :class:`DamagedRowError` naming what is wrong. A record also reads as the mapping of
its columns (``row["id"]``, ``row.get("source")``, ``dict(row)``), with the plain JSON values
(lists, dicts) the listings gave before they were typed; :meth:`Columns.to_dict` is that mapping.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeVar

from .._errors import NotFoundError
from . import _models as m
from ._damage import LABEL, Damage, DamagedRowError, Row, checked, fetch, number, skipped
from ._engine import reading

if TYPE_CHECKING:  # pragma: no cover
    import sqlalchemy as sa

    from ._records import RunRecord
    from ._store import Store


def _plain(value: Any) -> Any:
    """A record's value as JSON gives it: tuples as lists, mappings as dicts."""
    if isinstance(value, tuple):
        return [_plain(x) for x in value]
    if isinstance(value, Mapping):
        return {k: _plain(x) for k, x in value.items()}
    return value


class Columns(Mapping[str, Any]):
    """A record that also reads as the mapping of its columns (plain JSON values: lists and
    dicts), so code written against the untyped listings keeps working."""

    __slots__ = ()

    def _names(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self))  # type: ignore[arg-type]  # (a dataclass)

    def __getitem__(self, key: str) -> Any:
        if key not in self._names():
            raise KeyError(key)
        return _plain(getattr(self, key))

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def to_dict(self) -> dict[str, Any]:
        """The record as a plain dict of its columns (JSON values, times as datetimes)."""
        return {k: _plain(getattr(self, k)) for k in self._names()}


@dataclass(frozen=True, eq=True)
class GoldenVersionRow(Columns):
    """A stored golden-set version's headline: its counts of questions, spans, slices, splits."""

    version: str
    name: str | None
    n_questions: int
    n_spans: int
    slices: Mapping[str, float]
    splits: Mapping[str, float]
    created_at: dt.datetime
    #: the version it was made from (a labelling queue's freeze, ``golden freeze --parent``)
    parent: str | None = None


@dataclass(frozen=True, eq=True)
class ComparisonRow(Columns):
    """A stored comparison's headline columns (the whole record: :meth:`Store.comparison`)."""

    id: int
    created_at: dt.datetime
    baseline_run_id: int | None
    candidate_run_id: int | None
    baseline: str
    candidate: str
    metric: str
    golden_version: str | None
    n: int
    mean_delta: float | None
    ci_low: float | None
    ci_high: float | None
    wins: int
    losses: int
    ties: int
    fixed_ids: tuple[str, ...] | None
    broken_ids: tuple[str, ...] | None
    sign_test_p: float | None
    n_resamples: int
    seed: str | None


@dataclass(frozen=True, eq=True)
class AnswerSetRow(Columns):
    """A stored answer set (``answers check``), as a list shows it."""

    id: int
    created_at: dt.datetime
    name: str
    golden_version: str | None
    source: str | None
    n_answers: int
    run_id: int | None


@dataclass(frozen=True, eq=True)
class StoredAnswerSet(Columns):
    """One stored answer set: its headline, the report ``answers check`` gave it and the answers
    (each with its context) as the answers file held them."""

    id: int
    created_at: dt.datetime
    run_id: int | None
    name: str
    golden_version: str | None
    source: str | None
    n_answers: int
    report: Mapping[str, Any]
    answers: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, eq=True)
class JudgeValidationRow(Columns):
    """A stored judge validation (``judge validate``), as a list shows it: kappa, agreement and
    the number of labels compared, from its report."""

    id: int
    created_at: dt.datetime
    judge: str
    source: str | None
    n_labels: int
    kappa: float | None
    agreement: float | None
    n: float | None


@dataclass(frozen=True, eq=True)
class StoredJudgeValidation(Columns):
    """One stored judge validation: the judge, the prompt that made its labels, the labels (with
    the human label) and the validation report."""

    id: int
    created_at: dt.datetime
    judge: str
    prompt_hash: str | None
    prompt: str | None
    source: str | None
    n_labels: int
    report: Mapping[str, Any]
    labels: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class RunPage:
    """A page of stored runs (``runs list``): the runs read, newest first, the damaged ones
    left out (each already warned about) and how many runs match the filters in all."""

    records: tuple[RunRecord, ...]
    damaged: tuple[DamagedRowError, ...]
    #: runs matching the filters, damaged ones included (the page may hold fewer)
    total: int


R = TypeVar("R")


def _listing(
    store: Store,
    query: sa.Select[Any],
    key: sa.Column[Any],
    table: str,
    make: Callable[[Row], R],
    shown: Callable[[Any], Any] = lambda k: k,
) -> list[R]:
    """The rows of ``query`` made into records by ``make``; a damaged row (one that does not
    decode, or whose values ``make`` refuses) is left out with a warning naming it by
    ``shown(key)``."""
    with reading(store.engine) as conn:
        rows, damaged = fetch(conn, query, key, table)
    out: list[R] = []
    for r in rows:
        try:
            with checked(table, shown(getattr(r, key.name))):
                out.append(make(Row(r)))
        except DamagedRowError as exc:
            damaged.append(exc)
    for bad in damaged:
        skipped(bad)
    return out


def _strings(v: Row, name: str) -> tuple[str, ...] | None:
    found = v.strings(name, null=True)
    return None if found is None else tuple(found)


# -- golden-set versions and comparisons --------------------------------------------------------
def golden_versions(store: Store) -> list[GoldenVersionRow]:
    """The stored golden-set versions, oldest first."""
    import sqlalchemy as sa

    t = m.golden_versions
    cols = ("version", "name", "n_questions", "n_spans", "slices", "splits", "created_at", "parent")
    q = sa.select(*(t.c[c] for c in cols)).order_by(t.c.created_at)

    def make(v: Row) -> GoldenVersionRow:
        return GoldenVersionRow(
            version=v.text("version"),
            name=v.text("name", null=True),
            n_questions=v.whole("n_questions"),
            n_spans=v.whole("n_spans"),
            slices=v.numbers("slices"),
            splits=v.numbers("splits"),
            created_at=v.when("created_at"),
            parent=v.text("parent", null=True),
        )

    # a version is named by its repr: golden-set version 'g-...'
    return _listing(store, q, t.c.version, "golden_versions", make, repr)


def comparisons(store: Store, golden_version: str | None = None) -> list[ComparisonRow]:
    """The stored comparisons' headline columns, newest first."""
    import sqlalchemy as sa

    t = m.comparisons
    cols = [c for c in t.c if c.name not in ("record", "values_blob", "slices")]
    q = sa.select(*cols).order_by(t.c.id.desc())
    if golden_version is not None:
        q = q.where(t.c.golden_version == golden_version)

    def make(v: Row) -> ComparisonRow:
        return ComparisonRow(
            id=v.whole("id"),
            created_at=v.when("created_at"),
            baseline_run_id=v.whole("baseline_run_id", null=True),
            candidate_run_id=v.whole("candidate_run_id", null=True),
            baseline=v.text("baseline"),
            candidate=v.text("candidate"),
            metric=v.text("metric"),
            golden_version=v.text("golden_version", null=True),
            n=v.whole("n"),
            mean_delta=v.number("mean_delta"),
            ci_low=v.number("ci_low"),
            ci_high=v.number("ci_high"),
            wins=v.whole("wins"),
            losses=v.whole("losses"),
            ties=v.whole("ties"),
            fixed_ids=_strings(v, "fixed_ids"),
            broken_ids=_strings(v, "broken_ids"),
            sign_test_p=v.number("sign_test_p"),
            n_resamples=v.whole("n_resamples"),
            seed=v.text("seed", null=True),
        )

    return _listing(store, q, t.c.id, "comparisons", make)


# -- answer sets and judge validations ----------------------------------------------------------
def _report(v: Row) -> dict[str, Any]:
    """A set's report: a JSON object (or, as older rows may hold it, its text)."""
    value = v.get("report")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise Damage("report is not JSON") from None
        if not isinstance(value, dict):
            raise Damage("report is not a JSON object")
        return value
    return dict(v.mapping("report"))


def answer_sets(store: Store, golden_version: str | None = None) -> list[AnswerSetRow]:
    """The stored answer sets, newest first."""
    import sqlalchemy as sa

    t = m.answer_sets
    q = sa.select(
        t.c.id, t.c.created_at, t.c.name, t.c.golden_version, t.c.source, t.c.n_answers, t.c.run_id
    ).order_by(t.c.id.desc())
    if golden_version is not None:
        q = q.where(t.c.golden_version == golden_version)

    def make(v: Row) -> AnswerSetRow:
        return AnswerSetRow(
            id=v.whole("id"),
            created_at=v.when("created_at"),
            name=v.text("name"),
            golden_version=v.text("golden_version", null=True),
            source=v.text("source", null=True),
            n_answers=v.whole("n_answers"),
            run_id=v.whole("run_id", null=True),
        )

    return _listing(store, q, t.c.id, "answer_sets", make)


def judge_validations(store: Store) -> list[JudgeValidationRow]:
    """The stored judge validations, newest first, with kappa and agreement from their
    report."""
    import sqlalchemy as sa

    t = m.judge_labels
    q = sa.select(t.c.id, t.c.created_at, t.c.judge, t.c.source, t.c.n_labels, t.c.report).order_by(
        t.c.id.desc()
    )

    def make(v: Row) -> JudgeValidationRow:
        rep = _report(v)
        got = {k: None if rep.get(k) is None else number(rep[k], f"report[{k!r}]") for k in
               ("kappa", "agreement", "n")}  # fmt: skip
        return JudgeValidationRow(
            id=v.whole("id"),
            created_at=v.when("created_at"),
            judge=v.text("judge"),
            source=v.text("source", null=True),
            n_labels=v.whole("n_labels"),
            kappa=got["kappa"],
            agreement=got["agreement"],
            n=got["n"],
        )

    return _listing(store, q, t.c.id, "judge_labels", make)


def _one(store: Store, table: str, row_id: object) -> tuple[int, Row]:
    """Row ``row_id`` of ``table`` (NotFoundError naming it when absent or when no row can have
    that id; DamagedRowError when it does not decode)."""
    import sqlalchemy as sa

    what = LABEL.get(table, table)
    rid = store.row_id(row_id)
    if rid is None:
        raise NotFoundError(f"the store has no {what} {row_id!r}")
    t = m.metadata.tables[table]
    with reading(store.engine) as conn:
        found, damaged = fetch(conn, sa.select(t).where(t.c.id == rid), t.c.id, table)
    if damaged:
        raise damaged[0]
    if not found:
        raise NotFoundError(f"the store has no {what} {rid}")
    return rid, Row(found[0])


def stored_records(store: Store, table: str, row_id: int, blob: str) -> tuple[dict[str, Any], ...]:
    """The JSON records of an answer set or judge-label set, read from its blob ``blob``
    (DamagedRowError when the blob does not read back as JSON objects)."""
    from ._damage import first_line, part_of

    with reading(store.engine) as conn, part_of(table, row_id, "its records"):
        table_ = store.blobs.get_table(conn, blob)
    try:
        records = [json.loads(x) for x in table_.column("record").to_pylist()]
    except (KeyError, ValueError, TypeError) as exc:
        why = first_line(exc)
        raise DamagedRowError(table, row_id, f"its records are not JSON: {why}") from None
    if not all(isinstance(x, dict) for x in records):
        raise DamagedRowError(table, row_id, "its records are not JSON objects")
    return tuple(records)


def answer_set(store: Store, set_id: object) -> StoredAnswerSet:
    """One stored answer set, with its answers and report."""
    rid, v = _one(store, "answer_sets", set_id)
    with checked("answer_sets", rid):
        head = StoredAnswerSet(
            id=v.whole("id"),
            created_at=v.when("created_at"),
            run_id=v.whole("run_id", null=True),
            name=v.text("name"),
            golden_version=v.text("golden_version", null=True),
            source=v.text("source", null=True),
            n_answers=v.whole("n_answers"),
            report=_report(v),
            answers=(),
        )
        blob = v.text("answers_blob")
    return _with(head, answers=stored_records(store, "answer_sets", rid, blob))


def judge_validation(store: Store, validation_id: object) -> StoredJudgeValidation:
    """One stored judge validation, with its labels and report."""
    rid, v = _one(store, "judge_labels", validation_id)
    with checked("judge_labels", rid):
        head = StoredJudgeValidation(
            id=v.whole("id"),
            created_at=v.when("created_at"),
            judge=v.text("judge"),
            prompt_hash=v.text("prompt_hash", null=True),
            prompt=v.text("prompt", null=True),
            source=v.text("source", null=True),
            n_labels=v.whole("n_labels"),
            report=_report(v),
            labels=(),
        )
        blob = v.text("labels_blob")
    return _with(head, labels=stored_records(store, "judge_labels", rid, blob))


T = TypeVar("T")


def _with(record: T, **changes: Any) -> T:
    from dataclasses import replace

    return replace(record, **changes)  # type: ignore[type-var]  # (always a dataclass)


# -- runs ---------------------------------------------------------------------------------------
def count_runs(
    store: Store,
    *,
    experiment: str | None = None,
    golden_version: str | None = None,
    status: str | None = None,
) -> int:
    """How many runs match the filters (damaged ones included: counting reads no values)."""
    import sqlalchemy as sa

    from ._runs import run_filters

    q = (
        sa.select(sa.func.count())
        .select_from(m.runs)
        .join(m.experiments, m.experiments.c.id == m.runs.c.experiment_id)
    )
    q = run_filters(q, experiment=experiment, golden_version=golden_version, status=status)
    with reading(store.engine) as conn:
        return int(conn.execute(q).scalar_one())
