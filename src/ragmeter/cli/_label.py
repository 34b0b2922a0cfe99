"""``ragmeter label create|list|status|export|freeze``: labelling queues on the experiment store
(docs/labelling.md). The labelling itself happens in the lab (``ragmeter lab``, ``/label``);
these commands make a queue, say where it stands and write its results.

Exit codes: 0 ok; 2 usage or input error (a questions file's bad line names file, line and
field; an unknown queue or labeller lists those that exist; a freeze with unresolved items
lists them).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._common import TITLE, console, handle_errors, lit, print_json
from ._store_options import db_option

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Store

label_app = typer.Typer(
    help="Labelling queues: make one from questions, a golden set or answers; see where it "
    "stands; export and freeze its labels (the labelling is done in `ragmeter lab`).",
    no_args_is_help=True,
)


class Output(StrEnum):
    table = "table"
    json = "json"


class Kind(StrEnum):
    evidence = "evidence"
    answers = "answers"


FormatOpt = Annotated[Output, typer.Option("--format", "-f", help="table or json.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace files of other content.")]
QueueArg = Annotated[str, typer.Argument(help="The queue's name.")]


def register(app: typer.Typer) -> None:
    from ._label_draft import add_draft

    add_draft(label_app)
    app.add_typer(label_app, name="label")


def _store(db: str | None, *, write: bool) -> Store:
    from ._store_options import open_required, open_store

    if not write:
        return open_required(db)
    store = open_store(db)
    assert store is not None  # (open_store gives None only with --no-store)
    return store


@label_app.command("create")
@handle_errors
def create(
    name: Annotated[
        str, typer.Argument(help="The queue's name: letters, digits, '.', '_' or '-'.")
    ],
    corpus: Annotated[
        Path,
        typer.Option("--corpus", "-c", help="The corpus the spans point into (stored with it)."),
    ],
    questions: Annotated[
        Path | None,
        typer.Option(
            "--questions",
            "-q",
            help='Questions to label: JSON Lines of {"question", ...} (as `golden sample` '
            "writes them) or a CSV with a question column; for --kind answers, the golden "
            "set of the answers' questions.",
        ),
    ] = None,
    golden: Annotated[
        Path | None,
        typer.Option("--golden", "-g", help="A golden set to review: its labels pre-fill."),
    ] = None,
    kind: Annotated[
        Kind, typer.Option("--kind", help="evidence (spans) or answers (review answers).")
    ] = Kind.evidence,
    answers: Annotated[
        Path | None, typer.Option("--answers", help="The answers to review (--kind answers).")
    ] = None,
    double_share: Annotated[
        float,
        typer.Option(
            "--double-share", min=0.0, max=1.0, help="Share of questions two labellers label."
        ),
    ] = 0.2,
    seed: Annotated[
        int, typer.Option("--seed", min=0, help="Seed of the choice of double questions.")
    ] = 0,
    parent: Annotated[
        str | None,
        typer.Option(
            "--parent-golden",
            help="The version this queue extends, recorded as the frozen version's parent: a "
            "version (g-...) or a frozen golden file or its lock.",
        ),
    ] = None,
    db: str | None = db_option(),
    fmt: FormatOpt = Output.table,
) -> None:
    """Make a labelling queue, stored with its corpus."""
    from ..workflows.labelling import create_queue_from

    gold = golden
    if kind is Kind.answers:
        gold = golden or questions  # the answers' questions: --golden or --questions
        questions = None
    with _store(db, write=True) as store:
        q = create_queue_from(
            store,
            name,
            corpus=corpus,
            questions=questions,
            golden=gold,
            answers=answers,
            kind=kind.value,
            double_share=double_share,
            seed=seed,
            parent=parent,
        )
        items = store.items(q.id)
    doubles = sum(i.double for i in items)
    if fmt is Output.json:
        print_json({"queue": q.name, "kind": q.kind, "items": len(items), "double": doubles,
                    "documents": q.n_docs, "parent": q.parent_version})  # fmt: skip
        return
    made_from = f", parent {q.parent_version}" if q.parent_version else ""
    console.print(
        lit(
            f"queue {q.name}: {len(items)} {q.kind} item(s), {doubles} for two labellers, "
            f"{q.n_docs} documents{made_from}. Label them in the lab: ragmeter lab, then "
            f"/label/{q.name}"
        ),
        soft_wrap=True,
    )


@label_app.command("list")
@handle_errors
def list_cmd(db: str | None = db_option(), fmt: FormatOpt = Output.table) -> None:
    """The labelling queues with their progress."""
    from rich.table import Table

    from ..workflows.labelling import status

    with _store(db, write=False) as store:
        found = [status(store, q.id) for q in store.queues()]
    if fmt is Output.json:
        print_json([s.to_dict() for s in found])
        return
    if not found:
        console.print("no labelling queue yet: ragmeter label create NAME ...")
        return
    table = Table(title=lit("labelling queues", TITLE))
    for col in ("queue", "kind", "items", "double", "done", "labellers", "parent"):
        table.add_column(col, justify="right" if col in ("items", "double", "done") else "left")
    for s in found:
        table.add_row(
            lit(s.queue.name),
            s.queue.kind,
            str(s.items),
            str(s.double),
            str(s.done),
            lit(", ".join(s.labellers) or "-"),
            lit(s.queue.parent_version or "-"),
        )
    console.print(table)


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


@label_app.command("status")
@handle_errors
def status_cmd(
    queue: QueueArg, db: str | None = db_option(), fmt: FormatOpt = Output.table
) -> None:
    """Where a queue stands: final labels, labels per labeller, agreement (as `golden agree`).

    The agreement is over the questions two labellers labelled, with the numbers `ragmeter
    golden agree` prints on the files `label export` writes for the two."""
    from ..workflows.labelling import answer_agreement, status

    with _store(db, write=False) as store:
        s = status(store, queue)
        kappas = answer_agreement(store, queue) if s.queue.kind == "answers" else {}
    data: dict[str, Any] = s.to_dict()
    if kappas:
        data["answer_agreement"] = {m: {"n": v.n, "kappa": v.kappa} for m, v in kappas.items()}
    if fmt is Output.json:
        print_json(data)
        return
    out = [
        f"queue {s.queue.name} ({s.queue.kind}): {s.items} items, {s.double} for two "
        f"labellers, {s.done} done",
        "final labels: " + (", ".join(f"{k} {v}" for k, v in s.finals.items()) or "none"),
        "labels by labeller: " + (", ".join(f"{k} {v}" for k, v in s.labellers.items()) or "none"),
    ]
    a = data["agreement"]
    if a:
        out.append(
            f"agreement on {a['questions']} question(s) labelled twice ({a['labeller_a']} = A, "
            f"{a['labeller_b']} = B): span F1 {_num(a['f1'])}, macro F1 {_num(a['macro_f1'])}, "
            f"grade kappa {_num(a['kappa'])}"
        )
    for metric, v in kappas.items():
        out.append(f"{metric}: kappa {_num(v.kappa)} over {v.n} answer(s) reviewed twice")
    for line in out:
        console.print(lit(line), soft_wrap=True)


@label_app.command("export")
@handle_errors
def export_cmd(
    queue: QueueArg,
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="Evidence queue: the labeller's golden file; answers queue: the folder of "
            "human-*.jsonl files (what `judge validate --human` reads).",
        ),
    ],
    labeller: Annotated[
        str | None,
        typer.Option("--labeller", "-l", help="Whose labels (evidence queues)."),
    ] = None,
    force: ForceOpt = False,
    db: str | None = db_option(),
    fmt: FormatOpt = Output.table,
) -> None:
    """Write a labeller's labels (for `golden agree`), or answer reviews (for `judge validate`).

    An evidence queue: one labeller's labels as a golden file. An answers queue: the final
    reviews as human-correctness/faithfulness/abstention.jsonl, and each labeller's own."""
    from ..workflows.labelling import ANSWER_FILES, export_answer_labels, export_labeller
    from ._outputs import check_folder, check_output

    with _store(db, write=False) as store:
        kind = store.queue(queue).kind
        if kind == "evidence":
            if labeller is None:
                raise typer.BadParameter(
                    "name the labeller whose labels to export", param_hint="--labeller"
                )
            check_output(out, force=force, db=db)
            done = export_labeller(store, queue, labeller, out, force=force)
        else:
            if labeller is not None:
                raise typer.BadParameter(
                    "an answers queue exports every labeller's reviews", param_hint="--labeller"
                )
            check_folder(out, option="--out", files=[f for f, _ in ANSWER_FILES.values()], db=db)
            done = export_answer_labels(store, queue, out, force=force)
    if fmt is Output.json:
        print_json(done.to_dict())
        return
    for path, n in done.files.items():
        console.print(lit(f"wrote {path}: {n} label(s)"), soft_wrap=True)
    if done.left_out:
        left = ", ".join(f"{k} {v}" for k, v in done.left_out.items())
        console.print(lit(f"left out: {left}"), soft_wrap=True)


