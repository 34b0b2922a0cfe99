"""``ragmeter demo``: run the whole chain on the bundled examples.

The demo is an interface like the other commands: it calls the library and prints with the
same rich renderers (``cli/_render_*.py``), so it lives here, one package per section
(``_toy_section``, ``_chain_section``, ``_answers_section``, ``_verdict_section``) plus the
lesson's toy data (``toy``). The library below never imports it.
"""

from __future__ import annotations

from pathlib import Path

import typer

from .._common import console, handle_errors


def register(app: typer.Typer) -> None:
    app.command("demo")(demo_cmd)


@handle_errors
def demo_cmd(
    example: Path | None = typer.Option(
        None,
        help="The fare-rules example folder (default: ./examples/fare-rules in a checkout, "
        "else the copy ragmeter ships).",
    ),
    cache_dir: Path | None = typer.Option(
        None,
        help="Cache for chunkings, indexes and embeddings (default: beside the example in a "
        "checkout; installed, the platform's cache folder, e.g. ~/.cache/ragmeter, which also "
        "holds the shipped example's copy).",
    ),
    toy_only: bool = typer.Option(
        False, "--toy-only", help="Only the toy table of the RAG evaluation lesson."
    ),
    lab: bool = typer.Option(
        False,
        "--lab",
        help="Then open the lab on the demo's runs (recorded in demo-lab.db in the cache folder).",
    ),
    port: int = typer.Option(8765, "--port", help="The lab's port (with --lab)."),
    details: bool = typer.Option(
        False,
        "--details",
        help="Also list every answer check behind section 4's counts: each quote and value "
        "not found in the cited passage, each faithful-but-wrong answer (about 350 lines).",
    ),
) -> None:
    """The toy table of the RAG evaluation lesson, then the fare-rules example through the
    whole chain.

    Synthetic data; no network, no paid call, nothing written outside the cache (--lab: the
    demo's own store, in the cache folder, and the lab on 127.0.0.1 until Ctrl-C).
    """
    from ..._numbers import whole
    from ._chain_section import (
        ANSWER_VARIANTS,
        answers_section,
        budget_section,
        experiment_section,
    )
    from ._confirm_section import confirm_section
    from ._embeddings import seed_cache
    from ._example import experiment_cache, find_example
    from ._lab_section import (
        closing_lines,
        demo_store_path,
        listen_for_lab,
        record_demo,
        serve_lab,
    )
    from ._toy_section import run as toy
    from ._verdict_section import verdict_section

    whole("--port", port, low=1, high=65535)
    if cache_dir is not None:  # before a minute of demo: never the store, never the example
        from .._outputs import check_folder
        from ._lab_section import STORE_FILE

        made = [STORE_FILE, f"{STORE_FILE}-wal", f"{STORE_FILE}-shm"] if lab else []
        check_folder(cache_dir, option="--cache-dir", inputs=[example], files=made)
    sock = None
    if lab:  # before a minute of demo: uvicorn there, the port ours (else one line, exit 2)
        from ..._extras import require

        require("uvicorn", "the lab (ragmeter demo --lab)")
        sock = listen_for_lab(port)
    try:
        toy(console)
        if toy_only:
            return
        found = find_example(example, cache_dir)  # installed: a copy in the cache folder
        folder, cache = found.folder, found.cache_dir
        seed_cache(folder, experiment_cache(found))  # the shipped vectors: nothing to embed
        budget_section(console)
        result = experiment_section(console, folder, cache)
        answers = answers_section(console, folder, result, details=details)
        verdicts = verdict_section(console, result, answers["diagnosis"])
        confirm_section(console, result, verdicts)
        if sock is None:
            closing_lines(console, example, cache_dir)
            return
        path = demo_store_path(result, cache)
        with record_demo(path, result, answers, ANSWER_VARIANTS) as store:
            serve_lab(console, store, sock, port, result.experiment.path.parent)
    finally:
        if sock is not None:
            sock.close()  # the lab closes it when it ends; a demo that failed, here
