"""The lab and the report over a store written by others (issue 22, follow-ups of items 3, 4, 7).

* **Paths read from the store are opened only inside the lab's folder.** A stored run names its
  experiment file (``config["experiment"]``, ``runs.source``) and a chunk file
  (``settings.chunks``); the lab reads them to recompute the run, and ``POST /jobs`` RUNS the
  experiment file with its Python generators. A row pointing at ``../outside.toml``, an
  absolute path, a link out of the folder, a ``.py`` file or a name holding NUL is never opened
  (an audit hook records every file the process opens) and never run (the outside experiment's
  generator would write a sentinel file at import): the page keeps every stored number and says
  which path it did not open and why; the server refuses the job whatever the page sent; the
  report reads nothing out there either. Runs recorded in the folder still run as jobs, and the
  same outside experiment does run once the lab's folder contains it (the trap is live).
  Properties: the containment agrees with ``os.path.realpath`` on generated paths through links
  and ``..``, and no generated row value makes the lab open anything outside.
* **A damaged judge validation** is left out of the report with the listings' warning; the rest
  of the report is written.
* **Damaged rows a page left out are said on the page** (not only on the server's console), on
  each request, and at the top of the report.
* **compare / gate without -m** on a pair whose variant changed k list the metrics both runs
  carry, headroom marked, never the baseline's own.
* **Bad query parameters** on any lab route (enumerated from the app) are the lab's 400 page,
  never FastAPI's 422 JSON or a 500.

Store tests run on SQLite and PostgreSQL (``store_url``).
"""

from __future__ import annotations

import html
import os
import re
import shutil
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from _experiment_files import toy_experiment
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

pytest.importorskip("fastapi")  # justified: the lab is the optional [web] extra
pytest.importorskip("bm25s")  # justified: the toy experiment's retriever is an optional extra

from fastapi.testclient import TestClient

from ragmeter import Evaluation
from ragmeter._errors import RagmeterWarning, UsageError
from ragmeter.cli import app as cli_app
from ragmeter.lab import create_app
from ragmeter.metrics import parse
from ragmeter.store import Store

#: the team's experiment: a variant that changes k without a budget (it shares only the
#: headroom R@5 with the baseline)
EXPERIMENT = """\
name = "toy"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
k = 2
headroom_k = 5
metrics = ["R", "RR"]

[baseline]
name = "baseline"
chunker = "tokens:20:0"
retriever = "bm25"
depth = 10

[[variant]]
name = "k3"
k = 3
"""
#: the same experiment elsewhere, with a Python generator that leaves a sentinel when imported
OUTSIDE = EXPERIMENT.replace(
    "[baseline]", '[generator]\nkind = "python"\ntarget = "gen.py:answer"\n\n[baseline]'
)
GENERATOR = """\
from pathlib import Path

Path(__file__).with_name("SENTINEL").write_text("imported", encoding="utf-8")


def answer(question, passages):
    return "an answer"
"""
#: a Python file inside the folder that leaves a sentinel if anything imports it
EVIL = 'from pathlib import Path\nPath(__file__).with_name("SENTINEL-PY").write_text("ran")\n'


# -- every file the process opens ------------------------------------------------------------
_OPENED: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _OPENED is not None and event in ("open", "os.listdir", "os.scandir") and args:
        target = args[0]
        if isinstance(target, str | bytes | os.PathLike):
            _OPENED.append(os.path.abspath(os.fsdecode(target)))


sys.addaudithook(_audit)  # (hooks stay for the process: this one is idle outside `opened`)


@contextmanager
def opened() -> Iterator[list[str]]:
    """Every path opened or listed inside the block, in any thread (absolute)."""
    global _OPENED
    found: list[str] = []
    _OPENED = found
    try:
        yield found
    finally:
        _OPENED = None


def outside_of(paths: list[str], *folders: Path) -> list[str]:
    """The paths that lead, links resolved, into one of ``folders``."""
    real = [os.path.realpath(f) for f in folders]

    def within(p: str) -> bool:
        p = os.path.realpath(p)
        return any(p == r or p.startswith(r + os.sep) for r in real)

    return [p for p in paths if within(p)]


