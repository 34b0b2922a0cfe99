"""A store is a trust boundary: ids out of range, damaged rows and paths read from the database
(issue 22, items 3 and 4).

* Every id no stored row can have (``2**63``, ``2**64``, ``10**30``, ``2**31`` on PostgreSQL,
  0, -1, ``abc``, ``1e3``) is "not found": NotFoundError in Python, one ``error:`` line and
  exit 2 on every command that takes a stored id, a 404 page on every lab route that takes one
  (the routes are enumerated from the lab's routers, so a new one cannot be missed).
* One damaged row (a config that is not JSON, NaN or text where a number belongs, a timestamp
  that is not one, a corrupt blob, a blob holding another table's bytes) is left out of every
  listing with a warning naming it, and refused by name when asked for; the rest of the store
  stays readable, and a damaged run can still be deleted.
* A blob row's path is never followed out of the artifact folder (``..``, an absolute path, a
  link): a read is refused and ``runs delete`` removes nothing outside. Sentinel files outside
  (a copy of the blob, so a reader that followed the path would not notice, and a secret)
  survive, and the secret is never printed.

Every store test runs on SQLite and on PostgreSQL (``store_url``); rows are damaged with raw
SQL, as another program or a hand edit would. Commands run in-process on one built command
tree (building it costs more than most commands).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pyarrow as pa
import pytest
import sqlalchemy as sa
import typer.main
import typer.testing
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter import Evaluation
from ragmeter._errors import NotFoundError, RagmeterError, RagmeterWarning, UsageError
from ragmeter.cli import app
from ragmeter.metrics import parse
from ragmeter.store import Store

SRC = Path(__file__).resolve().parents[2] / "src"
#: ids no stored row can have, typed as a user types them (" 7" is run 7: there is none)
HOSTILE_TEXT = [str(x) for x in (2**63, 2**64, -1, 0, 10**30, 2**31)] + ["abc", "1e3", " 7"]
SECRET = "SECRET-6f1c9a3e-not-for-your-eyes"
FUZZ = settings(
    max_examples=30,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much],
    deadline=None,
)


# -- a small store: three runs, a comparison, an answer set, a judge validation ---------------
def _evaluation(name: str, seed: int, n: int = 6) -> Evaluation:
    """Distinct values per seed, so no two runs share a blob."""
    rng = np.random.default_rng(seed)
    return Evaluation(
        run=name,
        metrics=(parse("R@1"), parse("RR")),
        query_ids=tuple(f"q{i}" for i in range(n)),
        values=rng.random((n, 2)),
        golden_version="g-hostile0000",
        config={"retriever": "bm25", "seed": seed},
    )


def _ranked(seed: int, n: int = 6) -> pa.Table:
    rows = [(f"q{i}", r, f"d{(i + r + seed) % 9}") for i in range(n) for r in (1, 2, 3)]
    return pa.table(
        {
            "qid": pa.array([q for q, _, _ in rows], pa.string()),
            "rank": pa.array([r for _, r, _ in rows], pa.int32()),
            "item": pa.array([d for *_, d in rows], pa.string()),
            "doc": pa.array([d for *_, d in rows], pa.string()),
            "start": pa.array([None] * len(rows), pa.int64()),
            "end": pa.array([None] * len(rows), pa.int64()),
            "score": pa.array([1.0 / r for _, r, _ in rows], pa.float64()),
        }
    )


@dataclass
class World:
    url: str
    store: Store
    artifacts: Path
    outside: Path  #: a folder beside the artifact folder, holding the sentinel files
    inline: list[int]  #: runs whose blobs live in the database
    files: int  #: a run whose blobs are files in the artifact folder
    comparison: int
    answers: int
    judge: int
    secret: Path = field(init=False)

    def __post_init__(self) -> None:
        self.outside.mkdir(parents=True, exist_ok=True)
        self.secret = self.outside / "secret.txt"
        self.secret.write_text(SECRET, encoding="utf-8")

    @property
    def ids(self) -> list[int]:
        return [*self.inline, self.files]

    @property
    def pg(self) -> bool:
        return self.store.engine.dialect.name == "postgresql"

    def sql(self, text: str, **params: Any) -> None:
        with self.store.engine.begin() as conn:
            conn.execute(sa.text(text), params)

    def one(self, text: str, **params: Any) -> Any:
        with self.store.engine.connect() as conn:
            return conn.execute(sa.text(text), params).scalar_one()

    def record(self, name: str, seed: int, *, files: bool = False) -> int:
        """One more run (every blob a file with ``files``: a 64-byte inline limit)."""
        from ragmeter.store import _blobs

        with pytest.MonkeyPatch.context() as m:
            if files:
                m.setattr(_blobs, "INLINE_MAX", 64)
            return self.store.record_evaluation(
                _evaluation(name, seed), name=name, ranked=_ranked(seed) if files else None
            )

    def blob(self, run_id: int) -> str:
        """The hash of a run's values blob."""
        return str(
            self.one("SELECT values_blob FROM evaluations WHERE run_id = :i LIMIT 1", i=run_id)
        )

    def blob_file(self, digest: str) -> Path:
        return self.artifacts / str(self.one("SELECT path FROM blobs WHERE hash = :h", h=digest))


