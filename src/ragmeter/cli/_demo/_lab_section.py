"""The demo's last lines: how to see what it just showed in the lab, and ``demo --lab``.

``ragmeter demo`` stores nothing; its last line names the exact command that opens the lab on
its runs (``ragmeter demo --lab``, with the options it was given). ``demo --lab`` records the
demo's runs and answer checks into the demo's own store, a SQLite file in the demo's cache folder
(``demo-lab.db``, rewritten by each ``demo --lab``, so the user's own store is never touched),
then serves the lab on it, on a port bound before the demo starts, through the lab's own
``listen``/``serve`` (a taken port is one ``error:`` line and exit 2, at once). The example's
answers were not labelled by a judge, so there is no judge validation to record.
"""

from __future__ import annotations

import shlex
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from ..._literal import lit

if TYPE_CHECKING:  # pragma: no cover
    from ...experiments import ExperimentResult
    from ...store import Store

#: the demo store's file name, in the demo's cache folder
STORE_FILE = "demo-lab.db"
#: where the demo's lab listens (loopback: the lab is local)
HOST = "127.0.0.1"


def invoked_as() -> str:
    """How the user ran ragmeter (``.venv/bin/ragmeter`` under ``make demo``), so the command
    printed works from the same shell as written; ``ragmeter`` when run another way."""
    argv0 = sys.argv[0] if sys.argv else ""
    return argv0 if Path(argv0).name == "ragmeter" else "ragmeter"


def lab_command(example: Path | None, cache_dir: Path | None) -> str:
    """The exact ``demo --lab`` command for the options this demo was given."""
    words = [invoked_as(), "demo", "--lab"]
    if example is not None:
        words += ["--example", str(example)]
    if cache_dir is not None:
        words += ["--cache-dir", str(cache_dir)]
    return " ".join(shlex.quote(w) for w in words)


def closing_lines(console: Console, example: Path | None, cache_dir: Path | None) -> None:
    """The plain demo's last lines: the command that opens the lab on these runs."""
    console.rule("[bold]See it in the lab")
    console.print(
        "Every number above, with each question's ranked list and its labelled evidence marked, "
        "the comparisons and the diagnosis, in the browser:"
    )
    console.print(lit(f"  {lab_command(example, cache_dir)}"), soft_wrap=True)


def demo_store_path(result: ExperimentResult, cache_dir: Path | None) -> Path:
    """``demo-lab.db`` in the cache folder the demo's runner used."""
    exp = result.experiment
    root = (
        cache_dir if cache_dir is not None else (exp.cache or exp.path.parent / ".ragmeter-cache")
    )
    return Path(root).resolve() / STORE_FILE


def record_demo(
    path: Path, result: ExperimentResult, answers: Mapping[str, Any], variants: Mapping[str, str]
) -> Store:
    """A fresh store at ``path`` holding the demo's runs and its answer checks; returns it."""
    from ...answers import load_answers
    from ...store import Store
    from ...workflows.experiment import record_sources, record_variant, start_variants

    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        stale.unlink(missing_ok=True)
    store = Store.open(f"sqlite:///{path}")
    exp = result.experiment
    declared = {v.name: v for v in exp.all_variants}
    ids = start_variants(store, exp, [declared[r.name] for r in result.variants])
    by_name = dict(zip([v.name for v in result.variants], ids, strict=True))
    for r in result.variants:
        record_variant(store, exp, by_name[r.name], r)
    record_sources(store, exp, result, ids)
    golden = result.golden
    contexts = answers.get("contexts") or {}
    for run_name, answers_name in variants.items():
        report = answers["reports"].get(answers_name)
        if report is None:
            continue
        source = exp.path.parent / "answers" / f"{answers_name}.jsonl"
        aset = load_answers(source, golden=golden, variant=answers_name)
        given = contexts.get(answers_name) or {}
        rows = []
        for a in aset.answers:
            row = a.model_dump(mode="json", exclude_none=True)
            if a.context is None and a.id in given:
                row["context"] = list(given[a.id])
            rows.append(row)
        store.record_answers(
            name=answers_name,
            answers=rows,
            report=report.to_dict(),
            golden_version=golden.version if golden is not None else None,
            source=str(source),
            run_id=by_name.get(run_name),
        )
    return store


def listen_for_lab(port: int) -> socket.socket:
    """The lab's socket on 127.0.0.1:``port``, bound before the demo runs, as ``ragmeter lab``
    binds it (:func:`ragmeter.lab._listen.listen`): a taken port is one ``error:`` line and exit
    code 2 at once, not exit 3 from uvicorn after a minute of demo."""
    from ...lab import listen

    return listen(HOST, port)


def serve_lab(console: Console, store: Store, sock: socket.socket, port: int, root: Path) -> None:
    """Serve the lab on the demo store at 127.0.0.1:``port`` (``sock``, from
    :func:`listen_for_lab`) until Ctrl-C, as ``ragmeter lab`` serves it; ``root`` is the
    example's folder, the lab's folder (its experiment file is opened only inside it)."""
    from ...lab import create_app, serve, where

    app = create_app(store=store, root=root)
    url = f"http://{where(HOST, port)}/"
    console.rule("[bold]The lab")
    console.print(
        lit(
            f"The demo's runs and answer checks are in {store.display_url} (the demo's own "
            "store, rewritten by each demo --lab)."
        ),
        soft_wrap=True,
    )
    console.print(lit(f"The lab is on {url}  (Ctrl-C stops it). To open it again later:"))
    folder = shlex.quote(str(app.state.lab.root))
    again = f"{invoked_as()} lab --db {shlex.quote(store.url)} --root {folder}"
    console.print(lit(f"  {again}"), soft_wrap=True)
    serve(app, sock, HOST, port)
