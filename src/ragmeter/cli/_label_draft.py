"""``ragmeter label draft``: an OpenAI-compatible generator drafts questions from spans into an
evidence queue (docs/labelling.md, "Drafting questions"). The drafts wait in the queue for a
labeller to accept or edit them in the lab; none is frozen before.

Exit codes: 0 ok; 1 a draft request failed (the failures are listed, the other drafts are
added); 2 usage or input error (a bad span names it, an unknown queue lists those that exist).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ._common import TITLE, console, handle_errors, lit, print_json
from ._store_options import db_option

if TYPE_CHECKING:  # pragma: no cover
    from ..workflows.drafts import Drafted


class Output(StrEnum):
    table = "table"
    json = "json"


def add_draft(label_app: typer.Typer) -> None:
    """Register ``label draft`` on the ``label`` group."""
    label_app.command("draft")(draft_cmd)


@handle_errors
def draft_cmd(
    queue: Annotated[str, typer.Argument(help="The evidence queue the drafts join.")],
    base_url: Annotated[
        str,
        typer.Option(
            "--base-url",
            help="The generator's OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 "
            "(docs/judges.md shows the servers).",
        ),
    ],
    model: Annotated[str, typer.Option("--model", help="The generator's model name.")],
    n: Annotated[
        int | None,
        typer.Option(
            "-n", help="Passages to pick from the queue's corpus, stratified by document."
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the passages picked.")] = 0,
    span: Annotated[
        list[str] | None,
        typer.Option(
            "--span",
            help="A passage to draft from: DOC:START:END (code-point offsets into the "
            "document's text); repeat for several.",
        ),
    ] = None,
    key_env: Annotated[
        str | None,
        typer.Option("--key-env", help="Name of the environment variable holding the API key."),
    ] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds for one request.")] = 60.0,
    retries: Annotated[int, typer.Option("--retries", help="Retries of a request.")] = 3,
    concurrency: Annotated[
        int, typer.Option("--concurrency", help="Requests in flight at once.")
    ] = 4,
    cache: Annotated[
        Path | None,
        typer.Option("--cache", help="Disk cache of the generator's replies (a folder)."),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Pick the passages and show them; send nothing."),
    ] = False,
    db: str | None = db_option(),
    fmt: Annotated[Output, typer.Option("--format", "-f", help="table or json.")] = Output.table,
) -> None:
    """Draft questions answerable from passages; each joins the queue as a draft whose
    evidence is its passage, until a labeller accepts or edits it in the lab."""
    from ..workflows.drafts import draft_questions, parse_span
    from ._store_options import open_required, open_store

    spans = [parse_span(s) for s in span] if span else None
    if spans is not None and n is not None:
        raise typer.BadParameter("give --span or -n, not both", param_hint="-n")
    store = open_required(db) if dry_run else open_store(db)
    assert store is not None  # (open_store gives None only with --no-store)
    with store:
        done = draft_questions(
            store,
            queue,
            base_url=base_url,
            model=model,
            spans=spans,
            n=n,
            seed=seed,
            api_key_env=key_env,
            timeout=timeout,
            max_retries=retries,
            concurrency=concurrency,
            cache_dir=cache,
            dry_run=dry_run,
        )
    if fmt is Output.json:
        print_json(done.to_dict())
    else:
        _print(done)
    if done.failed:
        raise typer.Exit(1)


def _print(done: Drafted) -> None:
    from rich.table import Table

    title = "passages a draft would be written from" if done.dry_run else "drafted questions"
    table = Table(title=lit(f"{title} · {done.queue}", TITLE))
    for col in ("span", "passage" if done.dry_run else "question"):
        table.add_column(col)
    for o in done.outcomes:
        where = f"{o.span.doc}:{o.span.start}:{o.span.end}"
        if done.dry_run:
            shown = o.text if len(o.text) <= 120 else o.text[:119] + "…"
        elif o.error is not None:
            shown = f"failed: {o.error}"
        else:
            shown = o.question or "(no question: the model replied NONE)"
        table.add_row(lit(where), lit(shown))
    console.print(table)
    if done.dry_run:
        console.print(
            lit(f"dry run: {len(done.outcomes)} passage(s); nothing sent, nothing added"),
            soft_wrap=True,
        )
        return
    console.print(
        lit(
            f"{len(done.added)} draft(s) added to {done.queue} (model {done.model}, prompt "
            f"{done.prompt_id} sha256 {done.prompt_sha256[:12]}); {len(done.declined)} passage(s) "
            f"without a question; {len(done.failed)} failed. Accept or edit them in the lab: "
            f"/label/{done.queue}"
        ),
        soft_wrap=True,
    )