@pytest.fixture()
def world(store_url: str, tmp_path: Path) -> Any:
    store = Store.open(store_url, migrate=True)
    inline = [store.record_evaluation(_evaluation(f"run {i}", i), name=f"run-{i}") for i in (1, 2)]
    from ragmeter.paired import compare

    c = compare(store.evaluation(inline[0]), store.evaluation(inline[1]), "R@1", n_resamples=200)
    cid = store.record_comparison(c, baseline_run=inline[0], candidate_run=inline[1])
    answers = store.record_answers(
        name="baseline", answers=[{"id": "q1", "answer": "yes"}], report={"n": 1}
    )
    judge = store.record_judge_validation(
        judge="j",
        labels=[{"id": "q1", "label": "supported", "human": "supported"}],
        report={"kappa": 1.0, "agreement": 1.0, "n": 1},
    )
    from ragmeter.data import Corpus, Document
    from ragmeter.store import NewItem

    # a labelling queue (id 1): the label routes reach its item lookups with the hostile ids
    store.create_queue(
        "hostile",
        corpus=Corpus([Document(id="d1", text="one document")]),
        items=[NewItem(qid="q1", question="what?", double=True)],
    )
    w = World(
        store_url, store, store.blobs.root, tmp_path / "outside", inline, 0, cid, answers, judge
    )
    w.files = w.record("files", 3, files=True)
    yield w
    store.close()


_COMMAND: list[Any] = []


def cli(*args: Any) -> tuple[int, str]:
    """A command in-process on one built command tree; (exit code, stdout and stderr)."""
    if not _COMMAND:
        _COMMAND.append(typer.main.get_command(app))
    with mock.patch.object(typer.testing, "_get_command", lambda _app: _COMMAND[0]):
        r = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"{args}: {r.exception!r}\n{r.output}") from r.exception
    return r.exit_code, r.output


def refused(code: int, out: str, *words: str) -> None:
    """Exit 2 with one ``error:`` line holding ``words``, never a traceback."""
    assert code == 2, out
    assert "Traceback" not in out, out
    errors = [ln for ln in out.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, out
    for w in words:
        assert w in errors[0], (w, out)


def untouched(w: World, *copies: tuple[Path, bytes]) -> None:
    """The sentinels outside the artifact folder are all there, unchanged."""
    assert w.secret.read_text(encoding="utf-8") == SECRET
    for path, data in copies:
        assert path.read_bytes() == data, path


def lab_client(w: World) -> Any:
    pytest.importorskip("fastapi")  # justified: the lab is the optional [web] extra
    pytest.importorskip("httpx")  # justified: the [test] extra's HTTP client
    from fastapi.testclient import TestClient

    from ragmeter.lab import create_app

    # the lab's folder is the test's (its caches go there), never the current folder
    app = create_app(store=w.store, root=w.outside.parent)
    client = TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False)
    client.get("/jobs")  # the CSRF cookie
    return client


# -- ids: not found, everywhere ----------------------------------------------------------------
def store_calls(w: World) -> dict[str, Callable[[Any], Any]]:
    """Every Store call that looks a row up by id."""
    from ragmeter.paired import compare

    c = compare(w.store.evaluation(w.inline[0]), w.store.evaluation(w.inline[1]), "R@1")
    return {
        "run": w.store.run,
        "evaluation": w.store.evaluation,
        "evaluation eval": lambda i: w.store.evaluation(i, "eval"),
        "ranked": w.store.ranked,
        "delete_run": w.store.delete_run,
        "export_run": lambda i: w.store.export_run(i, w.outside / "export"),
        "comparison": w.store.comparison,
        "record_comparison": lambda i: w.store.record_comparison(c, baseline_run=i),
        # (finish_run's "no run N to finish" is a UsageError, as it always was)
        "finish_run": lambda i: w.store.finish_run(i, evaluations={}),
    }