@label_app.command("freeze")
@handle_errors
def freeze_cmd(
    queue: QueueArg,
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="Folder for golden.jsonl, corpus.jsonl and golden.lock.json."
        ),
    ],
    name: Annotated[
        str | None, typer.Option("--name", help="The version's name in the store.")
    ] = None,
    force: ForceOpt = False,
    no_extend: Annotated[
        bool,
        typer.Option(
            "--no-extend",
            help="Freeze the queue's questions alone, not the parent version's questions with "
            "the queue's labels added.",
        ),
    ] = False,
    db: str | None = db_option(),
    fmt: FormatOpt = Output.table,
) -> None:
    """Freeze a queue's final labels into a golden-set version, with its parent.

    The new version extends the parent: its questions, each relabelled where the queue
    labelled it, then the queue's new questions. Written to a folder (golden.jsonl,
    corpus.jsonl, the lock) and stored. Refused while two labels of a question differ and no
    adjudication resolves them."""
    from ..workflows.labelling import freeze_queue
    from ._outputs import check_folder

    check_folder(
        out, option="--out", files=["golden.jsonl", "corpus.jsonl", "golden.lock.json"], db=db
    )
    with _store(db, write=True) as store:
        done = freeze_queue(store, queue, out, name=name, force=force, extend=not no_extend)
    if fmt is Output.json:
        print_json(done.to_dict())
        return
    made_from = f", parent {done.parent}" if done.parent else ""
    console.print(
        lit(
            f"froze queue {queue} at {done.version}{made_from}: {done.questions} question(s) "
            f"-> {done.golden} (lock {done.lock})"
        ),
        soft_wrap=True,
    )
    if done.kept_from_parent or done.relabelled:
        console.print(
            lit(
                f"from the parent: {done.kept_from_parent} question(s) kept as they were, "
                f"{done.relabelled} relabelled; new: "
                f"{done.questions - done.kept_from_parent - done.relabelled}"
            ),
            soft_wrap=True,
        )
    if done.left_out:
        left = ", ".join(f"{k} {v}" for k, v in done.left_out.items())
        console.print(lit(f"left out: {left}"), soft_wrap=True)


