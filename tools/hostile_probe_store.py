"""The hostile probe's store families (issue 22), imported by tools/hostile_probe.py.

- ``store``: a populated store damaged in one way (a corrupt blob, a blob path out of the
  artifact folder, a config that is not JSON, NaN in a stored metric, a bad timestamp, ...)
  times each consumer of it; and every writer pointed at the store, its WAL, its artifact
  folder or a file inside it;
- ``import``: ``runs import`` of exported run folders, experiment output folders, eval JSON and
  ledgers with fields mutated: refused whole (store unchanged, table by table) or imported whole;
- ``urls``: ``--db`` values: another application's SQLite file, a file that is not a database,
  in-memory databases, missing drivers, a read-only store, a server that never answers;
- ``ids``: hostile run ids on every command that takes one and every lab route that takes one
  (routes enumerated from the probed checkout's app);
- ``usercode``: python generators and pipelines that fail to import, return junk, call
  ``sys.exit`` or never return;
- and, in ``fields``, a grade above 1024 in one query of an exp-gain nDCG: every other query's
  value must equal the same query scored without it.

The store cases run in a second world, ``store-world``: a copy of the probe's world in which
the probed checkout itself recorded runs, comparisons, answers and judge labels (``setup``),
so the store holds whatever that checkout writes. Two of its blobs are moved out of the
database into the artifact folder, as a blob over 4 MiB would be, so that folder has files.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import random
import re
import shutil
import socket
import sqlite3
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hostile_probe import (
    NAN_TEXT,
    SECRET,
    Case,
    Check,
    Result,
    _env,
    _run,
    check_numbers,
)

STORE_WORLD = "store-world"
DB = ".ragmeter/ragmeter.db"
ART = ".ragmeter/artifacts"
MANIFEST = "probe-manifest.json"  # sha256 of every file a case must leave as it was
BEFORE = "probe-store-before.json"  # the store's tables before an import case
M = "nDCG@10"


@dataclass
class StoreWorld:
    """What ``setup`` found in the store it made (the ids depend on the probed checkout)."""

    ready: bool = False
    b1: int = 1  # eval of base.run
    b2: int = 2  # eval of cand.run
    x1: int = 4  # experiment run "baseline"
    x2: int = 5  # experiment run "small" (changes k without a budget)
    runs: list[int] = field(default_factory=lambda: [1, 2, 3, 4, 5])
    answers: int = 1
    judge: int = 1
    comparison: int = 1
    b1_values: str = ""  # inline Parquet blob
    b1_extras: str = ""  # inline gzipped JSON blob
    b2_values: str = ""  # moved to a file
    b2_file: str = ""  # relative to the artifact folder
    x2_ranked: str = ""  # moved to a file
    x2_file: str = ""
    routes: list[list[Any]] = field(default_factory=list)
    timeout_generator: bool = False
    timeout_pipeline: bool = False
    silent_port: int = 9


W = StoreWorld()


# --------------------------------------------------------------------------------------------
# Setup: the store world, the routes of the lab, the timeout settings, a silent server
# --------------------------------------------------------------------------------------------


def _silent_server() -> int:
    """A TCP server in the probe process that accepts connections and never answers (a
    database server that hangs): the port it listens on."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    held: list[socket.socket] = []  # kept open: the client waits for an answer that never comes

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            held.append(conn)

    threading.Thread(target=serve, daemon=True).start()
    return int(srv.getsockname()[1])


ROUTES_CODE = r"""
import json
from fastapi.routing import APIRoute
try:
    from ragmeter.lab._app import create_app
except ImportError:
    from ragmeter.lab import create_app
app = create_app(None)

def walk(routes):
    for r in routes:
        if isinstance(r, APIRoute):
            yield r
        elif hasattr(r, "original_router"):
            yield from walk(r.original_router.routes)
        elif hasattr(r, "routes") and not hasattr(r, "app"):
            yield from walk(r.routes)

out = []
for r in walk(app.routes):
    d = r.dependant
    out.append([sorted(r.methods), r.path, [p.alias for p in d.path_params],
                [p.alias for p in d.query_params]])
print(json.dumps(out))
"""


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _blob_to_file(con: sqlite3.Connection, digest: str, root: Path) -> str:
    """Move an inline blob into the artifact folder, as the store keeps one over 4 MiB."""
    data, kind = con.execute("select data, kind from blobs where hash = ?", (digest,)).fetchone()
    rel = f"{digest[:2]}/{digest}{'.parquet' if kind == 'parquet' else '.json.gz'}"
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(bytes(data))
    con.execute("update blobs set data = NULL, path = ? where hash = ?", (rel, digest))
    return rel


def setup(tmp: Path, world: Path, src: Path | None) -> list[str]:
    """Build ``store-world`` with the probed checkout; fill :data:`W`; return problems."""
    problems: list[str] = []
    W.silent_port = _silent_server()
    sw = tmp / STORE_WORLD
    shutil.copytree(world, sw, symlinks=True)
    env = _env(src, {})

    def ragmeter(*argv: str, cwd: Path = sw, codes: tuple[int, ...] = (0,)) -> Result:
        res = _run([sys.executable, "-m", "ragmeter", *argv], cwd, env, None)
        if res.rc not in codes:
            problems.append(
                f"store setup `ragmeter {' '.join(argv)}`: exit {res.rc}: "
                f"{res.stderr.strip()[-300:]}"
            )
        return res

    ragmeter("run", "exp/exp.toml", "-f", "json")
    compare = ["compare", "eval.json#base.run", "eval.json#cand.run", "-m", M, "-f", "json"]
    ragmeter(*compare)
    ragmeter(*compare, "--no-store", "--ledger", "ledger.jsonl")
    ragmeter(
        "answers",
        "check",
        "answers/base.jsonl",
        "--golden",
        "golden.jsonl",
        "--corpus",
        "corpus.jsonl",
        "--chunks",
        "chunks.jsonl",
        "-f",
        "json",
    )
    ragmeter("judge", "validate", "--human", "human.jsonl", "--judge", "judge.jsonl", "-f", "json")
    db = sw / DB
    if not db.is_file():
        problems.append("store setup: no store was made")
        return problems
    con = sqlite3.connect(db)
    try:
        rows = con.execute("select id, name, kind from runs order by id").fetchall()
        by = {(kind, name): i for i, name, kind in rows}
        W.runs = [i for i, _, _ in rows]
        W.b1 = by.get(("eval", "base.run"), W.b1)
        W.b2 = by.get(("eval", "cand.run"), W.b2)
        W.x1 = by.get(("experiment", "baseline"), W.x1)
        W.x2 = by.get(("experiment", "small"), W.x2)
        for attr, table in (("answers", "answer_sets"), ("judge", "judge_labels")):
            got = con.execute(f"select min(id) from {table}").fetchone()
            setattr(W, attr, got[0] if got and got[0] is not None else getattr(W, attr))
        got = con.execute("select max(id) from comparisons").fetchone()
        W.comparison = got[0] if got and got[0] is not None else W.comparison

        def blob(sql: str, run: int) -> str:
            row = con.execute(sql, (run,)).fetchone()
            return str(row[0]) if row and row[0] else ""

        W.b1_values = blob("select values_blob from evaluations where run_id = ?", W.b1)
        W.b1_extras = blob("select extras_blob from evaluations where run_id = ?", W.b1)
        W.b2_values = blob("select values_blob from evaluations where run_id = ?", W.b2)
        W.x2_ranked = blob("select ranked_blob from runs where id = ?", W.x2)
        with con:
            if W.b2_values:
                W.b2_file = _blob_to_file(con, W.b2_values, sw / ART)
            if W.x2_ranked:
                W.x2_file = _blob_to_file(con, W.x2_ranked, sw / ART)
        W.ready = bool(W.b1_values and W.b2_file and len(W.runs) >= 5)
    finally:
        con.close()  # the last connection: the WAL is checkpointed and removed
    if not W.ready:
        problems.append(f"store setup: unexpected store contents: runs {W.runs}")
    ragmeter("runs", "export", str(W.x1), "-o", "exported")
    (sw / "outside").mkdir(exist_ok=True)
    res = _run([sys.executable, "-c", ROUTES_CODE], sw, env, None)
    try:
        W.routes = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        problems.append(f"store setup: the lab's routes: {res.stderr.strip()[-300:]}")
    W.timeout_generator, W.timeout_pipeline = _timeout_settings(tmp, world, env)
    return problems


