"""``ragmeter compare``: two scored runs compared question by question. The job is
:func:`ragmeter.workflows.compare.compare_runs`; the tables and lines are
:mod:`._render_compare`'s. ``ragmeter gate`` shares the store and ledger handling below."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ._common import Format, err_console, handle_errors, print_json, write_csv
from ._store_options import db_option, no_store_option
from ._traffic_options import field_option, floor_option, shares_option, traffic_option

if TYPE_CHECKING:  # keeps `ragmeter --help` fast
    from ..store import Store
    from ..workflows.compare import CompareOutcome


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_cmd)


#: the help of --qrels (compare and gate)
SCORE_HELP = "Score run files (BASE and CAND) against these qrels instead of reading eval JSON."


@handle_errors
def compare_cmd(
    base: str = typer.Argument(
        ...,
        metavar="BASE",
        help="Baseline: a stored run (12, run:12, run:12:chunk), 'ragmeter eval --per-query "
        "--format json' output (PATH or PATH#RUN), a run file with --qrels, or a per-question "
        "outcome file (.csv or .jsonl of id and value).",
    ),
    cand: str = typer.Argument(..., metavar="CAND", help="Candidate, in the same form as BASE."),
    metric: str | None = typer.Option(
        None,
        "--metric",
        "-m",
        help="Metric at the prompt k or budget, e.g. 'Hit@5', 'nDCG(gain=exp)@3'.",
    ),
    resamples: int = typer.Option(5000, "--resamples", help="Bootstrap resamples."),
    seed: int = typer.Option(0, "--seed", help="Seed for numpy.random.default_rng."),
    confidence: float = typer.Option(0.95, "--confidence", help="Interval coverage."),
    randomisation: bool = typer.Option(
        False, "--randomisation", help="Also run the paired randomisation test."
    ),
    strict: bool = typer.Option(
        False,
        "--strict",
        help="Refuse runs with different context budgets or effective k instead of warning.",
    ),
    intersect: bool = typer.Option(
        False,
        "--intersect",
        help="Compare only the questions both "
        "runs have (default: refuse runs on different questions).",
    ),
    movers: int = typer.Option(10, "--movers", help="Biggest movers shown each way."),
    ledger: Path | None = typer.Option(
        None,
        "--ledger",
        help="Selection ledger (JSONL) counting comparisons per golden version. Default: the "
        "store's ledger; with --no-store .ragmeter/ledger.jsonl.",
        show_default=False,
    ),
    no_ledger: bool = typer.Option(False, "--no-ledger", help="Do not count this comparison."),
    qrels: Path | None = typer.Option(None, "--qrels", help=SCORE_HELP),
    golden: Path | None = typer.Option(
        None,
        "--golden",
        help="Span-labelled golden set (with --chunks) to score run files against.",
    ),
    chunks: list[Path] | None = typer.Option(
        None, "--chunks", help="Chunking the runs refer to (once, or baseline's then candidate's)."
    ),
    cover: float = typer.Option(0.5, "--cover", help="Span share that counts as found."),
    human_labels: list[Path] | None = typer.Option(
        None,
        "--human-labels",
        help="Human verdicts on both sides' answers (JSONL of id, run, label; or twice: the "
        "baseline's review export, then the candidate's): adds the prediction-powered interval.",
    ),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json or csv."),
    db: str | None = db_option(),
    no_store: bool = no_store_option("the selection ledger is then .ragmeter/ledger.jsonl"),
    traffic: Path | None = traffic_option(),
    traffic_shares: str | None = shares_option(),
    traffic_field: str = field_option(),
    traffic_floor: float = floor_option(),
) -> None:
    """Compare two scored runs question by question: interval, sign test, slices, movers."""
    from ..workflows import compare as flow
    from ..workflows.refs import Scoring
    from ._render_compare import print_comparison, print_ppi, print_traffic, say_warnings
    from ._store_options import open_store
    from ._traffic_options import traffic_request

    if ledger is not None and not no_ledger:  # appended to: never the store, never an input
        check_ledger(ledger, [base, cand], [qrels, golden, *(chunks or [])], db)
    weigh = traffic_request(traffic, traffic_shares, traffic_field, traffic_floor)
    store = open_store(db, no_store, read_only_ok=True)
    options = flow.CompareOptions(
        n_resamples=resamples,
        seed=seed,
        confidence=confidence,
        randomisation=randomisation,
        strict=strict,
        intersect=intersect,
        max_movers=movers,
    )
    # a read-only store counts nothing (record_and_say says so)
    book = flow.LedgerUse(count_in=flow.ledger_for(store, ledger, no_ledger=no_ledger))
    with comparing(store):
        out = flow.compare_runs(
            base,
            cand,
            metric,
            store=store,
            scoring=Scoring(qrels, golden, tuple(chunks or ()), cover),
            options=options,
            ledger=book,
            human_labels=tuple(human_labels or ()),
            traffic=weigh,
        )
    c = out.comparison
    say_warnings(c)
    if fmt == Format.json:
        print_json(c.to_dict())  # with "traffic" when asked
    elif fmt == Format.csv:
        write_csv(*c.csv_rows())
    else:
        print_comparison(c)
        if c.ppi is not None:
            print_ppi(c.ppi)
        if out.traffic is not None:
            print_traffic(out.traffic)
    record_and_say(store, out)


# -- shared with ``ragmeter gate`` -----------------------------------------------------------------
@contextlib.contextmanager
def comparing(store: Store | None) -> Iterator[None]:
    """Around a comparison: a store that fails is one line naming it; a spinner on stderr."""
    from ._store_options import store_errors

    errors = contextlib.nullcontext() if store is None else store_errors(store.url)
    with errors, err_console.status("resampling questions..."):
        yield


def record_and_say(store: Store | None, outcome: CompareOutcome) -> None:
    """Record the comparison (with the stored runs it read, when it read any) and say so; a
    read-only store records nothing and says that instead."""
    from ..workflows.compare import record
    from ._render_compare import say_not_recorded
    from ._store_options import say_stored, store_errors

    if store is None:
        return
    with store_errors(store.url):
        cid = record(store, outcome)
    if cid is None:
        say_not_recorded(store)
    else:
        say_stored(store, "comparison", [cid])


def check_ledger(ledger: Path, runs: list[str], files: list[Path | None], db: str | None) -> None:
    """Before any work: the ``--ledger`` appended to is not the store, a folder, an input
    (cli/_outputs.py), nor an existing file that is not a selection ledger."""
    from ..workflows.compare import check_ledger_file
    from ..workflows.refs import named_files
    from ._outputs import check_append

    check_append(ledger, option="--ledger", inputs=[*files, *named_files(runs)], db=db)
    check_ledger_file(ledger)
