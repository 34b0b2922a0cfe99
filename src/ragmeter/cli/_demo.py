"""``ragmeter demo``: run the whole chain on the bundled examples."""

from __future__ import annotations

import typer

from ._common import console, handle_errors


def register(app: typer.Typer) -> None:
    app.command("demo")(demo_cmd)


@handle_errors
def demo_cmd() -> None:
    """Run the seed's toy example and the fare-rules example through the real engine."""
    from ..demo._toy_section import run as toy

    toy(console)
