"""``ragmeter compare``, ``ragmeter sweep`` and ``ragmeter gate``: paired decisions on scored
runs."""

from __future__ import annotations

import csv
import os
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from .._errors import RagmeterWarning, UsageError
from .._pvalue import format_p, p_is
from ._common import TITLE, Format, console, err_console, handle_errors, line, lit, print_json
from ._store_options import db_option, no_store_option

if TYPE_CHECKING:  # keeps `ragmeter --help` fast
    from rich.console import RenderableType

    from ..metrics import Metric
    from ..metrics._evaluation import Evaluation
    from ..paired import Comparison, Sweep
    from ..paired._sweep import Kind
    from ..store import Store


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_cmd)
    app.command("sweep")(sweep_cmd)
    app.command("gate")(gate_cmd)


# -- loading the two sides ----------------------------------------------------------------------
def _split_selector(spec: str) -> tuple[Path, str | None]:
    path, sep, run = spec.partition("#")
    return Path(path), (run if sep else None)


def _read_evaluation(spec: str) -> Evaluation:
    """``PATH`` or ``PATH#RUN`` (one run of a list) read by :meth:`Evaluation.load`."""
    from ..metrics._evaluation import Evaluation

    path, run = _split_selector(spec)
    return Evaluation.load(path, run=run)


def _score_runs(
    specs: list[str],
    metrics: str,
    qrels: Path | None,
    golden: Path | None,
    chunks: list[Path],
    cover: float,
) -> list[Evaluation]:
    if golden is not None or chunks:
        if golden is None or not chunks:
            raise UsageError("span-level scoring needs both --golden and --chunks")
        if len(chunks) not in (1, len(specs)):
            raise UsageError(
                "give --chunks once for both runs, or twice (baseline's chunking "
                "first, then the candidate's)"
            )
        from ..labels import evaluate_spans_files

        per_run = chunks * len(specs) if len(chunks) == 1 else chunks
        return [
            evaluate_spans_files([Path(s)], metrics=metrics, golden=golden, chunks=c, cover=cover)[
                0
            ]
            for s, c in zip(specs, per_run, strict=True)
        ]
    from ..metrics._engine import evaluate

    out = []
    for s in specs:
        out.append(evaluate(qrels, Path(s), metrics, run_name=s, config={"qrels": str(qrels)}))
    return out


def load_pair(
    base: str,
    cand: str,
    metric: str | None,
    qrels: Path | None,
    golden: Path | None,
    chunks: list[Path] | None,
    cover: float,
    store: Store | None = None,
) -> tuple[Evaluation, Evaluation]:
    """Two Evaluations: read from ``eval`` JSON or the store (a run id), or scored here from run
    files."""
    if qrels is not None and (golden is not None or chunks):
        raise UsageError("give --qrels (item labels) or --golden/--chunks (span labels), not both")
    if qrels is not None or golden is not None or chunks:
        if metric is None:
            raise UsageError("give --metric to score the runs")
        a, b = _score_runs([base, cand], metric, qrels, golden, chunks or [], cover)
        return a, b
    from ._store_options import read_stored, run_ref

    sides = []
    for spec in (base, cand):
        ref = run_ref(spec)
        sides.append(_read_evaluation(spec) if ref is None else read_stored(store, spec, ref))
    return sides[0], sides[1]


def _run_compare(
    base: str, cand: str, metric: str | None, opts: dict[str, Any], store: Store | None = None
) -> Comparison:
    from ..paired import compare

    a, b = load_pair(
        base,
        cand,
        metric,
        opts.pop("qrels"),
        opts.pop("golden"),
        opts.pop("chunks"),
        opts.pop("cover"),
        store,
    )
    with warnings.catch_warnings(), err_console.status("resampling questions..."):
        warnings.simplefilter("ignore", RagmeterWarning)  # printed below from c.warnings
        c = compare(a, b, metric, **opts)
    for w in c.warnings:
        err_console.print(line(("warning:", "yellow"), f" {w}"))
    return c


# -- rendering ------------------------------------------------------------------------------------
def _ci(ci: tuple[float, float]) -> str:
    return f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"


