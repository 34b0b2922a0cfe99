"""Every "the same numbers as" command a lab page prints runs as printed and prints the page's
numbers (issue 27, item 5): the diagnosis page's and the sweeps page's lines, run from (a copy
of) the folder the lab was started in, as the pages write their paths relative to it, for runs
whose run files were deleted after ``ragmeter run`` recorded them (as the demo records its runs
without writing files): the lines export them from the store first."""

from __future__ import annotations

import html
import json
import re
import shlex
import shutil
from pathlib import Path
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


def _cli(*args: Any) -> Any:
    r = CliRunner().invoke(cli_app, [str(a) for a in args])
    assert r.exit_code == 0, (args, r.output)
    return r


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("lab-commands")
    path = ablation_experiment(root)
    url = f"sqlite:///{root / 'lab.db'}"
    _cli("run", path, "--db", url)
    store = Store.open(url)
    client = TestClient(create_app(store=store, root=root), base_url="http://127.0.0.1")
    yield {"store": store, "client": client, "url": url, "root": root}
    store.close()


def _forget_run_files(root: Path) -> None:
    """As the demo's store: no run file on disk (a test's `ragmeter run` writes them again)."""
    for run_file in (root / "runs").rglob("run.trec"):
        run_file.unlink()


def _commands(page: str) -> list[list[list[str]]]:
    """Each ``<pre class="mono cmd">`` block of the page: its lines, as argument lists."""
    out = []
    for block in re.findall(r'<pre class="mono cmd">(.*?)</pre>', page, flags=re.S):
        # paths as a user types them in the lab's folder, never a temporary folder's
        assert "/tmp/" not in html.unescape(block) and "pytest-" not in block, block
        lines = []
        for ln in html.unescape(block).splitlines():
            words = shlex.split(ln)
            assert words[0] == "ragmeter", ln
            assert not any(re.fullmatch(r"[A-Z_]{3,}(\.[a-z]+)?", w) for w in words), ln
            assert "None" not in words, ln
            lines.append(words[1:])
        out.append(lines)
    return out


def _run_all(
    lines: list[list[str]], lab: Any, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> Any:
    """Run each line in ``folder``, a fresh copy of the lab's folder (the lines' paths are
    relative to it); the last with ``--format json``; its parsed output."""
    copy = folder / f"lab-{len(list(folder.iterdir()))}"
    shutil.copytree(lab["root"], copy)
    monkeypatch.chdir(copy)
    for words in lines[:-1]:
        _cli(*words)
    return json.loads(_cli(*lines[-1], "--format", "json").stdout)


def test_the_diagnosis_lines_run_and_print_the_pages_numbers(
    lab: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = lab["store"]
    _forget_run_files(lab["root"])
    base = next(a.id for a in store.answer_sets() if a.name == "retrieved")
    r = lab["client"].get(f"/diagnosis?answers={base}")
    assert r.status_code == 200
    plain, causal = _commands(r.text)
    assert plain[0][:2] == ["runs", "export"] and "--db" in plain[0]
    got = _run_all(plain, lab, tmp_path, monkeypatch)
    from ragmeter.lab._data_diagnosis import diagnosis_context

    ctx = diagnosis_context(store, base, cache=lab["client"].app.state.lab.contexts)
    counts = {k: c.count for k, c in ctx.cells.items()}
    printed = {c["cell"]: c["count"] for c in [*got["table"]["cells"], *got["table"]["other"]]}
    assert {k: printed[k] for k in counts} == counts and sum(counts.values()) > 0
    assert got["failing_link"] == ctx.diagnosis["failing_link"]
    # the causal section's lines too: the run files are gone, so `ragmeter run` comes first
    assert causal[0][0] == "run" and "--no-store" in causal[0]
    want = ctx.causal.table if ctx.causal is not None else None
    assert want is not None
    by_experiment = _run_all(causal, lab, tmp_path, monkeypatch)
    assert by_experiment["causal"] == json.loads(json.dumps(want))
    # the page's whole diagnosis is `diagnose --experiment`'s (proven by the ablations), its
    # next experiment read on every metric the run measured
    page = json.loads(json.dumps(ctx.diagnosis))
    assert {k: by_experiment[k] for k in page} == page


def test_the_sweep_lines_run_and_print_the_pages_numbers(
    lab: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _forget_run_files(lab["root"])
    ids = sorted(r.id for r in lab["store"].runs())[:2]
    r = lab["client"].get(f"/sweeps?runs={ids[0]},{ids[1]}&metric=R&kind=k")
    assert r.status_code == 200, r.text
    (lines,) = _commands(r.text)
    assert [ln[:2] for ln in lines[:-1]].count(["runs", "export"]) == 2
    got = _run_all(lines, lab, tmp_path, monkeypatch)
    from ragmeter.lab._data_sweeps import sweeps_context

    view = sweeps_context(
        lab["store"], ids, metric="R", kind="k", cache=lab["client"].app.state.lab.contexts
    )
    (printed,) = got  # one metric, one sweep
    for key in ("metric", "kind", "cutoffs", "leaders", "crossovers", "headroom", "n_queries"):
        assert printed[key] == json.loads(json.dumps(view.sweep[key])), key
    assert printed["values"].keys() == view.sweep["values"].keys()
    for run, values in view.sweep["values"].items():
        assert printed["values"][run] == pytest.approx(values, abs=1e-12), run


def test_the_comparison_line_runs_and_prints_the_pages_numbers(
    lab: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/compare's "same numbers as" line names the lab's store (``--db``), so it runs as
    printed from any folder, and prints the page's difference, interval and counts."""
    from ragmeter.lab._data_comparison import live_comparison_context

    store = lab["store"]
    base = next(r.id for r in store.runs() if r.is_baseline)
    cand = max(r.id for r in store.runs() if not r.is_baseline)
    r = lab["client"].get(f"/compare?base={base}&cand={cand}")
    assert r.status_code == 200, r.text
    ((line,),) = _commands(r.text)
    assert line[:3] == ["compare", str(base), str(cand)] and "--db" in line
    got = _run_all([line], lab, tmp_path, monkeypatch)
    view = live_comparison_context(store, base, cand, None)
    assert got["metric"] == view.metric
    want = {"n": view.n, "wins": view.wins, "losses": view.losses, "ties": view.ties}
    assert {k: got[k] for k in want} == want
    assert got["mean_delta"] == pytest.approx(view.mean_delta, abs=1e-12)
    assert got["ci"] == pytest.approx(list(view.ci), abs=1e-12)