# -- the folders -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """``team/`` (the lab's folder: the experiment, a .py file, links leading out and in) and
    ``outside/`` (an experiment whose generator leaves a sentinel, a chunk file) beside it."""
    base = tmp_path_factory.mktemp("paths").resolve()
    team, outside = base / "team", base / "outside"
    toy_experiment(team, EXPERIMENT)
    toy_experiment(outside, OUTSIDE)
    (outside / "gen.py").write_text(GENERATOR, encoding="utf-8")
    (outside / "chunks.jsonl").write_text('{"id": "fees#0-10"}\n', encoding="utf-8")
    (team / "evil.py").write_text(EVIL, encoding="utf-8")
    (team / "sub").mkdir()
    (team / "sub" / "inner.toml").write_text(EXPERIMENT, encoding="utf-8")
    os.symlink(outside / "experiment.toml", team / "link_out.toml")
    os.symlink(outside, team / "linkdir")
    os.symlink(team / "experiment.toml", team / "link_in.toml")
    os.symlink(team / "sub", team / "sublink")
    # records beside imported variant folders, naming experiment files out of the folder
    (team / "sub" / "config.json").write_text(
        f'{{"experiment": "{outside / "experiment.toml"}"}}', encoding="utf-8"
    )
    (team / "summary.json").write_text('{"file": "../outside/experiment.toml"}', encoding="utf-8")
    return SimpleNamespace(base=base, team=team, outside=outside)


def sentinels(w: SimpleNamespace) -> list[Path]:
    return [p for p in (w.outside / "SENTINEL", w.team / "SENTINEL-PY") if p.exists()]


def record(store_url: str, w: SimpleNamespace) -> Store:
    """The team's experiment run and recorded as ``ragmeter run`` records it (runs 1 and 2)."""
    from ragmeter.workflows.experiment import run_and_record

    store = Store.open(store_url, migrate=True)  # (a server database is migrated first)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, ids = run_and_record(store, w.team / "experiment.toml")
    assert ids == {"baseline": 1, "k3": 2}
    return store


def set_rows(store: Store, *, config: dict[str, Any] | None = None, **columns: Any) -> None:
    """Every run's config updated with ``config`` (None values removed) and ``columns`` set, as
    another program writing to the shared database would."""
    from ragmeter.store import _models as m

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = store.runs()
    with store.engine.begin() as conn:
        for r in runs:
            new = {**r.config, **(config or {})}
            new = {k: v for k, v in new.items() if v is not None}
            conn.execute(m.runs.update().where(m.runs.c.id == r.id).values(config=new, **columns))


def text_of(page: str) -> str:
    page = re.sub(r"<script\b.*?</script>", " ", page, flags=re.S | re.I)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def lab_client(store: Store) -> TestClient:
    """The lab as ``ragmeter lab`` starts it: its folder is the current one."""
    client = TestClient(create_app(store=store), base_url="http://127.0.0.1")
    client.get("/jobs")  # the CSRF cookie
    return client


def poll(client: TestClient, url: str) -> str:
    """GET a job's partial as htmx does until it stops asking to be polled."""
    for _ in range(3000):
        page = client.get(url, headers={"HX-Request": "true"}).text
        if 'hx-trigger="every 1s"' not in page:
            return page
        time.sleep(0.02)
    raise AssertionError(f"the job at {url} never ended")


def recall_card(page: str) -> str:
    found = re.search(r'data-metric="R">.*?card-value">([^<]*)<', page, re.S)
    assert found, page[-2000:]
    return found.group(1)


# -- item 1: paths from the store, in the lab and the report -----------------------------------
def hostile_rows(w: SimpleNamespace) -> list[tuple[str, dict[str, Any], dict[str, Any], str]]:
    """(case, config changes, column changes, what the page must say) for every run."""
    out = str(w.outside / "experiment.toml")
    outside = "lies outside the lab's folder"
    return [
        ("up and out", {"experiment": "../outside/experiment.toml"}, {}, outside),
        ("absolute", {"experiment": out}, {}, outside),
        ("a link out", {"experiment": str(w.team / "link_out.toml")}, {}, outside),
        ("a folder link out", {"experiment": "linkdir/experiment.toml"}, {}, outside),
        ("a python file", {"experiment": str(w.team / "evil.py")}, {}, "is not a .toml file"),
        ("NUL", {"experiment": f"{w.team}/experiment.toml\x00.toml"}, {},
         "is not a file name the lab opens"),
        ("the source column", {"experiment": None}, {"source": out}, outside),
    ]  # fmt: skip


