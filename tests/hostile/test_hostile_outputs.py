"""No command writes over the experiment store, its artifacts or its own inputs (issue 22, 1).

``ragmeter report 1 -o .ragmeter/ragmeter.db --force`` used to write HTML over the database:
every stored run gone. The rule (``ragmeter.store._protect``, used by ``cli/_outputs.py`` for
every writer): a path a command writes, links and ``..`` resolved, is never the store's database
or one of its ``-wal``/``-shm``/``-journal``/``.migrate-lock`` files, never in its artifacts
folder, and never one of the command's inputs; ``--force`` or not, ``--no-store`` or not.

- ``WRITERS`` lists every command and option that writes a path the user names;
  ``test_the_table_lists_every_writer`` walks the Typer app so a new output option cannot be
  missed. Each writer is pointed at the database, its ``-wal`` file, a file in the artifacts
  folder, the artifacts folder, a link to the database and one of its inputs, with and without
  ``--force``: exit 2, one ``error:`` line naming what it would destroy, and not one byte of the
  store folder or the input changed. The same command lines pointed at a fresh path succeed, so
  the refusals are the rule's, not a broken command line.
- a property over generated spellings of the store's places (``..``, ``.``, doubled
  separators, links to the folder, the file or the artifacts) and of near-miss names: the first
  always refused, the second never;
- the experiment file's ``output`` and ``cache`` (and the variant folders under ``output``);
- a server store's artifacts folder (``store_url``: SQLite and PostgreSQL) and
  ``Store.export_run``; ``--db`` against the environment's store; the default store under the
  current folder; ``golden freeze``'s lock file; a ``--ledger`` that is not a ledger.

The store is built once for the module (``ragmeter eval`` of the toy runs: runs 1 and 2).
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from _experiment_files import toy_experiment, write_toy_data
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter._errors import InputError, UsageError
from ragmeter.cli import app
from ragmeter.store import Store

TOY = Path(__file__).parents[1] / "fixtures" / "toy"
METRIC = "R@2"

#: option names that write: every Path option so named must be in WRITERS
OUTPUT_NAMES = {
    "-o",
    "--out",
    "--output",
    "--report",
    "--markdown",
    "--junit",
    "--ledger",
    "--cache-dir",
    "--judge-cache",
}

EXPERIMENT = """\
golden = "golden.jsonl"
corpus = "corpus.jsonl"
k = 2
headroom_k = 8
{top}
[baseline]
name = "{name}"
chunker = "tokens:20:0"
retriever = "bm25"
depth = 10
"""


@pytest.fixture(scope="module", autouse=True)
def _command_tree_once() -> Iterator[None]:
    """typer's test runner rebuilds the whole command tree (every command's signature and type
    hints) on each invoke, about 0.3 s; this module runs some 250 command lines, on one tree."""
    import typer.main
    import typer.testing

    built = typer.main.get_command(app)
    patch = pytest.MonkeyPatch()
    patch.setattr(
        typer.testing,
        "_get_command",
        lambda typer_app: built if typer_app is app else typer.main.get_command(typer_app),
    )
    yield
    patch.undo()


def invoke(args: list[object], url: str, *, cwd: Path | None = None) -> tuple[int, str, str]:
    """The command in this process with ``url`` as the environment's store."""
    env = {"RAGMETER_DATABASE_URL": url, "COLUMNS": "200"}
    old = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        r = CliRunner().invoke(app, [str(a) for a in args], env=env)
    finally:
        os.chdir(old)
    assert not (r.exc_info and not isinstance(r.exc_info[1], SystemExit)), r.exc_info
    return r.exit_code, r.stdout, r.stderr


