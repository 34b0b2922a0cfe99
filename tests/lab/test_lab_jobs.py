"""Background jobs in the lab: start a method x chunking not yet run, poll it, find the run.

A small BM25-only experiment over the fare-rules example's golden set and corpus is recorded
the way ``ragmeter run`` records it; the lab (ASGI test client) starts a new chunking as a job;
the stored run must hold the numbers ``ragmeter run`` gives for that variant written in the file.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest
from _experiment_files import fare_rules_experiment

pytest.importorskip("fastapi")  # justified: the lab is the optional [web] extra
pytest.importorskip("bm25s")  # justified: the example's retriever is an optional extra

from fastapi.testclient import TestClient

from ragmeter.experiments import run_experiment
from ragmeter.lab import create_app
from ragmeter.lab._job_plan import plan_job
from ragmeter.lab._jobs import Job, JobProgress, one_line, run_job
from ragmeter.store import Store
from ragmeter.workflows.experiment import run_and_record

EXPERIMENT = """\
name = "fare rules, bm25"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
output = "runs"
k = 4
budget = 1200
headroom_k = 20
metrics = ["R", "AllR", "RR", "nDCG"]
cover = 0.5

[baseline]
chunker = "tokens:300:0"
retriever = "bm25"
depth = 50

[[variant]]
name = "smaller chunks"
chunker = "tokens:100:0"
k = 12

[[variant]]
name = "bm25 tuned"
retriever = { kind = "bm25", k1 = 0.9 }
"""

NEW_VARIANT = """
[[variant]]
name = "two hundred"
chunker = "tokens:200:0"
k = 6
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The experiment folder and a store holding its two runs, as `ragmeter run` records them
    (made once; each test gets its own copy of the store)."""
    folder = tmp_path_factory.mktemp("exp")
    path = fare_rules_experiment(folder, EXPERIMENT)
    db = folder / "recorded.db"
    with Store.open(f"sqlite:///{db}") as store:
        run_and_record(store, path)
    return folder, db


@pytest.fixture
def lab(recorded: tuple[Path, Path], tmp_path: Path) -> tuple[TestClient, Store, Path]:
    folder, db = recorded
    shutil.copy(db, tmp_path / "store.db")
    store = Store.open(f"sqlite:///{tmp_path / 'store.db'}")
    client = TestClient(create_app(store=store, root=folder), base_url="http://127.0.0.1")
    client.get("/jobs")  # the CSRF cookie
    return client, store, folder


def token(client: TestClient) -> str:
    value = client.cookies.get("ragmeter_csrf")
    assert value
    return value


def poll(client: TestClient, url: str) -> str:
    """GET the job's partial as htmx does until it stops asking to be polled."""
    for _ in range(1500):
        html = client.get(url, headers={"HX-Request": "true"}).text
        if 'hx-trigger="every 1s"' not in html:
            return html
        time.sleep(0.02)
    raise AssertionError(f"the job at {url} never ended")


def test_a_job_records_the_new_variant_with_the_numbers_ragmeter_run_gives(lab) -> None:
    client, store, folder = lab
    before = store.runs()
    baseline = next(r for r in before if r.is_baseline)
    response = client.post(
        "/jobs",
        data={
            "run": str(baseline.id),
            "chunker": "tokens:200:0",
            "k": "6",
            "csrf_token": token(client),
        },
        follow_redirects=False,
    )
    assert response.status_code == 303
    html = poll(client, response.headers["location"])
    assert "finished" in html and "changes one thing against the baseline: chunking" in html

    after = store.runs()
    assert len(after) == len(before) + 1  # the new variant only: no second baseline
    assert sum(r.is_baseline for r in after) == 1
    new = after[0]
    assert new.status == "finished" and new.experiment == "fare rules, bm25"
    assert new.changes == ("chunking",)
    assert f'href="/lab?run={new.id}"' in html

    # the same variant written into the file and run as `ragmeter run` runs it
    (folder / "experiment.toml").write_text(EXPERIMENT + NEW_VARIANT, encoding="utf-8")
    result = run_experiment(folder / "experiment.toml", write=False)
    expected = result.variant("two hundred")
    assert dict(new.metrics) == expected.to_dict()["metrics"]
    assert new.golden_version == expected.evaluation.golden_version
    # the job wrote its chunking into the cache `ragmeter run` reads for this file
    assert expected.cached.get("chunking") is True
    evaluation = store.evaluation(new.id, "span")
    assert evaluation.per_query == expected.evaluation.per_query


