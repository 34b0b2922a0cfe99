"""``ragmeter lab``: the lab in the browser over the experiment store (``ragmeter report``, the
same views as one self-contained HTML file, is in ``_report.py``)."""

from __future__ import annotations

from pathlib import Path

import typer

from ._common import err_console, handle_errors, line, lit
from ._lab_users import add_users
from ._store_options import db_option


def register(app: typer.Typer) -> None:
    lab_app = typer.Typer()
    lab_app.callback(invoke_without_command=True)(lab_cmd)
    add_users(lab_app)  # ragmeter lab users add|list|remove
    app.add_typer(lab_app, name="lab")


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (the lab applies the same rule)."""
    import ipaddress

    name = host.strip().strip("[]").lower()
    try:
        return name == "localhost" or ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@handle_errors
def lab_cmd(
    ctx: typer.Context,
    db: str | None = db_option(),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to bind (loopback by default: the lab is local)."
    ),
    port: int = typer.Option(8765, "--port", help="Port to listen on."),
    allowed_host: list[str] | None = typer.Option(
        None,
        "--allowed-host",
        metavar="NAME",
        help="Also answer requests whose Host header names NAME (the name a reverse proxy "
        "passes on; repeatable). A name that is not loopback makes the lab shared: every "
        "request needs a labeller's token (ragmeter lab users add; docs/team.md).",
    ),
    open_browser: bool = typer.Option(False, "--open", help="Open the lab in a browser."),
    root: Path | None = typer.Option(
        None,
        "--root",
        help="The experiments folder (default: the current one): the experiment and chunk "
        "files stored runs name are opened, and re-run, only inside it.",
    ),
    labeller: str | None = typer.Option(
        None,
        "--labeller",
        help="Who labels in the label view on loopback (default: your user name); recorded "
        "with every label saved.",
    ),
) -> None:
    """Open the lab: every stored run, metrics at any k or budget, ranked lists with the
    labelled evidence marked, comparisons, sweeps and diagnosis (needs the web extra). Served
    beyond loopback, every request needs a labeller's token (lab users add; docs/team.md)."""
    if ctx.invoked_subcommand is not None:  # ragmeter lab users ...: the lab does not start
        return
    from .._extras import require
    from .._numbers import whole

    whole("--port", port, low=1, high=65535)
    require("uvicorn", "the lab (ragmeter lab)")
    from ..lab import create_app, listen, serve, where
    from ._store_options import store_errors

    with store_errors(db):
        app = create_app(
            db, host=host, root=root, labeller=labeller, allowed_hosts=allowed_host or ()
        )
    # bound here, not by uvicorn: a taken port or a foreign address is one error line, exit 2
    try:
        sock = listen(host, port)
    except BaseException:
        app.state.lab.store.close()  # nothing of the store left open behind the error
        raise
    if not is_loopback(host):
        err_console.print(
            line(
                ("warning:", "yellow"),
                f" the lab binds {host}, not loopback: anyone who can reach this machine on port "
                f"{port} reaches it. Every request needs a labeller's token, and over plain http "
                "a token crosses the network readable: serve the lab on 127.0.0.1 behind a TLS "
                "reverse proxy (docs/team.md) unless this network is yours.",
            )
        )
    elif any(not is_loopback(h) for h in allowed_host or ()):
        shared = ", ".join(h for h in allowed_host or () if not is_loopback(h))
        err_console.print(
            lit(f"shared through {shared}: every request needs a labeller's token (docs/team.md)")
        )
    url = f"http://{where(host, port)}/"
    err_console.print(lit(f"ragmeter lab on {url}  (store: {app.state.lab.store.display_url})"))
    err_console.print(lit("Ctrl-C stops it."))
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(0.8, lambda: webbrowser.open(url)).start()
    serve(app, sock, host, port)