def _timeout_settings(tmp: Path, world: Path, env: dict[str, str]) -> tuple[bool, bool]:
    """Whether the probed checkout takes ``timeout`` for a python generator and a python
    pipeline (a valid experiment with ``timeout = 30`` runs)."""
    found = []
    for kind in ("generator", "pipeline"):
        d = tmp / f"usercode-{kind}"
        shutil.copytree(world / "exp", d)
        _write_usercode(d, kind, USERCODE_VALID[kind], timeout=30)
        res = _run(
            [sys.executable, "-m", "ragmeter", "run", f"{kind}.toml", "--no-store", *J],
            d,
            env,
            None,
        )
        found.append(res.rc == 0)
        shutil.rmtree(d, ignore_errors=True)
    return found[0], found[1]


# --------------------------------------------------------------------------------------------
# Checks shared by the families
# --------------------------------------------------------------------------------------------

J = ["-f", "json"]


def _manifest(d: Path, *rels: str) -> None:
    """Record the sha256 of files that must survive the case unchanged."""
    p = d / MANIFEST
    known = json.loads(p.read_text()) if p.exists() else {}
    for rel in rels:
        known[rel] = _sha(d / rel)
    p.write_text(json.dumps(known))


def check_manifest(res: Result, d: Path) -> str | None:
    p = d / MANIFEST
    if not p.exists():
        return None
    for rel, digest in json.loads(p.read_text()).items():
        f = d / rel
        if not f.exists():
            return f"{rel} was deleted"
        if f.is_file() and _sha(f) != digest:
            return f"{rel} was changed"
    return None


def check_secret(res: Result, d: Path) -> str | None:
    """The sentinel outside the artifact folder is intact and its text was never printed or
    copied into another file."""
    s = d / "secret.txt"
    if not s.exists():
        return "secret.txt (a file outside the artifact folder) was deleted"
    if SECRET in res.stdout or SECRET in res.stderr:
        return "the text of a file outside the artifact folder was printed"
    for p in d.rglob("*"):
        if p.is_file() and not p.is_symlink() and p.name != "secret.txt":
            try:
                if SECRET.encode() in p.read_bytes():
                    return f"the text of a file outside the artifact folder was copied into {p}"
            except OSError:
                pass
    return None


def _db_runs(d: Path) -> list[int] | str:
    """The run ids the store at ``d`` holds, or why it cannot be read."""
    db = d / DB
    if not db.is_file():
        return "the store's database is gone"
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return [r[0] for r in con.execute("select id from runs")]
        finally:
            con.close()
    except sqlite3.Error as exc:
        return f"the store cannot be read any more ({exc})"


def _artifact_files(d: Path) -> dict[str, str]:
    root = d / ART
    if not root.is_dir():
        return {}
    return {
        str(p.relative_to(root)): _sha(p) if p.is_file() else "dir"
        for p in sorted(root.rglob("*"))
        if not p.is_symlink()
    }


def store_intact(res: Result, d: Path) -> str | None:
    """Every run of the store world is still there and the artifact folder is as it was."""
    found = _db_runs(d)
    if isinstance(found, str):
        return found
    lost = sorted(set(W.runs) - set(found))
    if lost:
        return f"the store lost runs {lost}"
    now = _artifact_files(d)
    want = {W.b2_file: W.b2_values, W.x2_file: W.x2_ranked}
    for rel, digest in want.items():
        if rel and now.get(rel) != digest:
            return f"the artifact {rel} was replaced or removed"
    extra = [
        k for k, v in now.items() if v != "dir" and k not in want and not k.startswith(".blob-")
    ]
    if extra:
        return f"written into the artifact folder: {extra[0]}"
    return None


def _listed_ids(text: str) -> set[int]:
    try:
        obj = json.loads(text)
    except ValueError:
        return {int(m) for m in re.findall(r"^\s*(\d+)\s", text, re.M)}
    ids: set[int] = set()

    def walk(o: Any) -> None:
        if isinstance(o, dict):
            if isinstance(o.get("id"), int):
                ids.add(o["id"])
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(obj)
    return ids


def lists_others(victim: int | None) -> Check:
    """A listing that still shows every run but the damaged one."""

    def check(res: Result, d: Path) -> str | None:
        if res.rc == 2:
            return f"the whole listing was refused (exit 2): {_first(res.stderr)!r}"
        if res.rc != 0:
            return None
        others = set(W.runs) - {victim}
        missing = sorted(others - _listed_ids(res.stdout))
        if missing:
            return f"the listing lost undamaged runs {missing}"
        return None

    return check


def damaged_value_flagged(victim: int) -> Check:
    """A damaged metric (NaN, a string) of the listed or shown run is not passed on silently:
    the run is left out, the value dropped, or a warning names the run."""

    def check(res: Result, d: Path) -> str | None:
        if res.rc != 0:
            return None
        try:
            obj = json.loads(res.stdout)
        except ValueError:
            return None
        recs = [r for r in (obj if isinstance(obj, list) else [obj]) if isinstance(r, dict)]
        for r in recs:
            if r.get("id") != victim or not isinstance(r.get("metrics"), dict):
                continue
            bad = {
                k: v
                for k, v in r["metrics"].items()
                if v is not None
                and not (
                    isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                )
            }
            if bad and not re.search(rf"(?<![\w@.]){victim}(?![\w.])", res.stderr):
                return f"run {victim}'s damaged metric passed on without a word: {bad}"
        return None

    return check


def names_damage(victim: int, *marks: str) -> Check:
    """A refusal says which run (or which blob or file) is damaged."""

    def check(res: Result, d: Path) -> str | None:
        if res.rc != 2:
            return None
        err = res.stderr
        if re.search(rf"(?<![\w@.]){victim}(?![\w.])", err) or any(m and m in err for m in marks):
            return None
        return f"refused without naming the damaged run {victim}: {_first(err)!r}"

    return check


def no_nan_files(res: Result, d: Path) -> str | None:
    """No exported file holds a NaN or an infinity."""
    for p in (d / "out").rglob("*.json") if (d / "out").is_dir() else ():
        m = NAN_TEXT.search(p.read_text(errors="replace"))
        if m:
            return f"{p.name} holds {m.group()}"
    return None


def _first(text: str) -> str:
    for ln in text.splitlines():
        if ln.strip():
            return ln.strip()[:160]
    return ""


# --------------------------------------------------------------------------------------------
# store: damaged rows and files x their consumers; outputs over the store
# --------------------------------------------------------------------------------------------


def _sql(d: Path, sql: str, *params: Any) -> None:
    con = sqlite3.connect(d / DB)
    try:
        with con:
            con.execute(sql, params)
    finally:
        con.close()


def _set_blob(digest: str, data: bytes | None = None, path: str | None = None):
    def prepare(d: Path) -> None:
        _sql(d, "update blobs set data = ?, path = ? where hash = ?", data, path, digest)

    return prepare


