"""``ragmeter gate``: exit 1 when the candidate regresses by a rule stated before the numbers
(the CI gate). The job is :func:`ragmeter.workflows.gate.run_gate`; the comparison renders as
``ragmeter compare``'s, then the rule's checks."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from .._errors import UsageError
from ._common import Format, console, handle_errors, lit, print_json
from ._compare import SCORE_HELP
from ._store_options import db_option, no_store_option
from ._traffic_options import field_option, floor_option, shares_option, traffic_option


def register(app: typer.Typer) -> None:
    app.command("gate")(gate_cmd)


@handle_errors
def gate_cmd(
    base: str = typer.Argument(
        ...,
        metavar="BASE",
        help="Baseline (a stored run 12 or run:12, eval JSON, PATH#RUN, or a run with --qrels).",
    ),
    cand: str = typer.Argument(..., metavar="CAND", help="Candidate, in the same form as BASE."),
    metric: str | None = typer.Option(None, "--metric", "-m", help="e.g. 'AllR@budget=1200'."),
    max_broken: int | None = typer.Option(
        None, "--max-broken", help="Fail when more questions than this break."
    ),
    min_delta: float | None = typer.Option(
        None, "--min-delta", help="Fail when the mean difference is below this."
    ),
    require_ci_above: float | None = typer.Option(
        None, "--require-ci-above", help="Fail when the interval's lower end is below this."
    ),
    per_slice: bool = typer.Option(False, "--per-slice", help="Apply the rule in every slice too."),
    min_slice: int = typer.Option(
        10,
        "--min-slice",
        "--min-slice-size",
        help="With --per-slice, skip slices with fewer questions (a direction, not a result).",
    ),
    markdown: Path | None = typer.Option(None, "--markdown", help="Write a markdown summary."),
    junit: Path | None = typer.Option(None, "--junit", help="Write JUnit XML for CI."),
    report: Path | None = typer.Option(
        None,
        "--report",
        help="Write the HTML report of the two stored runs (one self-contained file, no network).",
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Replace a --markdown/--junit/--report file that is not a gate report.",
    ),
    resamples: int = typer.Option(5000, "--resamples", help="Bootstrap resamples."),
    seed: int = typer.Option(0, "--seed", help="Seed for numpy.random.default_rng."),
    strict: bool = typer.Option(False, "--strict", help="Refuse unfair comparisons."),
    intersect: bool = typer.Option(False, "--intersect", help="Compare common questions only."),
    ledger: Path | None = typer.Option(None, "--ledger", help="Count this comparison here."),
    qrels: Path | None = typer.Option(None, "--qrels", help=SCORE_HELP),
    golden: Path | None = typer.Option(None, "--golden", help="Span-labelled golden set."),
    chunks: list[Path] | None = typer.Option(
        None, "--chunks", help="Chunking the runs refer to (once, or baseline's then candidate's)."
    ),
    cover: float = typer.Option(0.5, "--cover", help="Span share that counts as found."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table or json."),
    db: str | None = db_option(),
    no_store: bool = no_store_option(),
    traffic: Path | None = traffic_option(),
    traffic_shares: str | None = shares_option(),
    traffic_field: str = field_option(),
    traffic_floor: float = floor_option(),
    stable: bool = typer.Option(
        False,
        "--stable",
        help="Count a question fixed/broken only when it is so in every repeat (BASE and CAND: "
        "answer_check.json of a run with repeat >= 2).",
    ),
) -> None:
    """Exit 1 when the candidate regresses by the rule given, 0 otherwise (CI gate)."""
    from ..paired import GateRule
    from ..workflows.gate import report_run_ids, rule_statement, run_gate, write_reports
    from ..workflows.refs import Scoring
    from ._compare import check_ledger, comparing, record_and_say
    from ._render_compare import print_gate, print_traffic, say_warnings
    from ._store_options import open_store
    from ._traffic_options import traffic_request

    _check_reports(
        markdown, junit, force, [base, cand], [qrels, golden, ledger, *(chunks or [])], report, db
    )
    if ledger is not None:  # appended to: never the store, never an input, never a report
        check_ledger(ledger, [base, cand], [qrels, golden, *(chunks or [])], db)
        for option, path in (("--markdown", markdown), ("--junit", junit), ("--report", report)):
            if path is not None and os.path.realpath(path) == os.path.realpath(ledger):
                raise UsageError(f"--ledger and {option} both name {ledger}; give separate files")
    weigh = traffic_request(traffic, traffic_shares, traffic_field, traffic_floor)
    store = open_store(db, no_store, read_only_ok=True)
    scoring = Scoring(qrels, golden, tuple(chunks or ()), cover)
    report_runs = (
        [] if report is None else report_run_ids([base, cand], store, scored=scoring.given)
    )
    rule = GateRule(
        max_broken=max_broken,
        min_delta=min_delta,
        require_ci_above=require_ci_above,
        per_slice=per_slice,
        min_slice=min_slice,
    )
    if metric is not None and fmt != Format.json:  # stated before any number is computed
        console.print(lit(f"Rule: {rule_statement(rule, metric)}"))
    with comparing(store):
        out = run_gate(
            base,
            cand,
            metric,
            rule,
            store=store,
            scoring=scoring,
            n_resamples=resamples,
            seed=seed,
            strict=strict,
            intersect=intersect,
            ledger=ledger,
            traffic=weigh,
            stable=stable,
        )
    say_warnings(out.compared.comparison)
    result = out.result
    write_reports(result, markdown=markdown, junit=junit)
    if report is not None and store is not None:
        from ..lab import write_report
        from ._store_options import store_errors

        # the report's comparison is the gate's: its metric, resamples, seed and question set
        options = {"n_resamples": resamples, "seed": seed, "intersect": intersect}
        with store_errors(store.url):
            write_report(store, report_runs, report, metric=metric, options=options)
    weighted = out.compared.traffic
    if fmt == Format.json:
        print_json(result.to_dict() | ({} if weighted is None else {"traffic": weighted.to_dict()}))
    else:
        print_gate(out.compared.comparison, result, rule, stated=metric is not None)
        if result.stable is not None:
            console.print(lit(result.stable_line()))
        if weighted is not None:  # reported beside the gate, never part of its decision
            console.print("Reported, not gated:")
            print_traffic(weighted)
    record_and_say(store, out.compared)
    if not out.passed:
        raise typer.Exit(1)


#: the first bytes of the gate's reports: a file that starts so is an earlier report, replaced
_REPORT_MARKS = {
    "--markdown": b"## ragmeter gate ",
    "--junit": b'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="ragmeter gate"',
}


def _is_html_report(path: Path) -> bool:
    """An earlier ``ragmeter report`` / ``gate --report`` file (its title comes within the
    first few kilobytes, after the inline Content-Security-Policy)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(8192)
    except OSError:
        return False
    return head.startswith(b"<!doctype html>") and b"<title>ragmeter report" in head


def _check_reports(
    markdown: Path | None,
    junit: Path | None,
    force: bool,
    runs: list[str],
    files: list[Path | None],
    report: Path | None = None,
    db: str | None = None,
) -> None:
    """Before any work: a report never replaces the store, an input, a folder or, without
    --force, a file that is not an earlier gate report (see cli/_outputs.py)."""
    from ..workflows.refs import named_files
    from ._outputs import check_output, starts_with

    inputs = [*files, *named_files(runs)]
    for option, path in (("--markdown", markdown), ("--junit", junit), ("--report", report)):
        if path is not None:
            mark = _is_html_report if option == "--report" else starts_with(_REPORT_MARKS[option])
            check_output(path, force=force, option=option, inputs=inputs, replaceable=mark, db=db)
    named = [("--markdown", markdown), ("--junit", junit), ("--report", report)]
    for i, (first, a) in enumerate(named):
        for second, b in named[i + 1 :]:
            if a is not None and b is not None and a.resolve() == b.resolve():
                raise UsageError(f"{first} and {second} both name {a}; give separate files")