@label_app.command("import")
@handle_errors
def import_cmd(
    queue: QueueArg,
    golden: Annotated[
        Path, typer.Argument(help="A golden file of labels for the queue's questions (same ids).")
    ],
    labeller: Annotated[
        str, typer.Option("--labeller", "-l", help="Whose labels these are (made if new).")
    ],
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace labels the labeller already made.")
    ] = False,
    db: str | None = db_option(),
    fmt: FormatOpt = Output.table,
) -> None:
    """Save labels written elsewhere (a spreadsheet, another tool) as a labeller's labels.

    Each label is checked against the queue's corpus before any is saved; a label the
    labeller already made is kept unless --replace."""
    from ..workflows.labelling import ensure_labeller, import_labels

    with _store(db, write=True) as store:
        store.queue(queue)  # an unknown queue is refused before a labeller is made
        ensure_labeller(store, labeller)
        done = import_labels(store, queue, labeller, golden, replace=replace)
    if fmt is Output.json:
        print_json(done.to_dict())
        return
    console.print(
        lit(f"saved {done.saved} label(s) of {labeller} in queue {queue}"), soft_wrap=True
    )
    if done.kept:
        console.print(
            lit(f"kept {len(done.kept)} label(s) {labeller} had made (--replace replaces them)"),
            soft_wrap=True,
        )
