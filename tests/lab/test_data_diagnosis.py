"""The lab's diagnosis page with context ablations: the fare-rules ablation example recorded into
a fresh store by ``ragmeter run --db``, then ``/diagnosis`` of the baseline's answer set shows
exactly the causal numbers ``ragmeter diagnose --experiment FILE --format json`` prints (the
counts per proven cause and apart, each inferred cell against the proven causes, the oracle
ceiling with its interval, the basis that named the failing link), and the report repeats it.
An ablation's own answer set says where its causal table is instead of a misleading grid."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest

pytest.importorskip("fastapi")  # justified: the lab is the [web] extra
pytest.importorskip("httpx")  # justified: the [test] extra's HTTP client

from _experiment_files import ablation_experiment
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from ragmeter import Store
from ragmeter.cli import app as cli_app
from ragmeter.lab import create_app
from ragmeter.lab._data_diagnosis import diagnosis_context
from ragmeter.workflows.diagnose import signed

SOURCES = ("retrieved", "oracle", "none", "oracle+distractors")


def _cli(*args: Any) -> Any:
    r = CliRunner().invoke(cli_app, [str(a) for a in args])
    assert r.exit_code == 0, (args, r.output)
    return r


def text_of(page: str) -> str:
    """The page's visible text (tags dropped, entities decoded, spaces collapsed)."""
    page = re.sub(r"<script[^>]*>.*?</script>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("lab-causal")
    path = ablation_experiment(root)
    url = f"sqlite:///{root / 'lab.db'}"
    _cli("run", path, "--db", url)
    printed = json.loads(_cli("diagnose", "--experiment", path, "--format", "json").stdout)
    store = Store.open(url)
    sets = {a.name: a.id for a in store.answer_sets()}
    client = TestClient(create_app(store=store, root=root), base_url="http://127.0.0.1")
    yield {"store": store, "client": client, "cli": printed, "sets": sets, "url": url,
           "root": root}  # fmt: skip
    store.close()


def test_the_page_shows_what_ragmeter_diagnose_experiment_prints(lab) -> None:
    store, client, cli = lab["store"], lab["client"], lab["cli"]
    assert set(lab["sets"]) == set(SOURCES)
    base = lab["sets"]["retrieved"]
    ctx = diagnosis_context(store, base, cache=client.app.state.lab.contexts)
    assert ctx.causal is not None
    # the same causal table, question by question, and the same diagnosis around it
    assert json.loads(json.dumps(ctx.causal.table)) == cli["causal"]
    drop = ("answers", "faithful_but_wrong", "ablations")
    want = {k: v for k, v in cli.items() if k not in drop}
    assert json.loads(json.dumps(ctx.diagnosis)) == want
    assert [(s.source, s.name) for s in ctx.causal.sources] == [(s, s) for s in SOURCES]

    r = client.get(f"/diagnosis?answers={base}")
    assert r.status_code == 200
    page = text_of(r.text)
    for cause in cli["causal"]["causes"]:
        basis = "proven" if cause["proven"] else "apart"
        assert re.search(
            rf"{re.escape(cause['title'])}( largest proven bad cause)? {basis} {cause['count']} ",
            page,
        ), cause["cause"]
    for cell, causes in cli["causal"]["cross"].items():
        assert f"(inferred, {sum(causes.values())})" in page, cell
    c = cli["causal"]["ceiling"]
    lo, hi = c["interval"]
    assert (
        f"a perfect retriever at this budget: {signed(c['mean'])} answer-correct rate "
        f"[{signed(lo)}, {signed(hi)}] (fixed {c['fixed']}, broken {c['broken']}, "
        f"{c['n']} answerable questions)"
    ) in page
    assert f"failing link {cli['failing_link']} : the failing link is named by the proven" in page
    assert "ragmeter diagnose --experiment " in page


def test_an_ablation_answer_set_points_to_the_baseline(lab) -> None:
    base = lab["sets"]["retrieved"]
    r = lab["client"].get(f"/diagnosis?answers={lab['sets']['oracle']}")
    assert r.status_code == 400
    page = text_of(r.text)
    assert "answered with the context source 'oracle'" in page
    run = next(a.run_id for a in lab["store"].answer_sets() if a.id == base)
    assert f"on the diagnosis of its baseline, run {run} (answer set {base})" in page


def test_the_report_repeats_the_causal_section_with_links_inside_the_file(lab) -> None:
    out = lab["root"] / "report.html"
    runs = [str(r.id) for r in lab["store"].runs()]
    _cli("report", *sorted(runs, key=int), "-o", out, "--db", lab["url"], "--root", lab["root"])
    text = out.read_text(encoding="utf-8")
    page = text_of(text)
    c = lab["cli"]["causal"]["ceiling"]
    assert f"a perfect retriever at this budget: {signed(c['mean'])} answer-correct rate" in page
    section = text[text.index("The causal table") :]
    hrefs = re.findall(r'href="([^"]*)"', section[: section.index("Where to look first")])
    assert hrefs and all(h.startswith("#") for h in hrefs)
