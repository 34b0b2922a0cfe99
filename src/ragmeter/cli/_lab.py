"""``ragmeter lab``: the lab in the browser over the experiment store (``ragmeter report``, the
same views as one self-contained HTML file, is in ``_report.py``)."""

from __future__ import annotations

from pathlib import Path

import typer

from ._common import err_console, handle_errors, line, lit
from ._store_options import db_option

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def register(app: typer.Typer) -> None:
    app.command("lab")(lab_cmd)


@handle_errors
def lab_cmd(
    db: str | None = db_option(),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to bind (loopback by default: the lab is local)."
    ),
    port: int = typer.Option(8765, "--port", help="Port to listen on."),
    open_browser: bool = typer.Option(False, "--open", help="Open the lab in a browser."),
    root: Path | None = typer.Option(
        None,
        "--root",
        help="The experiments folder (default: the current one): the experiment and chunk "
        "files stored runs name are opened, and re-run, only inside it.",
    ),
) -> None:
    """Open the lab: every stored run, metrics at any k or budget, ranked lists with the
    labelled evidence marked, comparisons, sweeps and diagnosis (needs the web extra)."""
    from .._extras import require
    from .._numbers import whole

    whole("--port", port, low=1, high=65535)
    require("uvicorn", "the lab (ragmeter lab)")
    from ..lab import create_app, listen, serve, where
    from ._store_options import store_errors

    with store_errors(db):
        app = create_app(db, host=host, root=root)
    # bound here, not by uvicorn: a taken port or a foreign address is one error line, exit 2
    try:
        sock = listen(host, port)
    except BaseException:
        app.state.lab.store.close()  # nothing of the store left open behind the error
        raise
    if host not in LOOPBACK:
        err_console.print(
            line(
                ("warning:", "yellow"),
                f" the lab binds {host}, not loopback: anyone who can reach this machine on port "
                f"{port} can read every stored run and start runs. Use --host 127.0.0.1 unless "
                "you mean it.",
            )
        )
    url = f"http://{where(host, port)}/"
    err_console.print(lit(f"ragmeter lab on {url}  (store: {app.state.lab.store.display_url})"))
    err_console.print(lit("Ctrl-C stops it."))
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(0.8, lambda: webbrowser.open(url)).start()
    serve(app, sock, host, port)
