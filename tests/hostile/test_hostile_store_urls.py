"""Hostile store URLs (issue 22, item 6): every URL a command cannot keep a store in is one
``error:`` line and exit 2 from every command that opens a store, never a traceback, and the
file it names keeps every byte; a read-only store is read as usual; a server that never answers
is an error in seconds, after a line saying what the command waits for.

Generated cases (hypothesis, derandomized by conftest.py): another application's SQLite
database (random table, view and index names, some of them ragmeter's own table names, with or
without another application's ``alembic_version``), files that are not databases (random bytes,
CSV, a SQLite header followed by junk, ragmeter's own HTML report), in-memory URLs, unsupported
schemes and drivers. Each runs across the commands that open a store: ``runs list``, ``runs show
1``, ``eval`` (recording), ``compare 1 2``, ``report 1 -o``, ``db current``, ``db upgrade``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import typer.main
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from ragmeter.cli import app
from ragmeter.store import Store

TOY = Path(__file__).parents[1] / "fixtures" / "toy"
QRELS, RUN_A, RUN_B = TOY / "qrels.txt", TOY / "baseline.run", TOY / "reranked.run"

#: every command that opens a store; "{out}" is a fresh path for the report
COMMANDS = {
    "runs-list": ["runs", "list"],
    "runs-show": ["runs", "show", "1"],
    "eval": ["eval", str(QRELS), str(RUN_A), "-m", "Hit@3"],
    "compare": ["compare", "1", "2", "-m", "Hit@3"],
    "report": ["report", "1", "-o", "{out}"],
    "db-current": ["db", "current"],
    "db-upgrade": ["db", "upgrade"],
}
#: the commands that only read a store (and compare/gate, which read stored runs): they work on a
#: read-only one
READERS = {
    "runs-list": ["runs", "list"],
    "runs-show": ["runs", "show", "1"],
    "compare": ["compare", "1", "2", "-m", "Hit@3"],
    "gate": ["gate", "1", "2", "-m", "Hit@3", "--max-broken", "5"],
    "report": ["report", "1", "-o", "{out}"],
    "db-current": ["db", "current"],
    "db-upgrade": ["db", "upgrade"],
}
SQLITE_MAGIC = b"SQLite format 3\x00"
#: no shrinking: each example is a whole CLI run, and a store that opens when it must not fails
#: on any example alike, so shrinking would rerun the command hundreds of times to say little more
FEW = settings(
    max_examples=5,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
#: the command line built once (typer rebuilds it on every CliRunner call: most of its cost)
CLI = typer.main.get_command(app)


def invoke(args: list[str], url: str, out: Path) -> Result:
    return CliRunner().invoke(
        CLI, [a.replace("{out}", str(out)) for a in args] + ["--db", url], env={"COLUMNS": "200"}
    )


def refused(res: Result, *, waiting: bool = False) -> str:
    """The command failed as promised: exit 2, one ``error:`` line on stderr (after one
    "waiting for the store" line where a server is slow), no traceback. Returns the line."""
    assert res.exit_code == 2, (res.exit_code, res.output)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output
    lines = res.stderr.splitlines()
    if waiting:
        assert len(lines) == 2 and lines[0].startswith("waiting for the store at "), lines
        lines = lines[1:]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def listing(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes: what a refused command must leave as is."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.fixture(params=sorted(COMMANDS))
def command(request: pytest.FixtureRequest) -> list[str]:
    return COMMANDS[request.param]


# -- files that are not a ragmeter store ----------------------------------------------------------
_NAME = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00"),
    min_size=1,
    max_size=12,
).filter(lambda s: not s.lower().startswith("sqlite_"))
#: some names are ragmeter's own: another application's "runs" table is still not our store
_NAMES = st.lists(
    st.one_of(_NAME, st.sampled_from(["runs", "blobs", "ledger", "evaluations", "customers"])),
    min_size=1,
    max_size=4,
    unique_by=str.lower,
)


@st.composite
def foreign_sqlite(draw: st.DrawFn) -> dict[str, Any]:
    """Another application's SQLite database: tables (each with a row), maybe a view and an
    index, maybe another Alembic application's ``alembic_version``."""
    names = [n for n in draw(_NAMES) if n.lower() != "alembic_version"] or ["t"]
    return {
        "tables": names,
        "view": draw(st.booleans()),
        "index": draw(st.booleans()),
        "alembic": draw(st.one_of(st.none(), st.from_regex(r"[0-9a-f]{12}", fullmatch=True))),
        "journal": draw(st.sampled_from(["delete", "wal", "truncate"])),
    }


