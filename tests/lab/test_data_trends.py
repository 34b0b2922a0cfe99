"""The experiments page's trends (issue 27 item 12): each experiment's headline metric for
every finished run over time, by golden-set version, the baseline marked, read from the store
(``Store.trend``, tested on SQLite and PostgreSQL in tests/store/test_store_trends.py). The
headline is the one the runs recorded (declared, or ``ragmeter run``'s default), else (runs
stored before) AllR at the prompt's token budget, else at the prompt k; the page says which."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("fastapi")  # justified: the lab is the [web] extra
pytest.importorskip("httpx")  # justified: the [test] extra's HTTP client

from _lab_store import record_fare_rules
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from ragmeter import Store
from ragmeter.lab import create_app
from ragmeter.lab._data_trends import headline_of
from ragmeter.metrics import Evaluation, parse
from ragmeter.store import TrendPoint

SPEC = re.compile(r'<script type="application/json" id="(trend-\d+-chart)-spec">(.*?)</script>')


def words(page: str) -> str:
    """The page's text: tags dropped, entities read, spaces collapsed."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", page)))


def specs(page: str) -> dict[str, Any]:
    return {k: json.loads(v) for k, v in SPEC.findall(page)}


@pytest.fixture(scope="module")
def fare(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return record_fare_rules(tmp_path_factory.mktemp("trends"))


def client(url: str, root: Path) -> TestClient:
    return TestClient(create_app(url, root=root), base_url="http://127.0.0.1")


def test_the_fare_rules_trend_draws_every_run_on_allr_at_the_budget(fare: Any) -> None:
    page = client(fare.url, fare.root).get("/").text
    (spec,) = specs(page).values()
    points = spec["data"]["values"]
    with Store.open(fare.url) as store:
        runs = {r.id: r for r in store.runs()}
    # every finished run once, oldest first, its value the stored mean
    assert sorted(p["run"] for p in points) == sorted(fare.ids.values())
    assert [p["at"] for p in points] == sorted(p["at"] for p in points)
    for p in points:
        r = runs[p["run"]]
        assert p["value"] == r.metrics["AllR@budget=1200"]
        assert p["role"] == ("baseline" if r.is_baseline else "variant")
        assert (p["variant"], p["golden"]) == (r.name, r.golden_version)
    assert [p["role"] for p in points].count("baseline") == 1
    text = words(page)
    assert "Trend: AllR@budget=1200 over time" in text
    assert "The experiment's headline metric, as its newest run recorded it" in text
    assert "squares are the baseline" in text


def _run(store: Store, exp: str, name: str, value: float, golden: str, **kw: Any) -> int:
    config: dict[str, Any] = {"settings": {"k": 4, "budget": None}, **kw}
    rid = store.start_run(
        experiment=exp, name=name, config=config, golden_version=golden,
        is_baseline=name == "baseline",
    )  # fmt: skip
    e = Evaluation(
        run=name, metrics=(parse("AllR@4"), parse("nDCG@4")), query_ids=("a", "b"),
        values=np.array([[value, value / 2]] * 2), golden_version=golden,
    )  # fmt: skip
    store.finish_run(rid, evaluations={"span": e}, metrics={"AllR@4": value, "nDCG@4": value / 2})
    return rid


def test_a_declared_headline_and_two_golden_versions(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    with Store.open(url) as store:
        _run(store, "declared", "baseline", 0.5, "g-000000000001", headline="nDCG@4")
        _run(store, "declared", "hybrid", 0.7, "g-000000000001", headline="nDCG@4")
        _run(store, "declared", "baseline", 0.6, "g-000000000002", headline="nDCG@4")
        _run(store, "at k", "baseline", 0.4, "g-000000000001")
        _run(store, "at k", "bigger", 0.3, "g-000000000001")
    c = client(url, tmp_path)
    page = c.get("/?experiment=declared").text
    (spec,) = specs(page).values()
    values = spec["data"]["values"]
    assert [(p["variant"], p["golden"], p["value"]) for p in values] == [
        ("baseline", "g-000000000001", 0.25),
        ("hybrid", "g-000000000001", 0.35),
        ("baseline", "g-000000000002", 0.3),
    ]
    text = words(page)
    assert "Trend: nDCG@4 over time" in text and "as its newest run recorded it" in text
    assert "on 2 golden-set versions" in text
    page = words(c.get("/?experiment=at k").text)
    assert "Trend: AllR@4 over time" in page and "AllR at the prompt k" in page
    assert len(specs(c.get("/").text)) == 2  # both experiments, one chart each


def _point(i: int, **kw: Any) -> TrendPoint:
    base = dict(
        run_id=i, experiment="e", name=f"v{i}", is_baseline=i == 0, golden_version="g",
        at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=i),
        metrics={}, headline=None, k=4, budget=None,
    )  # fmt: skip
    return TrendPoint(**{**base, **kw})  # type: ignore[arg-type]


@given(
    budget=st.one_of(st.none(), st.sampled_from([600, 1200])),
    declared=st.one_of(st.none(), st.sampled_from(["nDCG@4", "R@budget=600"])),
    n=st.integers(1, 5),
)
def test_the_trend_metric_follows_the_rule(budget: int | None, declared: str | None, n: int):
    metrics = {"AllR@4": 0.5, "R@4": 0.4}
    if budget is not None:
        metrics[f"AllR@budget={budget}"] = 0.6
    points = [
        _point(i, metrics=metrics, budget=budget, headline=declared if i == n - 1 else None)
        for i in range(n)
    ]
    metric, why = headline_of(points)
    if declared is not None:
        assert metric == declared and "recorded it" in why
    elif budget is not None:
        assert metric == f"AllR@budget={budget}" and "token budget" in why
    else:
        assert metric == "AllR@4" and "prompt k" in why
