"""``ragmeter golden``: import, validate, freeze, relocate and describe span-labelled golden sets.

``agree`` (cli/_golden_agree.py), ``diff`` (cli/_golden_diff.py), ``sample`` and
``compare-traffic`` (cli/_golden_traffic.py) are added to this group by ``register``.

Exit codes: 0 ok; 1 ``freeze --check`` found changes, or ``relocate`` left spans it could not
re-anchor (the output is still written); 2 usage or input error (``validate`` lists every
problem).
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from .._errors import UsageError
from ._common import TITLE, console, err_console, handle_errors, lit, print_json

golden_app = typer.Typer(
    help="Span-labelled golden sets: import BEIR/SQuAD, validate, freeze a version, relocate "
    "spans after corpus edits, show stats, measure two labellers' agreement, sample logged "
    "questions to label and compare the set with the traffic.",
    no_args_is_help=True,
)


class GoldenFormat(StrEnum):
    beir = "beir"
    squad = "squad"


class Output(StrEnum):
    table = "table"
    json = "json"


GoldenArg = Annotated[Path, typer.Argument(help="Golden set (JSONL, one question a line).")]
CorpusOpt = Annotated[
    Path, typer.Option("--corpus", "-c", help="Corpus: JSONL file or folder of .txt/.md files.")
]
FormatOpt = Annotated[Output, typer.Option("--format", "-f", help="Output format.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace existing files.")]


def register(app: typer.Typer) -> None:
    from ._golden_agree import add_agree
    from ._golden_diff import add_diff
    from ._golden_resolve import add_resolve
    from ._golden_traffic import add_traffic

    add_agree(golden_app)  # golden agree: two labellers' spans and grades
    add_diff(golden_app)  # golden diff: what changed between two versions
    add_traffic(golden_app)  # golden sample / compare-traffic: the set against logged traffic
    add_resolve(golden_app)  # golden resolve: spans written as quotes -> offsets
    app.add_typer(golden_app, name="golden")


def _out(line: str) -> None:
    """Write one plain line to stdout (never wrapped, so each problem stays one grep-able line)."""
    sys.stdout.write(line + "\n")


@golden_app.command("import")
@handle_errors
def import_(
    kind: Annotated[GoldenFormat, typer.Argument(help="Source format.")],
    src: Annotated[Path, typer.Argument(help="BEIR folder or SQuAD JSON file.")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for corpus.jsonl and golden.jsonl.")
    ],
    split: Annotated[str, typer.Option(help="BEIR qrels split (qrels/SPLIT.tsv).")] = "test",
    force: ForceOpt = False,
) -> None:
    """Convert a BEIR folder or a SQuAD file into DIR/corpus.jsonl and DIR/golden.jsonl."""
    from ..workflows.golden import import_files, import_golden
    from ._outputs import check_output, check_store

    check_store(out, option="--out")  # first: the message names what it would destroy
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; name the folder to write into")
    for file in import_files(out):
        check_output(file, force=force, option="--out", inputs=[src])
    done = import_golden(
        kind.value, src, out, split=split, status=lambda text: err_console.status(lit(text))
    )
    _out(
        f"wrote {done.documents} documents to {done.corpus_file} and {done.questions} questions "
        f"({done.spans} spans) to {done.golden_file}; version {done.version}"
    )


@golden_app.command("validate")
@handle_errors
def validate(
    golden: GoldenArg,
    corpus: Annotated[
        Path | None,
        typer.Option(
            "--corpus",
            "-c",
            help="Corpus the spans point into; without it, document checks are skipped.",
        ),
    ] = None,
    format: FormatOpt = Output.table,
) -> None:
    """Check every label; list every problem with line and field (exit 2), or summarise (0)."""
    from ..workflows.golden import validate as run_validate

    result = run_validate(golden, corpus)
    stats, frozen = result.stats, result.frozen
    if stats is None:  # problems: every one listed
        if format is Output.json:
            print_json(result.to_dict())
        else:
            for p in result.problems:
                _out(str(p))
            sys.stdout.flush()
            err_console.print(lit(f"{len(result.problems)} problem(s) in {golden}"))
        raise typer.Exit(2)
    if format is Output.json:
        print_json(result.to_dict())
        return
    checked = "" if result.corpus_checked else " (no --corpus: document checks skipped)"
    _out(
        f"ok: {golden}: {stats['questions']} questions ({stats['answerable']} answerable, "
        f"{stats['unanswerable']} unanswerable), {stats['spans']} spans over "
        f"{stats['documents_referenced']} documents, 0 problems{checked}"
    )
    if stats["version"]:
        _out(f"version: {stats['version']}")
    if frozen is not None and not frozen.ok:
        err_console.print(
            lit(
                f"warning: changed since frozen ({frozen.lock_path}): "
                f"{'; '.join(frozen.describe())}"
            )
        )


@golden_app.command("freeze")
@handle_errors
def freeze(
    golden: GoldenArg,
    corpus: CorpusOpt,
    force: Annotated[
        bool, typer.Option("--force", help="Replace a lock that records another version.")
    ] = False,
    check: Annotated[
        bool,
        typer.Option(
            "--check", help="Only compare with the existing lock; exit 1 when something changed."
        ),
    ] = False,
    parent: Annotated[
        str | None,
        typer.Option(
            "--parent",
            help="The version this set was made from, recorded in the lock: a version "
            "(g-1a2b3c4d5e6f), or that version's golden file or lock file.",
        ),
    ] = None,
    format: FormatOpt = Output.table,
) -> None:
    """Record the golden set's version in GOLDEN.lock.json (never replaced silently)."""
    from ..data import lock_path_for
    from ..workflows.golden import check_dict, check_golden, freeze_dict, freeze_golden
    from ._outputs import check_store

    if check:
        if parent is not None:
            raise UsageError("--check compares with the lock; --parent records one: give one")
        result = check_golden(golden, corpus)
        if format is Output.json:
            print_json(check_dict(result))
        else:
            if result.ok:
                _out(f"unchanged since frozen: {result.locked_version} ({result.lock_path})")
            for line in result.describe():
                _out(line)
        if not result.ok:
            raise typer.Exit(1)
        return
    check_store(lock_path_for(golden), option="the lock file")  # never write over the store

    def confirm(lock_file: Path, old: str) -> bool:
        return typer.confirm(f"{lock_file} records version {old}; replace it?", err=True)

    # a terminal is asked before a lock recording another version is replaced
    ask = not force and sys.stdin.isatty() and format is not Output.json
    done = freeze_golden(
        golden, corpus, force=force, confirm=confirm if ask else None, parent=parent
    )
    if done is None:
        raise typer.Exit(2)
    lock = done.lock
    if format is Output.json:
        print_json(freeze_dict(done))
        return
    if not done.written:
        _out(f"already frozen at {lock['version']} ({done.lock_path}); nothing to do")
        return
    replaced = f" (replaced {done.previous_version})" if done.previous_version else ""
    made_from = f", parent {lock['parent']}" if lock.get("parent") else ""
    c = lock["counts"]
    _out(
        f"froze {golden} at {lock['version']}{replaced}{made_from} -> {done.lock_path}: "
        f"{c['questions']} questions, {c['spans']} spans, {c['documents_referenced']} documents"
    )


