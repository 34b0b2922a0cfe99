"""The lab's rough edges (issue 27, item 7), through FastAPI's test client: the lab opens on a
variant against the experiment's baseline (gained and lost shown at once), /compare on the
baseline and the newest other run (never one run twice), per-question rows carry the baseline's
value, question ids sort naturally, a document-level run offers no token budget, an unknown path
is a page (JSON only when asked for), an interrupted run's link says so on its experiment's page,
and a sweep draws nDCG where the runs' chunking allows it (else says why)."""

from __future__ import annotations

import html
import re
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("fastapi")  # justified: the lab is the [web] extra
pytest.importorskip("httpx")  # justified: the [test] extra's HTTP client

from fastapi.testclient import TestClient

from ragmeter import Store
from ragmeter.lab import create_app

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "fare-rules"
BEIR = REPO / "tests" / "fixtures" / "data" / "beir"
#: the tiny BEIR set's query ids renamed so that text order and number order differ
RENAMED = {"1": "10", "2": "9", "3": "100", "4": "4", "5": "5"}

DOCUMENT_EXPERIMENT = """\
name = "tiny BEIR"
beir = "beir"
level = "document"
output = "out"
k = 2
headroom_k = 3
metrics = ["nDCG", "R", "RR"]

[baseline]
chunker = "document"
retriever = "bm25"
depth = 4
"""


def _record(experiment: Path, url: str, cache: Path | None = None) -> dict[str, int]:
    from ragmeter.workflows.experiment import run_and_record

    with Store.open(url) as store, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, ids = run_and_record(store, experiment, cache_dir=cache)
    return dict(ids)


