"""``ragmeter confirm EXPERIMENT.toml --variant NAME``: the chosen variant against the baseline,
once, on the held-out split, recorded in the selection ledger. The job is
:func:`ragmeter.workflows.confirm.confirm`.

Exit codes: 0 confirmed; 1 not confirmed (the rule as written refutes it on the held-out split:
fixed - broken <= 0 or an interval that includes 0), or it holds up but a different variant had
been confirmed on that split first (the split was no longer held out); 2 usage or input error.
A re-run for a variant already confirmed records nothing and exits as its recorded result does.
"""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from .._errors import RagmeterWarning
from ._common import TITLE, TableJson, console, err_console, handle_errors, line, lit, print_json
from ._store_options import db_option, no_store_option

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console
    from rich.table import Table

    from ..workflows.confirm import Confirmation


def register(app: typer.Typer) -> None:
    app.command("confirm")(confirm_cmd)


@handle_errors
def confirm_cmd(
    experiment: Path = typer.Argument(
        ..., help="Experiment file (TOML) whose baseline and variant are compared."
    ),
    variant: str = typer.Option(
        ..., "--variant", "-v", help="The variant chosen on the tuning questions (its name)."
    ),
    metric: str | None = typer.Option(
        None,
        "--metric",
        "-m",
        help="Metric (default: AllR at the baseline's prompt k, else at its token budget; without "
        "AllR, the experiment's first metric there).",
    ),
    resamples: int = typer.Option(5000, "--resamples", help="Bootstrap resamples."),
    seed: int = typer.Option(0, "--seed", help="Seed for numpy.random.default_rng."),
    confidence: float = typer.Option(0.95, "--confidence", help="Interval coverage."),
    ledger: Path | None = typer.Option(
        None,
        "--ledger",
        help="Selection ledger (JSONL) the confirmation is recorded in. Default: the store's "
        "ledger; with --no-store .ragmeter/ledger.jsonl.",
        show_default=False,
    ),
    cache_dir: Path | None = typer.Option(
        None,
        "--cache-dir",
        help="Cache folder (default: the file's 'cache', else .ragmeter-cache/ beside it).",
    ),
    allow_outside: bool = typer.Option(
        False, "--allow-outside", help="Let the file's cache point outside its folder."
    ),
    fmt: TableJson = typer.Option(TableJson.table, "--format", "-f", help="table or json."),
    db: str | None = db_option(),
    no_store: bool = no_store_option("the confirmation is then in .ragmeter/ledger.jsonl"),
) -> None:
    """Compare the chosen variant with the baseline once on the held-out split; record it.

    Exit code 0 confirmed; 1 not confirmed on the held-out split, or confirmed after a different
    variant (the split was no longer held out); 2 usage or input error.
    """
    from ..workflows import compare as cmp
    from ..workflows.confirm import confirm
    from ._compare import check_ledger
    from ._run import check_writes
    from ._store_options import open_store, shown_url, store_errors

    if ledger is not None:  # appended to: never the store, never an input
        check_ledger(ledger, [], [experiment], db)
    check_writes(experiment, cache_dir, allow_outside=allow_outside, db=db)
    store = open_store(db, no_store)  # a read-only store cannot record it: refused here
    book = cmp.ledger_for(store, ledger)
    options = cmp.CompareOptions(n_resamples=resamples, seed=seed, confidence=confidence)
    errors = contextlib.nullcontext() if store is None else store_errors(store.url)
    with errors, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RagmeterWarning)
        out = confirm(
            experiment,
            variant,
            ledger=book,
            metric=metric,
            options=options,
            cache_dir=cache_dir,
            allow_outside=allow_outside,
            console=err_console,
        )
    for w in caught:
        if issubclass(w.category, RagmeterWarning):
            err_console.print(line(("warning:", "yellow"), f" {w.message}"))
    for problem in out.comparison.fairness:
        err_console.print(line(("warning:", "yellow"), f" not a fair test: {problem}"))
    if fmt is TableJson.json:
        print_json(out.to_dict())
    else:
        print_confirmation(console, out)
    if out.warning is not None:
        spent_panel(err_console, out)
    where = ledger if ledger is not None else (shown_url(store) if store else book)
    err_console.print(lit(recorded_line(out, str(where))), soft_wrap=True)
    if out.exit_code:
        raise typer.Exit(out.exit_code)


def recorded_line(c: Confirmation, where: str) -> str:
    """The line on stderr saying where the confirmation was recorded (or that it already was)."""
    if c.already:
        return f"recorded nothing: already in the selection ledger ({where})"
    return f"recorded: the confirmation, in the selection ledger ({where})"


def confirmation_table(c: Confirmation) -> Table:
    """One row: the held-out split's n, means, difference, interval, fixed/broken, sign p (fits
    80 columns)."""
    from rich import box
    from rich.table import Table

    from .._pvalue import format_p

    r = c.result
    t = Table(
        title=lit(f"{c.variant} vs {c.baseline} on {c.metric}, {c.split} split only", TITLE),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    for col in ("split", "n", "base", "cand", "diff", "95% interval", "fixed/broken", "sign p"):
        t.add_column(col, justify="left" if col == "split" else "right", no_wrap=True)

    def num(x: float | None, fmt: str = ".3f") -> str:
        return "-" if x is None else format(x, fmt)

    t.add_row(
        lit(c.split),
        str(r.n),
        num(r.baseline_mean),
        num(r.candidate_mean),
        num(r.mean_delta, "+.3f"),
        r.interval,
        "-" if r.fixed is None else f"{r.fixed}/{r.broken}",
        "-" if r.sign_test_p is None else format_p(r.sign_test_p),
    )
    return t


def print_confirmation(out: Console, c: Confirmation) -> None:
    """The table, the verdict and what was recorded (the lines ``ragmeter confirm`` prints)."""
    if c.already and c.entry is not None:
        out.print(
            lit(
                f"{c.variant_id} was already confirmed on the {c.split} split of golden set "
                f"version {c.golden_version} ({c.entry.get('time', 'time unknown')}): the "
                "recorded result is shown and nothing is recorded again."
            )
        )
    out.print(confirmation_table(c))
    ok = c.status == "confirmed"
    out.print(line((c.status, "green" if ok else "red"), f": {c.sentence()}"))
    if not c.already:
        fixed = ", ".join(c.fixed_ids) or "none"
        broken = ", ".join(c.broken_ids) or "none"
        out.print(lit(f"Fixed: {fixed}. Broken: {broken}."))
    elif c.measured.to_dict() != c.result.to_dict():
        out.print(
            lit(
                f"Measured now: {c.measured.counts()}, interval {c.measured.interval} (the "
                "experiment or its cache changed since; the recorded result stands)."
            )
        )


def spent_panel(out: Console, c: Confirmation) -> None:
    """The loud warning: a red panel once two variants were confirmed on the split."""
    from rich.panel import Panel

    out.print(
        Panel(
            lit(f"warning: {c.warning}", "red"),
            title=lit(f"the {c.split} split is no longer held out", "bold red"),
            border_style="red",
        )
    )