def _garbage(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


def _inline_bytes(d: Path, digest: str) -> bytes:
    con = sqlite3.connect(d / DB)
    try:
        return bytes(con.execute("select data from blobs where hash = ?", (digest,)).fetchone()[0])
    finally:
        con.close()


def _damage_inline(digest: str, how: str):
    def prepare(d: Path) -> None:
        data = _inline_bytes(d, digest)
        if how == "garbage":
            new = b"PAR1" + _garbage(len(data), 7) + b"PAR1"
        elif how == "truncated":
            new = data[: len(data) // 2]
        else:  # a gzip stream that is not JSON
            new = gzip.compress(b"\x00not json{" + _garbage(64, 8), mtime=0)
        _sql(d, "update blobs set data = ? where hash = ?", new, digest)
        _manifest(d, "secret.txt")

    return prepare


def _damage_file(rel: str, how: str):
    def prepare(d: Path) -> None:
        p = d / ART / rel
        data = p.read_bytes()
        if how == "truncated":
            p.write_bytes(data[: len(data) // 3])
        elif how == "garbage":
            p.write_bytes(_garbage(len(data), 11))
        elif how == "missing":
            p.unlink()
        _manifest(d, "secret.txt")

    return prepare


def _path_out(digest: str, rel: str, how: str):
    """The blob's row names a file outside the artifact folder: by ``..``, by an absolute path,
    by a symlink inside the folder, or the sentinel secret.txt itself. The outside copies are
    valid blobs (a store that reads them shows their values) and must survive a delete."""

    def prepare(d: Path) -> None:
        inside = d / ART / rel
        outside = d / "outside" / Path(rel).name
        outside.parent.mkdir(exist_ok=True)
        outside.write_bytes(inside.read_bytes())
        if how == "dotdot":
            path = f"../../outside/{outside.name}"
            inside.unlink()
        elif how == "absolute":
            path = str(outside.resolve())
            inside.unlink()
        elif how == "symlink":
            path = rel
            inside.unlink()
            inside.symlink_to(os.path.relpath(outside, inside.parent))
        else:  # the sentinel
            path = "../../secret.txt"
            inside.unlink()
        _sql(d, "update blobs set path = ? where hash = ?", path, digest)
        _manifest(d, "secret.txt", f"outside/{outside.name}")

    return prepare


def _row(table: str, column: str, value: Any, key: str = "id", victim: int | None = None):
    def prepare(d: Path) -> None:
        _sql(
            d,
            f"update {table} set {column} = ? where {key} = ?",
            value,
            W.b1 if victim is None else victim,
        )
        _manifest(d, "secret.txt")

    return prepare


def _consumers(v: int, other: int) -> dict[str, dict[str, Any]]:
    """Every consumer of a stored run, with the damaged run ``v`` (``other``: an undamaged one)."""
    pair = [str(W.b1), str(W.b2)]
    return {
        "list": {"argv": ["runs", "list", "--limit", "0", *J], "kind": "listing"},
        "api-runs": {"code": "listing"},
        "show": {"argv": ["runs", "show", str(v), *J], "kind": "reader"},
        "show-other": {"argv": ["runs", "show", str(other), *J], "kind": "other"},
        "delete": {"argv": ["runs", "delete", str(v), "--yes"], "kind": "delete"},
        "export": {"argv": ["runs", "export", str(v), "-o", "out"], "kind": "reader"},
        "compare": {
            "argv": ["compare", *pair, "-m", M, "--no-ledger", *J],
            "kind": "reader",
        },
        "report": {"argv": ["report", str(v), "-o", "r.html"], "kind": "reader"},
    }


API_RUNS = """
store = ragmeter.Store.open()
try:
    runs = store.runs()
finally:
    store.close()
ids = [r.id for r in runs]
# allow_nan: a NaN handed back is printed as such, and the number check sees it
print(json.dumps([{{"id": r.id, "metrics": dict(r.metrics or {{}})}} for r in runs]))
missing = sorted(set({others!r}) - set(ids))
if missing:
    wrong(f"Store.runs() lost undamaged runs {{missing}}")
"""


def gen_store() -> list[Case]:
    C: list[Case] = []
    b1, b2, x2 = W.b1, W.b2, W.x2
    h1, e1, h2 = W.b1_values, W.b1_extras, W.b2_values
    damages: list[tuple[str, Any, int, tuple[str, ...], str, tuple[str, ...]]] = [
        # name, prepare, damaged run, consumers, expectation of its readers, marks naming it
        (
            "blob-inline-garbage",
            _damage_inline(h1, "garbage"),
            b1,
            ("show", "export", "compare", "report"),
            "either",
            (h1[:8],),
        ),
        (
            "blob-inline-truncated",
            _damage_inline(h1, "truncated"),
            b1,
            ("show", "compare"),
            "either",
            (h1[:8],),
        ),
        (
            "extras-inline-not-json",
            _damage_inline(e1, "json"),
            b1,
            ("show", "export", "compare"),
            "either",
            (e1[:8],),
        ),
        (
            "blob-file-truncated",
            _damage_file(W.b2_file, "truncated"),
            b2,
            ("show", "export", "compare", "report"),
            "either",
            (h2[:8],),
        ),
        (
            "blob-file-garbage",
            _damage_file(W.b2_file, "garbage"),
            b2,
            ("show", "compare"),
            "either",
            (h2[:8],),
        ),
        (
            "blob-file-missing",
            _damage_file(W.b2_file, "missing"),
            b2,
            ("show", "compare"),
            "either",
            (h2[:8],),
        ),
        (
            "blob-path-dotdot",
            _path_out(h2, W.b2_file, "dotdot"),
            b2,
            ("show", "export", "compare", "report", "delete"),
            "reject",
            (h2[:8], "outside"),
        ),
        (
            "blob-path-absolute",
            _path_out(h2, W.b2_file, "absolute"),
            b2,
            ("show", "compare", "delete"),
            "reject",
            (h2[:8], "outside"),
        ),
        (
            "blob-path-symlink",
            _path_out(h2, W.b2_file, "symlink"),
            b2,
            ("show", "compare", "delete"),
            "reject",
            (h2[:8], "outside"),
        ),
        (
            "blob-path-secret",
            _path_out(h2, W.b2_file, "secret"),
            b2,
            ("show", "export", "compare", "report", "delete"),
            "reject",
            (h2[:8], "secret"),
        ),
        (
            "ranked-file-garbage",
            _damage_file(W.x2_file, "garbage"),
            x2,
            ("export", "report"),
            "either",
            (W.x2_ranked[:8],),
        ),
        (
            "config-not-json",
            _row("runs", "config", "not json {"),
            b1,
            ("list", "api-runs", "show", "show-other", "compare", "export"),
            "either",
            (),
        ),
        (
            "metrics-not-json",
            _row("runs", "metrics", "{'R': 1"),
            b1,
            ("list", "api-runs", "show", "show-other"),
            "either",
            (),
        ),
        (
            "timings-not-json",
            _row("runs", "timings", "[[["),
            b1,
            ("list", "show"),
            "either",
            (),
        ),
        (
            "timings-wrong-type",
            _row("runs", "timings", '{"total": "slow", "chunk": [1]}'),
            b1,
            ("list", "show"),
            "either",
            (),
        ),
        (
            "metrics-nan",
            _row("runs", "metrics", '{"nDCG@10": NaN, "R@100": Infinity}'),
            b1,
            ("list", "api-runs", "show"),
            "either",
            (),
        ),
        (
            "metrics-string",
            _row("runs", "metrics", '{"nDCG@10": "0.9", "R@100": [1]}'),
            b1,
            ("list", "show"),
            "either",
            (),
        ),
        (
            "seconds-text",
            _row("runs", "seconds", "slow"),
            b1,
            ("list", "show"),
            "either",
            (),
        ),
        (
            "started-at-garbage",
            _row("runs", "started_at", "yesterday, around noon"),
            b1,
            ("list", "api-runs", "show", "show-other"),
            "either",
            (),
        ),
        (
            "aggregate-not-json",
            _row("evaluations", "aggregate", "nope", key="run_id"),
            b1,
            ("show", "compare", "export"),
            "either",
            (),
        ),
        (
            "aggregate-nan",
            _row("evaluations", "aggregate", '{"nDCG@10": NaN}', key="run_id"),
            b1,
            ("show", "compare", "export"),
            "either",
            (),
        ),
    ]
    for name, prepare, victim, uses, expect, marks in damages:
        other = W.b2 if victim != W.b2 else W.b1
        flag: tuple[Check, ...] = (
            (damaged_value_flagged(victim),) if name in ("metrics-nan", "metrics-string") else ()
        )
        table = _consumers(victim, other)
        for use in uses:
            spec = table[use]
            base_checks: tuple[Check, ...] = (check_secret, check_manifest, *flag)
            if use == "api-runs":
                others = sorted(set(W.runs) - {victim})
                C.append(
                    Case(
                        f"store/{name}/api-runs",
                        "store",
                        code=API_RUNS.format(others=others),
                        expect="ok",
                        world=STORE_WORLD,
                        prepare=prepare,
                        checks=(
                            *base_checks,
                            lists_others(victim),
                            check_numbers,
                        ),
                    )
                )
                continue
            kind = spec["kind"]
            checks: tuple[Check, ...] = base_checks
            if kind == "listing":
                exp, checks = "ok", (*checks, lists_others(victim), check_numbers)
            elif kind == "other":
                exp, checks = "ok", (*checks, check_numbers)
            elif kind == "delete":
                exp, checks = "either", (*checks, _delete_kept_others(victim))
            else:
                exp = expect
                checks = (*checks, names_damage(victim, *marks), check_numbers, no_nan_files)
                if expect == "reject":
                    checks = (*checks, _not_read_outside)
            C.append(
                Case(
                    f"store/{name}/{use}",
                    "store",
                    argv=spec["argv"],
                    expect=exp,
                    codes=(0, 1) if spec["argv"][0] == "gate" else (0,),
                    world=STORE_WORLD,
                    prepare=prepare,
                    checks=checks,
                )
            )
    C += _report_k_change()
    C += _outputs_over_store()
    return C


def _not_read_outside(res: Result, d: Path) -> str | None:
    if res.rc == 0:
        return "a blob file outside the artifact folder was read (exit 0)"
    return None


def _delete_kept_others(victim: int) -> Check:
    def check(res: Result, d: Path) -> str | None:
        found = _db_runs(d)
        if isinstance(found, str):
            return found
        lost = sorted(set(W.runs) - {victim} - set(found))
        if lost:
            return f"deleting run {victim} lost runs {lost}"
        if res.rc == 0 and victim in found:
            return f"exit 0 but run {victim} is still stored"
        return None

    return check


def _report_k_change() -> list[Case]:
    """Issue 22 item 7: a variant that changes k without a budget, which `ragmeter run`
    compares, must also make a report."""
    x1, x2 = str(W.x1), str(W.x2)
    return [
        Case(
            "store/report-k-change/report",
            "store",
            argv=["report", x1, x2, "-o", "r.html"],
            expect="ok",
            world=STORE_WORLD,
        ),
        Case(
            "store/report-k-change/gate-report",
            "store",
            argv=["gate", x1, x2, "-m", "R@5", "--max-broken", "3", "--report", "g.html"],
            expect="ok",
            codes=(0, 1),
            world=STORE_WORLD,
        ),
    ]


GATE_FILES = ["gate", "eval.json#base.run", "eval.json#cand.run", "-m", M, "--max-broken", "9"]
# writer -> (argv with {OUT}, the name of its force flag or None, exit codes of a run)
STORE_WRITERS: dict[str, tuple[list[str], str | None, tuple[int, ...]]] = {
    "report": (["report", "{B1}", "-o", "{OUT}"], "--force", (0,)),
    "gate-report": (
        ["gate", "{B1}", "{B2}", "-m", M, "--max-broken", "9", "--report", "{OUT}"],
        "--force",
        (0, 1),
    ),
    "gate-markdown": (
        [*GATE_FILES, "--markdown", "{OUT}"],
        "--force",
        (0, 1),
    ),
    "gate-junit": (
        [*GATE_FILES, "--junit", "{OUT}"],
        "--force",
        (0, 1),
    ),
    "compare-ledger": (
        ["compare", "eval.json#base.run", "eval.json#cand.run", "-m", M, "--ledger", "{OUT}"],
        None,
        (0,),
    ),
    "runs-export": (["runs", "export", "{B1}", "-o", "{OUT}"], "--force", (0,)),
    "chunk": (
        ["chunk", "corpus.jsonl", "-c", "tokens:8:0", "--tokenizer", "regex-words", "-o", "{OUT}"],
        "--force",
        (0,),
    ),
    "labels-export": (
        ["labels", "export", "--golden", "golden.jsonl", "--chunks", "chunks.jsonl", "-o", "{OUT}"],
        "--force",
        (0,),
    ),
    "golden-relocate": (
        ["golden", "relocate", "golden.jsonl", "-c", "corpus.jsonl", "-o", "{OUT}"],
        "--force",
        (0, 1),
    ),
    "golden-sample": (["golden", "sample", "log.jsonl", "-n", "3", "-o", "{OUT}"], "--force", (0,)),
    "golden-import": (
        ["golden", "import", "squad", "squad.json", "-o", "{OUT}"],
        "--force",
        (0,),
    ),
}


def _link_to_db(d: Path) -> None:
    (d / "store-link.db").symlink_to(DB)


def _outputs_over_store() -> list[Case]:
    C: list[Case] = []
    targets = {
        "db": DB,
        "db-wal": DB + "-wal",
        "artifacts": ART,
        "artifact-file": f"{ART}/{W.b2_file}",
    }
    for name, (argv, force, codes) in STORE_WRITERS.items():
        for tname, target in targets.items():
            variants = [True] if force else [False]
            if force and tname == "db":
                variants = [False, True]
            for forced in variants:
                out = [
                    a.replace("{OUT}", target).replace("{B1}", str(W.b1)).replace("{B2}", str(W.b2))
                    for a in argv
                ]
                if forced and force:
                    out.append(force)
                C.append(
                    Case(
                        f"store/output-over-store/{name}/{tname}"
                        + ("/force" if forced and force else ""),
                        "store",
                        argv=out,
                        codes=codes,
                        world=STORE_WORLD,
                        checks=(store_intact,),
                    )
                )
        if name in ("report", "chunk"):
            # a link named like an output: replacing the link is fine, writing through it is not
            out = [a.replace("{OUT}", "store-link.db").replace("{B1}", str(W.b1)) for a in argv] + [
                "--force"
            ]
            C.append(
                Case(
                    f"store/output-over-store/{name}/link-to-db/force",
                    "store",
                    argv=out,
                    expect="either",
                    codes=codes,
                    world=STORE_WORLD,
                    prepare=_link_to_db,
                    checks=(store_intact,),
                )
            )
    return C


# --------------------------------------------------------------------------------------------
# import: runs import of every input kind with fields mutated; all or nothing
# --------------------------------------------------------------------------------------------


def _dump(db: Path) -> dict[str, list[str]]:
    """Every row of every table, sorted (a refused import must leave them all as they were)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        out = {}
        for (t,) in con.execute("select name from sqlite_master where type='table' order by name"):
            rows = con.execute(f'select * from "{t}"').fetchall()
            out[t] = sorted(repr(r) for r in rows)
        return out
    finally:
        con.close()


def _with_dump(prepare):
    def wrapped(d: Path) -> None:
        if prepare is not None:
            prepare(d)
        (d / BEFORE).write_text(json.dumps(_dump(d / DB)))

    return wrapped


def import_oracle(n_runs: int, n_ledger: int = 0) -> Check:
    """Exit 2 and every table as it was, or exit 0 and exactly the runs (and ledger entries)
    the input holds, each finished and with sane values."""

    def check(res: Result, d: Path) -> str | None:
        before = json.loads((d / BEFORE).read_text())
        try:
            after = _dump(d / DB)
        except sqlite3.Error as exc:
            return f"the store cannot be read after the import ({exc})"
        if res.rc != 0:
            changed = [t for t in sorted(set(before) | set(after)) if before.get(t) != after.get(t)]
            if changed:
                return f"refused (exit {res.rc}) but the store changed: {', '.join(changed)}"
            return None
        got = len(after.get("runs", [])) - len(before.get("runs", []))
        if got != n_runs:
            return f"{got} runs imported where the input holds {n_runs}"
        ledger = len(after.get("ledger", [])) - len(before.get("ledger", []))
        if ledger != n_ledger:
            return f"{ledger} ledger entries imported where the input holds {n_ledger}"
        return _new_runs_sane(d, n_runs)

    return check


def _new_runs_sane(d: Path, n: int) -> str | None:
    if n == 0:
        return None
    con = sqlite3.connect(d / DB)
    try:
        rows = con.execute(
            "select id, status, metrics, timings, context_tokens, changes, notes from runs "
            "order by id desc limit ?",
            (n,),
        ).fetchall()
    finally:
        con.close()
    for rid, status, metrics, timings, ctx, changes, notes in rows:
        if status != "finished":
            return f"imported run {rid} is {status}"
        try:
            mets, tims = json.loads(metrics), json.loads(timings)
            chg, nts = json.loads(changes), json.loads(notes)
        except ValueError:
            return f"imported run {rid} holds a column that is not JSON"
        for k, v in {**mets, **tims}.items():
            if v is not None and not (
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            ):
                return f"imported run {rid} stores {k} = {v!r}"
        if ctx is not None and not (isinstance(ctx, (int, float)) and math.isfinite(ctx)):
            return f"imported run {rid} stores context_tokens = {ctx!r}"
        if any(len(str(c)) <= 1 for c in chg) or any(len(str(x)) <= 1 for x in nts):
            return f"imported run {rid} stores a string split into characters: {chg or nts}"
    return None


def _edit(rel: str, fn):
    """Edit a JSON file in place (``fn`` returns the new object)."""

    def prepare(d: Path) -> None:
        p = d / rel
        p.write_text(json.dumps(fn(json.loads(p.read_text()))))

    return prepare


def _write(rel: str, text: str | bytes):
    def prepare(d: Path) -> None:
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text)

    return prepare


def _both(*fns):
    def prepare(d: Path) -> None:
        for f in fns:
            f(d)

    return prepare


def _set(**kw):
    def fn(obj):
        obj.update(kw)
        return obj

    return fn


def _summary_variant(i: int, **kw):
    def fn(obj):
        obj["variants"][i].update(kw)
        return obj

    return fn


def _eval_first(fn):
    """Edit the first record of an eval JSON (a list of records, or one)."""

    def edit(obj):
        fn(obj[0] if isinstance(obj, list) else obj)
        return obj

    return edit


def _per_query_value(value: Any):
    def fn(rec: dict) -> None:
        qid = sorted(rec["per_query"])[0]
        metric = sorted(rec["per_query"][qid])[0]
        rec["per_query"][qid][metric] = value

    return fn


def _trec_other_questions(rel: str):
    def prepare(d: Path) -> None:
        p = d / rel
        lines = p.read_text().splitlines()
        p.write_text("".join("zz-" + ln + "\n" for ln in lines))

    return prepare


def _run_parquet_corrupt(folder: str):
    def prepare(d: Path) -> None:
        (d / folder / "run.trec").unlink(missing_ok=True)
        (d / folder / "run.parquet").write_bytes(b"PAR1" + _garbage(300, 5) + b"PAR1")

    return prepare


def _ledger_line(fn):
    """Append a changed copy of the ledger's first entry (or a raw line)."""

    def prepare(d: Path) -> None:
        p = d / "ledger.jsonl"
        first = json.loads(p.read_text().splitlines()[0])
        extra = fn(first)
        line = extra if isinstance(extra, str) else json.dumps(extra)
        with open(p, "a") as f:
            f.write(line + "\n")

    return prepare


def gen_import() -> list[Case]:
    C: list[Case] = []
    exp, var, exported = "exp/runs", "exp/runs/baseline", "exported"
    small = "exp/runs/small"
    cases: list[tuple[str, list[str], Any, str, int, int]] = [
        # name, paths, prepare, expectation, runs imported, ledger entries imported
        # the store world recorded this experiment's runs (`ragmeter run`) and the export came
        # from the store: importing them again must store nothing twice
        ("experiment/valid", [exp], None, "ok", 0, 0),
        (
            "experiment/summary-variants-object",
            [exp],
            _edit(f"{exp}/summary.json", lambda o: _set(variants={"baseline": {}})(o)),
            "reject",
            0,
            0,
        ),
        (
            "experiment/summary-not-object",
            [exp],
            _write(f"{exp}/summary.json", "[1, 2]"),
            "reject",
            0,
            0,
        ),
        (
            "experiment/summary-variant-name-number",
            [exp],
            _edit(f"{exp}/summary.json", _summary_variant(1, name=5)),
            "reject",
            0,
            0,
        ),
        (
            "experiment/summary-variant-missing-folder",
            [exp],
            _edit(f"{exp}/summary.json", _summary_variant(1, name="nope")),
            "reject",
            0,
            0,
        ),
        (
            "experiment/summary-variant-name-dotdot",
            [exp],
            _edit(f"{exp}/summary.json", _summary_variant(1, name="../../exported")),
            "reject",
            0,
            0,
        ),
        (
            "experiment/summary-duplicate-variant",
            [exp],
            _edit(f"{exp}/summary.json", lambda o: _set(variants=o["variants"] * 2)(o)),
            "reject",
            0,
            0,
        ),
        (
            "experiment/summary-timings-string",
            [exp],
            _edit(f"{exp}/summary.json", _summary_variant(1, timings="fast")),
            "reject",
            0,
            0,
        ),
        (
            "experiment/summary-timings-value-string",
            [exp],
            _edit(f"{exp}/summary.json", _summary_variant(1, timings={"total": "x"})),
            "reject",
            0,
            0,
        ),
        (
            "experiment/summary-timings-nan",
            [exp],
            _write(
                f"{exp}/summary.json",
                "",
            ),
            "reject",
            0,
            0,
        ),
        (
            "experiment/config-baseline-string",
            [exp],
            _edit(f"{small}/config.json", _set(baseline="false")),
            "reject",
            0,
            0,
        ),
        (
            "experiment/config-baseline-number",
            [exp],
            _edit(f"{small}/config.json", _set(baseline=1)),
            "reject",
            0,
            0,
        ),
        (
            "experiment/config-changes-string",
            [exp],
            _edit(f"{small}/config.json", _set(changes="chunking")),
            "reject",
            0,
            0,
        ),
        (
            "experiment/config-notes-string",
            [exp],
            _edit(f"{small}/config.json", _set(notes="a note")),
            "reject",
            0,
            0,
        ),
        (
            "experiment/config-context-tokens-string",
            [exp],
            _edit(f"{small}/config.json", _set(context_tokens="many")),
            "reject",
            0,
            0,
        ),
        (
            "experiment/config-not-object",
            [exp],
            _write(f"{small}/config.json", "[1, 2, 3]"),
            "reject",
            0,
            0,
        ),
        (
            "experiment/config-settings-list",
            [exp],
            _edit(f"{small}/config.json", _set(settings=[1, 2])),
            "reject",
            0,
            0,
        ),
        (
            "experiment/evaluation-value-string",
            [exp],
            _edit(f"{small}/evaluation.json", _eval_first(_per_query_value("0.5"))),
            "reject",
            0,
            0,
        ),
        (
            "experiment/evaluation-aggregate-list",
            [exp],
            _edit(f"{small}/evaluation.json", _eval_first(lambda r: r.update(aggregate=[1]))),
            "reject",
            0,
            0,
        ),
        (
            "experiment/evaluation-other-golden-version",
            [exp],
            _edit(
                f"{small}/evaluation.json",
                _eval_first(lambda r: r.update(golden_version="g-000000000000")),
            ),
            "reject",
            0,
            0,
        ),
        (
            "experiment/second-variant-truncated",
            [exp],
            lambda d: (d / small / "evaluation.json").write_bytes(
                (d / small / "evaluation.json").read_bytes()[:200]
            ),
            "reject",
            0,
            0,
        ),
        (
            "experiment/run-file-other-questions",
            [exp],
            _trec_other_questions(f"{small}/run.trec"),
            "reject",
            0,
            0,
        ),
        (
            "experiment/run-file-garbage",
            [exp],
            _write(f"{small}/run.trec", "\x00\x01 not a run\n"),
            "reject",
            0,
            0,
        ),
        (
            "experiment/run-parquet-corrupt",
            [exp],
            _run_parquet_corrupt(small),
            "reject",
            0,
            0,
        ),
        ("variant/valid", [var], None, "ok", 1, 0),
        (
            "variant/config-baseline-string",
            [var],
            _edit(f"{var}/config.json", _set(baseline="no")),
            "reject",
            0,
            0,
        ),
        (
            "variant/config-timings-string",
            [var],
            _edit(f"{var}/config.json", _set(timings="fast")),
            "reject",
            0,
            0,
        ),
        ("exported/valid", [exported], None, "ok", 0, 0),  # already stored (see above)
        (
            "exported/run-json-experiment-list",
            [exported],
            _edit(f"{exported}/run.json", _set(experiment=["a", "b"])),
            "reject",
            0,
            0,
        ),
        (
            "exported/run-json-not-object",
            [exported],
            _write(f"{exported}/run.json", '"a run"'),
            "reject",
            0,
            0,
        ),
        ("eval-json/valid", ["eval.json"], None, "ok", 2, 0),
        (
            "eval-json/value-string",
            ["eval.json"],
            _edit("eval.json", _eval_first(_per_query_value("0.5"))),
            "reject",
            0,
            0,
        ),
        (
            "eval-json/value-out-of-range",
            ["eval.json"],
            _edit("eval.json", _eval_first(_per_query_value(7.5))),
            "reject",
            0,
            0,
        ),
        (
            "eval-json/run-name-number",
            ["eval.json"],
            _edit("eval.json", _eval_first(lambda r: r.update(run=5))),
            "reject",
            0,
            0,
        ),
        (
            "eval-json/golden-version-number",
            ["eval.json"],
            _edit("eval.json", _eval_first(lambda r: r.update(golden_version=12))),
            "reject",
            0,
            0,
        ),
        (
            "eval-json/list-with-junk",
            ["eval.json"],
            _edit("eval.json", lambda o: [*(o if isinstance(o, list) else [o]), "junk"]),
            "reject",
            0,
            0,
        ),
        ("ledger/valid", ["ledger.jsonl"], None, "ok", 0, 1),
        (
            "ledger/junk-line",
            ["ledger.jsonl"],
            _ledger_line(lambda e: "not json {"),
            "reject",
            0,
            0,
        ),
        ("ledger/empty-object", ["ledger.jsonl"], _ledger_line(lambda e: {}), "reject", 0, 0),
        ("ledger/list-line", ["ledger.jsonl"], _ledger_line(lambda e: [1, 2]), "reject", 0, 0),
        (
            "ledger/golden-version-number",
            ["ledger.jsonl"],
            _ledger_line(lambda e: {**e, "golden_version": 12}),
            "reject",
            0,
            0,
        ),
        (
            "ledger/metric-number",
            ["ledger.jsonl"],
            _ledger_line(lambda e: {**e, "metric": 5}),
            "reject",
            0,
            0,
        ),
        (
            "ledger/time-garbage",
            ["ledger.jsonl"],
            _ledger_line(lambda e: {**e, "time": [1]}),
            "reject",
            0,
            0,
        ),
        (
            "several/second-path-bad",
            [exp, "bad-eval.json"],
            _write("bad-eval.json", '{"run": "x", "per_query": 5}'),
            "reject",
            0,
            0,
        ),
    ]
    for name, paths, prepare, expect, n_runs, n_ledger in cases:
        if name == "experiment/summary-timings-nan":
            prepare = _nan_timings(exp)
        C.append(
            Case(
                f"import/{name}",
                "import",
                argv=["runs", "import", *paths],
                expect=expect,
                world=STORE_WORLD,
                prepare=_with_dump(prepare),
                checks=(import_oracle(n_runs, n_ledger),),
            )
        )
    return C


def _nan_timings(exp: str):
    """summary.json with NaN timings (json.dumps writes NaN; the writer never does)."""

    def prepare(d: Path) -> None:
        p = d / exp / "summary.json"
        obj = json.loads(p.read_text())
        obj["variants"][1]["timings"] = {"total": float("nan"), "chunk": float("inf")}
        p.write_text(json.dumps(obj))

    return prepare


# --------------------------------------------------------------------------------------------
# urls: --db values across the commands that open the store
# --------------------------------------------------------------------------------------------


def _foreign_db(seed: int):
    """Another application's SQLite database: random tables, columns and rows."""

    def prepare(d: Path) -> None:
        rng = random.Random(seed)
        p = d / "foreign.db"
        con = sqlite3.connect(p)
        with con:
            for t in range(rng.randint(1, 3)):
                cols = [f"c{j}_{rng.randrange(1000)}" for j in range(rng.randint(1, 4))]
                name = rng.choice(["users", "orders", "notes", "events", "t"]) + str(t)
                con.execute(f"create table {name} ({', '.join(cols)})")
                for _ in range(rng.randint(0, 5)):
                    vals = [rng.choice([rng.random(), rng.randrange(10**6), "x" * 5]) for _ in cols]
                    con.execute(
                        f"insert into {name} values ({', '.join('?' * len(cols))})",
                        vals,
                    )
        con.close()
        _manifest(d, "foreign.db")

    return prepare


def _text_file(rel: str, text: str):
    def prepare(d: Path) -> None:
        (d / rel).write_text(text)
        _manifest(d, rel)

    return prepare


def _read_only(d: Path) -> None:
    """The store and its folder read-only (the case runs without the capability to override
    file modes, so this holds for root too)."""
    for p in sorted((d / ".ragmeter").rglob("*"), reverse=True):
        p.chmod(0o555 if p.is_dir() else 0o444)
    (d / ".ragmeter").chmod(0o555)


def no_stored_claim(res: Result, d: Path) -> str | None:
    if re.search(r"^stored: ", res.stderr, re.M):
        return "'stored: ...' printed for a database that keeps nothing"
    return None


def one_error_line(res: Result, d: Path) -> str | None:
    if res.rc == 2 and not re.search(r"^error: ", res.stderr, re.M):
        return f"exit 2 without an 'error:' line: {_first(res.stderr)!r}"
    return None


def no_password(res: Result, d: Path) -> str | None:
    if "PROBE-PW-1234" in res.stdout + res.stderr:
        return "the database password was printed"
    return None


def gen_urls() -> list[Case]:
    C: list[Case] = []
    silent = f"postgresql+psycopg://probe@127.0.0.1:{W.silent_port}/ragmeter"
    commands = {
        "list": ["runs", "list", *J],
        "eval": ["eval", "qrels.txt", "base.run", "-m", M, *J],
        "compare": ["compare", "eval.json#base.run", "eval.json#cand.run", "-m", M, *J],
        "db-upgrade": ["db", "upgrade"],
        "show": ["runs", "show", str(W.b1), *J],
    }
    plain = (one_error_line,)
    kinds: list[tuple[str, str | None, Any, str, tuple[Check, ...], tuple[str, ...]]] = [
        # name, --db, prepare, expectation, checks, commands
        *[
            (
                f"foreign-sqlite-{seed}",
                "sqlite:///foreign.db",
                _foreign_db(seed),
                "reject",
                (check_manifest, *plain),
                ("list", "eval", "db-upgrade") if seed == 0 else ("list",),
            )
            for seed in range(3)
        ],
        (
            "not-a-database",
            "sqlite:///notes.db",
            _text_file("notes.db", "my notes\n" * 50),
            "reject",
            (check_manifest, *plain),
            ("list", "eval"),
        ),
        (
            "memory",
            "sqlite://",
            None,
            "either",
            (no_stored_claim,),
            ("list", "eval", "compare"),
        ),
        (
            "memory-explicit",
            "sqlite:///:memory:",
            None,
            "either",
            (no_stored_claim,),
            ("list", "eval"),
        ),
        ("memory-empty-path", "sqlite:///", None, "either", (no_stored_claim,), ("eval",)),
        (
            "missing-driver",
            "sqlite+pysqlcipher:///x.db",
            None,
            "reject",
            plain,
            ("list", "eval"),
        ),
        (
            "other-pg-driver",
            "postgresql+pg8000://probe@127.0.0.1:9/db",
            None,
            "reject",
            plain,
            ("list",),
        ),
        ("unsupported-scheme", "mysql://probe@127.0.0.1/db", None, "reject", plain, ("list",)),
        ("no-scheme", "ragmeter.db", None, "reject", plain, ("list",)),
        ("folder", "sqlite:///corpus_dir", None, "reject", plain, ("list", "eval")),
        (
            "under-a-file",
            "sqlite:///qrels.txt/x.db",
            lambda d: _manifest(d, "qrels.txt"),
            "reject",
            (check_manifest, *plain),
            ("list", "eval"),
        ),
        (
            "password-hidden",
            "postgresql+psycopg://probe:PROBE-PW-1234@127.0.0.1:9/db",
            None,
            "reject",
            (no_password, *plain),
            ("list",),
        ),
        ("silent-server", silent, None, "reject", plain, ("list", "eval")),
    ]
    for name, url, prepare, expect, checks, cmds in kinds:
        for cmd in cmds:
            C.append(
                Case(
                    f"urls/{name}/{cmd}",
                    "urls",
                    argv=[*commands[cmd], "--db", url] if url else commands[cmd],
                    expect=expect,
                    world=STORE_WORLD,
                    prepare=prepare,
                    checks=checks,
                    codes=(0,),
                )
            )
    # the URL from the environment, as a team sets it
    C.append(
        Case(
            "urls/foreign-sqlite-env/list",
            "urls",
            argv=commands["list"],
            env={"RAGMETER_DATABASE_URL": "sqlite:///foreign.db"},
            world=STORE_WORLD,
            prepare=_foreign_db(5),
            checks=(check_manifest, one_error_line),
        )
    )
    # a read-only store: listed and shown; a recording command says it cannot record
    for cmd, expect in (("list", "ok"), ("show", "ok"), ("eval", "either"), ("compare", "either")):
        checks: tuple[Check, ...] = (one_error_line, store_intact)
        if cmd == "list":
            checks = (*checks, lists_others(None))
        C.append(
            Case(
                f"urls/read-only-store/{cmd}",
                "urls",
                argv=commands[cmd],
                expect=expect,
                world=STORE_WORLD,
                prepare=_read_only,
                checks=checks,
                unprivileged=True,
            )
        )
    return C


# --------------------------------------------------------------------------------------------
# ids: hostile run ids on the command line and in the lab
# --------------------------------------------------------------------------------------------

HOSTILE_IDS = (
    str(2**63),
    str(2**64),
    "-1",
    "0",
    str(10**30),
    "abc",
    " 7",
    "run:99999999999999999999",
    "run:1:nolevel",
)


def gen_ids() -> list[Case]:
    C: list[Case] = []
    b1, b2 = str(W.b1), str(W.b2)
    commands = {
        "runs-show": ["runs", "show", "{ID}"],
        "runs-delete": ["runs", "delete", "{ID}", "--yes"],
        "runs-export": ["runs", "export", "{ID}", "-o", "out"],
        "compare": ["compare", "{ID}", b2, "-m", M, "--no-ledger"],
        "gate": ["gate", b1, "{ID}", "-m", M, "--max-broken", "3"],
        "gate-report": ["gate", b1, "{ID}", "-m", M, "--max-broken", "3", "--report", "g.html"],
        "report": ["report", "{ID}", "-o", "r.html"],
        "plan": ["plan", "{ID}", b2, "-m", M],
    }
    for cname, argv in commands.items():
        for hid in HOSTILE_IDS:
            C.append(
                Case(
                    f"ids/{cname}/{hid.strip() or 'blank'}"
                    + ("-spaced" if hid != hid.strip() else ""),
                    "ids",
                    argv=[a.replace("{ID}", hid) for a in argv],
                    world=STORE_WORLD,
                    codes=(0, 1) if argv[0] == "gate" else (0,),
                    checks=(store_intact,),
                )
            )
    C += _lab_id_cases()
    return C


ID_PARAMS = {"run", "runs", "base", "cand", "baseline", "answers", "id", "vid"}

LAB_CODE = r"""
import os, sys, traceback
from urllib.parse import quote
METHOD, PATH, PARAM, WHERE = {method!r}, {path!r}, {param!r}, {where!r}
FILL = {fill!r}
IDS = {ids!r}
try:
    from ragmeter.lab._app import create_app
except ImportError:
    from ragmeter.lab import create_app
from starlette.testclient import TestClient

def finish(code):
    sys.stdout.flush(); sys.stderr.flush()
    os._exit(code)  # the lab's worker threads are not what this case measures

client = TestClient(create_app(None), base_url="http://127.0.0.1",
                    raise_server_exceptions=True, follow_redirects=False)
client.get("/")
token = client.cookies.get("ragmeter_csrf") or ""
seen = []
for hid in IDS:
    params = dict(FILL)
    path = PATH
    if WHERE == "path":
        path = PATH.replace("{{" + PARAM + "}}", quote(hid, safe=""))
    else:
        params[PARAM] = hid
    try:
        if METHOD == "POST":
            r = client.post(path, data=dict(params, csrf_token=token),
                            headers={{"X-CSRF-Token": token}})
        else:
            r = client.get(path, params=params)
    except Exception:
        print(f"{{METHOD}} {{path}} with {{PARAM}}={{hid!r}}:", file=sys.stderr)
        traceback.print_exc()
        finish(1)
    seen.append(f"{{hid!r}}: {{r.status_code}}")
    if r.status_code >= 500:
        print(f"Traceback (most recent call last):\nHTTPServerError: HTTP {{r.status_code}} "
              f"on {{METHOD}} {{path}} with {{PARAM}}={{hid!r}}", file=sys.stderr)
        finish(1)
    if WHERE == "path" and r.status_code < 400:
        print(f"PROBE-WRONG: {{METHOD}} {{path}} answered {{r.status_code}} for {{hid!r}}")
        finish(0)
print(", ".join(seen))
finish(0)
"""


def _lab_id_cases() -> list[Case]:
    """One case per (route, id parameter) of the probed checkout's lab, each trying every
    hostile id: HTTP 4xx (a page for a query parameter may also answer 200), never 500."""
    routes = W.routes or [
        [["GET"], "/comparisons/{comparison_id}", ["comparison_id"], []],
        [["GET"], "/judges/{vid}", ["vid"], []],
        [["GET"], "/compare", [], ["base", "cand"]],
        [["GET"], "/lab", [], ["run"]],
    ]
    fill_of = {
        "/lab/question": {"run": str(W.x1), "qid": "q1"},
        "/compare": {"base": str(W.b1), "cand": str(W.b2), "metric": M},
        "/diagnosis": {"answers": str(W.answers), "run": str(W.x1)},
    }
    C: list[Case] = []
    for methods, path, path_params, query_params in routes:
        method = "POST" if "POST" in methods else "GET"
        targets = [(p, "path") for p in path_params if p in ID_PARAMS or p.endswith("_id")]
        targets += [(p, "query") for p in query_params if p in ID_PARAMS]
        if method == "POST" and path.rstrip("/") == "/jobs":
            targets.append(("run", "form"))  # the jobs form reads its fields itself
        for param, where in targets:
            fill = {k: v for k, v in fill_of.get(path, {}).items() if k != param}
            code = LAB_CODE.format(
                method=method,
                path=path,
                param=param,
                where=where,
                fill=fill,
                ids=list(HOSTILE_IDS),
            )
            slug = path.strip("/").replace("/", "-").replace("{", "").replace("}", "") or "home"
            C.append(
                Case(
                    f"ids/lab/{method.lower()}-{slug}/{param}",
                    "ids",
                    code=code,
                    note="raw",
                    expect="ok",
                    world=STORE_WORLD,
                )
            )
    return C


# --------------------------------------------------------------------------------------------
# usercode: python generators and pipelines that misbehave
# --------------------------------------------------------------------------------------------

GEN_TOML = """\
name = "usercode generator"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
output = "gen-out"
k = 2
headroom_k = 5
metrics = ["R"]

[generator]
kind = "python"
target = "probe_user_gen:answer"
{timeout}
[baseline]
name = "baseline"
chunker = "tokens:8:0"
retriever = "bm25"
depth = 10
"""

PIPE_TOML = """\
name = "usercode pipeline"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
output = "pipe-out"
k = 2
headroom_k = 5
metrics = ["R"]

[baseline]
name = "baseline"
retriever = {{ kind = "python", target = "probe_user_pipe.py:retrieve"{timeout} }}
"""

USERCODE_VALID = {
    "generator": "def answer(question, passages):\n    return 'The fee is $75 [1]'\n",
    "pipeline": "def retrieve(question):\n    return [('fees', 0, 40), ('refunds', 0, 40)]\n",
}


def _write_usercode(folder: Path, kind: str, source: str, timeout: float | None) -> None:
    if kind == "generator":
        t = f"timeout = {timeout}\n" if timeout is not None else ""
        (folder / "generator.toml").write_text(GEN_TOML.format(timeout=t))
        (folder / "probe_user_gen.py").write_text(source)
    else:
        t = f", timeout = {timeout}" if timeout is not None else ""
        (folder / "pipeline.toml").write_text(PIPE_TOML.format(timeout=t))
        (folder / "probe_user_pipe.py").write_text(source)


def _body(kind: str, stmt: str) -> str:
    sig = "answer(question, passages)" if kind == "generator" else "retrieve(question)"
    return f"import sys, time\n\ndef {sig}:\n    {stmt}\n"


def _usercode_variants(kind: str) -> dict[str, tuple[str, str]]:
    """name -> (module source, expectation)."""
    fn = "answer" if kind == "generator" else "retrieve"
    bad_return = {
        "generator": {
            "returns-surrogate": "return 'The fee is \\ud800 [1]'",
            "returns-none": "return None",
            "returns-bytes": "return b'The fee'",
            "returns-int": "return 75",
        },
        "pipeline": {
            "returns-surrogate": "return ['\\ud800#0-5']",
            "returns-none": "return None",
            "returns-bytes": "return b'fees#0-40'",
            "returns-int": "return 75",
        },
    }[kind]
    out: dict[str, tuple[str, str]] = {
        "valid": (USERCODE_VALID[kind], "ok"),
        "syntax-error": (f"def {fn}(question\n    return 1\n", "reject"),
        "raises-at-import": ("raise RuntimeError('probe: broken at import')\n", "reject"),
        "imports-missing-module": ("import probe_module_that_is_not_there\n", "reject"),
        "sys-exit-at-import": ("import sys\nsys.exit(0)\n", "reject"),
        "lacks-the-function": ("def something_else():\n    pass\n", "reject"),
        "not-callable": (f"{fn} = 5\n", "reject"),
        "sys-exit-0": (_body(kind, "sys.exit(0)"), "either"),
        "sys-exit-3": (_body(kind, "sys.exit(3)"), "either"),
        "raise-systemexit": (_body(kind, "raise SystemExit"), "either"),
        "never-returns": (_body(kind, "while True:\n        time.sleep(0.05)"), "either"),
    }
    for name, stmt in bad_return.items():
        out[name] = (_body(kind, stmt), "either")
    return out


def usercode_outcome(kind: str, failing: bool) -> Check:
    """Never exit 0 with no output; an exit 0 run of a failing function records an error for
    its questions; the answers written are valid UTF-8 JSON lines."""
    folder = "gen-out" if kind == "generator" else "pipe-out"

    def check(res: Result, d: Path) -> str | None:
        if res.rc != 0:
            return None
        if not res.stdout.strip():
            return "exit 0 with no output"
        out = d / "exp" / folder / "baseline"
        for p in out.glob("*.jsonl") if out.is_dir() else ():
            try:
                for ln in p.read_bytes().decode("utf-8").splitlines():
                    if ln.strip():
                        json.loads(ln)
            except (UnicodeDecodeError, ValueError) as exc:
                return f"{p.name} is not valid UTF-8 JSON lines ({type(exc).__name__})"
        if not failing:
            return None
        if kind == "generator":
            gens = out / "generations.jsonl"
            rows = (
                [json.loads(x) for x in gens.read_text().splitlines() if x.strip()]
                if (gens.exists())
                else []
            )
            if not rows or not all(r.get("error") for r in rows):
                return "the function failed on every question but no error was recorded for each"
        else:
            errs = out / "errors.jsonl"
            if not errs.exists() or not errs.read_text().strip():
                return "the pipeline failed on every question but errors.jsonl records nothing"
        return None

    return check


def names_user_file(kind: str) -> Check:
    mod = "probe_user_gen" if kind == "generator" else "probe_user_pipe"

    def check(res: Result, d: Path) -> str | None:
        if res.rc == 2 and mod not in res.stderr:
            return f"refused without naming the user's module: {_first(res.stderr)!r}"
        return None

    return check


def gen_usercode() -> list[Case]:
    C: list[Case] = []
    for kind in ("generator", "pipeline"):
        has_timeout = W.timeout_generator if kind == "generator" else W.timeout_pipeline
        for name, (source, expect) in _usercode_variants(kind).items():
            timeout = 2.0 if (name == "never-returns" and has_timeout) else None

            def prepare(d: Path, k=kind, s=source, t=timeout) -> None:
                _write_usercode(d / "exp", k, s, t)

            C.append(
                Case(
                    f"usercode/{kind}/{name}",
                    "usercode",
                    argv=["run", f"exp/{kind}.toml", *J],
                    expect=expect,
                    prepare=prepare,
                    checks=(usercode_outcome(kind, name != "valid"), names_user_file(kind)),
                )
            )
    return C


# --------------------------------------------------------------------------------------------
# fields: a grade above 1024 in one query must not change another query's exp-gain nDCG
# --------------------------------------------------------------------------------------------

ALONE_CODE = r"""
import json, subprocess, sys
HUGE, METRIC = {huge!r}, {metric!r}
def ev(qrels):
    return subprocess.run([sys.executable, "-m", "ragmeter", "eval", qrels, "base.run", "-m",
                           METRIC, "--per-query", "-f", "json", "--no-store"],
                          capture_output=True, text=True)
def per_query(text):
    obj = json.loads(text)
    rec = obj[0] if isinstance(obj, list) else obj
    return {{q: next(iter(v.values())) for q, v in rec["per_query"].items()}}
a = ev("qrels_mixed.txt")
sys.stdout.write(a.stdout); sys.stderr.write(a.stderr)
if a.returncode != 0:
    sys.exit(a.returncode)
b = ev("qrels_rest.txt")
if b.returncode != 0:
    print("PROBE-WRONG: the qrels without the huge grade were refused: " + b.stderr[:200])
    sys.exit(0)
mixed, alone = per_query(a.stdout), per_query(b.stdout)
for q, v in sorted(alone.items()):
    got = mixed.get(q)
    if got is None or abs(got - v) > 1e-12:  # a rounding step apart at most
        print(f"PROBE-WRONG: {{q}} scores {{got}} beside a grade-{{HUGE}} query, {{v}} alone")
        sys.exit(0)
"""


def _mixed_qrels(seed: int, huge: int):
    def prepare(d: Path) -> None:
        rng = random.Random(seed)
        lines = [ln.split() for ln in (d / "qrels.txt").read_text().splitlines() if ln.strip()]
        qids = sorted({p[0] for p in lines})
        big = rng.choice(qids)
        mixed, rest = [], []
        for q, it, doc, _ in lines:
            grade = huge if q == big and not any(m[0] == q for m in mixed) else rng.randint(0, 3)
            row = f"{q} {it} {doc} {grade}\n"
            mixed.append((q, row))
            if q != big:
                rest.append(row)
        (d / "qrels_mixed.txt").write_text("".join(r for _, r in mixed))
        (d / "qrels_rest.txt").write_text("".join(rest))

    return prepare


def gen_fields_store() -> list[Case]:
    """Each case: random grades 0-3 and one query with a huge grade (or a huge mapped gain);
    every other query must score what it scores without that query (issue 22, item 2)."""
    C: list[Case] = []
    grid = [
        ("nDCG(gain=exp)@10", 1025),
        ("nDCG(gain=exp)@10", 1060),
        ("nDCG(gain=exp)@10", 1100),
        ("nDCG(gain=exp)@5", 5000),
        ("nDCG(gains=9:1e308)@10", 9),
    ]
    for seed, (metric, huge) in enumerate(grid):
        gain = "exp" if "exp" in metric else "map"
        C.append(
            Case(
                f"fields/eval-trec/{gain}-gain-grade-{huge}-beside-others",
                "fields",
                code=ALONE_CODE.format(huge=huge, metric=metric),
                note="raw",
                expect="either",
                prepare=_mixed_qrels(seed, huge),
                checks=(check_numbers,),
            )
        )
    return C


def gen_all() -> list[Case]:
    return gen_store() + gen_import() + gen_urls() + gen_ids() + gen_usercode() + gen_fields_store()