def write_foreign(path: Path, spec: dict[str, Any]) -> None:
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA journal_mode={spec['journal']}")
    for i, name in enumerate(spec["tables"]):
        q = '"' + name.replace('"', '""') + '"'
        con.execute(f"CREATE TABLE {q} (id INTEGER, value TEXT)")
        con.execute(f"INSERT INTO {q} VALUES (?, ?)", (i, name))
    first = '"' + spec["tables"][0].replace('"', '""') + '"'
    if spec["view"]:
        con.execute(f"CREATE VIEW app_view AS SELECT * FROM {first}")
    if spec["index"]:
        con.execute(f"CREATE INDEX app_index ON {first} (value)")
    if spec["alembic"] is not None:
        con.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        con.execute("INSERT INTO alembic_version VALUES (?)", (spec["alembic"],))
    con.commit()
    con.close()  # the last connection checkpoints a WAL: only the database file is left


@FEW
@given(spec=foreign_sqlite())
def test_another_applications_sqlite_database_is_never_touched(command, spec) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "app").mkdir()
        db = root / "app" / "app.db"
        write_foreign(db, spec)
        before = listing(root)
        res = invoke(command, f"sqlite:///{db}", root / "out" / "report.html")
        msg = refused(res)
        assert str(db) in msg and "ragmeter store" in msg, msg
        assert listing(root) == before  # no table added, no WAL, no lock file beside it


@st.composite
def not_a_database(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["bytes", "csv", "junk-after-header", "html"]))
    if kind == "bytes":
        data = draw(st.binary(min_size=1, max_size=3000))
        return data if not data.startswith(SQLITE_MAGIC) else b"x" + data
    if kind == "csv":
        rows = draw(st.lists(st.lists(st.text(max_size=8), min_size=1, max_size=4), min_size=1))
        return "\n".join(",".join(r) for r in rows).encode("utf-8", "surrogatepass") + b"\n"
    if kind == "junk-after-header":  # the magic, then no valid page: SQLite's "not a database"
        return SQLITE_MAGIC + b"\xff" * 84 + draw(st.binary(min_size=0, max_size=2000))
    return HTML_REPORT[0]


#: ragmeter's own HTML report (the file a user is most likely to point --db at by mistake)
HTML_REPORT: list[bytes] = [b""]


@pytest.fixture(scope="module", autouse=True)
def _html_report(tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("report")
    url = f"sqlite:///{folder / 'store.db'}"
    assert invoke(["eval", str(QRELS), str(RUN_A), "-m", "Hit@3"], url, folder).exit_code == 0
    res = invoke(["report", "1", "-o", "{out}"], url, folder / "report.html")
    assert res.exit_code == 0, res.output
    HTML_REPORT[0] = (folder / "report.html").read_bytes()


@FEW
@given(data=not_a_database())
def test_a_file_that_is_not_a_database_is_refused_unchanged(command, data) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "files").mkdir()
        path = root / "files" / "results.csv"
        path.write_bytes(data)
        before = listing(root)
        msg = refused(invoke(command, f"sqlite:///{path}", root / "out" / "report.html"))
        assert str(path) in msg, msg
        assert listing(root) == before


def test_a_folder_is_refused_naming_it(command, tmp_path: Path) -> None:
    msg = refused(invoke(command, f"sqlite:///{tmp_path}", tmp_path / "report.html"))
    assert f"{tmp_path} is a folder" in msg


