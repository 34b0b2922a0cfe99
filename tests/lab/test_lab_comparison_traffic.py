"""The lab's comparison page shows the difference weighted to traffic when the stored comparison
carries it (``ragmeter compare --traffic``), and nothing new for a comparison without it."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")  # justified: the lab is the [web] extra
pytest.importorskip("httpx")  # justified: the [test] extra's HTTP client

from fastapi.testclient import TestClient

from ragmeter import Evaluation, Store
from ragmeter.lab import create_app
from ragmeter.metrics import parse
from ragmeter.paired import Traffic
from ragmeter.workflows import compare as flow

M = "Hit@3"
# a: +1, 0, 0, +1; b: 0, -1, 0; c: +1, +1, 0, 0, 0 (the hand example of test_paired_weighted)
SIDES = {
    "a": ([0, 1, 0, 0], [1, 1, 0, 1]),
    "b": ([0, 1, 1], [0, 0, 1]),
    "c": ([0, 0, 1, 0, 0], [1, 1, 1, 0, 0]),
}


def ev(run: str, side: int) -> Evaluation:
    qids = [f"{s}{i}" for s, p in SIDES.items() for i in range(len(p[side]))]
    values = [v for p in SIDES.values() for v in p[side]]
    return Evaluation(
        run, (parse(M),), tuple(qids), np.array(values, dtype=float), golden_version="v1",
        slices={q: (q[0],) for q in qids},
    )  # fmt: skip


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(f"sqlite:///{tmp_path / 'store.db'}", migrate=True) as s:
        yield s


def text_of(page: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def test_the_stored_comparison_carries_the_weighted_line(store: Store) -> None:
    a = store.record_evaluation(ev("base", 0), name="base")
    b = store.record_evaluation(ev("cand", 1), name="cand")
    shares = Traffic(shares="a=0.5,b=0.3,c=0.2")
    out = flow.compare_runs(str(a), str(b), M, store=store, traffic=shares)
    assert out.traffic is not None and out.traffic.estimate == pytest.approx(0.23)
    assert out.comparison.traffic == out.traffic
    weighted = flow.record(store, out)
    plain = flow.record(store, flow.compare_runs(str(a), str(b), M, store=store))
    assert weighted is not None and plain is not None
    back = flow.stored_comparison(store, weighted)
    assert back.comparison.traffic == out.traffic
    client = TestClient(create_app(store=store), base_url="http://127.0.0.1")
    page = text_of(client.get(f"/comparisons/{weighted}").text)
    assert "Weighted to traffic (given shares): +0.230" in page
    assert "unweighted +0.250" in page and "Weight carried by a 50% of traffic" in page
    assert "x1.50" in page  # slice a: 50% of traffic, 4 of 12 questions
    page = text_of(client.get(f"/comparisons/{plain}").text)
    assert "Weighted to traffic" not in page