def test_a_post_without_the_csrf_token_is_refused(lab) -> None:
    client, store, _ = lab
    n = len(store.runs())
    response = client.post(
        "/jobs", data={"experiment": "fare rules, bm25", "chunker": "tokens:200:0"}
    )
    assert response.status_code == 403
    response = client.post(
        "/jobs",
        data={"experiment": "fare rules, bm25", "chunker": "tokens:200:0", "csrf_token": "x" * 40},
    )
    assert response.status_code == 403
    assert len(store.runs()) == n


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"retriever": "bm26"}, "retriever: unknown name 'bm26'"),
        ({"chunker": "tokens:abc"}, "chunker: bad chunker name 'tokens:abc'"),
        ({"k": "four"}, "k must be a whole number, not 'four'"),
        ({"k": "0"}, "k: 'k' must be a positive integer"),
        ({"retriever": "{nope"}, "retriever: not a JSON table"),
        ({}, "choose a retrieval method, a chunker, k or a budget to change"),
        ({"chunker": "tokens:300:0"}, "this is the baseline's setting"),
        ({"chunker": "tokens:100:0", "k": "12"}, "already run: run 2 (smaller chunks)"),
    ],
)
def test_a_bad_request_is_a_clear_one_line_error(lab, fields, says) -> None:
    client, store, _ = lab
    n = len(store.runs())
    data = {"experiment": "fare rules, bm25", "csrf_token": token(client), **fields}
    page = client.post("/jobs", data=data)
    assert page.status_code in (400, 409)
    assert "Traceback" not in page.text
    assert says.replace("'", "&#39;") in page.text
    jobs_page = {"HX-Request": "true", "HX-Target": "job-area"}
    partial = client.post("/jobs", data=data, headers=jobs_page)
    assert partial.status_code == page.status_code
    assert partial.headers["HX-Retarget"] == "#job-message"
    assert partial.headers["X-Ragmeter-Message"] == "1"  # lab.js swaps it despite the 4xx
    assert partial.text.count("<p") == 1 and "<html" not in partial.text
    # from the lab page's "not run yet" form the message replaces that form
    lab_page = client.post(
        "/jobs", data=data, headers={"HX-Request": "true", "HX-Target": "not-run"}
    )
    assert lab_page.status_code == page.status_code and "HX-Retarget" not in lab_page.headers
    assert lab_page.text == partial.text
    assert len(store.runs()) == n


def test_an_unknown_experiment_or_run_is_named(lab) -> None:
    client, _, _ = lab
    t = token(client)
    r = client.post("/jobs", data={"experiment": "nope", "k": "3", "csrf_token": t})
    assert r.status_code == 400 and "there is no stored experiment named &#39;nope&#39;" in r.text
    r = client.post("/jobs", data={"run": "99", "k": "3", "csrf_token": t})
    assert r.status_code == 400 and "there is no stored run 99" in r.text
    assert client.get("/jobs/12345").status_code == 404


def test_one_job_at_a_time_per_experiment(lab) -> None:
    client, store, _ = lab
    state = client.app.state.lab
    busy = Job(
        id="busy-1",
        experiment="fare rules, bm25",
        variant="lab: something",
        changes=("chunking",),
        warnings=(),
        baseline_run=1,
        status="running",
    )
    state.jobs[busy.id] = busy
    n = len(store.runs())
    r = client.post(
        "/jobs",
        data={
            "experiment": "fare rules, bm25",
            "chunker": "tokens:200:0",
            "csrf_token": token(client),
        },
        headers={"HX-Request": "true"},
    )
    assert r.status_code == 409
    assert "one job at a time per experiment" in r.text and 'href="/jobs/busy-1"' in r.text
    assert len(store.runs()) == n
    # a running job's partial asks to be polled every second; a finished one does not
    html = client.get("/jobs/busy-1", headers={"HX-Request": "true"}).text
    assert 'hx-trigger="every 1s"' in html and 'hx-get="/jobs/busy-1"' in html
    busy.update(status="finished", run_id=7)
    html = client.get("/jobs/busy-1", headers={"HX-Request": "true"}).text
    assert "hx-trigger" not in html and 'href="/lab?run=7"' in html
    # opened as a link, the job's URL is the whole page
    assert "<html" in client.get("/jobs/busy-1").text


