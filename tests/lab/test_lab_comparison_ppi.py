"""The lab's comparison page shows the prediction-powered interval a comparison recorded with
`ragmeter compare --human-labels` carries, and nothing of it for one recorded without."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("fastapi")  # justified: the lab is the [web] extra
pytest.importorskip("httpx")  # justified: the [test] extra's HTTP client

from fastapi.testclient import TestClient

from ragmeter import Store
from ragmeter.cli import app
from ragmeter.lab import create_app
from ragmeter.workflows.compare import stored_comparison

EXAMPLE = Path(__file__).parents[2] / "examples" / "human-labels"


def text_of(page: str) -> str:
    page = re.sub(r"<script[^>]*>.*?</script>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def test_stored_comparison_page_shows_the_three_intervals(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    files = [str(EXAMPLE / "baseline.csv"), str(EXAMPLE / "candidate.csv")]
    labels = ["--human-labels", str(EXAMPLE / "human.jsonl")]
    for extra in (labels, []):
        r = CliRunner().invoke(app, ["compare", *files, *extra, "--db", url, "--no-ledger"])
        assert r.exit_code == 0, r.stderr
    with Store.open(url) as store:
        first = stored_comparison(store, 1).comparison
        assert first.ppi is not None and first.ppi.n_labelled == 100
        assert f"{first.ppi.ppi.estimate:+.3f}" == "+0.117"
        assert stored_comparison(store, 2).comparison.ppi is None
        client = TestClient(create_app(store=store), base_url="http://127.0.0.1")
        with_ppi = client.get("/comparisons/1")
        without = client.get("/comparisons/2")
    assert with_ppi.status_code == 200 and without.status_code == 200
    text = text_of(with_ppi.text)
    assert "Prediction-powered interval" in text
    assert "prediction-powered 400 +0.117 [+0.032, +0.201] 0.169" in text
    assert "judge only 400 +0.275 [+0.215, +0.335] 0.120" in text
    assert "human only 100 +0.110 [+0.020, +0.210] 0.190" in text
    assert "lambda = 0.44" in text
    assert "Prediction-powered interval" not in text_of(without.text)