@settings(FUZZ, max_examples=20)
@given(
    bad=st.one_of(
        st.integers().filter(lambda i: not 1 <= i <= 20),
        st.text(max_size=30).filter(lambda t: not (t.strip().isascii() and t.strip().isdigit())),
        st.floats(allow_nan=True),
        st.booleans(),
        st.none(),
        st.binary(max_size=8),
    )
)
@example(bad=2**63)
@example(bad=2**64)
@example(bad=2**31)
@example(bad=10**30)
@example(bad=-1)
@example(bad=0)
@example(bad="abc")
@example(bad="1e3")
@example(bad=" 7")
@example(bad="9" * 5000)
@example(bad=7.0)
def test_no_id_a_row_cannot_have_is_found_or_a_crash_only_not_found(world: World, bad: Any) -> None:
    calls = world.__dict__.setdefault("calls", store_calls(world))
    for name, call in calls.items():
        if bad is None and name == "record_comparison":
            continue  # (None there is "no stored run", as documented)
        with pytest.raises(UsageError if name == "finish_run" else NotFoundError):
            call(bad)
    world.store.fail_run(bad)  # marks nothing, and is no driver error
    assert {r.id for r in world.store.runs()} == set(world.ids)


#: every command that takes a stored id, with ``{}`` where the id goes
ID_COMMANDS = [
    ("runs", "show", "{}"),
    ("runs", "delete", "{}", "--yes"),
    ("runs", "export", "{}", "-o", "{out}/export"),
    ("compare", "{}", "{base}", "-m", "R@1", "--no-ledger"),
    ("compare", "run:{}", "run:{base}", "-m", "R@1", "--no-ledger"),
    ("compare", "run:{}:eval", "{base}", "-m", "R@1", "--no-ledger"),
    ("gate", "{base}", "run:{}", "-m", "R@1", "--max-broken", "0"),
    ("gate", "{base}", "{}", "-m", "R@1", "--max-broken", "0", "--report", "{out}/r.html"),
    ("report", "{}", "-o", "{out}/report.html"),
    ("report", "run:{}", "-o", "{out}/report.html"),
]


def test_every_command_that_takes_a_stored_id_says_not_found(world: World) -> None:
    out = world.outside
    for command in ID_COMMANDS:
        values = HOSTILE_TEXT if command[:2] == ("runs", "show") else [str(2**63), "0", "abc"]
        for bad in values:
            if bad == "-1" and command[0] == "runs":
                continue  # click reads it as an option: its own usage error
            argv = [a.format(bad, base=world.inline[0], out=out) for a in command]
            code, text = cli(*argv, "--db", world.url)
            assert code == 2, (argv, text)
            assert "Traceback" not in text, text
            if bad.strip().lstrip("-").isdigit():  # a word is a file, an experiment, a typo
                refused(code, text, "no run")
    assert {r.id for r in world.store.runs()} == set(world.ids)  # nothing was deleted


# -- lab routes --------------------------------------------------------------------------------
#: the lab's parameters that name a stored row (run, comparison, answer set, judge validation)
ID_PARAMS = {"run", "base", "cand", "baseline", "answers", "comparison_id", "vid", "runs",
             "item_id", "vs", "vs_answers"}  # fmt: skip
#: the others: hostile text there may be refused (4xx), never a 500
OTHER_PARAMS = {
    "experiment", "golden", "status", "method", "chunking", "cut", "k", "budget", "metric",
    "sort", "show", "page", "qid", "all", "level", "kind", "cutoffs", "large_k", "job_id",
    "a", "b",  # /golden/diff: two stored golden-set versions (by their first digits)
    # a labelling queue (by name), its search, a document, the item a labeller comes from
    "queue", "q", "retriever", "doc_id", "start", "end", "after",
    "slice",  # /lab's slice filter (a slice name)
}  # fmt: skip


def lab_routes() -> list[tuple[str, set[str], list[str], list[str]]]:
    """(path, methods, path parameters, query parameters) of every route the lab mounts."""
    pytest.importorskip("fastapi")  # justified: the lab is the optional [web] extra
    from ragmeter.lab.views import routers

    out = []
    for router in routers():
        for r in router.routes:
            d = r.dependant
            path_params = [p.name for p in d.path_params]
            out.append((r.path, set(r.methods), path_params, [p.alias for p in d.query_params]))
    return out