def listing(path: Path) -> dict[str, str]:
    """Every file under ``path`` (or ``path`` itself) and the sha256 of its bytes; links as
    their target's text. A missing path is an empty listing."""
    if path.is_symlink():
        return {".": "link:" + os.readlink(path)}
    if path.is_file():
        return {".": hashlib.sha256(path.read_bytes()).hexdigest()}
    if not path.exists():
        return {}
    out: dict[str, str] = {}
    for p in sorted(path.rglob("*")):
        rel = str(p.relative_to(path))
        if p.is_symlink():
            out[rel] = "link:" + os.readlink(p)
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[rel] = "folder"
    return out


@dataclass(frozen=True)
class Site:
    """The module's store and inputs."""

    root: Path
    url: str
    store: Path  #: the folder of the database
    db: Path
    artifacts: Path
    blob: Path  #: a file inside the artifacts folder
    link: Path  #: a symbolic link to the database
    data: Path  #: the inputs

    def __getitem__(self, name: str) -> Path:
        return self.data / name


def _labelled_queue(data: Path, url: str) -> None:
    """A labelling queue "hostile" of the logged questions, each labelled (unanswerable) by
    "ana": what `label export` and `label freeze` write from."""
    from ragmeter.store import Store
    from ragmeter.workflows import labelling

    code, _, err = invoke(
        ["label", "create", "hostile", "-q", data / "logs.jsonl", "-c", data / "corpus.jsonl",
         "--double-share", "0", "--db", url],
        url,
    )  # fmt: skip
    assert code == 0, err
    with Store.open(url) as store:
        labelling.ensure_labeller(store, "ana")
        for item in store.items("hostile"):
            labelling.save(store, "hostile", item.id, "ana", {"answerable": False}, 0)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    root = tmp_path_factory.mktemp("hostile-outputs")
    store, data = root / "store", root / "in"
    url = f"sqlite:///{store / 'ragmeter.db'}"
    write_toy_data(data)
    for name in ("qrels.txt", "baseline.run", "reranked.run"):
        shutil.copy(TOY / name, data / name)
    code, _, err = invoke(
        ["eval", data / "qrels.txt", data / "baseline.run", data / "reranked.run",
         "-m", METRIC, "--db", url],
        url,
    )  # fmt: skip
    assert code == 0, err
    for run, name in (("baseline.run", "base.json"), ("reranked.run", "cand.json")):
        code, out, err = invoke(
            ["eval", data / "qrels.txt", data / run, "-m", METRIC, "--per-query",
             "-f", "json", "--no-store"],
            url,
        )  # fmt: skip
        assert code == 0, err
        (data / name).write_text(out, encoding="utf-8")
    code, _, err = invoke(
        ["chunk", data / "corpus.jsonl", "-c", "tokens:20:0", "-o", data / "chunks.jsonl"], url
    )
    assert code == 0, err
    questions = ["What is the change fee?", "Do refunds take long?", "Is an exit row dear?"]
    (data / "logs.jsonl").write_text(
        "".join(json.dumps({"question": q}) + "\n" for q in questions), encoding="utf-8"
    )
    (data / "answers.jsonl").write_text(
        "".join(json.dumps({"id": f"q{i}", "answer": "75 dollars"}) + "\n" for i in range(1, 6)),
        encoding="utf-8",
    )
    # answer set 1 in the store (what `answers export` writes back)
    code, _, err = invoke(["answers", "check", data / "answers.jsonl", "--golden",
                           data / "golden.jsonl"], url)  # fmt: skip
    assert code == 0, err
    (data / "ledger.jsonl").write_text("", encoding="utf-8")
    _labelled_queue(data, url)
    beir = data / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text(
        json.dumps({"_id": "d1", "title": "Fees", "text": "The change fee is 75 dollars."}) + "\n"
    )
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "change fee?"}) + "\n")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    toy_experiment(data, EXPERIMENT.format(top='output = "out"', name="baseline"))
    # `confirm` needs held-out questions and a variant: the toy set, every question held out
    held = data / "confirm"
    held.mkdir()
    shutil.copy(data / "corpus.jsonl", held / "corpus.jsonl")
    rows = [json.loads(x) for x in (data / "golden.jsonl").read_text().splitlines() if x]
    (held / "golden.jsonl").write_text(
        "".join(json.dumps({**r, "split": "heldout"}) + "\n" for r in rows), encoding="utf-8"
    )
    (held / "experiment.toml").write_text(
        EXPERIMENT.format(top="", name="baseline")
        + '\n[[variant]]\nname = "chunks30"\nchunker = "tokens:30:0"\n',
        encoding="utf-8",
    )
    (data / "example").mkdir()
    artifacts = store / "artifacts"
    blob = artifacts / "ab" / "ab12.parquet"
    blob.parent.mkdir(parents=True)
    blob.write_bytes(b"PAR1 a blob the store named by its hash PAR1")
    link = root / "link.db"
    link.symlink_to(store / "ragmeter.db")
    (root / "to-store").symlink_to(store, target_is_directory=True)
    (root / "to-artifacts").symlink_to(artifacts, target_is_directory=True)
    (root / "up").mkdir()
    # a store a command left open in this process checkpoints its WAL into the database file
    # when collected: collected now, so that later snapshots see only what a command does
    gc.collect()
    return Site(root, url, store, store / "ragmeter.db", artifacts, blob, link, data)