# -- URLs that keep nothing, or that ragmeter does not speak --------------------------------------
_WORD = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
IN_MEMORY = st.one_of(
    st.sampled_from(
        [
            "sqlite://",
            "sqlite:///",
            "sqlite:///:memory:",
            "sqlite:///file::memory:?uri=true",
            "sqlite+pysqlite://",
            "SQLite:///:memory:",
        ]
    ),
    _WORD.map(lambda w: f"sqlite:///file:{w}?mode=memory&uri=true"),
    _WORD.map(lambda w: f"sqlite:///file:{w}?mode=memory&cache=shared&uri=true"),
    # two slashes: the "path" is a host and SQLite opens an in-memory database
    _WORD.map(lambda w: f"sqlite://{w}.db"),
)


@FEW
@given(url=IN_MEMORY)
def test_an_in_memory_store_is_refused(command, url, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    before = listing(tmp_path)
    msg = refused(invoke(command, url, tmp_path / "out" / "report.html"))
    assert "in-memory" in msg or "names a host" in msg, msg
    assert "sqlite:///PATH" in msg or "sqlite:///relative" in msg, msg
    assert listing(tmp_path) == before  # nothing written anywhere: not a stray file named "file:"


_KNOWN_BAD = [
    "mysql", "mariadb", "oracle", "mssql", "cockroachdb", "duckdb", "http", "file",
    "postgresql+psycopg2", "postgresql+asyncpg", "postgresql+pg8000", "postgres+psycopg2",
    "sqlite+aiosqlite", "sqlite+pysqlcipher", "mysql+pymysql",
]  # fmt: skip
_ALLOWED = {"sqlite", "sqlite+pysqlite", "postgresql", "postgres", "postgresql+psycopg"}
SCHEMES = st.one_of(
    st.sampled_from(_KNOWN_BAD),
    st.tuples(_WORD, st.one_of(st.just(""), _WORD.map("+{}".format))).map("".join),
).filter(lambda s: s.lower() not in _ALLOWED)


@FEW
@given(scheme=SCHEMES)
def test_an_unsupported_scheme_or_driver_is_one_line(command, scheme, tmp_path) -> None:
    msg = refused(invoke(command, f"{scheme}://app:s3cret@127.0.0.1:1/db", tmp_path / "r.html"))
    assert "not supported" in msg and "s3cret" not in msg, msg
    if scheme.startswith(("postgresql+", "postgres+")):
        assert "postgresql+psycopg://" in msg and "ragmeter[postgres]" in msg


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg2://app:s3cret@127.0.0.1:1/db",
        "postgresql+asyncpg://app@127.0.0.1:1/db",
        "postgres+pg8000://app@127.0.0.1:1/db",
        "sqlite+aiosqlite:///{tmp}/store.db",
    ],
)
def test_another_driver_is_refused_naming_the_one_ragmeter_uses(command, url, tmp_path) -> None:
    """Not "psycopg is not installed" (it may well be), nor an async driver's greenlet error:
    what to write instead, and nothing created."""
    msg = refused(invoke(command, url.format(tmp=tmp_path), tmp_path / "r.html"))
    assert "is not supported" in msg and "s3cret" not in msg, msg
    assert "postgresql+psycopg://" in msg if "postgres" in url else "sqlite:///PATH" in msg
    assert listing(tmp_path) == {}


MALFORMED = [
    "no-scheme-at-all",
    "postgresql://app:s3cret@127.0.0.1:port/db",  # a port that is not a number
    "sqlite:///store.db?mode=ro",  # a URI option without uri=true: SQLite would ignore it
]