#: the hostile ids each lab route is given (every one goes through the same helper)
LAB_IDS = [str(2**63), str(10**30), str(2**31), "-1", "0", "abc", "1e3"]


def test_every_lab_route_answers_a_hostile_id_with_a_page_never_a_500(world: World) -> None:
    client = lab_client(world)
    good = {"run": str(world.inline[0]), "qid": "q1", "golden": "g-hostile0000"}
    tried = 0
    for path, methods, path_params, query in lab_routes():
        params = path_params + query
        unknown = set(params) - ID_PARAMS - OTHER_PARAMS
        assert not unknown, f"{path}: say whether {unknown} names a stored row (ID_PARAMS)"
        if "GET" not in methods:
            continue
        for name in params:
            for bad in LAB_IDS if name in ID_PARAMS else [str(2**63)]:
                url = path
                for p in path_params:
                    url = url.replace("{" + p + "}", bad if p == name else "1")
                q = {p: good[p] for p in query if p in good}
                if name in query:
                    q[name] = bad
                r = client.get(url, params=q)
                tried += 1
                assert r.status_code < 500, (url, q, r.status_code, r.text[-300:])
                if name in ID_PARAMS:
                    assert r.status_code in (200, 400, 404), (url, q, r.status_code)
                    assert r.headers["content-type"].startswith("text/html"), (url, q)
                    if bad in (str(2**63), str(10**30)):
                        assert r.status_code in (400, 404), (url, q, r.status_code)
    token = client.cookies.get("ragmeter_csrf")
    for bad in HOSTILE_TEXT:  # the one form that takes a run id
        r = client.post("/jobs", data={"run": bad, "k": "3", "csrf_token": token})
        assert r.status_code in (400, 404, 409), (bad, r.status_code, r.text[-300:])
    assert tried > 80


# -- damaged rows ------------------------------------------------------------------------------
#: a damaged runs row: (what the message says, SQLite statement, PostgreSQL statement); the
#: PostgreSQL json and timestamp types refuse some damage outright, so it gets other damage
ROW_DAMAGE = {
    "config not JSON": (
        "config is not (JSON|a JSON object)",
        "UPDATE runs SET config = 'not json{' WHERE id = :i",
        "UPDATE runs SET config = '[1, 2]' WHERE id = :i",
    ),
    "config a string": (
        "config is not a JSON object",
        "UPDATE runs SET config = '\"a string\"' WHERE id = :i",
        "UPDATE runs SET config = '\"a string\"' WHERE id = :i",
    ),
    "config holding NaN": (
        "config (holds NaN|is not a JSON object)",
        "UPDATE runs SET config = '{\"k\": [1, NaN]}' WHERE id = :i",
        "UPDATE runs SET config = 'null' WHERE id = :i",
    ),
    "NaN metric": (
        "metrics",
        "UPDATE runs SET metrics = '{\"R@1\": NaN}' WHERE id = :i",
        'UPDATE runs SET metrics = \'{"R@1": "0.5"}\' WHERE id = :i',
    ),
    "timestamp": (
        "started_at is not a timestamp",
        "UPDATE runs SET started_at = 'yesterday' WHERE id = :i",
        "UPDATE runs SET started_at = 'infinity' WHERE id = :i",
    ),
    "seconds": (
        "seconds",
        "UPDATE runs SET seconds = 'fast' WHERE id = :i",
        "UPDATE runs SET seconds = 'NaN' WHERE id = :i",
    ),
    "timings": (
        "timings",
        'UPDATE runs SET timings = \'{"total": "soon"}\' WHERE id = :i',
        'UPDATE runs SET timings = \'{"total": "soon"}\' WHERE id = :i',
    ),
    "changes": (
        "changes is not a list of strings",
        "UPDATE runs SET changes = '{\"a\": 1}' WHERE id = :i",
        "UPDATE runs SET changes = '{\"a\": 1}' WHERE id = :i",
    ),
    "baseline flag": (  # (PostgreSQL's boolean holds nothing else: other damage there)
        "is_baseline|notes",
        "UPDATE runs SET is_baseline = 'false' WHERE id = :i",  # SQLAlchemy would read True
        "UPDATE runs SET notes = '[1, 2]' WHERE id = :i",
    ),
    "level": (
        "level",
        "UPDATE evaluations SET level = 'sideways' WHERE run_id = :i",
        "UPDATE evaluations SET level = 'sideways' WHERE run_id = :i",
    ),
}


