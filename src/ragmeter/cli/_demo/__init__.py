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
        None, help="The fare-rules example folder (default: ./examples/fare-rules)."
    ),
    cache_dir: Path | None = typer.Option(
        None, help="Cache for chunkings, indexes and embeddings (default: beside the example)."
    ),
    toy_only: bool = typer.Option(
        False, "--toy-only", help="Only the toy table of the RAG evaluation lesson."
    ),
) -> None:
    """The toy table of the RAG evaluation lesson, then the fare-rules example through the
    whole chain.

    Synthetic data; no network, no paid call, nothing written outside the cache.
    """
    from ._chain_section import answers_section, budget_section, experiment_section, find_example
    from ._toy_section import run as toy
    from ._verdict_section import verdict_section

    toy(console)
    if toy_only:
        return
    folder = find_example(example)
    budget_section(console)
    result = experiment_section(console, folder, cache_dir)
    answers = answers_section(console, folder, result)
    verdict_section(console, result, answers["diagnosis"])
