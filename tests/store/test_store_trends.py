"""``Store.trend``: every finished run of an experiment, oldest first, with its means, declared
headline, k and budget, from one query that reads the same on SQLite and PostgreSQL
(``store_url`` runs each test on both when RAGMETER_TEST_DATABASE_URL is set); a damaged run is
left out with a warning naming it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import numpy as np
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter.metrics import Evaluation, parse
from ragmeter.store import DamagedRowWarning, Store, TrendPoint

#: the columns of the runs table these tests edit, as another program would
RUNS = sa.table(
    "runs",
    sa.column("id", sa.Integer),
    sa.column("finished_at", sa.DateTime(timezone=True)),
    sa.column("metrics", sa.JSON),
)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url, migrate=True) as s:
        yield s


def _evaluation(name: str, value: float, golden: str) -> Evaluation:
    return Evaluation(
        run=name,
        metrics=(parse("AllR@4"), parse("R@20")),
        query_ids=("q1", "q2"),
        values=np.array([[value, 1.0], [value, 1.0]]),
        golden_version=golden,
    )


def _record(
    store: Store,
    experiment: str,
    name: str,
    value: float,
    *,
    baseline: bool = False,
    golden: str = "g-000000000001",
    headline: str | None = None,
    finish: bool = True,
) -> int:
    config = {"settings": {"k": 4, "budget": 1200}}
    if headline is not None:
        config["headline"] = headline  # type: ignore[assignment]
    rid = store.start_run(
        experiment=experiment, name=name, config=config, golden_version=golden,
        is_baseline=baseline,
    )  # fmt: skip
    if finish:
        e = _evaluation(name, value, golden)
        store.finish_run(rid, evaluations={"span": e}, metrics={"AllR@4": value, "R@20": 1.0})
    return rid


def _at(store: Store, rid: int, when: dt.datetime) -> None:
    with store.engine.begin() as conn:
        conn.execute(sa.update(RUNS).where(RUNS.c.id == rid).values(finished_at=when))


def test_the_trend_is_every_finished_run_oldest_first(store: Store) -> None:
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    a = _record(store, "fare", "baseline", 0.5, baseline=True)
    b = _record(store, "fare", "hybrid", 0.7, headline="AllR@4")
    c = _record(store, "fare", "baseline", 0.6, baseline=True, golden="g-000000000002")
    _record(store, "fare", "running", 0.9, finish=False)  # not finished: not a point
    _record(store, "other", "baseline", 0.1, baseline=True)
    # finished out of id order: the trend follows the time
    _at(store, a, t0 + dt.timedelta(days=2))
    _at(store, b, t0)
    _at(store, c, t0 + dt.timedelta(days=5))
    points = store.trend("fare")
    assert [p.run_id for p in points] == [b, a, c]
    first = points[0]
    assert isinstance(first, TrendPoint)
    assert (first.name, first.is_baseline, first.headline) == ("hybrid", False, "AllR@4")
    assert first.metrics == {"AllR@4": 0.7, "R@20": 1.0}
    assert (first.k, first.budget) == (4, 1200)
    assert first.at == t0 and first.at.tzinfo is not None
    assert [p.golden_version for p in points] == ["g-000000000001"] * 2 + ["g-000000000002"]
    assert [p.is_baseline for p in points] == [False, True, True]
    assert points[1].headline is None
    assert {p.experiment for p in store.trend()} == {"fare", "other"}
    assert store.trend("nothing") == []


def test_a_damaged_run_is_left_out_by_name(store: Store) -> None:
    good = _record(store, "fare", "baseline", 0.5, baseline=True)
    bad = _record(store, "fare", "hybrid", 0.7)
    with store.engine.begin() as conn:  # a mean that is text, as a hand edit could leave it
        conn.execute(sa.update(RUNS).where(RUNS.c.id == bad).values(metrics={"AllR@4": "high"}))
    with pytest.warns(DamagedRowWarning, match=rf"run {bad} is damaged \(metrics"):
        points = store.trend("fare")
    assert [p.run_id for p in points] == [good]


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=6))
def test_any_finish_times_come_back_sorted(store: Store, minutes: list[int]) -> None:
    t0 = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    name = f"exp-{len(store.trend())}"  # a fresh experiment per example
    ids = []
    for i, mins in enumerate(minutes):
        rid = _record(store, name, f"v{i}", i / 10, baseline=i == 0)
        _at(store, rid, t0 + dt.timedelta(minutes=mins))
        ids.append(rid)
    points = store.trend(name)
    assert sorted(ids) == sorted(p.run_id for p in points)
    keys = [(p.at, p.run_id) for p in points]
    assert keys == sorted(keys)
    assert all(p.at == t0 + dt.timedelta(minutes=minutes[ids.index(p.run_id)]) for p in points)