def test_a_failing_job_shows_one_line_and_the_run_is_marked_failed(lab) -> None:
    from dataclasses import replace

    client, store, folder = lab
    plan = plan_job(
        store, root=folder, experiment="fare rules, bm25", chunker="tokens:150:0", k="8"
    )
    broken = replace(plan, experiment=replace(plan.experiment, corpus=folder / "gone.jsonl"))
    job = Job(
        id="failing-1",
        experiment=plan.experiment.name,
        variant=plan.variant.name,
        changes=plan.changes,
        warnings=plan.warnings,
        baseline_run=plan.baseline_run,
    )
    run_job(job, store, broken)  # in this thread: the worker's body
    snap = job.snapshot()
    assert snap.status == "failed" and "\n" not in snap.error
    assert "gone.jsonl" in snap.error
    stored = store.run(snap.run_id)
    assert stored.status == "failed" and stored.message == snap.error
    client.app.state.lab.jobs[job.id] = job
    html = client.get("/jobs/failing-1", headers={"HX-Request": "true"}).text
    assert "The run failed:" in html and "Traceback" not in html and "hx-trigger" not in html


def test_a_job_that_changes_two_things_says_so(lab) -> None:
    client, store, folder = lab
    plan = plan_job(
        store, root=folder, experiment="fare rules, bm25", chunker="tokens:250:0", budget="600"
    )
    assert plan.changes == ("budget", "chunking")
    assert plan.warnings == (
        "this run has a context budget of 600 tokens against the baseline's 1200 (more than "
        "10% apart): compare variants at the same budget",
    )
    r = client.post(
        "/jobs",
        data={
            "experiment": "fare rules, bm25",
            "chunker": "tokens:250:0",
            "budget": "600",
            "csrf_token": token(client),
        },
        headers={"HX-Request": "true", "HX-Target": "job-area"},
    )
    assert r.status_code == 200
    assert "changes 2 things (budget, chunking)" in r.text
    assert 'id="job-message" hx-swap-oob="true"' in r.text  # the old message line is cleared
    job_id = re.search(r'id="job-([^"]+)"', r.text)
    assert job_id is not None
    poll(client, f"/jobs/{job_id.group(1)}")  # let it end before the store goes away


def test_the_progress_sink_records_step_done_and_total() -> None:
    job = Job(id="p", experiment="e", variant="v", changes=(), warnings=(), baseline_run=None)
    sink = JobProgress(job)
    with sink.step("encode 40 chunks", 40) as advance:
        advance(10)
        advance(5)
        snap = job.snapshot()
        assert (snap.step, snap.done, snap.total, snap.share) == (
            "encode 40 chunks",
            15,
            40,
            0.375,
        )
    with sink.step("score", None) as advance:
        advance(1)
        snap = job.snapshot()
        assert (snap.step, snap.done, snap.total, snap.share) == (
            "score",
            1,
            None,
            None,
        )


def test_one_line_keeps_the_first_line_and_names_foreign_errors() -> None:
    from ragmeter._errors import InputError

    assert one_line(InputError("bad file\n  detail")) == "bad file"
    assert one_line(KeyError("x")) == "KeyError: 'x'"
    assert one_line(RuntimeError()) == "RuntimeError"


def test_the_jobs_page_offers_the_experiments_methods_and_chunkers(lab) -> None:
    client, _, folder = lab
    page = client.get("/jobs").text
    assert "fare rules, bm25" in page and "/jobs?experiment=fare%20rules%2C%20bm25" in page
    page = client.get("/jobs?run=1").text
    assert '<option value="bm25"></option>' in page
    assert '<option value="tokens:300:0"></option>' in page
    assert '<option value="tokens:100:0"></option>' in page
    assert 'name="csrf_token"' in page and str(folder / "experiment.toml") in page


# -- `ragmeter demo` ends with the command that opens the lab; `demo --lab` opens it ---------
DEMO_EXPERIMENT = """\
name = "fare rules demo, bm25 only"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
k = 4
budget = 1200
headroom_k = 20
metrics = ["R", "AllR", "RR", "nDCG"]

[baseline]
name = "baseline"
chunker = "tokens:300:0"
retriever = "bm25"
depth = 50

[[variant]]
name = "smaller chunks"
chunker = "tokens:100:0"
k = 12

[[variant]]
name = "reranker"
description = "test stand-in: BM25 with other parameters (a real reranker needs a model)"
retriever = { kind = "bm25", k1 = 0.9, b = 0.4 }
"""


