"""The lab shows a run made with ``repeat = N`` (issue 27): ``/repeats?run=ID`` lists each
repeat's rate and difference against the baseline, the flaky questions with each repeat's
verdict beside the baseline's, and how much of the headline difference the noise can explain,
the same numbers as the run's answer_check.json (what ``gate --stable`` reads); ``/compare``
says it beside the comparison and links there. The store keeps them (the answer set's report),
on SQLite and PostgreSQL alike."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")  # justified: the lab is the [web] extra
pytest.importorskip("httpx")  # justified: the [test] extra's HTTP client

from _repeats_store import Judged, judged_experiment, record_repeats, written_repeats
from fastapi.testclient import TestClient

from ragmeter import Store
from ragmeter.lab import create_app


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Judged]:
    with judged_experiment(tmp_path_factory.mktemp("repeats")) as j:
        yield j


@pytest.fixture
def lab(judged: Judged, store_url: str) -> Iterator[dict[str, Any]]:
    with Store.open(store_url, migrate=True) as store:
        ids = record_repeats(store, judged)
        app = create_app(store=store, root=judged.path.parent)
        yield {"client": TestClient(app, base_url="http://127.0.0.1"), "ids": ids}


def words(page: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page))).strip()


def rows(page: str, table: str) -> dict[str, str]:
    """{question id: the row's HTML} of the table of class ``table``."""
    body = re.search(rf'<table class="{table}">(.*?)</table>', page, flags=re.S)
    assert body, table
    found = re.findall(r'<tr data-qid="([^"]+)">(.*?)</tr>', body[1], flags=re.S)
    return {html.unescape(q): r for q, r in found}


def strips(row: str) -> list[str]:
    """Each verdict strip of a row as text: this run's, then the baseline's."""
    found = re.findall(r'<span class="repeat-strip">(.*?)</span></td>', row, flags=re.S)
    return [words(x).replace(" ", "") for x in found]


def test_the_repeats_page_shows_the_flaky_questions_and_the_noise(
    lab: dict[str, Any], judged: Judged
) -> None:
    cand = lab["ids"]["cand"]
    r = lab["client"].get(f"/repeats?run={cand}")
    assert r.status_code == 200, r.text[-500:]
    written = written_repeats(judged, "cand")
    flaky = rows(r.text, "repeats-flaky")
    # the flaky questions, in the golden set's order, as answer_check.json lists them
    assert list(flaky) == written["flaky"] == [judged.a, judged.b]
    # each repeat's verdict (repeat 0 first), beside the baseline's
    assert strips(flaky[judged.a]) == ["✗✗✓", "✓✓✓"]
    assert strips(flaky[judged.b]) == ["✓✗✓", "✓✓✓"]
    assert "headline mover" in flaky[judged.a] and "headline mover" not in flaky[judged.b]
    text = words(r.text)
    noise = written["vs_baseline"]
    assert noise["note"] in text
    assert noise["flaky_movers"] == [judged.a] and noise["stable_broken"] == [judged.d]
    lo, hi = noise["delta_range"]
    assert f"{lo:+.3f} to {hi:+.3f}" in text
    # each repeat's rate and difference, the numbers of the file
    for i, (rate, delta) in enumerate(zip(written["ok_rate"], noise["delta"], strict=True)):
        cells = rf"\b{i}( \(headline\))? 0 (none|{i}) {rate:.3f} {re.escape(f'{delta:+.3f}')}"
        assert re.search(cells, text), i
    assert f"/trace?run={cand}&amp;q={judged.a}" in r.text


def test_the_baselines_page_shows_its_own_flaky_question(
    lab: dict[str, Any], judged: Judged
) -> None:
    r = lab["client"].get(f"/repeats?run={lab['ids']['base']}")
    assert r.status_code == 200
    assert list(rows(r.text, "repeats-flaky")) == written_repeats(judged, "base")["flaky"]
    assert list(rows(r.text, "repeats-flaky")) == [judged.c]
    assert strips(rows(r.text, "repeats-flaky")[judged.c]) == ["✓✓✗"]


def test_the_comparison_says_the_repeats_beside_it(lab: dict[str, Any], judged: Judged) -> None:
    base, cand = lab["ids"]["base"], lab["ids"]["cand"]
    r = lab["client"].get(f"/compare?base={base}&cand={cand}")
    assert r.status_code == 200, r.text[-500:]
    text = words(r.text)
    assert "answers were made 3 times: 2 flaky questions" in text
    assert written_repeats(judged, "cand")["vs_baseline"]["note"] in text
    assert f'href="/repeats?run={cand}"' in r.text


def test_no_run_or_a_bad_id_is_a_page(lab: dict[str, Any]) -> None:
    client = lab["client"]
    for url in ("/repeats", "/repeats?run=999", "/repeats?run=abc", f"/repeats?run={2**63}"):
        r = client.get(url)
        assert r.status_code == 404, url
        assert r.headers["content-type"].startswith("text/html")
    assert "name a run made with repeat = N" in words(client.get("/repeats").text)


def test_a_run_without_repeats_says_so(tmp_path: Path) -> None:
    from _experiment_files import toy_experiment

    from ragmeter.workflows.experiment import run_and_record

    text = (
        'name = "once"\ngolden = "golden.jsonl"\ncorpus = "corpus.jsonl"\nk = 2\n'
        'metrics = ["R"]\n[baseline]\nname = "b"\nchunker = "tokens:20:0"\nretriever = "bm25"\n'
    )
    path = toy_experiment(tmp_path, text)
    with Store.open(f"sqlite:///{tmp_path / 'lab.db'}") as store:
        _, ids = run_and_record(store, path)
        client = TestClient(create_app(store=store, root=tmp_path), base_url="http://127.0.0.1")
        r = client.get(f"/repeats?run={ids['b']}")
    assert r.status_code == 404
    assert f"run {ids['b']} (b) has no repeats stored" in words(r.text)