@pytest.mark.parametrize("url", MALFORMED)
def test_a_malformed_url_is_one_line(command, url, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    msg = refused(invoke(command, url, tmp_path / "r.html"))
    assert "s3cret" not in msg
    assert listing(tmp_path) == {}


@pytest.mark.parametrize(
    "url", ["postgresql://u:pw@127.0.0.1:1/x", "postgres://u@127.0.0.1:1/x",
            "postgresql+psycopg://u@127.0.0.1:1/x"],
)  # fmt: skip
def test_a_server_url_without_psycopg_names_the_extra(command, url, tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if ragmeter[postgres] were absent
    msg = refused(invoke(command, url, tmp_path / "r.html"))
    assert "pip install 'ragmeter[postgres]'" in msg


# -- read-only stores -----------------------------------------------------------------------------
def seed(url: str, tmp: Path) -> None:
    """Two finished runs (eval of the toy) and one run left running by a process that is gone,
    which listing would mark interrupted: a write a read-only store must skip."""
    assert invoke(["db", "upgrade"], url, tmp).exit_code == 0  # a server is migrated first
    res = invoke(["eval", str(QRELS), str(RUN_A), str(RUN_B), "-m", "Hit@3"], url, tmp)
    assert res.exit_code == 0, res.output
    with Store.open(url) as store:
        ghost = store.start_run(experiment="ghosts", name="killed")
        with store.engine.begin() as conn:
            conn.execute(
                sa.text("UPDATE runs SET pid = 1, process_start = 'gone' WHERE id = :i"),
                {"i": ghost},
            )


def read_only_url(url: str) -> str:
    """The same store opened read-only: SQLite's ``mode=ro``; for PostgreSQL a session whose
    every transaction is read-only (``default_transaction_read_only``, as for a reporting
    role)."""
    from sqlalchemy.engine import make_url

    u = make_url(url)
    if u.drivername.startswith("sqlite"):
        return f"sqlite:///file:{u.database}?mode=ro&uri=true"
    options = u.query.get("options", "")
    ro = u.update_query_dict({"options": f"{options} -cdefault_transaction_read_only=on".strip()})
    return ro.render_as_string(hide_password=False)


def stored_state(url: str) -> tuple[Any, ...]:
    with Store.open(url) as store, store.engine.connect() as conn:
        return (
            conn.execute(sa.text("SELECT id, status FROM runs ORDER BY id")).all(),
            conn.execute(sa.text("SELECT count(*) FROM comparisons")).scalar(),
            conn.execute(sa.text("SELECT count(*) FROM ledger")).scalar(),
        )


def test_a_read_only_store_is_read_and_never_written(store_url: str, tmp_path: Path) -> None:
    seed(store_url, tmp_path)
    state = stored_state(store_url)
    db_file = Path(store_url.removeprefix("sqlite:///")) if store_url.startswith("sqlite") else None
    before = db_file.read_bytes() if db_file else None
    ro = read_only_url(store_url)
    for name, args in READERS.items():
        res = invoke(args, ro, tmp_path / f"{name}.html")
        assert res.exit_code == 0, (name, res.output)
        assert "Traceback" not in res.output and "error:" not in res.stderr, (name, res.stderr)
        if name in ("compare", "gate"):
            assert "not recorded" in res.stderr and "read-only" in res.stderr
        if name == "db-current":
            assert "revision: 0002" in res.stdout and "up to date" in res.stdout, res.stdout
        if name == "runs-list":
            assert "killed" in res.stdout and "running" in res.stdout  # not reaped
    # a command that exists to record says so before doing any work
    msg = refused(invoke(["eval", str(QRELS), str(RUN_A), "-m", "Hit@3"], ro, tmp_path / "x"))
    assert "read-only" in msg and "--no-store" in msg
    # deleting (after listing what it deletes) is refused by the database: one error line
    res = invoke(["runs", "delete", "1", "--yes"], ro, tmp_path / "x")
    assert res.exit_code == 2 and "Traceback" not in res.output
    errors = [x for x in res.stderr.splitlines() if x.startswith("error:")]
    assert len(errors) == 1 and "read-only" in errors[0], res.stderr
    assert stored_state(store_url) == state
    if db_file is not None:
        assert db_file.read_bytes() == before
    with Store.open(ro) as store:
        assert store.read_only and [r.id for r in store.runs()] == [3, 2, 1]


@pytest.mark.parametrize("args", [["db", "upgrade"], ["runs", "list"]])
def test_a_read_only_store_that_needs_migrating_is_refused(args, tmp_path: Path) -> None:
    """An empty file opened read-only cannot be given ragmeter's tables: one line, not a try."""
    empty = tmp_path / "empty.db"
    empty.touch()
    msg = refused(invoke(args, f"sqlite:///file:{empty}?mode=ro&uri=true", tmp_path / "r"))
    assert "read-only" in msg and "migrated" in msg, msg
    assert listing(tmp_path) == {"empty.db": b""}


def test_the_lab_opens_a_read_only_store(store_url: str, tmp_path: Path) -> None:
    pytest.importorskip("fastapi")  # justified: the lab is the optional [web] extra
    from fastapi.testclient import TestClient

    from ragmeter.lab import create_app

    seed(store_url, tmp_path)
    app_ = create_app(read_only_url(store_url))
    try:
        page = TestClient(app_, base_url="http://127.0.0.1").get("/")
        assert page.status_code == 200 and "killed" in page.text
    finally:
        app_.state.lab.store.close()


#: run as root without the capability to bypass file permissions, a read-only folder is read-only
_DROP = [
    "--inh-caps=-dac_override,-dac_read_search",
    "--bounding-set=-dac_override,-dac_read_search",
]
_SCRIPT = """
import json, sys
from pathlib import Path
folder = Path(sys.argv[1])
try:
    (folder / "probe").write_text("x")
    print(json.dumps("writable")); sys.exit(0)
except PermissionError:
    pass
import typer.main
from click.testing import CliRunner
from ragmeter.cli import app
cli = typer.main.get_command(app)
out = {}
for name, args in json.loads(sys.argv[2]).items():
    r = CliRunner().invoke(cli, args, env={"COLUMNS": "200"})
    out[name] = [r.exit_code, r.stdout, r.stderr]
print(json.dumps(out))
"""


def _unprivileged() -> list[str] | None:
    if not sys.platform.startswith("linux"):
        return None
    if os.geteuid() != 0:
        return []  # permission bits apply already
    setpriv = shutil.which("setpriv")
    return None if setpriv is None else [setpriv, *_DROP, "--"]


def test_a_store_in_a_folder_nobody_may_write_is_read(tmp_path: Path) -> None:
    """A teammate's store on a read-only share: SQLite can neither write the file nor create its
    WAL index beside it; listing, showing, comparing and reporting still work."""
    prefix = _unprivileged()
    if prefix is None:
        # justified: needs Linux file permissions that bind this process (setpriv when root)
        pytest.skip("no way to run without write permission here (Linux and setpriv needed)")
    made = tmp_path / "made" / "store.db"
    made.parent.mkdir()
    seed(f"sqlite:///{made}", tmp_path)
    con = sqlite3.connect(made)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every row in the file itself
    con.close()
    shared = tmp_path / "share"
    shared.mkdir()
    shutil.copyfile(made, shared / "store.db")  # as copied to a share: the file alone, in WAL mode
    url = f"sqlite:///{shared / 'store.db'}"
    before = listing(shared)
    out = tmp_path / "out"
    out.mkdir()
    commands = {
        name: [a.replace("{out}", str(out / f"{name}.html")) for a in args] + ["--db", url]
        for name, args in READERS.items()
    }
    commands["eval"] = ["eval", str(QRELS), str(RUN_A), "--db", url]
    commands["new-store"] = [
        "eval",
        str(QRELS),
        str(RUN_A),
        "--db",
        f"sqlite:///{shared / 'new.db'}",
    ]
    commands["no-store"] = ["runs", "list", "--db", f"sqlite:///{shared / 'new.db'}"]
    os.chmod(shared / "store.db", 0o444)
    os.chmod(shared, 0o555)
    try:
        proc = subprocess.run(
            [*prefix, sys.executable, "-c", _SCRIPT, str(shared), json.dumps(commands)],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        os.chmod(shared, 0o755)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    if results == "writable":
        # justified: this machine lets the process write regardless (no capability to drop)
        pytest.skip("the folder stayed writable: cannot test a read-only one here")
    for name in READERS:
        code, _, stderr = results[name]
        assert code == 0, (name, stderr)
        assert "error:" not in stderr and "Traceback" not in stderr, (name, stderr)
    assert "killed" in results["runs-list"][1] and "running" in results["runs-list"][1]
    assert "not recorded" in results["compare"][2]
    for name in ("eval", "new-store", "no-store"):
        code, _, stderr = results[name]
        assert code == 2 and stderr.startswith("error: ") and len(stderr.splitlines()) == 1
    assert "read-only" in results["eval"][2]
    assert "cannot be created" in results["new-store"][2]
    assert "no experiment store at" in results["no-store"][2]  # a reader creates nothing
    assert listing(shared) == before  # no WAL, no index, no lock file, not a byte changed


# -- a server that accepts the connection and never answers ---------------------------------------
@pytest.fixture()
def silent_server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that accepts connections and never sends a byte; it hangs up
    after 15 s, so a client without a connect timeout fails (on another message) rather than
    waiting for ever."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    timers: list[threading.Timer] = []
    stop = threading.Event()

    listener.settimeout(0.1)  # accept() wakes up to see the test is over

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)
            hang_up = threading.Timer(15, conn.close)
            hang_up.daemon = True
            timers.append(hang_up)
            hang_up.start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.close()
        for timer in timers:
            timer.cancel()
        for conn in held:
            conn.close()
        thread.join()


@pytest.mark.parametrize(
    ("args", "by"),
    [
        (["runs", "list"], "env"),
        (["db", "current"], "url"),
        (["report", "1", "-o", "{out}"], "env"),
    ],
)
def test_a_server_that_never_answers_is_an_error_in_seconds(
    silent_server: int, args: list[str], by: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"postgresql://app:s3cret@127.0.0.1:{silent_server}/db"
    if by == "env":
        monkeypatch.setenv("RAGMETER_CONNECT_TIMEOUT", "1")
    else:
        monkeypatch.delenv("RAGMETER_CONNECT_TIMEOUT", raising=False)
        url += "?connect_timeout=1"
    msg = refused(invoke(args, url, tmp_path / "r.html"), waiting=True)
    assert "did not answer within 2 s" in msg and "RAGMETER_CONNECT_TIMEOUT" in msg, msg
    assert f"127.0.0.1:{silent_server}" in msg and "s3cret" not in msg


@pytest.mark.parametrize("value", ["soon", "-3", "1.5"])
def test_a_bad_connect_timeout_is_one_line(value: str, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RAGMETER_CONNECT_TIMEOUT", value)
    msg = refused(invoke(["runs", "list"], "postgresql://u@127.0.0.1:1/x", tmp_path / "r"))
    assert "RAGMETER_CONNECT_TIMEOUT" in msg and value in msg


# -- what still works ------------------------------------------------------------------------------
def test_a_sqlite_uri_store_keeps_its_artifacts_beside_the_file(tmp_path: Path) -> None:
    """``sqlite:///file:PATH?uri=true`` names the same file as ``sqlite:///PATH``: the same
    store, the same artifacts folder (not a folder named "file:" in the current one)."""
    from ragmeter.store import sqlite_path
    from ragmeter.store._url import artifact_root

    path = tmp_path / "a b" / "store.db"
    quoted = str(path).replace(" ", "%20")
    assert sqlite_path(f"sqlite:///file:{quoted}?uri=true") == path
    assert artifact_root(f"sqlite:///file:{quoted}?mode=ro&uri=true") == path.parent / "artifacts"
    path.parent.mkdir()
    seed(f"sqlite:///{path}", tmp_path)
    res = invoke(["db", "current"], f"sqlite:///file:{quoted}?uri=true", tmp_path / "x")
    assert res.exit_code == 0 and "up to date" in res.stdout, res.output