@pytest.fixture
def demo_example(tmp_path: Path) -> Path:
    return fare_rules_experiment(tmp_path / "example", DEMO_EXPERIMENT, trees=["answers"]).parent


def test_the_demo_ends_with_a_command_that_opens_the_lab_on_its_runs(
    demo_example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shlex

    from typer.testing import CliRunner

    import ragmeter.lab as _listen  # the names the lab and the demo serve through
    from ragmeter.cli import app

    runner = CliRunner()
    cache = tmp_path / "demo cache"
    args = ["demo", "--example", str(demo_example), "--cache-dir", str(cache)]
    r = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    last = [x for x in r.stdout.splitlines() if x.strip()][-3:]
    assert "See it in the lab" in last[0]
    command = shlex.split(last[-1])
    assert command == ["ragmeter", "demo", "--lab", *args[1:]]
    assert not (cache / "demo-lab.db").exists()  # the plain demo stores nothing

    served: list[dict[str, object]] = []

    def serve(asgi, sock, host: str, port: int) -> None:  # the port is bound: a real socket
        assert sock.getsockname() == (host, port)
        sock.close()
        client = TestClient(asgi, base_url=f"http://{host}:{port}")
        served.append(
            {
                "host": host,
                "port": port,
                "home": client.get("/"),
                "jobs": client.get("/jobs?experiment=fare rules demo, bm25 only"),
            }
        )

    monkeypatch.setattr(_listen, "serve", serve)
    with Store.open(f"sqlite:///{cache / 'demo-lab.db'}") as stale:  # an earlier demo --lab
        stale.start_run(experiment="an earlier demo", name="stale")
    shown = runner.invoke(app, command[1:], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert [(s["host"], s["port"]) for s in served] == [("127.0.0.1", 8765)]
    home = served[-1]["home"]
    assert home.status_code == 200
    for name in ("baseline", "smaller chunks", "reranker"):
        assert name in home.text
    assert served[-1]["jobs"].status_code == 200
    assert "tokens:100:0" in served[-1]["jobs"].text

    store = Store.open(f"sqlite:///{cache / 'demo-lab.db'}")
    runs = store.runs()
    assert sorted(r.name for r in runs) == ["baseline", "reranker", "smaller chunks"]
    assert all(r.status == "finished" for r in runs)
    assert sum(r.is_baseline for r in runs) == 1
    expected = run_experiment(demo_example / "experiment.toml", cache_dir=cache, write=False)
    for run in runs:
        assert dict(run.metrics) == expected.variant(run.name).to_dict()["metrics"]
    from ragmeter.lab._data_stored import answer_sets

    ids = {run.name: run.id for run in runs}
    sets = {s["name"]: s["run_id"] for s in answer_sets(store)}
    assert sets == {"baseline": ids["baseline"], "rerank": ids["reranker"]}
    reopen = [x for x in shown.stdout.splitlines() if " lab --db " in x]
    assert reopen and shlex.split(reopen[-1])[1:3] == ["lab", "--db"]
    assert shlex.split(reopen[-1])[3] == store.url


def test_the_lab_pages_not_run_form_starts_a_job(lab) -> None:
    client, store, _ = lab
    # bm25(k1=0.9) ran over 300-token chunks only: over 100-token chunks it is not run yet
    page = client.get(
        "/lab",
        params={
            "experiment": "fare rules, bm25",
            "method": "bm25(k1=0.9)",
            "chunking": "tokens:100:0",
        },
    ).text
    form = re.search(r'<form method="post" action="/jobs".*?</form>', page, re.S)
    assert form is not None, "the lab offers to run a combination it has not stored"
    fields = dict(
        re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form.group(0))
    )
    assert fields["retriever"] == "bm25(k1=0.9)" and fields["chunker"] == "tokens:100:0"
    r = client.post("/jobs", data=fields, headers={"HX-Request": "true", "HX-Target": "not-run"})
    assert r.status_code == 200 and r.text.lstrip().startswith('<section class="job')
    job_id = re.search(r'id="job-([^"]+)"', r.text)
    assert job_id is not None
    assert "finished" in poll(client, f"/jobs/{job_id.group(1)}")
    new = store.runs()[0]
    assert new.name == "lab: bm25(k1=0.9) · tokens:100:0 · k=4 · budget=1200"
    assert new.changes == ("chunking", "retriever")  # as the page said: two things