def test_damaged_runs_are_left_out_of_listings_and_refused_by_name(world: World) -> None:
    good = set(world.ids)
    bad = {kind: world.record(kind, 10 + n) for n, kind in enumerate(ROW_DAMAGE)}
    for kind, run in bad.items():
        _, lite, pg = ROW_DAMAGE[kind]
        world.sql(pg if world.pg else lite, i=run)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert {r.id for r in world.store.runs()} == good
    said = [str(c.message) for c in caught if issubclass(c.category, RagmeterWarning)]
    for kind, run in bad.items():
        what = ROW_DAMAGE[kind][0]
        assert any(f"run {run} is damaged" in m for m in said), (kind, said)
        with pytest.raises(RagmeterError, match=rf"run {run} is damaged \(.*{what}"):
            world.store.run(run)
        if kind in ("config not JSON", "timestamp", "NaN metric"):  # (the same path for all)
            code, text = cli("runs", "show", run, "--db", world.url)
            refused(code, text, f"run {run} is damaged")
    for i in good:  # the rest of the store is readable
        assert world.store.run(i).id == i
        assert world.store.evaluation(i).n_queries == 6
    # the command line: the list without them (valid JSON), export / report refuse them
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code, text = cli("runs", "list", "--db", world.url, "--format", "json")
        assert code == 0, text
        assert {r["id"] for r in json.loads(text[text.index("[") :])} == good
        # the newest three are damaged: none shown, and the count of the rest stays right
        code, text = cli("runs", "list", "--db", world.url, "--limit", "3")
        assert code == 0, text
        assert f"and {len(good) + len(bad) - 3} more" in text, text
    one = bad["config not JSON"]
    for argv in (
        ["runs", "export", one, "-o", world.outside / "export"],
        ["report", one, "-o", world.outside / "report.html"],
    ):
        code, text = cli(*argv, "--db", world.url)
        refused(code, text, f"run {one}", "damaged")
    code, text = cli("compare", world.inline[0], bad["level"], "-m", "R@1", "--db", world.url)
    refused(code, text, f"run {bad['level']}", "damaged")
    # the lab: the experiments page lists the others, a damaged run's page says what is wrong;
    # the pages that list runs (the jobs page lab_client opens first too) skip each damaged
    # one with a warning naming it
    with pytest.warns(RagmeterWarning, match=r"run \d+ is damaged") as listed:
        client = lab_client(world)
        page = client.get("/")
        sweeps = client.get("/sweeps", params={"runs": one})  # a page reading the run by its id
        lab = client.get("/lab", params={"run": one})  # the lab picks among the listed runs
    named = [str(w.message) for w in listed]
    assert all(any(f"run {run} is damaged" in m for m in named) for run in bad.values()), named
    assert page.status_code == 200 and "run-1" in page.text and "files" in page.text
    assert sweeps.status_code == 400 and f"run {one} is damaged" in sweeps.text, sweeps.text[-400:]
    assert lab.status_code == 404 and f"no finished run {one}" in lab.text, lab.text[-400:]
    # and a damaged run is deleted like any other
    code, text = cli("runs", "delete", *bad.values(), "--yes", "--db", world.url)
    assert code == 0 and "damaged (" in text, text
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no damaged row left
        assert {r.id for r in world.store.runs()} == good


