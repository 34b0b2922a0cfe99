"""The lab's per-question table as a team's dashboard (``/lab``), through FastAPI's test client
on a store holding the fare-rules runs: the slice filter and search keep exactly the golden
set's questions they name; the CSV (``/lab/questions.csv``) is the rows the page shows after
filtering, field for field, across every page; the change chart draws each question that moved
against the baseline, sorted, with fixed and broken marked as the table marks them, and links
each bar to the page of the table holding its row."""

from __future__ import annotations

import csv
import html
import io
import json
import re
import shutil
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import pytest

# justified: the lab is the optional [web] extra; the test extra installs it
pytest.importorskip("fastapi")  # justified: the lab is the [web] extra
pytest.importorskip("httpx")  # justified: the [test] extra's HTTP client

from fastapi.testclient import TestClient

from ragmeter import Store
from ragmeter.lab import create_app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from ragmeter.workflows.experiment import run_and_record

    root = tmp_path_factory.mktemp("lab-table")
    for name in ("golden.jsonl", "corpus.jsonl", "experiment.toml"):
        shutil.copy(EXAMPLE / name, root / name)
    url = f"sqlite:///{root / 'lab.db'}"
    with Store.open(url) as store, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, ids = run_and_record(
            store, root / "experiment.toml", cache_dir=EXAMPLE / ".ragmeter-cache", write=True
        )
    golden = [json.loads(line) for line in (root / "golden.jsonl").read_text().splitlines()]
    store = Store.open(url)
    client = TestClient(create_app(store=store, root=root), base_url="http://127.0.0.1")
    yield {"ids": ids, "client": client, "golden": {q["id"]: q for q in golden}}
    store.close()


def get(lab: Any, url: str, status: int = 200) -> str:
    r = lab["client"].get(url)
    assert r.status_code == status, (url, r.status_code, r.text[-800:])
    return r.text


def query(lab: Any, **more: Any) -> str:
    """The smaller chunks against the baseline at k = 4 on R (a comparison that moves)."""
    q = {"run": lab["ids"]["smaller chunks"], "baseline": lab["ids"]["baseline"], "k": 4}
    return urlencode({**q, "metric": "R", **more})


def shown(page: str) -> tuple[list[str], list[list[str]]]:
    """The table's CSV header and each shown row's fields, as the page carries them."""
    head = json.loads(html.unescape(re.search(r"data-csv-head='([^']*)'", page)[1]))  # type: ignore[index]
    rows = [json.loads(html.unescape(x)) for x in re.findall(r"data-csv='([^']*)'", page)]
    return head, rows


def qids(page: str) -> list[str]:
    return [html.unescape(x) for x in re.findall(r'<details class="q" data-qid="([^"]*)"', page)]


def csv_rows(lab: Any, params: str) -> list[list[str]]:
    r = lab["client"].get("/lab/questions.csv?" + params)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/csv")
    assert r.headers["content-disposition"].startswith("attachment; filename=")
    return list(csv.reader(io.StringIO(r.text)))


def test_the_slice_filter_keeps_the_slices_questions_and_each_row_shows_its_slices(
    lab: Any,
) -> None:
    page = get(lab, "/lab?" + query(lab))
    offered = re.findall(
        r'<option value="([^"]*)"', page.split('name="slice"')[1].split("</select>")[0]
    )
    scored = {q: item for q, item in lab["golden"].items() if item.get("evidence")}
    every = sorted({s for q in scored.values() for s in q["slices"]})
    assert offered == ["", *every]  # the slices of the scored questions
    for name in ("refunds", "identifier-lookup", "fees"):
        page = get(lab, "/lab?" + query(lab, slice=name))
        want = {q for q, item in scored.items() if name in item["slices"]}
        got = qids(page)
        assert set(got) == want and len(got) == len(want), name
        assert f'<option value="{name}" selected>' in page
        for qid, (_, row) in zip(got, enumerate(shown(page)[1]), strict=True):
            assert row[2] == ";".join(lab["golden"][qid]["slices"])  # the slice column
    assert '<span class="slice">refunds</span>' in get(lab, "/lab?" + query(lab, slice="refunds"))


def test_the_search_matches_the_id_or_the_question_text_in_any_case(lab: Any) -> None:
    for text in ("INFANT", "change-fee", "baggage", "no such words anywhere"):
        got = qids(get(lab, "/lab?" + query(lab, q=text)))
        needle = text.casefold()
        want = {
            q
            for q, item in lab["golden"].items()
            if item.get("evidence")
            and (needle in q.casefold() or needle in item["question"].casefold())
        }
        assert set(got) == want, text
    page = get(lab, "/lab?" + query(lab, q="infant", slice="fees"))
    both = {
        q
        for q, item in lab["golden"].items()
        if item.get("evidence")
        and "fees" in item["slices"]
        and ("infant" in q or "infant" in item["question"].casefold())
    }
    assert set(qids(page)) == both and 'value="infant"' in page