def test_paths_from_the_store_outside_the_lab_folder_are_never_opened_or_run(
    store_url: str, world: SimpleNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragmeter.lab import write_report

    w = world
    store = record(store_url, w)
    stored = store.run(1).metrics["R@2"]
    monkeypatch.chdir(w.team)  # the lab (and the report) started in the team's folder
    client = lab_client(store)
    token = client.cookies.get("ragmeter_csrf")
    for case, config, columns, why in hostile_rows(w):
        try:
            set_rows(store, config=config, **columns)
        except Exception as exc:  # a value the database itself cannot hold: nothing to defend
            assert case == "NUL" and store.engine.dialect.name == "postgresql", (case, exc)
            continue
        with opened() as paths, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lab = client.get("/lab?run=1")
            jobs = client.get("/jobs?run=1")
            posted = client.post(
                "/jobs", data={"run": "1", "chunker": "tokens:25:0", "csrf_token": token}
            )
            home = client.get("/")
            report = write_report(store, ["1", "2"], tmp_path / f"{case}.html")
        # every stored number is still shown: the recall at the run's k, the listing
        assert lab.status_code == 200, (case, lab.text[-500:])
        assert recall_card(lab.text) == f"{stored:.3f}", case
        assert home.status_code == 200 and "k3" in home.text
        # each page names the path it did not open and why
        for page in (lab.text, jobs.text, posted.text, report.read_text(encoding="utf-8")):
            assert why in text_of(page), (case, text_of(page)[:1500])
        assert 'name="chunker"' not in jobs.text  # no form to start a job from
        assert posted.status_code == 400, (case, posted.status_code)
        assert outside_of(paths, w.outside, w.team / "evil.py") == [], case
        assert sentinels(w) == [], case
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert len(store.runs()) == 2, case  # no job was started
    # a chunk file the settings name outside the folder: the run is shown from its offsets
    chunks = str(w.outside / "chunks.jsonl")
    set_rows(store, config={"experiment": str(w.team / "experiment.toml")}, source=None)
    with store.engine.begin() as conn:
        from ragmeter.store import _models as m

        settings_ = {**store.run(1).config["settings"], "chunker": None, "chunks": chunks}
        conn.execute(
            m.runs.update()
            .where(m.runs.c.id == 1)
            .values(config={**store.run(1).config, "settings": settings_})
        )
    with opened() as paths:
        lab = client.get("/lab?run=1")
    assert lab.status_code == 200 and recall_card(lab.text) == f"{stored:.3f}"
    assert f"the chunk file {chunks} recorded by run 1 lies outside" in text_of(lab.text)
    assert outside_of(paths, w.outside) == []
    # runs recorded in the folder (relative to it, or through a link that stays inside) still
    # run as jobs: the refusals above were the paths, not the jobs
    set_rows(store, config={"experiment": "link_in.toml"})
    page = text_of(client.get("/lab?run=2").text)
    assert "lies outside" not in page and "is not a" not in page
    posted = client.post(
        "/jobs",
        data={"run": "1", "chunker": "tokens:25:0", "csrf_token": token},
        follow_redirects=False,
    )
    assert posted.status_code == 303, posted.text[-800:]
    assert "finished" in poll(client, posted.headers["location"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert len(store.runs()) == 3 and sentinels(w) == []
    # `report --root`: started elsewhere, the report reads the team's files only when told
    set_rows(store, config={"experiment": str(w.team / "experiment.toml")})
    monkeypatch.chdir(w.outside)
    for root, note in (
        ([], f"lies outside the lab's folder {w.outside}"),
        (["--root", w.team], ""),
    ):
        out = tmp_path / f"root-{bool(root)}.html"
        with opened() as paths:
            r = CliRunner().invoke(cli_app, ["report", "2", "-o", out, "--db", store_url, *root])
        assert r.exit_code == 0, r.output
        page = text_of(out.read_text(encoding="utf-8"))
        assert (note in page) if note else ("lies outside" not in page), page[:1000]
        assert outside_of(paths, w.team) == [] if note else outside_of(paths, w.team)
    r = CliRunner().invoke(cli_app, ["report", "2", "-o", out, "--db", store_url, "--root",
                                     tmp_path / "nowhere", "--force"])  # fmt: skip
    assert r.exit_code == 2 and "error: --root: " in r.output and "is not a folder" in r.output
    store.close()


def test_the_trap_is_live_an_outside_experiment_runs_once_the_lab_folder_holds_it(
    tmp_path: Path, world: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control: the same rows, with the lab started one folder up, run the outside
    experiment, whose generator leaves its sentinel. So the refusals above are the containment,
    not an experiment that could not have run."""
    w = SimpleNamespace(base=tmp_path, team=tmp_path / "team", outside=tmp_path / "outside")
    shutil.copytree(world.team, w.team, symlinks=True, ignore=shutil.ignore_patterns("link*"))
    shutil.copytree(world.outside, w.outside)
    store = record(f"sqlite:///{tmp_path / 'store.db'}", w)
    set_rows(store, config={"experiment": str(w.outside / "experiment.toml")})
    monkeypatch.chdir(w.team)
    client = lab_client(store)
    data = {"run": "1", "chunker": "tokens:25:0", "csrf_token": client.cookies["ragmeter_csrf"]}
    assert client.post("/jobs", data=data).status_code == 400
    assert sentinels(w) == []
    monkeypatch.chdir(tmp_path)
    up = lab_client(store)  # the lab started one folder up: the outside folder is inside it
    data["csrf_token"] = up.cookies["ragmeter_csrf"]
    posted = up.post("/jobs", data=data, follow_redirects=False)
    assert posted.status_code == 303, posted.text[-800:]
    poll(up, posted.headers["location"])
    assert (w.outside / "SENTINEL").read_text(encoding="utf-8") == "imported"
    store.close()


#: the parts generated paths are made of: links out and in, .., other kinds of file
SEGMENTS = ["..", ".", "sub", "sublink", "linkdir", "outside", "team", "experiment.toml",
            "inner.toml", "link_in.toml", "link_out.toml", "evil.py", "X.TOML", "nope.toml",
            "config.json", "", "~", " "]  # fmt: skip


def path_texts(w: SimpleNamespace) -> st.SearchStrategy[str]:
    joined = st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=6).map("/".join)
    return st.one_of(
        joined,
        joined.map(lambda p: "/" + p),
        joined.map(lambda p: f"{w.team}/{p}"),
        joined.map(lambda p: f"{w.outside}/{p}"),
        st.text(max_size=40),
    )


def oracle(text: str, root: Path) -> bool:
    """Whether a recorded experiment path is one the lab may open: os.path's own answer."""
    if not text.strip() or "\x00" in text or not text.lower().endswith(".toml"):
        return False
    real = os.path.realpath(os.path.join(root, text))
    inside = real == str(root) or real.startswith(str(root) + os.sep)
    return inside and real.lower().endswith(".toml")


def agrees_with_realpath(text: str, root: Path) -> None:
    from ragmeter.lab._paths import EXPERIMENT as KIND
    from ragmeter.lab._paths import OutsideRoot, contained

    with opened() as paths:
        try:
            found = contained(text, root, KIND, 7)
        except OutsideRoot as exc:
            assert not oracle(text, root), text
            assert "run 7" in str(exc) and "\n" not in str(exc)
        else:
            assert oracle(text, root), text
            assert found == Path(os.path.realpath(os.path.join(root, text)))
            assert found.is_relative_to(root)
    assert paths == [], (text, paths)  # deciding opens nothing, anywhere


@pytest.mark.parametrize(
    "text",
    ["../outside/experiment.toml", "link_out.toml", "linkdir/experiment.toml", "evil.py",
     "sublink/../link_in.toml", "sub/../../team/experiment.toml", "a\x00b.toml",
     "experiment.toml", "link_in.toml", "sublink/inner.toml", "/etc/passwd.toml", "~/x.toml"],
)  # fmt: skip
def test_containment_of_the_named_cases(world: SimpleNamespace, text: str) -> None:
    agrees_with_realpath(text, world.team)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_containment_agrees_with_realpath_on_generated_paths(
    world: SimpleNamespace, data: Any
) -> None:
    agrees_with_realpath(data.draw(path_texts(world)), world.team)


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=6,
)  # fmt: skip


class NoGoldenStore:
    """What :func:`run_context` asks a store for when the experiment file is not read."""

    def golden(self, version: str) -> Any:
        from ragmeter._errors import NotFoundError

        raise NotFoundError(f"the store holds no golden-set version {version}")


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_no_stored_value_makes_the_lab_open_a_file_outside_its_folder(
    world: SimpleNamespace, data: Any
) -> None:
    """Any experiment path, source, chunk file or junk a row may hold: the lab's loading of a
    run (started in the team's folder) opens nothing outside it and fails, if at all, with
    ragmeter's own error."""
    from ragmeter._errors import RagmeterError
    from ragmeter.lab._context import run_context

    paths_ = path_texts(world)
    value = st.one_of(paths_, JSONISH)
    chunker = st.sampled_from([None, "tokens:20:0", "nonsense", 3])
    settings_ = st.fixed_dictionaries({"chunks": st.one_of(st.none(), paths_), "chunker": chunker})
    config = data.draw(
        st.fixed_dictionaries(
            {}, optional={"experiment": value, "settings": st.one_of(settings_, value)}
        )
    )
    source = data.draw(st.one_of(st.none(), paths_, st.sampled_from(["sub", "sublink", "."])))
    version = data.draw(st.sampled_from([None, "g-0000"]))
    run = SimpleNamespace(id=3, config=config, source=source, golden_version=version)
    with pytest.MonkeyPatch.context() as m, opened() as paths, warnings.catch_warnings():
        m.chdir(world.team)
        warnings.simplefilter("ignore")
        try:
            run_context(NoGoldenStore(), run, {})  # type: ignore[arg-type]
        except RagmeterError:
            pass
    assert outside_of(paths, world.outside, world.team / "evil.py") == [], (config, source)


# -- item 2: a damaged judge validation in the report ------------------------------------------
def test_the_report_leaves_out_a_damaged_judge_validation_and_says_so(
    store_url: str, world: SimpleNamespace, tmp_path: Path
) -> None:
    import sqlalchemy as sa

    store = record(store_url, world)
    labels = [{"id": "q1", "label": "supported", "human": "supported"}]
    report = {"kappa": 0.5, "agreement": 0.75, "n": 1, "labels": ["supported"]}
    older = store.record_judge_validation(judge="older judge", labels=labels, report=report)
    newer = store.record_judge_validation(
        judge="newer judge", labels=[{**labels[0], "label": "unsupported"}], report=report
    )
    with store.engine.begin() as conn:  # its labels' blob holds other bytes now
        blob = conn.execute(
            sa.text("SELECT labels_blob FROM judge_labels WHERE id = :i"), {"i": newer}
        ).scalar_one()
        conn.execute(
            sa.text("UPDATE blobs SET data = :d WHERE hash = :h"), {"d": b"junk", "h": blob}
        )
    out = tmp_path / "report.html"
    with pytest.warns(RagmeterWarning, match=rf"judge validation {newer} is damaged.*; skipped"):
        result = CliRunner().invoke(
            cli_app,
            ["report", "1", "2", "-o", str(out), "--db", store_url],
        )
    assert result.exit_code == 0, result.output
    page = text_of(out.read_text(encoding="utf-8"))
    assert "older judge" in page and "newer judge" not in page  # the rest is rendered
    assert f"1 damaged judge validation was left out: judge validation {newer} (" in page
    assert older < newer
    store.close()


def test_the_report_says_why_a_diagnosis_cannot_be_made_instead_of_failing(
    world: SimpleNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer set stored for a run whose chunking cannot be rebuilt here (its experiment
    file is gone): the diagnosis section says so and the report is written (it ended in a
    template error, exit 1, when the section had no retrieval-only steps to fall back on)."""
    store = record(f"sqlite:///{tmp_path / 'store.db'}", world)
    set_rows(store, config={"experiment": str(world.team / "gone.toml")})
    version = store.run(1).golden_version
    store.record_answers(name="baseline", answers=[{"id": "q1", "answer": "75 dollars"}],
                         report={}, golden_version=version, run_id=1)  # fmt: skip
    store.close()
    monkeypatch.chdir(world.team)
    out = tmp_path / "report.html"
    r = CliRunner().invoke(
        cli_app, ["report", "1", "-o", out, "--db", f"sqlite:///{tmp_path / 'store.db'}"]
    )
    assert r.exit_code == 0, r.output
    page = text_of(out.read_text(encoding="utf-8"))
    assert "run 1's chunking cannot be rebuilt here" in page and "gone.toml" in page


# -- item 3: what a page left out is said on the page ------------------------------------------
#: the pages that list runs
LISTING_PAGES = ["/", "/lab", "/compare", "/sweeps", "/jobs"]


def test_each_page_says_which_damaged_rows_its_lists_left_out(
    store_url: str, world: SimpleNamespace, tmp_path: Path
) -> None:
    import sqlalchemy as sa

    from ragmeter.lab import write_report

    store = record(store_url, world)
    client = lab_client(store)
    clean = client.get("/").text
    assert "damaged" not in text_of(clean)
    damage = "'[1, 2]'" if store.engine.dialect.name == "postgresql" else "'not json{'"
    with store.engine.begin() as conn:
        conn.execute(sa.text(f"UPDATE runs SET config = {damage} WHERE id = 2"))
    said = re.compile(r"1 damaged run was left out: run 2 \(config is not (JSON|a JSON object)\)")
    for url in LISTING_PAGES * 2:  # every request says it again (no once-per-process warning)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = client.get(url)
        assert r.status_code == 200, (url, r.status_code)
        assert said.search(text_of(r.text)), (url, text_of(r.text)[:600])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert "damaged" not in text_of(client.get("/slider").text)  # a page that lists none
        out = write_report(store, ["toy"], tmp_path / "r.html")
    assert said.search(text_of(out.read_text(encoding="utf-8")))
    with pytest.warns(RagmeterWarning, match="run 2 is damaged"):  # the console still hears it
        client.get("/")
    store.close()


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(["runs", "comparisons", "judge_labels", "ledger"]),
                  st.integers(1, 30), st.sampled_from(["config is not JSON", "a value"])),
        max_size=25,
    )
)  # fmt: skip
def test_the_notice_names_each_damaged_row_once_and_counts_them(
    rows: list[tuple[str, int, str]],
) -> None:
    from ragmeter.lab._notices import MAX_NAMED, notice
    from ragmeter.store import DamagedRowError
    from ragmeter.store._damage import LABEL

    found = [DamagedRowError(t, k, what) for t, k, what in rows]
    line = notice(found)
    distinct = list(dict.fromkeys((t, str(k)) for t, k, _ in rows))
    if not distinct:
        assert line is None
        return
    assert line is not None and "\n" not in line
    assert line.startswith(f"{len(distinct)} damaged ")
    for t, k in distinct[:MAX_NAMED]:
        assert line.count(f"{LABEL[t]} {k} (") == 1, (line, t, k)
    if len(distinct) > MAX_NAMED:
        assert line.endswith(f"and {len(distinct) - MAX_NAMED} more")


# -- item 4: which metrics a changed-k pair can be compared on ---------------------------------
def test_compare_and_gate_without_a_metric_list_what_both_runs_carry(
    store_url: str, world: SimpleNamespace
) -> None:
    store = record(store_url, world)
    store.close()
    for args in (["compare", "1", "2", "--no-ledger"], ["gate", "1", "2", "--max-broken", "0"]):
        r = CliRunner().invoke(cli_app, [*args, "--db", store_url], env={"COLUMNS": "200"})
        assert r.exit_code == 2, r.output
        errors = [x for x in r.stderr.splitlines() if x.startswith("error:")]
        assert errors == [
            "error: name the metric to compare (both runs carry: R@5 (headroom, not quality))"
        ], r.stderr
    # the metric it names compares
    r = CliRunner().invoke(
        cli_app, ["compare", "1", "2", "-m", "R@5", "--no-ledger", "--db", store_url]
    )
    assert r.exit_code == 0, r.output


def _evaluation(name: str, metrics: list[str], k: int | None) -> Evaluation:
    ms = tuple(parse(m) for m in metrics)
    return Evaluation(
        run=name,
        metrics=ms,
        query_ids=("q1", "q2"),
        values=np.full((2, len(ms)), 0.5),
        config={"settings": {"k": k, "budget": None}} if k else {},
    )


POOL = ["R@2", "R@3", "RR@2", "RR@3", "nDCG@2", "R@20", "R@50", "AllR@2", "P@3"]


@settings(max_examples=200, deadline=None)
@given(
    a=st.lists(st.sampled_from(POOL), min_size=1, max_size=6, unique=True),
    b=st.lists(st.sampled_from(POOL), min_size=1, max_size=6, unique=True),
    ka=st.sampled_from([None, 2, 3]),
    kb=st.sampled_from([None, 2, 3]),
)
def test_the_message_lists_exactly_the_metrics_both_runs_carry(
    a: list[str], b: list[str], ka: int | None, kb: int | None
) -> None:
    from ragmeter.paired import compare

    base, cand = _evaluation("base", a, ka), _evaluation("cand", b, kb)
    if len(a) == 1 and a == b:
        return  # one metric, the same on both sides: it is compared
    with pytest.raises(UsageError) as caught:
        compare(base, cand, n_resamples=50)
    message = str(caught.value)
    shared = [m for m in a if m in b]
    if not shared:
        assert "no metric in common" in message
        return
    listed = re.split(r", (?=\w+@)", message[message.index("carry: ") + len("carry: ") : -1])
    names = [x.removesuffix(" (headroom, not quality)") for x in listed]
    assert names == [str(parse(m)) for m in shared]
    for x, m in zip(listed, shared, strict=True):
        k = parse(m).k
        headroom = m.startswith("R@") and ka is not None and kb is not None and k > max(ka, kb)
        assert x.endswith("(headroom, not quality)") == headroom, (x, ka, kb)


# -- item 5: bad query parameters are the lab's 400 page ---------------------------------------
BAD_VALUES = ["abc", "", "\x00", "9" * 40, "-1"]


def api_routes(routes: list[Any]) -> Iterator[Any]:
    """Every endpoint among ``routes``, inside included routers too."""
    from fastapi.routing import APIRoute

    for r in routes:
        if isinstance(r, APIRoute):
            yield r
        inner = getattr(r, "original_router", None)  # (how FastAPI keeps an included router)
        if inner is not None:
            yield from api_routes(inner.routes)


def routes(app: Any) -> list[tuple[str, list[str], list[str]]]:
    """(path, path parameters, query parameters) of every GET route the app mounts."""
    out = []
    for r in api_routes(app.routes):
        if "GET" in r.methods:
            d = r.dependant
            out.append((r.path, [p.name for p in d.path_params],
                        [p.alias for p in d.query_params]))  # fmt: skip
    return out


@pytest.fixture(scope="module")
def empty_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    folder = tmp_path_factory.mktemp("empty-lab")
    with Store.open(f"sqlite:///{folder / 'store.db'}") as store:
        yield TestClient(create_app(store=store), base_url="http://127.0.0.1")


def answered_as_a_page(r: Any, what: Any) -> None:
    assert r.status_code in (200, 400, 404), (what, r.status_code, r.text[-300:])
    assert r.headers["content-type"].startswith("text/html"), (what, r.headers["content-type"])


def test_every_lab_route_answers_bad_query_parameters_with_its_400_page(
    empty_lab: TestClient,
) -> None:
    client = empty_lab
    found = routes(client.app)
    assert len(found) >= 12 and any(q for _, _, q in found)
    tried = 0
    for path, path_params, query in found:
        url = path
        for p in path_params:
            url = url.replace("{" + p + "}", "1")
        answered_as_a_page(client.get(url), url)  # a required parameter missing: 400, no 422
        for name in query:
            for bad in BAD_VALUES:
                r = client.get(url, params={name: bad})
                answered_as_a_page(r, (url, name, bad))
                tried += 1
    assert tried > 80
    for url in ("/slider?k=abc", "/diagnosis?large_k=abc"):
        r = client.get(url)
        assert r.status_code == 400 and "must be a whole number, got 'abc'" in text_of(r.text)
        assert 'class="warn"' in r.text and "<nav>" in r.text  # the lab's page, with its nav
    r = client.get("/lab/question")
    assert r.status_code == 400 and "run is required; qid is required" in text_of(r.text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_text_in_any_query_parameter_is_a_page(empty_lab: TestClient, data: Any) -> None:
    client = empty_lab
    path, path_params, query = data.draw(st.sampled_from([r for r in routes(client.app) if r[2]]))
    url = path
    for p in path_params:
        url = url.replace("{" + p + "}", "1")
    params = data.draw(st.dictionaries(st.sampled_from(query), st.text(max_size=30), max_size=4))
    answered_as_a_page(client.get(url, params=params), (url, params))