@pytest.fixture(scope="module")
def fare(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("rough-edges")
    for name in ("golden.jsonl", "corpus.jsonl", "experiment.toml"):
        shutil.copy(EXAMPLE / name, root / name)
    url = f"sqlite:///{root / 'lab.db'}"
    ids = _record(root / "experiment.toml", url, EXAMPLE / ".ragmeter-cache")
    store = Store.open(url)
    client = TestClient(create_app(store=store, root=root), base_url="http://127.0.0.1")
    yield {"store": store, "client": client, "ids": ids, "root": root}
    store.close()


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The tiny BEIR set as a document-level experiment, its query ids renamed (10, 9, 100)."""
    root = tmp_path_factory.mktemp("rough-edges-documents")
    shutil.copytree(BEIR, root / "beir")
    queries = (root / "beir" / "queries.jsonl").read_text()
    for old, new in RENAMED.items():
        queries = queries.replace(f'"_id": "{old}"', f'"_id": "{new}"')
    (root / "beir" / "queries.jsonl").write_text(queries)
    for split in ("test", "train"):
        path = root / "beir" / "qrels" / f"{split}.tsv"
        head, *rows = path.read_text().splitlines()
        fixed = [RENAMED[r.split("\t")[0]] + r[r.index("\t") :] for r in rows]
        path.write_text("\n".join([head, *fixed]) + "\n")
    (root / "experiment.toml").write_text(DOCUMENT_EXPERIMENT)
    url = f"sqlite:///{root / 'lab.db'}"
    _record(root / "experiment.toml", url)
    store = Store.open(url)
    client = TestClient(create_app(store=store, root=root), base_url="http://127.0.0.1")
    yield {"store": store, "client": client}
    store.close()


def get(lab: Any, url: str, status: int = 200, **headers: str) -> str:
    r = lab["client"].get(url, headers=headers)
    assert r.status_code == status, (url, r.status_code, r.text[-800:])
    return str(r.text)


def selected(page: str, name: str) -> list[str]:
    """The selected option(s) of the page's ``<select name=...>``."""
    found = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', page, flags=re.S)
    assert found, f"no select {name}"
    return [html.unescape(v) for v in re.findall(r'<option value="([^"]*)" selected', found[1])]


def options(page: str, name: str) -> list[str]:
    found = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', page, flags=re.S)
    assert found, f"no select {name}"
    return [html.unescape(v) for v in re.findall(r'<option value="([^"]*)"', found[1])]


def row_qids(page: str) -> list[str]:
    """The per-question table's question ids, in the order shown."""
    return [
        html.unescape(q)
        for q in re.findall(r'<span class="qid" role="cell"><code>(.*?)</code>', page)
    ]


def baseline_cells(page: str) -> dict[str, str]:
    """qid -> the row's baseline value as shown."""
    out = {}
    for block in re.findall(r'<summary class="qrow" role="row">(.*?)</summary>', page, flags=re.S):
        qid = re.search(r"<code>(.*?)</code>", block)
        cell = re.search(r'class="num base-value[^"]*">([^<]*)<', block)
        assert qid and cell, block
        out[html.unescape(qid[1])] = cell[1]
    return out


def current_cells(page: str) -> dict[str, str]:
    """qid -> the row's value of the chosen metric (the bold column) as shown."""
    out = {}
    for block in re.findall(r'<summary class="qrow" role="row">(.*?)</summary>', page, flags=re.S):
        qid = re.search(r"<code>(.*?)</code>", block)
        cell = re.search(r'role="cell" class="num current[^"]*">([^<]*)<', block)
        assert qid and cell, block
        out[html.unescape(qid[1])] = cell[1]
    return out


# -- "compare against" defaults to the experiment's baseline ---------------------------------
def test_the_lab_opens_on_a_variant_against_the_experiments_baseline(fare: Any) -> None:
    page = get(fare, "/lab")
    base = fare["ids"]["baseline"]
    assert selected(page, "baseline") == [str(base)]
    assert re.search(r"<h2 class=\"lab-title\">Run (\d+)", page)[1] != str(base)  # type: ignore[index]
    assert "against run " + str(base) in page
    assert 'class="moved' in page or "gained" in page  # the gained / lost summary is there
    assert "Δ " in page  # and the change column


# -- /compare preselects two different runs ----------------------------------------------------
def test_compare_opens_on_the_baseline_and_the_newest_other_run(fare: Any) -> None:
    page = get(fare, "/compare")
    ids = fare["ids"]
    newest_other = max(i for name, i in ids.items() if name != "baseline")
    assert selected(page, "base") == [str(ids["baseline"])]
    assert selected(page, "cand") == [str(newest_other)]
    assert '<pre class="mono cmd">ragmeter compare ' in page  # the comparison is shown


def test_compare_with_one_finished_run_preselects_no_pair(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'one.db'}") as store:
        store.finish_run(store.start_run(experiment="e", name="only"), evaluations={})
        client = TestClient(create_app(store=store, root=tmp_path), base_url="http://127.0.0.1")
        page = client.get("/compare").text
        assert selected(page, "base") == selected(page, "cand") == []


# -- per-question rows: the baseline's value beside the candidate's and the change -------------
def test_each_row_shows_the_baseline_value(fare: Any) -> None:
    ids = fare["ids"]
    base, cand = ids["baseline"], ids["hybrid"]
    compared = get(fare, f"/lab?run={cand}&baseline={base}&metric=RR&cut=k&k=4&sort=id")
    alone = get(fare, f"/lab?run={base}&baseline=none&metric=RR&cut=k&k=4&sort=id")
    shown = baseline_cells(compared)
    assert shown and "baseline" in compared
    assert shown == {q: v for q, v in current_cells(alone).items() if q in shown}


# -- question ids in natural order -------------------------------------------------------------
def test_natural_order_of_question_ids() -> None:
    from ragmeter.lab._lab_page import natural_key

    ids = ["q10", "q2", "q1", "10", "9", "100", "q2b", "Q3"]
    assert sorted(ids, key=natural_key) == ["9", "10", "100", "Q3", "q1", "q2", "q2b", "q10"]


@given(st.lists(st.integers(min_value=0, max_value=10**6), unique=True, max_size=30))
def test_numeric_ids_sort_by_number(numbers: list[int]) -> None:
    from ragmeter.lab._lab_page import natural_key

    ids = [str(n) for n in numbers]
    assert sorted(ids, key=natural_key) == [str(n) for n in sorted(numbers)]
    prefixed = [f"q{n}" for n in numbers]
    assert sorted(prefixed, key=natural_key) == [f"q{n}" for n in sorted(numbers)]


def test_the_table_sorts_question_ids_naturally(documents: Any) -> None:
    page = get(documents, "/lab?sort=id&baseline=none")
    shown = row_qids(page)
    assert shown == sorted(shown, key=lambda q: int(q)) and {"9", "10", "100"} <= set(shown)


# -- a document-level run: no token budget field -----------------------------------------------
def test_a_document_level_run_offers_no_token_budget(documents: Any, fare: Any) -> None:
    page = get(documents, "/lab")
    assert 'name="k"' in page
    assert 'name="budget"' not in page and 'value="budget"' not in page
    assert "a token budget applies to chunks, not to a document-level run" in page
    assert 'name="budget"' in get(fare, "/lab")  # a chunked run keeps it


# -- unknown paths: a page for browsers, JSON when asked for -----------------------------------
def test_an_unknown_path_is_a_page_and_json_only_when_asked(fare: Any) -> None:
    r = fare["client"].get("/no/such/page", headers={"accept": "text/html,*/*;q=0.8"})
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    assert "Not found" in r.text and "/no/such/page" in r.text and 'href="/lab"' in r.text
    plain = fare["client"].get("/no/such/page")  # no Accept at all: a page too
    assert plain.headers["content-type"].startswith("text/html")
    asked = fare["client"].get("/no/such/page", headers={"accept": "application/json"})
    assert asked.status_code == 404 and asked.json() == {"detail": "Not Found"}


# -- an interrupted run's link -----------------------------------------------------------------
def test_an_interrupted_runs_link_says_so_on_its_experiments_page(fare: Any) -> None:
    store = fare["store"]
    experiment = store.run(fare["ids"]["baseline"]).experiment
    stopped = store.start_run(experiment=experiment, name="bigger reranker")
    store.fail_run(stopped, status="interrupted", message="stopped by Ctrl-C")
    page = get(fare, f"/lab?run={stopped}")
    text = html.unescape(page)
    assert f"Run {stopped} · bigger reranker was interrupted before it finished" in text
    assert "stopped by Ctrl-C" in text and 'href="/"' in page
    # the experiment's page, its choices filled in (not empty selects)
    assert selected(page, "experiment") == [experiment]
    assert selected(page, "method") and selected(page, "chunking")
    assert str(stopped) not in options(page, "baseline")
    # a run the store never held is still a 404
    assert "there is no finished run 999" in get(fare, "/lab?run=999", 404)


# -- sweeps draw nDCG where the runs' chunking allows it ---------------------------------------
def test_a_sweep_draws_ndcg_for_runs_of_one_chunking(
    fare: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs of one chunking: nDCG over k, each value the lab's own nDCG@k, and the page's
    command lines (chunk qrels first) print the same numbers from the lab's folder."""
    import json
    import shlex

    from typer.testing import CliRunner

    from ragmeter.cli import app as cli_app
    from ragmeter.lab._data_sweeps import sweeps_context
    from ragmeter.lab._prepared import prepared_run
    from ragmeter.lab._recompute import PromptCutoff, scores

    ids = fare["ids"]
    same = sorted(ids[n] for n in ("baseline", "hybrid", "reranker"))  # all 300-token chunks
    r = fare["client"].get(f"/sweeps?runs={','.join(map(str, same))}&metric=nDCG&kind=k")
    assert r.status_code == 200, r.text[-600:]
    cache = fare["client"].app.state.lab.contexts
    view = sweeps_context(fare["store"], same, metric="nDCG", kind="k", cache=cache)
    for rid, (name, values) in zip(same, view.sweep["values"].items(), strict=True):
        lab = scores(prepared_run(fare["store"], rid, cache), PromptCutoff(k=4))
        assert values["4"] == pytest.approx(lab.means["nDCG"], abs=1e-12), name
    block = re.search(r'<pre class="mono cmd">(.*?)</pre>', r.text, flags=re.S)
    assert block
    lines = [shlex.split(ln) for ln in html.unescape(block[1]).splitlines()]
    assert lines[-2][:3] == ["ragmeter", "labels", "export"]
    # the lines' paths are relative to the lab's folder: run in a copy of it
    shutil.copytree(fare["root"], tmp_path / "lab")
    monkeypatch.chdir(tmp_path / "lab")
    for words in lines[:-1]:
        done = CliRunner().invoke(cli_app, words[1:])
        assert done.exit_code == 0, (words, done.output)
    done = CliRunner().invoke(cli_app, [*lines[-1][1:], "--format", "json"])
    assert done.exit_code == 0, done.output
    (printed,) = json.loads(done.stdout)
    for run, values in view.sweep["values"].items():
        assert printed["values"][run] == pytest.approx(values, abs=1e-12), run


def test_a_sweep_says_why_ndcg_is_not_drawn_across_chunkings(fare: Any) -> None:
    ids = fare["ids"]
    pair = f"{ids['baseline']},{ids['smaller chunks']}"
    page = html.unescape(get(fare, f"/sweeps?runs={pair}&metric=nDCG", 400))
    assert "nDCG is scored on chunk qrels within one chunking" in page
    assert "tokens:100:0, tokens:300:0" in page
    budget = html.unescape(
        get(fare, f"/sweeps?runs={ids['baseline']}&metric=nDCG&kind=budget", 400)
    )
    assert "nDCG is defined at a fixed k, not at a token budget" in budget