def test_the_csv_is_the_rows_shown_after_filtering_on_every_page(lab: Any) -> None:
    for more in ({"slice": "refunds"}, {"q": "fee", "show": "lost"}, {"sort": "worst"}, {}):
        params = query(lab, **more)
        pages: list[list[str]] = []
        head, rows = shown(get(lab, "/lab?" + params))
        pages += rows
        n = 1
        while True:  # every page of the table
            page = get(lab, "/lab?" + params + f"&page={n}")
            if n > 1:
                pages += shown(page)[1]
            if 'rel="next"' not in page:
                break
            n += 1
        got = csv_rows(lab, params)
        assert got[0] == head
        assert got[1:] == pages, more
        total = int(re.search(r"of (\d+)", page.split('class="pager"')[1])[1])  # type: ignore[index]
        assert len(got) - 1 == total
    # the client's CSV is the page's rows; the server's link keeps the filter
    page = get(lab, "/lab?" + query(lab, slice="refunds"))
    link = html.unescape(re.search(r'<a href="(/lab/questions\.csv\?[^"]*)"', page)[1])  # type: ignore[index]
    assert parse_qs(urlparse(link).query)["slice"] == ["refunds"]


def test_the_csv_numbers_are_the_cards_numbers(lab: Any) -> None:
    rows = csv_rows(lab, query(lab))
    head, body = rows[0], rows[1:]
    assert head[:4] == ["qid", "question", "slices", "R@4"] and head[-3:] == [
        "baseline R@4",
        "change R@4",
        "moved",
    ]
    page = get(lab, "/lab?" + query(lab))
    card = re.search(
        r'data-metric="R">\s*<div class="card-label">[^<]*</div>\s*'
        r'<div class="card-value">([^<]*)<',
        page,
    )
    mean = sum(float(r[3]) for r in body) / len(body)
    assert card is not None and f"{mean:.3f}" == card[1]
    for r in body:
        if r[-2]:
            assert abs(float(r[3]) - float(r[-3]) - float(r[-2])) < 1e-5


def test_the_change_chart_draws_what_moved_sorted_with_fixed_and_broken_marked(lab: Any) -> None:
    params = query(lab, metric="AllR")  # all-evidence recall: 0 or 1, fixed and broken
    page = get(lab, "/lab?" + params)
    spec_text = re.search(
        r'<script type="application/json" id="change-chart-spec">(.*?)</script>', page, re.S
    )
    assert spec_text is not None and 'data-click="row"' in page
    points = json.loads(spec_text[1])["data"]["values"]
    body = csv_rows(lab, params)[1:]
    moved = {r[0]: r for r in body if r[-2] and float(r[-2]) != 0}
    assert {p["qid"] for p in points} == set(moved)
    deltas = [p["delta"] for p in points]
    assert deltas == sorted(deltas, reverse=True) and 0 not in deltas
    for p in points:
        marks = moved[p["qid"]][-1].split()
        want = "fixed" if "fixed" in marks else "broken" if "broken" in marks else None
        assert p["move"] == (want or ("gained" if p["delta"] > 0 else "lost"))
        # the bar's link opens the table's page holding the row
        url = urlparse(p["url"])
        assert url.fragment.startswith("q=")
        assert p["qid"] in qids(get(lab, f"{url.path}?{url.query}"))
    assert {p["move"] for p in points} == {"broken"}  # 300-token chunks at k = 4: less text
    hybrid = query(lab, metric="AllR", run=lab["ids"]["hybrid"])
    drawn = json.loads(
        re.search(r'id="change-chart-spec">(.*?)</script>', get(lab, "/lab?" + hybrid), re.S)[1]
    )  # type: ignore[index]
    assert {p["move"] for p in drawn["data"]["values"]} == {"fixed"}  # hybrid: only fixes
    # filtered: the chart draws only the rows the filter keeps
    page = get(lab, "/lab?" + query(lab, slice="refunds"))
    m = re.search(r'id="change-chart-spec">(.*?)</script>', page, re.S)
    kept = set(qids(page))
    assert m is None or {p["qid"] for p in json.loads(m[1])["data"]["values"]} <= kept
    # without a baseline there is nothing to draw
    assert "change-chart" not in get(lab, "/lab?" + query(lab, baseline="none"))


def test_a_bad_csv_request_is_a_page_saying_why(lab: Any) -> None:
    """As every lab route (tests/hostile): a bad request is the lab's page with the error."""
    r = lab["client"].get("/lab/questions.csv?run=abc")
    assert r.status_code == 400 and r.headers["content-type"].startswith("text/html")
    assert "run must be a whole number, got &#39;abc&#39;" in r.text
    r = lab["client"].get("/lab/questions.csv?run=999")
    assert r.status_code == 404 and "there is no finished run 999" in r.text
