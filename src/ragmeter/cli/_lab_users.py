"""``ragmeter lab users add|list|remove``: who may use the lab when it is served beyond loopback
(docs/team.md).

Added to the ``lab`` command group by :func:`add_users`. Each labeller gets one token, printed
once by ``add`` (on stdout, alone, so a script can keep it; what to do with it on stderr); the
store keeps only its sha256. ``list`` never shows a token (the store has none to show).
``remove`` takes the token away: the labeller can no longer sign in, and a session of theirs
ends at its next request; their labels stay theirs in the store. Exit codes: 0 ok; 2 usage
error (a name that exists with a token, an unknown name, no terminal to ask on without --yes).
"""

from __future__ import annotations

import sys

import typer

from .._errors import UsageError
from ._common import Format, console, err_console, handle_errors, lit, print_json
from ._store_options import db_option, open_required, open_store, shown_url, store_errors

users_app = typer.Typer(
    help="Labellers and their tokens: who may use the lab when it is served beyond loopback.",
    no_args_is_help=True,
)


def add_users(lab_app: typer.Typer) -> None:
    lab_app.add_typer(users_app, name="users")


def can_ask() -> bool:
    """True when there is a terminal to ask on (tests replace this)."""
    return sys.stdin.isatty()


@users_app.command("add")
@handle_errors
def add_cmd(
    name: str = typer.Argument(
        ..., help="The labeller's name (1-100 printable characters), shown beside their labels."
    ),
    db: str | None = db_option(),
) -> None:
    """Add a labeller and print their token, once: the store keeps only its hash.

    A name the store knows without a token (the loopback labeller, or one whose token was
    removed) gets a new token and keeps its labels; a name with a token is refused."""
    from .._errors import NotFoundError

    store = open_store(db)
    assert store is not None
    with store_errors(store.url):
        try:
            known = store.labeller(name)
        except NotFoundError:
            known = None
        if known is None:
            row, token = store.add_labeller(name)
            what = "added"
        elif known.has_token:
            raise UsageError(
                f"labeller {name!r} already has a token in {shown_url(store)}; to give them a "
                f"new one, remove it first: ragmeter lab users remove {name!r}"
            )
        else:
            row, token = store.issue_token(name)
            what = "given a token (their labels stay theirs)"
    assert token is not None
    sys.stdout.write(token + "\n")
    sys.stdout.flush()
    err_console.print(
        lit(
            f"labeller {row.name!r} {what} in {shown_url(store)}. The line above is their "
            "token, shown this once (the store keeps only its hash): give it to them privately. "
            "They paste it on the lab's sign-in page (/login), or a script sends "
            "'Authorization: Bearer TOKEN'. A lost token: `ragmeter lab users remove NAME`, "
            "then add them again."
        ),
        soft_wrap=True,
    )


@users_app.command("list")
@handle_errors
def list_cmd(
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table or json."),
    db: str | None = db_option(),
) -> None:
    """The labellers: name, when they were added, whether they have a token (never the token)."""
    from rich import box
    from rich.table import Table

    store = open_required(db)
    with store_errors(store.url):
        rows = store.labellers()
    if fmt == Format.json:
        print_json(
            [
                {"name": r.name, "created_at": r.created_at.isoformat(), "token": r.has_token}
                for r in rows
            ]
        )
        return
    if not rows:
        err_console.print(
            lit(f"no labellers in {shown_url(store)}: add one with `ragmeter lab users add NAME`")
        )
        return
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    t.add_column("name", overflow="fold")
    t.add_column("created (UTC)", no_wrap=True)
    t.add_column("token")
    for r in rows:
        token = "yes" if r.has_token else "none (loopback only)"
        t.add_row(lit(r.name), lit(f"{r.created_at:%Y-%m-%d %H:%M}"), lit(token))
    console.print(t)


@users_app.command("remove")
@handle_errors
def remove_cmd(
    name: str = typer.Argument(..., help="The labeller whose token to remove."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Remove without asking."),
    db: str | None = db_option(),
) -> None:
    """Remove a labeller's token (asks first; without a terminal, only --yes removes): they can
    no longer sign in, a session of theirs ends at its next request, their labels stay."""
    store = open_store(db)
    assert store is not None
    with store_errors(store.url):
        row = store.labeller(name)  # an unknown name: the error lists the labellers
    if not row.has_token:
        err_console.print(lit(f"labeller {name!r} has no token: nothing to remove"))
        return
    what = f"the token of {name!r} from {shown_url(store)}"
    if not yes:
        if not can_ask():
            raise UsageError(f"not removing {what}: no terminal to ask on; pass --yes to remove")
        if not typer.confirm(
            f"Remove {what}? They can no longer sign in; their labels stay.",
            default=False,
            err=True,
        ):
            err_console.print("nothing removed")
            return
    with store_errors(store.url):
        store.revoke_token(name)
    err_console.print(
        lit(f"removed {what}: they can no longer sign in; their labels stay in the store")
    )