# -- every writer -----------------------------------------------------------------------------
Args = Callable[[Site, Path], list[object]]


@dataclass(frozen=True)
class Writer:
    """A command and option that writes a path the user names."""

    command: str  #: "runs export"
    option: str
    args: Args  #: the command line with the output at a path
    victim: Callable[[Site], tuple[list[object], Path]] | None  #: a line writing over an input
    force: bool = True  #: the command has --force
    exits: tuple[int, ...] = (0,)  #: its exit codes on success (confirm: 1 = not confirmed)


def _gate(option: str) -> Args:
    return lambda s, t: ["gate", s["base.json"], s["cand.json"], "-m", METRIC, "--max-broken",
                         "6", option, t, "--no-store"]  # fmt: skip


WRITERS = [
    Writer("report", "--output", lambda s, t: ["report", "1", "2", "-o", t], None),
    Writer("gate", "--markdown", _gate("--markdown"),
           lambda s: (_gate("--markdown")(s, s["base.json"]), s["base.json"])),
    Writer("gate", "--junit", _gate("--junit"),
           lambda s: (_gate("--junit")(s, s["cand.json"]), s["cand.json"])),
    Writer("gate", "--report",
           lambda s, t: ["gate", "1", "2", "-m", METRIC, "--max-broken", "6", "--report", t],
           lambda s: (["gate", "1", "2", "-m", METRIC, "--max-broken", "6", "--ledger",
                       s["ledger.jsonl"], "--report", s["ledger.jsonl"]], s["ledger.jsonl"])),
    Writer("gate", "--ledger", _gate("--ledger"),
           lambda s: (_gate("--ledger")(s, s["base.json"]), s["base.json"])),
    Writer("compare", "--ledger",
           lambda s, t: ["compare", s["base.json"], s["cand.json"], "-m", METRIC, "--ledger", t,
                         "--no-store"],
           lambda s: (["compare", s["base.json"], s["cand.json"], "-m", METRIC, "--ledger",
                       s["cand.json"], "--no-store"], s["cand.json"]),
           force=False),
    Writer("confirm", "--ledger",
           lambda s, t: ["confirm", s["confirm/experiment.toml"], "--variant", "chunks30",
                         "--ledger", t, "--no-store"],
           lambda s: (["confirm", s["confirm/experiment.toml"], "--variant", "chunks30",
                       "--ledger",
                       s["confirm/experiment.toml"], "--no-store"], s["confirm/experiment.toml"]),
           force=False, exits=(0, 1)),
    Writer("confirm", "--cache-dir",
           lambda s, t: ["confirm", s["confirm/experiment.toml"], "--variant", "chunks30",
                         "--cache-dir", t, "--no-store", "--ledger", f"{t}.ledger.jsonl"],
           lambda s: (["confirm", s["confirm/experiment.toml"], "--variant", "chunks30",
                       "--cache-dir", s["confirm/experiment.toml"], "--no-store", "--ledger",
                       s["confirm/ledger.jsonl"]],
                      s["confirm/experiment.toml"]),
           force=False, exits=(0, 1)),
    Writer("runs export", "--out", lambda s, t: ["runs", "export", "1", "-o", t], None),
    Writer("answers export", "--out", lambda s, t: ["answers", "export", "1", "-o", t], None),
    Writer("golden import", "--out", lambda s, t: ["golden", "import", "beir", s["beir"], "-o", t],
           lambda s: (["golden", "import", "beir", s["beir"], "-o", s["beir"]], s["beir"])),
    Writer("golden relocate", "--out",
           lambda s, t: ["golden", "relocate", s["golden.jsonl"], "-c", s["corpus.jsonl"], "-o", t],
           lambda s: (["golden", "relocate", s["golden.jsonl"], "-c", s["corpus.jsonl"], "-o",
                       s["corpus.jsonl"]], s["corpus.jsonl"])),
    Writer("golden resolve", "--out",
           lambda s, t: ["golden", "resolve", s["golden.jsonl"], "-c", s["corpus.jsonl"], "-o", t],
           lambda s: (["golden", "resolve", s["golden.jsonl"], "-c", s["corpus.jsonl"], "-o",
                       s["golden.jsonl"]], s["golden.jsonl"])),
    Writer("golden sample", "--out",
           lambda s, t: ["golden", "sample", s["logs.jsonl"], "-n", "2", "-o", t],
           lambda s: (["golden", "sample", s["logs.jsonl"], "-n", "2", "-o", s["logs.jsonl"]],
                      s["logs.jsonl"])),
    Writer("labels export", "-o",
           lambda s, t: ["labels", "export", "--golden", s["golden.jsonl"], "--chunks",
                         s["chunks.jsonl"], "-o", t],
           lambda s: (["labels", "export", "--golden", s["golden.jsonl"], "--chunks",
                       s["chunks.jsonl"], "-o", s["chunks.jsonl"]], s["chunks.jsonl"])),
    Writer("chunk", "-o", lambda s, t: ["chunk", s["corpus.jsonl"], "-c", "tokens:20:0", "-o", t],
           lambda s: (["chunk", s["corpus.jsonl"], "-c", "tokens:20:0", "-o",
                       s["corpus.jsonl"]], s["corpus.jsonl"])),
    Writer("answers check", "--judge-cache",
           lambda s, t: ["answers", "check", s["answers.jsonl"], "--golden", s["golden.jsonl"],
                         "--judge", "fake", "--judge-metrics", "answer_relevance",
                         "--judge-cache", t, "--no-store"],
           lambda s: (["answers", "check", s["answers.jsonl"], "--golden", s["golden.jsonl"],
                       "--judge", "fake", "--judge-cache", s["golden.jsonl"], "--no-store"],
                      s["golden.jsonl"]),
           force=False),
    Writer("run", "--cache-dir",
           lambda s, t: ["run", s["experiment.toml"], "--cache-dir", t, "--no-store"],
           lambda s: (["run", s["experiment.toml"], "--cache-dir", s["experiment.toml"],
                       "--no-store"], s["experiment.toml"]),
           force=False),
    Writer("label export", "--out",
           lambda s, t: ["label", "export", "hostile", "-l", "ana", "-o", t], None),
    Writer("label freeze", "--out", lambda s, t: ["label", "freeze", "hostile", "-o", t], None),
    Writer("demo", "--cache-dir", lambda s, t: ["demo", "--toy-only", "--cache-dir", t],
           lambda s: (["demo", "--toy-only", "--example", s["example"], "--cache-dir",
                       s["example"]], s["example"]),
           force=False),
]  # fmt: skip