@golden_app.command("relocate")
@handle_errors
def relocate(
    golden: GoldenArg,
    corpus: CorpusOpt,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Where to write the re-anchored golden set.")
    ],
    force: ForceOpt = False,
    format: FormatOpt = Output.table,
) -> None:
    """Re-anchor spans whose text moved in an edited corpus; list what could not be (exit 1)."""
    from ..workflows.golden import relocate_golden
    from ._outputs import check_output

    # never in place, --force or not: the golden set holds people's labels, and an unresolved
    # span must stay where the labeller can see what it was (issue 22: no command writes over
    # one of its inputs)
    check_output(out, force=force, option="--out", inputs=[corpus, golden])
    relocated = relocate_golden(golden, corpus, out)
    report = relocated.report
    if format is Output.json:
        print_json(relocated.to_dict())
    else:
        for m in report.moved:
            _out(f"moved: {m}")
        for u in report.unresolved:
            _out(f"not re-anchored (kept as it was): {u}")
        for p in report.problems:
            _out(f"problem: {p}")
        _out(f"{report.summary()}; wrote {out}")
    if not report.ok:
        raise typer.Exit(1)


@golden_app.command("stats")
@handle_errors
def stats(
    golden: GoldenArg,
    corpus: Annotated[
        Path | None, typer.Option("--corpus", "-c", help="Corpus, to compute the version.")
    ] = None,
    format: FormatOpt = Output.table,
) -> None:
    """Questions, spans, grades, slices (warning under 10), splits, documents and version."""
    from ..data.golden import SMALL_SLICE
    from ..workflows.golden import describe

    s = describe(golden, corpus)
    if format is Output.json:
        print_json(s)
    else:
        _stats_table(s)
    for name in s["small_slices"]:
        err_console.print(
            lit(
                f"warning: slice {name!r} has {s['slices'][name]} "
                f"question(s), under {SMALL_SLICE}: a direction, not proof"
            )
        )


def _stats_table(s: dict[str, Any]) -> None:
    from rich.table import Table

    from ..data.golden import SMALL_SLICE

    spq = s["spans_per_question"]
    table = Table(title=lit(f"golden set {s['source']}", TITLE), show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    rows = [
        ("questions", s["questions"]),
        ("answerable", s["answerable"]),
        ("unanswerable", s["unanswerable"]),
        ("spans", s["spans"]),
        (
            "spans per answerable question (min / median / mean / max)",
            f"{spq['min']} / {spq['median']:g} / {spq['mean']:g} / {spq['max']}",
        ),
        ("required spans (AllR)", s["required_spans"]),
        ("grades", ", ".join(f"{g}: {n}" for g, n in s["grades"].items()) or "-"),
        ("tune / heldout", f"{s['splits']['tune']} / {s['splits']['heldout']}"),
        ("documents referenced", s["documents_referenced"]),
        ("version", s["version"] or "- (pass --corpus, or freeze the set)"),
    ]
    if set(s["origins"]) - {"unknown"}:  # once a question records how it was made
        made = ", ".join(
            f"{'not recorded' if o == 'unknown' else o}: {n}" for o, n in s["origins"].items()
        )
        rows.insert(-2, ("made (origin)", made))
    for what, value in rows:
        table.add_row(what, lit(value))
    console.print(table)
    if s["slices"]:
        slices = Table(title="slices")
        slices.add_column("slice")
        slices.add_column("questions", justify="right")
        for name, n in s["slices"].items():
            flag = f" (under {SMALL_SLICE})" if name in s["small_slices"] else ""
            slices.add_row(lit(name), f"{n}{flag}")
        console.print(slices)