def comparison_table(c: Comparison, width: int | None = None) -> Table:
    """Overall, split and slice rows; compact headers and no note column so that nothing is
    cut (notes are markers explained in the caption). Under 112 columns the two means are left
    out (the difference carries them) and the labels and intervals wrap."""
    from rich import box

    narrow = width is not None and width < 112
    t = Table(
        title=lit(f"{c.candidate} vs {c.baseline} on {c.metric}", TITLE),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    t.add_column("questions", no_wrap=not narrow, overflow="fold")
    for col in ("n", "diff") if narrow else ("n", "base", "cand", "diff"):
        t.add_column(col, justify="right", no_wrap=True)
    t.add_column(f"{c.confidence:.0%} interval", justify="right", no_wrap=not narrow)
    t.add_column("W/L/T", justify="right", no_wrap=True)
    if c.binary:
        t.add_column("fix/brk" if narrow else "fixed/broken", justify="right", no_wrap=True)
    t.add_column("sign p", justify="right", no_wrap=True)
    if c.slices:
        t.add_column("Holm p", justify="right", no_wrap=True)  # adjusted over the slices

    def row(label: str, s: Any, holm: float | None = None) -> None:
        # label: literal, never markup
        means = [] if narrow else [f"{s.baseline_mean:.3f}", f"{s.candidate_mean:.3f}"]
        cells: list[RenderableType] = [
            lit(label),
            str(s.n),
            *means,
            f"{s.mean_delta:+.3f}",
            lit(_ci(s.ci)),
            f"{s.wins}/{s.losses}/{s.ties}",
        ]
        if c.binary:
            cells.append(f"{s.fixed}/{s.broken}")
        cells.append(format_p(s.sign_test_p))
        if c.slices:
            cells.append("" if holm is None else f"{holm:.3g}")
        t.add_row(*cells)

    row("all", c.overall)
    for name, sr in c.splits.items():
        row(f"split {name}" + (" (held out)" if name == "heldout" else ""), sr.stats)
    for name, sr in c.slices.items():
        row(f"slice {name}" + (" *" if sr.small else ""), sr.stats, sr.p_adjusted)
    t.caption = (
        f"paired percentile bootstrap, {c.n_resamples} resamples, seed {c.seed} "
        f"({c.bootstrap_method}); exact two-sided sign test, ties dropped"
    )
    return t


def movers_table(c: Comparison) -> Table | None:
    movers = [*c.improved, *c.worsened]
    if not movers:
        return None
    ranks = any(m.rank_before is not None or m.rank_after is not None for m in movers)
    from rich import box

    t = Table(
        title="biggest movers" + (" (fixed and broken)" if c.binary else ""),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    t.add_column("question", overflow="fold")
    t.add_column("change")
    t.add_column("baseline", justify="right")
    t.add_column("candidate", justify="right")
    if ranks:
        t.add_column("first relevant rank")
    t.add_column("slices", overflow="fold")
    for m in movers:
        change = ("fixed" if m.delta > 0 else "broken") if c.binary else f"{m.delta:+.4f}"
        cells: list[RenderableType] = [
            lit(m.qid),
            change,
            f"{m.baseline:.4f}",
            f"{m.candidate:.4f}",
        ]
        if ranks:
            cells.append(f"{_rank(m.rank_before)} -> {_rank(m.rank_after)}")
        t.add_row(*cells, lit(", ".join(m.slices)))
    left = c.wins - len(c.improved), c.losses - len(c.worsened)
    if any(n > 0 for n in left):  # a cut list says so, and how to see the rest
        t.caption = (
            f"the {len(c.improved)} largest of {c.wins} improved and {len(c.worsened)} largest "
            f"of {c.losses} worsened questions (--movers N shows more; --format json lists "
            "every question)"
        )
    return t


def _rank(r: int | None) -> str:
    return "-" if r is None else str(r)


def print_comparison(c: Comparison) -> None:
    console.print(comparison_table(c, console.width))
    if c.slice_note:
        console.print(lit(f"Slices: {c.slice_note}."))
    if any(sr.small for sr in c.slices.values()):
        from ..paired._slices import SMALL_NOTE, SMALL_SLICE

        console.print(f"* under {SMALL_SLICE} questions: {SMALL_NOTE}.")
    lo, hi = c.ci
    console.print(
        lit(
            f"Verdict: {c.verdict}. Difference {c.mean_delta:+.4f}, "
            f"{c.confidence:.0%} interval [{lo:+.3f}, {hi:+.3f}], sign test p "
            f"{p_is(c.sign_test_p)}."
        )
    )
    if c.randomisation is not None:
        r = c.randomisation
        how = "exact" if r.exact else f"{r.n_resamples} random sign flips"
        console.print(f"Paired randomisation test: p {p_is(r.p_value)} ({how}).")
    mt = movers_table(c)
    if mt is not None:
        console.print(mt)
    if c.changes:
        console.print(lit(f"Changes ({len(c.changes)}): " + "; ".join(map(str, c.changes))))
    if c.n_variants_tried is not None:
        console.print(
            lit(
                f"Selection: {c.n_variants_tried} variant(s) tried on golden set "
                f"{c.golden_version or '(unversioned)'}"
                + (f"; {c.selection.describe()}." if c.selection else ".")
            )
        )


# -- commands --------------------------------------------------------------------------------------
_SCORE_HELP = "Score run files (BASE and CAND) against these qrels instead of reading eval JSON."


@handle_errors
def compare_cmd(
    base: str = typer.Argument(
        ...,
        metavar="BASE",
        help="Baseline: a stored run (12, run:12, run:12:chunk), 'ragmeter eval --per-query "
        "--format json' output (PATH or PATH#RUN), or a run file with --qrels.",
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
    qrels: Path | None = typer.Option(None, "--qrels", help=_SCORE_HELP),
    golden: Path | None = typer.Option(
        None,
        "--golden",
        help="Span-labelled golden set (with --chunks) to score run files against.",
    ),
    chunks: list[Path] | None = typer.Option(
        None, "--chunks", help="Chunking the runs refer to (once, or baseline's then candidate's)."
    ),
    cover: float = typer.Option(0.5, "--cover", help="Span share that counts as found."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json or csv."),
    db: str | None = db_option(),
    no_store: bool = no_store_option("the selection ledger is then .ragmeter/ledger.jsonl"),
) -> None:
    """Compare two scored runs question by question: interval, sign test, slices, movers."""
    from ..paired._ledger import DEFAULT_LEDGER
    from ._store_options import open_store, record_comparison

    if ledger is not None and not no_ledger:  # appended to: never the store, never an input
        _check_ledger(ledger, [base, cand], [qrels, golden, *(chunks or [])], db)
    store = open_store(db, no_store, read_only_ok=True)
    if no_ledger:
        book: Any = None
    elif ledger is not None:
        book = ledger
    else:
        # a read-only store counts nothing (record_comparison says so)
        book = DEFAULT_LEDGER if store is None else None if store.read_only else store.ledger
    c = _run_compare(
        base,
        cand,
        metric,
        {
            "n_resamples": resamples,
            "seed": seed,
            "confidence": confidence,
            "randomisation": randomisation,
            "strict": strict,
            "intersect": intersect,
            "max_movers": movers,
            "ledger": book,
            "qrels": qrels,
            "golden": golden,
            "chunks": chunks,
            "cover": cover,
        },
        store,
    )
    scored = qrels is not None or golden is not None or bool(chunks)
    if fmt == Format.json:
        print_json(c.to_dict())
    elif fmt == Format.csv:
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(["question", "baseline", "candidate", "delta"])
        for q, row in c.per_question.items():
            w.writerow(
                [q, f"{row['baseline']:.6f}", f"{row['candidate']:.6f}", f"{row['delta']:+.6f}"]
            )
    else:
        print_comparison(c)
    record_comparison(store, c, [base, cand], scored)


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
    qrels: Path | None = typer.Option(None, "--qrels", help=_SCORE_HELP),
    golden: Path | None = typer.Option(None, "--golden", help="Span-labelled golden set."),
    chunks: list[Path] | None = typer.Option(
        None, "--chunks", help="Chunking the runs refer to (once, or baseline's then candidate's)."
    ),
    cover: float = typer.Option(0.5, "--cover", help="Span share that counts as found."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table or json."),
    db: str | None = db_option(),
    no_store: bool = no_store_option(),
) -> None:
    """Exit 1 when the candidate regresses by the rule given, 0 otherwise (CI gate)."""
    from ..paired import GateRule, gate
    from ._store_options import open_store, record_comparison

    _check_reports(
        markdown, junit, force, [base, cand], [qrels, golden, ledger, *(chunks or [])], report, db
    )
    if ledger is not None:  # appended to: never the store, never an input, never a report
        _check_ledger(ledger, [base, cand], [qrels, golden, *(chunks or [])], db)
        for option, path in (("--markdown", markdown), ("--junit", junit), ("--report", report)):
            if path is not None and os.path.realpath(path) == os.path.realpath(ledger):
                raise UsageError(f"--ledger and {option} both name {ledger}; give separate files")
    store = open_store(db, no_store, read_only_ok=True)
    report_runs = _report_runs(report, store, [base, cand], qrels, golden, chunks)
    rule = GateRule(
        max_broken=max_broken,
        min_delta=min_delta,
        require_ci_above=require_ci_above,
        per_slice=per_slice,
        min_slice=min_slice,
    )
    if metric is not None:  # the rule is stated before any number is computed
        from ..metrics import parse

        try:
            shown = str(parse(metric))
        except UsageError:
            shown = metric
        if fmt != Format.json:
            console.print(lit(f"Rule: {rule.statement(shown)}"))
    c = _run_compare(
        base,
        cand,
        metric,
        {
            "n_resamples": resamples,
            "seed": seed,
            "confidence": 0.95,
            "strict": strict,
            "intersect": intersect,
            "ledger": ledger,
            "qrels": qrels,
            "golden": golden,
            "chunks": chunks,
            "cover": cover,
        },
        store,
    )
    result = gate(c, rule)
    if markdown is not None:
        _write(markdown, result.to_markdown())
    if junit is not None:
        _write(junit, result.to_junit_xml())
    if report is not None and store is not None:
        from ..lab._report import write_report
        from ._store_options import store_errors

        # the report's comparison is the gate's: its metric, resamples, seed and question set
        options = {"n_resamples": resamples, "seed": seed, "intersect": intersect}
        with store_errors(store.url):
            write_report(store, report_runs, report, metric=metric, options=options)
    if fmt == Format.json:
        print_json(result.to_dict())
    else:
        if metric is None:
            console.print(lit(f"Rule: {result.statement}"))
        print_comparison(c)
        if result.adjustment_line:
            console.print(
                lit(
                    f"{result.adjustment_line}: a slice fails only when its change "
                    f"is beyond chance (adjusted p < {rule.alpha:g})."
                )
            )
        for ch in result.checks:
            console.print(lit(ch.describe()))
        for skip in result.skip_lines():
            console.print(lit(skip))
        console.print("[green]gate passed[/green]" if result.passed else "[red]gate FAILED[/red]")
    scored = qrels is not None or golden is not None or bool(chunks)
    record_comparison(store, c, [base, cand], scored)
    if not result.passed:
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
    from ._outputs import check_output, starts_with

    inputs = [*files, *_run_files(runs)]
    for option, path in (("--markdown", markdown), ("--junit", junit), ("--report", report)):
        if path is not None:
            mark = _is_html_report if option == "--report" else starts_with(_REPORT_MARKS[option])
            check_output(path, force=force, option=option, inputs=inputs, replaceable=mark, db=db)
    named = [("--markdown", markdown), ("--junit", junit), ("--report", report)]
    for i, (first, a) in enumerate(named):
        for second, b in named[i + 1 :]:
            if a is not None and b is not None and a.resolve() == b.resolve():
                raise UsageError(f"{first} and {second} both name {a}; give separate files")


def _run_files(runs: list[str]) -> list[Path]:
    """The files BASE and CAND may name (``PATH`` or ``PATH#RUN``), as inputs to protect."""
    return [*(Path(r) for r in runs), *(Path(r.partition("#")[0]) for r in runs)]


def _check_ledger(ledger: Path, runs: list[str], files: list[Path | None], db: str | None) -> None:
    """Before any work: the ``--ledger`` appended to is not the store, a folder, an input, nor
    an existing file that is not a selection ledger (the entry is appended before the ledger is
    read back, so a wrong file would get a JSON line added to its end)."""
    from .._errors import InputError
    from ..paired._ledger import Ledger
    from ._outputs import check_append

    check_append(ledger, option="--ledger", inputs=[*files, *_run_files(runs)], db=db)
    if ledger.is_file():
        try:
            Ledger(ledger).entries()
        except InputError as exc:
            raise UsageError(
                f"--ledger {ledger} is not a selection ledger ({exc}); name a ledger file or a "
                "new one"
            ) from None


def _report_runs(
    report: Path | None,
    store: Store | None,
    runs: list[str],
    qrels: Path | None,
    golden: Path | None,
    chunks: list[Path] | None,
) -> list[str]:
    """The stored run ids ``--report`` renders (baseline first); refuses, before any work, a
    report it could not make: the HTML report reads both runs' ranked lists from the store."""
    from ._store_options import run_ref

    if report is None:
        return []
    if store is None:
        raise UsageError("--report reads the two runs from the store; drop --no-store")
    refs = [run_ref(r) for r in runs]
    if any(r is None for r in refs) or qrels is not None or golden is not None or chunks:
        raise UsageError(
            "--report needs BASE and CAND as stored runs (12, run:12): the HTML report shows "
            "their ranked lists from the store"
        )
    return [str(r[0]) for r in refs if r is not None]


def _write(path: Path, text: str) -> None:
    """The gate's markdown and JUnit reports: whole or not at all (a CI job never reads half)."""
    from ..io._atomic import atomic_write

    atomic_write(path, text)


@handle_errors
def sweep_cmd(
    runs: list[Path] = typer.Argument(..., metavar="RUN...", help="Run files (TREC or JSONL)."),
    qrels: Path | None = typer.Option(None, "--qrels", help="Item qrels (rank-level sweep)."),
    golden: Path | None = typer.Option(
        None,
        "--golden",
        help="Span-labelled golden set: sweeps ranks or token budgets of chunk runs.",
    ),
    chunks: list[Path] | None = typer.Option(
        None, "--chunks", help="Chunking of the runs (once for all, or once per run in order)."
    ),
    metrics: str = typer.Option(
        "R,RR",
        "--metric",
        "-m",
        help="Metrics without a cutoff, comma-separated, e.g. 'R,RR' or 'nDCG(gain=exp)'.",
    ),
    ks: str | None = typer.Option(
        None,
        "--k",
        help="Rank cutoffs: '1..20' (the default without --budget), '1,3,5,10' or a mix; a "
        "range stops at the runs' depth.",
    ),
    budgets: str | None = typer.Option(
        None, "--budget", help="Token budgets (with --golden), e.g. '400..2000:400' or '600,1200'."
    ),
    headroom_k: int = typer.Option(
        100,
        "--headroom-k",
        help="Recall at this k is shown as pool headroom, never as quality (0: leave out).",
    ),
    cover: float = typer.Option(0.5, "--cover", help="Span share that counts as found."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json or csv."),
    name: list[str] | None = typer.Option(
        None,
        "--name",
        help="A name per run, in order (repeat the option); default: each run's tag (the last "
        "column of a TREC line), else the file name.",
    ),
) -> None:
    """A metric for several runs at every k (or token budget), and where the winner changes."""
    from ..metrics import parse_list

    if (qrels is None) == (golden is None):
        raise UsageError("give --qrels (item labels) or --golden with --chunks (span labels)")
    if budgets is not None and golden is None:
        raise UsageError("--budget needs span labels: give --golden and --chunks")
    # cutoffs travel as text: the library caps a k range at the runs' depth and says so
    kinds: list[tuple[Kind, str]] = []
    if ks is not None or budgets is None:
        kinds.append(("k", ks or "1..20"))
    if budgets is not None:
        kinds.append(("budget", budgets))
    names = _run_names(runs, name or [])
    sweeps = []
    with err_console.status("scoring every run at every cutoff..."):
        for i, m in enumerate(parse_list(metrics)):
            for j, (kind, cutoffs) in enumerate(kinds):
                head = (headroom_k or None) if i == j == 0 else None  # headroom printed once
                if golden is not None:
                    sweeps.append(
                        _span_sweep(
                            golden, chunks or [], runs, names, m, cutoffs, kind, head, cover
                        )
                    )
                else:
                    from ..paired._sweep import sweep

                    sweeps.append(
                        sweep(
                            qrels, dict(zip(names, runs, strict=True)), m, cutoffs, headroom_k=head
                        )
                    )
    if fmt == Format.json:
        print_json([s.to_dict() for s in sweeps])
    elif fmt == Format.csv:
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(["metric", "run", "cutoff", "value"])
        for s in sweeps:
            for r, row in zip(s.runs, s.values, strict=True):
                for k, v in zip(s.cutoffs, row, strict=True):
                    w.writerow([s.label, r, k, f"{v:.6f}"])
    else:
        for s in sweeps:
            _print_sweep(s)


def _run_tag(path: Path) -> str | None:
    """The tag of a TREC run (the sixth column of its first line), or None (JSONL, unreadable)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            first = next((x for x in f if x.strip()), "")
    except OSError:
        return None
    cols = first.split()
    return cols[5] if len(cols) == 6 and not first.lstrip().startswith("{") else None


def _run_names(runs: list[Path], given: list[str]) -> list[str]:
    """--name in order; else the runs' tags when they tell the runs apart; else the file names
    (run.trec in every variant folder: then the folder), else the paths as given."""
    if given:
        if len(given) != len(runs) or len(set(given)) != len(given):
            raise UsageError(
                f"--name: give one distinct name per run ({len(runs)} runs, {len(given)} names)"
            )
        return list(given)
    for names in (
        [_run_tag(p) or p.stem for p in runs],
        [p.stem for p in runs],
        [p.parent.name or p.stem for p in runs],
    ):
        if len(set(names)) == len(names):
            return names
    return [str(p) for p in runs]


def _span_sweep(
    golden: Path,
    chunks: list[Path],
    runs: list[Path],
    names: list[str],
    metric: Metric,
    cutoffs: str,
    kind: Kind,
    headroom_k: int | None,
    cover: float,
) -> Sweep:
    from ..chunking import load_chunking
    from ..data.golden import load_golden
    from ..io import to_run
    from ..paired._sweep import sweep_spans

    if len(chunks) not in (1, len(runs)):
        raise UsageError(
            f"give --chunks once for all runs or once per run ({len(runs)}); got {len(chunks)}"
        )
    per_run = chunks * len(runs) if len(chunks) == 1 else chunks
    loaded = {p: load_chunking(p) for p in dict.fromkeys(per_run)}
    pairs = {n: (loaded[c], to_run(r)) for n, c, r in zip(names, per_run, runs, strict=True)}
    return sweep_spans(
        load_golden(golden),
        pairs,
        metric,
        cutoffs,
        kind=kind,
        headroom_k=headroom_k,
        cover=cover,
    )


def _print_sweep(s: Sweep) -> None:
    what = "k" if s.kind == "k" else "budget"
    t = Table(
        title=lit(
            f"{s.label} by {what}" + (f" ({s.n_queries} queries)" if s.n_queries else ""), TITLE
        )
    )
    t.add_column(what, justify="right")
    for r in s.runs:
        t.add_column(lit(r), justify="right")
    t.add_column("leader")
    for j, (k, lead) in enumerate(zip(s.cutoffs, s.leaders, strict=True)):
        t.add_row(str(k), *(f"{v:.4f}" for v in s.values[:, j]), lit(lead or "tie"))
    console.print(t)
    for note in s.notes:
        console.print(lit(f"note: {note}."))
    console.print(lit(s.summary() + "."))
    if s.headroom:
        vals = ", ".join(f"{r} {v:.3f}" for r, v in s.headroom.items())
        console.print(
            lit(
                f"Pool headroom, R@{s.headroom_k} (not quality: the evidence is in the "
                f"candidate pool, not in the prompt): {vals}."
            )
        )