#: the store's places each writer is pointed at
TARGETS: dict[str, Callable[[Site], Path]] = {
    "database": lambda s: s.db,
    "wal": lambda s: Path(f"{s.db}-wal"),
    "artifact file": lambda s: s.blob,
    "artifacts folder": lambda s: s.artifacts,
    "link to the database": lambda s: s.link,
    "the database, spelled with ..": lambda s: s.root / "up" / ".." / "store" / "ragmeter.db",
}
EXPECTED = {
    "database": "is the experiment store's database",
    "wal": "is the write-ahead log of the experiment store",
    "artifact file": "is inside the artifacts folder",
    "artifacts folder": "is the artifacts folder",
    "link to the database": "leads to the experiment store's database",
    "the database, spelled with ..": "is the experiment store's database",
}


def _id(w: Writer) -> str:
    return f"{w.command} {w.option}"


def _refused(site: Site, args: list[object], watched: list[Path], says: str) -> str:
    before = {p: listing(p) for p in [site.store, *watched]}
    code, out, err = invoke(args, site.url)
    lines = err.strip().splitlines()
    assert code == 2, (args, out, err)
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert says in lines[0], lines[0]
    for p, files in before.items():
        assert listing(p) == files, f"{p} changed"
    return lines[0]


@pytest.mark.parametrize("writer", WRITERS, ids=_id)
def test_no_writer_writes_over_the_store_with_or_without_force(site: Site, writer: Writer) -> None:
    for name, where in TARGETS.items():
        target = where(site)
        for force in (False, True) if writer.force else (False,):
            args = [*writer.args(site, target), *(["--force"] if force else [])]
            line = _refused(site, args, [target], EXPECTED[name])
            assert f"{writer.option} {target}" in line or str(target) in line, line
            assert site.url.split("///")[1] in line or str(site.artifacts) in line, line


