"""``ragmeter diagnose``: the failing link of the RAG chain and ONE next experiment."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from .._errors import UsageError
from ._common import Format, console, handle_errors, print_json

if TYPE_CHECKING:  # pragma: no cover
    from ..metrics import Evaluation
    from ..workflows.diagnose import DiagnoseResult


def register(app: typer.Typer) -> None:
    app.command("diagnose")(diagnose_cmd)


@handle_errors
def diagnose_cmd(
    experiment: Path | None = typer.Option(
        None,
        "--experiment",
        help="Experiment file already run (ragmeter run): diagnose its baseline's answers, "
        "made causal by the variants that change only context.source (oracle, none, "
        "oracle+distractors). Takes no other input option.",
    ),
    golden: Path | None = typer.Option(None, help="Golden set (JSONL)."),
    answers: Path | None = typer.Option(None, help="Answers JSONL of the variant to diagnose."),
    corpus: Path | None = typer.Option(None, help="Corpus (citations, effective dates)."),
    chunks: Path | None = typer.Option(None, help="Chunking the run and context ids refer to."),
    run: Path | None = typer.Option(None, help="Retrieval run (TREC or JSONL) of chunk ids."),
    k: int | None = typer.Option(None, "--k", help="Prompt k (passages in the prompt)."),
    budget: int | None = typer.Option(None, help="Prompt token budget instead of --k."),
    large_k: int | None = typer.Option(
        None,
        help="Large k for the headroom check (default 50; with --experiment, the file's "
        "headroom_k).",
    ),
    eval_json: Path | None = typer.Option(
        None,
        "--eval",
        help="Evaluation JSON from 'ragmeter eval --per-query --format json' (span AllR).",
    ),
    prompt_metric: str | None = typer.Option(None, help="Metric at the prompt k, e.g. AllR@3."),
    headroom_metric: str | None = typer.Option(None, help="Metric at a large k, e.g. AllR@50."),
    table: Path | None = typer.Option(
        None, help='Per-question booleans JSONL: {"id", "evidence_in_context", "answer_ok"}.'
    ),
    counts: str | None = typer.Option(
        None,
        help="The table as counts, comma-separated: working, "
        "generation_failure, from_memory, retrieval_failure "
        "[, cites_outside_context [, support_unknown]] "
        "(e.g. 41,9,6,14; each 0 to 10,000,000).",
    ),
    split: str = typer.Option("tune", help="Split named in the experiment's comparison."),
    headroom_threshold: float = typer.Option(0.90, help="Recall at a large k counted high."),
    prompt_threshold: float = typer.Option(
        0.90, help="Recall at the prompt k counted high (the same bar as at a large k)."
    ),
    answer_threshold: float = typer.Option(0.80, help="Correct-and-supported rate counted high."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table or json."),
    show_all: bool = typer.Option(
        False, "--all", help="List every faithful-but-wrong answer (the first 5 otherwise)."
    ),
) -> None:
    """Walk recall at a large k -> recall at the prompt k -> faithful and correct -> slices, and
    print the failing link with ONE next experiment and its refutation rule."""
    from .._numbers import rate
    from ..diagnosis import Thresholds
    from ..workflows.diagnose import PromptRun, diagnose

    for flag, value in (
        ("--headroom-threshold", headroom_threshold),
        ("--prompt-threshold", prompt_threshold),
        ("--answer-threshold", answer_threshold),
    ):
        rate(flag, value)
    thresholds = Thresholds(
        headroom_recall=headroom_threshold,
        prompt_recall=prompt_threshold,
        answer_ok=answer_threshold,
    )
    if experiment is not None:
        given = [
            flag
            for flag, value in (
                ("--golden", golden), ("--answers", answers), ("--corpus", corpus),
                ("--chunks", chunks), ("--run", run), ("--k", k), ("--budget", budget),
                ("--eval", eval_json), ("--prompt-metric", prompt_metric),
                ("--headroom-metric", headroom_metric), ("--table", table), ("--counts", counts),
            )
            if value is not None
        ]  # fmt: skip
        if given:
            raise UsageError(
                f"--experiment reads every input from the experiment's outputs; drop "
                f"{', '.join(given)}"
            )
        from ..workflows.diagnose import diagnose_experiment

        _show(
            diagnose_experiment(experiment, thresholds=thresholds, large_k=large_k, split=split),
            fmt,
            show_all,
        )
        return
    nums = _counts(counts) if counts is not None else None
    gold = corp = chk = None
    if golden is not None:
        from ..workflows.answers import load_inputs

        loaded = load_inputs(golden, corpus, chunks)
        gold, corp, chk = loaded.golden, loaded.corpus, loaded.chunking
    evals: list[Evaluation] = []
    if eval_json is not None:
        from ..metrics import Evaluation

        evals += Evaluation.load_all(eval_json)
    # the metrics the run measured (the config.json `ragmeter run` and `runs export` write
    # beside its run file): a next experiment may name any of them, as in the lab
    measured = measured_beside(run) if run is not None else None
    if measured is not None:
        measured += [str(m) for e in evals for m in e.metrics if str(m) not in measured]
    result = diagnose(
        golden=gold,
        corpus=corp,
        chunking=chk,
        answers=answers,
        run=PromptRun(str(run), str(run), k, budget, large_k or 50) if run is not None else None,
        evaluations=evals,
        prompt_metric=prompt_metric,
        headroom_metric=headroom_metric,
        counts=nums,
        table_file=table,
        split=split,
        thresholds=thresholds,
        metrics=measured,
    )
    _show(result, fmt, show_all)


def measured_beside(run_file: Path) -> list[str] | None:
    """The metrics recorded in the ``config.json`` beside ``run_file`` (``resolved.metrics``,
    written by ``ragmeter run`` and ``ragmeter runs export`` for the run file they write); None
    when there is no such file, it records another run file, or it cannot be read."""
    import json

    config = run_file.parent / "config.json"
    try:
        cfg = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(cfg, dict):
        return None
    named = cfg.get("run_file")
    if isinstance(named, str) and Path(named).name != run_file.name:
        return None
    resolved = cfg.get("resolved")
    metrics = resolved.get("metrics") if isinstance(resolved, dict) else None
    if isinstance(metrics, list) and metrics and all(isinstance(m, str) for m in metrics):
        return list(metrics)
    return None


#: faithful-but-wrong answers listed before "N more (--all)": the diagnosis stays readable
SHOWN_WRONG = 5


def _show(result: DiagnoseResult, fmt: Format, show_all: bool = False) -> None:
    """The answers report, the retrieval-by-answer table, the causal table (with ablations) and
    the diagnosis; or all of it as JSON."""
    from ._render_answers import print_report
    from ._render_diagnosis import print_answer_table, print_causal, print_diagnosis

    if fmt == Format.json:
        print_json(result.to_dict())
        return
    if result.report is not None:
        print_report(console, result.report, limit=None if show_all else SHOWN_WRONG)
    if result.table is not None:
        # beside proven causes, the table's cells say what they are: read from observation
        title = None if result.causal is None else "retrieval-by-answer table (inferred cells)"
        print_answer_table(console, result.table, title)
    if result.causal is not None:
        print_causal(console, result.causal, result.ablations)
    print_diagnosis(console, result.diagnosis)


def _counts(text: str) -> list[int]:
    """``--counts``: four to six integers."""
    try:
        nums = [int(x) for x in text.split(",")]
        if not 4 <= len(nums) <= 6:
            raise ValueError
    except ValueError:
        raise UsageError(
            "--counts takes four to six integers: working,generation_failure,"
            "from_memory,retrieval_failure[,cites_outside_context"
            "[,support_unknown]]"
        ) from None
    return nums