def test_the_warning_line_names_the_damaged_run_on_the_command_line(tmp_path: Path) -> None:
    """End to end, in a subprocess (SQLite: the message is the same on both databases): one
    ``warning:`` line naming the damaged run; the others listed; exit 0."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with Store.open(url) as store:
        ids = [store.record_evaluation(_evaluation(f"r{i}", i), name=f"run-{i}") for i in (1, 2)]
        with store.engine.begin() as conn:
            conn.execute(sa.text("UPDATE runs SET config = 'x' WHERE id = :i"), {"i": ids[1]})
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH") or str(SRC)}
    done = subprocess.run(
        [sys.executable, "-m", "ragmeter", "runs", "list", "--db", url],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert f"warning: run {ids[1]} is damaged (config is not JSON); skipped" in done.stderr
    assert "run-1" in done.stdout and "run-2" not in done.stdout


def test_damaged_comparisons_answer_sets_judges_and_ledger_entries_are_left_out(
    world: World,
) -> None:
    from ragmeter.lab._data_stored import answer_set, answer_sets, judge_validations

    store = world.store
    store.ledger.append({"golden_version": "g-hostile0000", "candidate": "x", "n": 1})
    store.ledger.append({"golden_version": "g-hostile0000", "candidate": "y", "n": 1})
    when = "'infinity'" if world.pg else "'a while ago'"
    world.sql(f"UPDATE comparisons SET created_at = {when} WHERE id = :i", i=world.comparison)
    world.sql(f"UPDATE answer_sets SET created_at = {when} WHERE id = :i", i=world.answers)
    world.sql("UPDATE judge_labels SET report = '[1]' WHERE id = :i", i=world.judge)
    world.sql('UPDATE ledger SET entry = \'["not", "an entry"]\' WHERE id = 1')
    for listing, name in (
        (store.comparisons, f"comparison {world.comparison}"),
        (lambda: answer_sets(store), f"answer set {world.answers}"),
        (lambda: judge_validations(store), f"judge validation {world.judge}"),
    ):
        with pytest.warns(RagmeterWarning, match=rf"{name} is damaged"):
            assert listing() == []
    with pytest.warns(RagmeterWarning, match=r"ledger entry 1 is damaged"):
        assert [e["candidate"] for e in store.ledger.entries()] == ["y"]  # never counted
    with pytest.raises(RagmeterError, match=rf"answer set {world.answers} is damaged"):
        answer_set(store, world.answers)
    world.sql("UPDATE comparisons SET record = '[1]' WHERE id = :i", i=world.comparison)
    with pytest.raises(RagmeterError, match=rf"comparison {world.comparison} is damaged"):
        store.comparison(world.comparison)
    # a question seen across stored answer sets: a damaged set is passed over, not the page
    from ragmeter import load_corpus, load_golden

    fare = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"
    golden = load_golden(fare / "golden.jsonl", load_corpus(fare / "corpus.jsonl"))
    version, qid = store.put_golden(golden), next(iter(golden)).id
    sets = [
        store.record_answers(
            name=f"set {i}",
            answers=[{"id": qid, "answer": f"answer {i}"}],
            report={},
            golden_version=version,
        )
        for i in (1, 2)
    ]
    blob = world.one("SELECT answers_blob FROM answer_sets WHERE id = :i", i=sets[0])
    world.sql("UPDATE blobs SET data = :d WHERE hash = :h", d=b"junk", h=blob)
    client = lab_client(world)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = client.get("/question", params={"golden": version, "qid": qid})
    assert r.status_code == 200 and "answer 2" in r.text and "answer 1" not in r.text
    # golden-set versions: the listing leaves a damaged one out, reading it names it
    world.sql("UPDATE golden_versions SET splits = '[1]' WHERE version = :v", v=version)
    with pytest.warns(RagmeterWarning, match=rf"golden-set version '{version}' is damaged"):
        assert store.golden_versions() == []
    blob = world.one("SELECT questions_blob FROM golden_versions WHERE version = :v", v=version)
    world.sql("UPDATE blobs SET data = :d WHERE hash = :h", d=b"junk", h=blob)
    with pytest.raises(RagmeterError, match=rf"golden-set version '{version}' is damaged"):
        store.golden(version)
    for url in ("/", "/judges", "/diagnosis", f"/comparisons/{world.comparison}"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = client.get(url)
        assert r.status_code in (200, 400), (url, r.status_code, r.text[-400:])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert {r.id for r in store.runs()} == set(world.ids)


#: text that means false (SQLAlchemy reads any text in a SQLite boolean as True)
FALSE = ("false", "f", "no", "n", "off", "0", "")
#: every column of a run a listing reads, and values another program might leave there
RUN_COLUMNS = ["config", "metrics", "timings", "changes", "notes", "started_at", "finished_at",
               "seconds", "context_tokens", "n_queries", "name", "label", "is_baseline",
               "git_dirty", "pid"]  # fmt: skip
ODD_VALUES = ["NaN", "Infinity", "-Infinity", "null", "[]", "{}", '""', "1e999", '{"a": NaN}',
              '[1, "x"]', '{"R@1": null}', "infinity", "tomorrow", "2024-13-45 99:99:99", "0",
              "-1", "true", "false", "yes", ""]  # fmt: skip


@FUZZ
@given(
    column=st.sampled_from(RUN_COLUMNS),
    value=st.one_of(
        st.sampled_from(ODD_VALUES),
        st.text(max_size=12),
        st.integers(min_value=-(2**70), max_value=2**70).map(str),
        st.floats().map(repr),
    ),
)
def test_any_value_in_any_runs_column_is_read_back_or_refused_never_a_crash(
    world: World, column: str, value: str
) -> None:
    victim = world.inline[1]
    before = world.one(f"SELECT {column} FROM runs WHERE id = :i", i=victim)
    if isinstance(before, dict | list):
        before = json.dumps(before)
    try:
        world.sql(f"UPDATE runs SET {column} = :v WHERE id = :i", v=value, i=victim)
    except sa.exc.SQLAlchemyError:
        assume(False)  # the database's own types refused it: it can never be read back
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            listed = {r.id for r in world.store.runs()}
        assert listed >= {world.inline[0], world.files}  # the others always stay readable
        warned = any(f"run {victim} is damaged" in str(c.message) for c in caught)
        assert (victim in listed) != warned
        try:
            rec = world.store.run(victim)
        except RagmeterError as exc:
            assert f"run {victim} is damaged" in str(exc)
            assert victim not in listed
        else:  # what is read back is what the writer could have written: JSON-safe, typed
            assert victim in listed
            json.dumps(rec.to_dict(), allow_nan=False)
            assert all(v is None or math.isfinite(v) for v in rec.metrics.values())
            assert rec.seconds is None or math.isfinite(rec.seconds)
            assert isinstance(rec.is_baseline, bool)
            if column == "is_baseline" and value.strip().lower() in FALSE:
                assert rec.is_baseline is False  # never a flag read from text saying otherwise
    finally:
        world.sql(f"UPDATE runs SET {column} = :v WHERE id = :i", v=before, i=victim)


# -- blobs: corrupt bytes, other bytes, paths out of the artifact folder ----------------------
def _copy_outside(w: World, digest: str) -> tuple[Path, bytes]:
    """A copy of a blob's file outside the artifact folder: a reader that followed a path there
    would read the right bytes and never notice."""
    src = w.blob_file(digest)
    copy = w.outside / src.parent.name / src.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, copy)
    return copy, copy.read_bytes()


def damage_blob(w: World, kind: str, run: int) -> list[tuple[Path, bytes]]:
    """Damage the values blob of ``run`` (a run with file blobs); the sentinels outside."""
    digest = w.blob(run)
    copy, data = _copy_outside(w, digest)
    target = w.blob_file(digest)
    if kind == "inline bytes flipped":
        flipped = bytearray(data)
        flipped[len(flipped) // 2] ^= 0xFF
        w.sql("UPDATE blobs SET data = :d, path = NULL WHERE hash = :h", d=bytes(flipped), h=digest)
    elif kind == "inline bytes of another run":  # a valid Parquet table of other numbers
        other = w.blob_file(w.blob(w.files)).read_bytes()
        w.sql("UPDATE blobs SET data = :d, path = NULL WHERE hash = :h", d=other, h=digest)
    elif kind == "file bytes of another table":  # a valid Parquet table: the ranked lists
        ranked = str(w.one("SELECT ranked_blob FROM runs WHERE id = :i", i=run))
        target.write_bytes(w.blob_file(ranked).read_bytes())
    elif kind == "file truncated":
        target.write_bytes(data[: len(data) // 2])
    elif kind == "path with ..":
        rel = os.path.relpath(copy, w.artifacts)
        assert rel.startswith("..")
        w.sql("UPDATE blobs SET path = :p WHERE hash = :h", p=rel, h=digest)
    elif kind == "absolute path":
        w.sql("UPDATE blobs SET path = :p WHERE hash = :h", p=str(copy), h=digest)
    elif kind == "path to a secret":
        w.sql("UPDATE blobs SET path = :p WHERE hash = :h", p=str(w.secret), h=digest)
    elif kind == "linked folder":
        target.unlink()
        for other in target.parent.iterdir():  # other blobs of that folder go with it
            shutil.copyfile(other, copy.parent / other.name)
        shutil.rmtree(target.parent)
        target.parent.symlink_to(copy.parent, target_is_directory=True)
    elif kind == "linked file":
        target.unlink()
        target.symlink_to(copy)
    elif kind == "unknown kind":
        w.sql("UPDATE blobs SET kind = 'exe' WHERE hash = :h", h=digest)
    else:  # pragma: no cover
        raise AssertionError(kind)
    return [(copy, data)]


BLOB_DAMAGE = [
    "inline bytes flipped",
    "inline bytes of another run",
    "file bytes of another table",
    "file truncated",
    "path with ..",
    "absolute path",
    "path to a secret",
    "linked folder",
    "linked file",
    "unknown kind",
]


#: the damage also tried on the command line and in the lab
CLI_BLOB_DAMAGE = ("file bytes of another table", "path with ..", "path to a secret", "linked file")


def test_a_damaged_blob_is_refused_naming_its_run_and_nothing_outside_is_read_or_removed(
    world: World,
) -> None:
    client = lab_client(world)
    outputs: list[str] = []
    for n, kind in enumerate(BLOB_DAMAGE):
        run = world.record(kind, 100 + n, files=True)
        sentinels = damage_blob(world, kind, run)
        with pytest.raises(RagmeterError, match=rf"run {run} is damaged"):
            world.store.evaluation(run)
        on_the_command_line = kind in CLI_BLOB_DAMAGE  # (every kind takes the same path there)
        if on_the_command_line:
            for argv in (
                ["runs", "show", run],
                ["compare", world.inline[0], run, "-m", "R@1", "--no-ledger"],
            ):
                code, text = cli(*argv, "--db", world.url)
                refused(code, text, f"run {run}", "damaged")
                outputs.append(text)
            r = client.get("/sweeps", params={"runs": str(run)})
            assert r.status_code in (400, 404), (kind, r.status_code, r.text[-400:])
            outputs.append(r.text)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a blob with a bad path: its file is left alone
            if on_the_command_line:
                code, text = cli("runs", "delete", run, "--yes", "--db", world.url)
                assert code == 0, text
                outputs.append(text)
            else:
                world.store.delete_run(run)
        untouched(world, *sentinels)
        for link in [p for p in world.artifacts.iterdir() if p.is_symlink()]:
            link.unlink()  # (a later blob may be named into that folder: its writer refuses)
    code, text = cli("runs", "list", "--db", world.url)  # the others stay readable
    assert code == 0, text
    for i in world.ids:
        assert world.store.evaluation(i).n_queries == 6
    world.sql(
        "UPDATE blobs SET path = :p WHERE hash = :h", p=str(world.secret), h=world.blob(world.files)
    )
    for argv in (  # export and report refuse a damaged run too
        ["runs", "export", world.files, "-o", world.outside / "export"],
        ["report", world.files, "-o", world.outside / "report.html"],
    ):
        code, text = cli(*argv, "--db", world.url)
        assert code == 2 and "Traceback" not in text, text
        outputs.append(text)
    assert not any(SECRET in o for o in outputs)


#: paths a blob row might hold instead of ``ab/<sha256>.parquet``
ODD_PATHS = ["..", "../..", "/", "/etc/passwd", "~", "ab/../..", "./", "ab/", "\\", "..\\..\\x",
             "ab/./", "file:///etc/passwd", "%2e%2e/x"]  # fmt: skip


@settings(FUZZ, max_examples=20)
@given(
    path=st.one_of(
        st.sampled_from(ODD_PATHS),
        st.text(alphabet="./ab\\~:%-_0123456789", min_size=1, max_size=40),
        st.builds(lambda p: "../" * p, st.integers(1, 8)),
    ),
    at_the_copy=st.booleans(),
)
def test_no_blob_path_from_the_database_is_followed_by_a_read_or_a_delete(
    world: World, path: str, at_the_copy: bool
) -> None:
    """Whatever the path column holds, a read refuses it unless it is exactly the writer's
    ``ab/<sha256>.parquet``, and a delete never removes anything outside the artifact folder."""
    seed = world.__dict__.setdefault("seeds", iter(range(1000, 10**6)))
    run = world.record("fuzz", next(seed), files=True)  # (blobs of its own each example)
    digest = world.blob(run)
    copy, data = _copy_outside(world, digest)
    candidate = path + (os.path.relpath(copy, world.artifacts) if at_the_copy else "")
    world.sql("UPDATE blobs SET path = :p WHERE hash = :h", p=candidate, h=digest)
    try:
        ev = world.store.evaluation(run)
    except RagmeterError as exc:
        assert f"run {run} is damaged" in str(exc)
    else:
        assert candidate == f"{digest[:2]}/{digest}.parquet" and ev.n_queries == 6
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        world.store.delete_run(run)
    untouched(world, (copy, data))