@pytest.mark.parametrize("writer", [w for w in WRITERS if w.victim is not None], ids=_id)
def test_no_writer_writes_over_its_own_input(site: Site, writer: Writer) -> None:
    assert writer.victim is not None
    args, victim = writer.victim(site)
    for force in (False, True) if writer.force else (False,):
        _refused(site, [*args, *(["--force"] if force else [])], [victim], "input")


def test_each_writer_line_writes_when_the_path_is_free(site: Site, tmp_path: Path) -> None:
    """The table's command lines are valid: pointed at a fresh path, each one runs (so the
    refusals above are the rule's, not a broken command line)."""
    for n, writer in enumerate(WRITERS):
        target = tmp_path / f"out-{n}.jsonl"  # a name every writer takes (chunk files: .jsonl)
        code, out, err = invoke(writer.args(site, target), site.url)
        assert code in writer.exits and "error:" not in err, (_id(writer), out, err)
    gc.collect()  # the stores these commands opened: closed before any later snapshot


def _commands(cmd: object, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    """Every command of the app with its path (typer vendors click: groups by duck type)."""
    subs = getattr(cmd, "commands", None)
    if subs is None:
        return [(path, cmd)]
    out: list[tuple[tuple[str, ...], object]] = []
    for name, sub in subs.items():
        out += _commands(sub, (*path, name))
    return out


def test_the_table_lists_every_writer() -> None:
    import typer

    listed = {(w.command, w.option) for w in WRITERS}
    found: set[tuple[str, str]] = set()
    for path, cmd in _commands(typer.main.get_command(app)):
        for param in getattr(cmd, "params", []):
            names = set(param.opts) & OUTPUT_NAMES
            if names:
                command = " ".join(path)
                match = [o for o in param.opts if (command, o) in listed]
                assert match, f"{command} {sorted(names)} writes a path: add it to WRITERS"
                found.add((command, match[0]))
    assert found == listed  # and every listed writer still exists


# -- generated spellings --------------------------------------------------------------------------
PLACES = ["ragmeter.db", "ragmeter.db-wal", "ragmeter.db-shm", "ragmeter.db-journal",
          "ragmeter.db.migrate-lock", "artifacts"]  # fmt: skip
NEAR = ["ragmeter.db.bak", "ragmeter.dbx", "ragmeter", "xragmeter.db", "ragmeter.db-walx",
        "artifacts-old", "artifactsx", "ragmeter.db.migrate-lock2",
        "copy-of-artifacts"]  # fmt: skip
#: ways from the module's root to the store's folder
TO_STORE = ["store", "./store", "up/../store", "to-store", "store/../to-store", "up/../to-store",
            "store/artifacts/..", "to-artifacts/..", "store//.", "in/../store"]  # fmt: skip
names = st.from_regex(r"[a-z0-9][a-z0-9._-]{0,11}", fullmatch=True)


def _check(kind: str, path: Path, url: str) -> None:
    """The command line's checks with ``url`` as the store in force."""
    from ragmeter.cli._outputs import check_append, check_folder, check_output

    if kind == "file":
        check_output(path, force=True, db=url)
    elif kind == "folder":
        check_folder(path, option="--out", files=["run.json"], db=url)
    else:
        check_append(path, option="--ledger", db=url)


@settings(max_examples=150, deadline=None)
@given(
    way=st.sampled_from(TO_STORE),
    place=st.sampled_from(PLACES),
    below=st.lists(names, max_size=3),
    kind=st.sampled_from(["file", "folder", "append"]),
    absolute=st.booleans(),
)
def test_every_spelling_of_a_store_place_is_refused(
    site: Site, way: str, place: str, below: list[str], kind: str, absolute: bool
) -> None:
    rel = "/".join([way, place, *(below if place == "artifacts" else [])])
    # relative: from the current folder to the root, then `rel` as spelled (relpath would fold
    # `to-artifacts/..` lexically, which is not where the link leads)
    path = Path(site.root / rel if absolute else f"{os.path.relpath(site.root)}/{rel}")
    with pytest.raises(UsageError, match=r"experiment store|artifacts folder"):
        _check(kind, path, site.url)


@settings(max_examples=150, deadline=None)
@given(
    way=st.sampled_from(TO_STORE),
    name=st.one_of(st.sampled_from(NEAR), names),
    below=st.lists(names, max_size=2),
    kind=st.sampled_from(["file", "folder", "append"]),
)
def test_a_near_miss_beside_the_store_is_never_refused_as_the_store(
    site: Site, way: str, name: str, below: list[str], kind: str
) -> None:
    if name in PLACES:
        return  # the store's own names are the other property
    path = site.root / way / name / "/".join(below) if below else site.root / way / name
    try:
        _check(kind, path, site.url)
    except UsageError as exc:
        assert "experiment store" not in str(exc) and "artifacts folder" not in str(exc), exc


# -- the store in force ---------------------------------------------------------------------------
def test_db_option_and_default_store_are_protected_whatever_the_environment_says(
    site: Site, tmp_path: Path
) -> None:
    elsewhere = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    before = listing(site.store)
    code, _, err = invoke(["report", "1", "-o", site.db, "--force", "--db", site.url], elsewhere)
    assert code == 2 and f"database {site.url}" in err, err
    code, _, err = invoke(["runs", "export", "1", "-o", site.blob, "--db", site.url], elsewhere)
    assert code == 2 and "artifacts folder" in err, err
    uri = f"sqlite:///file:{site.db}?mode=ro&uri=true"  # the same file, as a SQLite URI
    code, _, err = invoke(["report", "1", "-o", site.link, "--force", "--db", uri], elsewhere)
    assert code == 2 and "leads to the experiment store's database" in err, err
    assert listing(site.store) == before
    # the default store under the current folder, while the environment names another one
    default = tmp_path / ".ragmeter" / "ragmeter.db"
    default.parent.mkdir()
    default.write_bytes(b"SQLite format 3\x00 a team's runs")
    code, _, err = invoke(
        ["chunk", site["corpus.jsonl"], "-c", "tokens:20:0", "-o", ".ragmeter/ragmeter.db",
         "--force"],
        elsewhere,
        cwd=tmp_path,
    )  # fmt: skip
    assert code == 2 and "experiment store's database" in err, err
    assert default.read_bytes() == b"SQLite format 3\x00 a team's runs"


def test_a_server_stores_artifacts_folder_is_protected(store_url: str) -> None:
    """SQLite: the folder beside the file; PostgreSQL: RAGMETER_ARTIFACTS (set by the fixture)."""
    from ragmeter.store._url import artifact_root

    root = artifact_root(store_url)
    (root / "cd").mkdir(parents=True)
    (root / "cd" / "cd34.parquet").write_bytes(b"blob")
    before = listing(root)
    gate = ["gate", "1", "2", "-m", METRIC, "--max-broken", "6"]
    for args in (
        ["report", "1", "-o", root / "r.html", "--force", "--db", store_url],
        ["runs", "export", "1", "-o", root, "--force", "--db", store_url],
        [*gate, "--report", root / "g.html", "--db", store_url],
        ["compare", "1", "2", "-m", METRIC, "--ledger", root / "ledger.jsonl", "--db", store_url],
    ):
        code, _, err = invoke(args, store_url)
        assert code == 2 and "artifacts folder" in err, (args, err)
    with Store.open(store_url, migrate=True) as store:  # the Python API refuses too
        with pytest.raises(UsageError, match="artifacts folder"):
            store.export_run(1, root / "exported")
    assert listing(root) == before


def test_export_never_writes_a_file_over_the_database(tmp_path: Path) -> None:
    """A folder export writes config.json, run.json, ... into it: one of them may be the store."""
    folder = tmp_path / "exported"
    folder.mkdir()
    url = f"sqlite:///{folder / 'run.json'}"  # a store whose file an export would write
    code, _, err = invoke(["eval", TOY / "qrels.txt", TOY / "baseline.run", "-m", METRIC], url)
    assert code == 0, err
    gc.collect()  # the store eval opened: closed, its WAL folded into the file
    before = listing(folder)
    code, _, err = invoke(["runs", "export", "1", "-o", folder, "--force"], url)
    assert code == 2 and "run.json it would write is the experiment store's database" in err, err
    assert listing(folder) == before
    with Store.open(url) as store:
        with pytest.raises(UsageError, match="experiment store"):
            store.export_run(1, folder)
        assert store.run(1).status == "finished"  # the store is whole
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith("run.json")) == []


def test_golden_freeze_never_writes_its_lock_over_the_store(site: Site, tmp_path: Path) -> None:
    shutil.copy(site["golden.jsonl"], tmp_path / "golden.jsonl")
    lock = tmp_path / "golden.lock.json"  # the lock file of golden.jsonl
    lock.write_bytes(b"SQLite format 3\x00 stored runs")
    code, _, err = invoke(
        ["golden", "freeze", tmp_path / "golden.jsonl", "-c", site["corpus.jsonl"], "--force"],
        f"sqlite:///{lock}",
    )
    assert code == 2 and "the lock file" in err and "experiment store's database" in err, err
    assert lock.read_bytes() == b"SQLite format 3\x00 stored runs"


def test_a_ledger_that_is_not_a_ledger_is_not_appended_to(site: Site, tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# my notes\nnothing to count here\n", encoding="utf-8")
    for rule in ([], ["--max-broken", "6"]):  # compare, then gate
        code, _, err = invoke(
            ["gate" if rule else "compare", site["base.json"], site["cand.json"], "-m", METRIC,
             *rule, "--ledger", notes, "--no-store"],
            site.url,
        )  # fmt: skip
        assert code == 2 and "is not a selection ledger" in err, err
    assert notes.read_text(encoding="utf-8") == "# my notes\nnothing to count here\n"


# -- the experiment file's output and cache ------------------------------------------------------
@pytest.mark.parametrize(
    ("top", "name", "field"),
    [
        ('output = ".ragmeter/artifacts"', "baseline", "output"),
        ('output = ".ragmeter/artifacts/runs"', "baseline", "output"),
        ('output = "out"\ncache = ".ragmeter/artifacts"', "baseline", "cache"),
        ('output = ".ragmeter"', "artifacts", "output"),  # the variant's folder is artifacts/
        ('output = "out"\ncache = ".ragmeter/ragmeter.db-journal"', "baseline", "cache"),
    ],
)
def test_an_experiment_never_writes_into_the_store(
    tmp_path: Path, top: str, name: str, field: str
) -> None:
    exp = toy_experiment(tmp_path, EXPERIMENT.format(top=top, name=name))
    store = tmp_path / ".ragmeter"
    url = f"sqlite:///{store / 'ragmeter.db'}"
    code, _, err = invoke(["eval", TOY / "qrels.txt", TOY / "baseline.run", "-m", METRIC], url)
    assert code == 0, err
    (store / "artifacts").mkdir(exist_ok=True)
    before = listing(store)
    for extra in ([], ["--no-store"], ["--allow-outside"]):
        code, _, err = invoke(["run", exp, *extra], url)
        assert code == 2 and f"field '{field}'" in err and "experiment store" in err, err
        assert listing(store) == before


def test_a_variant_folder_holding_the_store_is_refused(tmp_path: Path) -> None:
    exp = toy_experiment(tmp_path, EXPERIMENT.format(top='output = "runs"', name="baseline"))
    db = tmp_path / "runs" / "baseline" / "ragmeter.db"
    url = f"sqlite:///{db}"
    code, _, err = invoke(["eval", TOY / "qrels.txt", TOY / "baseline.run", "-m", METRIC], url)
    assert code == 0, err
    before = listing(db.parent)
    code, _, err = invoke(["run", exp], url)
    assert code == 2 and "holds the experiment store's database" in err, err
    assert listing(db.parent) == before


def test_an_experiment_beside_the_store_still_runs(tmp_path: Path) -> None:
    """``output = "."`` beside the default store writes summary.json and the variant folder,
    none of them the store's: allowed."""
    exp = toy_experiment(tmp_path, EXPERIMENT.format(top='output = "."', name="baseline"))
    url = f"sqlite:///{tmp_path / '.ragmeter' / 'ragmeter.db'}"
    code, _, err = invoke(["run", exp, "-f", "json"], url)
    assert code == 0, err
    assert (tmp_path / "summary.json").is_file() and (tmp_path / "baseline").is_dir()


def test_the_python_check_names_the_field_and_line(tmp_path: Path) -> None:
    from ragmeter.experiments import check_store_writes, load_experiment
    from ragmeter.store import protected_paths

    exp_path = toy_experiment(
        tmp_path, EXPERIMENT.format(top='output = "out"\ncache = "store/artifacts"', name="b")
    )
    exp = load_experiment(exp_path, warn=False)
    with pytest.raises(InputError) as caught:
        check_store_writes(exp, protected_paths(f"sqlite:///{tmp_path / 'store' / 'x.db'}"))
    assert caught.value.line == 6 and caught.value.field == "cache"


def test_gate_never_writes_a_report_over_the_ledger_it_counts_in(
    site: Site, tmp_path: Path
) -> None:
    """A new --ledger named as --markdown too would get its entry, then the report over it."""
    ledger = tmp_path / "ledger.jsonl"
    for option in ("--markdown", "--junit"):
        code, _, err = invoke(
            [*_gate(option)(site, ledger), "--ledger", ledger, "--force"], site.url
        )
        assert code == 2 and f"--ledger and {option} both name" in err, err
    assert not ledger.exists()
