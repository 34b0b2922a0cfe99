"""``ragmeter diagnose``: the failing link of the RAG chain and ONE next experiment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from .._errors import UsageError
from ..diagnosis import pick_recall
from ._common import Format, console, handle_errors, print_json


def register(app: typer.Typer) -> None:
    app.command("diagnose")(diagnose_cmd)


@handle_errors
def diagnose_cmd(
    golden: Path | None = typer.Option(None, help="Golden set (JSONL)."),
    answers: Path | None = typer.Option(None, help="Answers JSONL of the variant to diagnose."),
    corpus: Path | None = typer.Option(None, help="Corpus (citations, effective dates)."),
    chunks: Path | None = typer.Option(None, help="Chunking the run and context ids refer to."),
    run: Path | None = typer.Option(None, help="Retrieval run (TREC or JSONL) of chunk ids."),
    k: int | None = typer.Option(None, "--k", help="Prompt k (passages in the prompt)."),
    budget: int | None = typer.Option(None, help="Prompt token budget instead of --k."),
    large_k: int = typer.Option(50, help="Large k for the headroom check."),
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
) -> None:
    """Walk recall at a large k -> recall at the prompt k -> faithful and correct -> slices, and
    print the failing link with ONE next experiment and its refutation rule."""
    from .._numbers import rate
    from ..diagnosis._diagnose import (
        Thresholds,
        diagnose,
        evidence_from_evaluation,
        recall_from_evaluation,
    )
    from ..diagnosis._table import table_from_counts, table_from_file, table_from_report
    from ._render_answers import print_report
    from ._render_diagnosis import print_answer_table, print_diagnosis

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
    gold = corp = chk = None
    if golden is not None:
        from ._answers import _load_inputs

        gold, corp, chk = _load_inputs(golden, corpus, chunks)
    evals: list[Any] = []
    if eval_json is not None:
        from ..metrics._evaluation import Evaluation

        evals += Evaluation.load_all(eval_json)
    contexts = None
    if run is not None:
        if gold is None or chk is None:
            raise UsageError("--run needs --golden and --chunks to score spans")
        scored = _score_run(gold, chk, run, k, budget, large_k)
        evals.append(scored)
        # the run was scored at the prompt (k or budget) and at the large k: say which is which
        # (recall at a budget has no rank cutoff, so picking by cutoff would read AllR@large_k
        # as the prompt's recall); --prompt-metric / --headroom-metric still choose
        prompt_metric = prompt_metric or str(scored.metrics[0])
        if len(scored.metrics) > 1:  # --k equal to --large-k: no headroom to measure
            headroom_metric = headroom_metric or str(scored.metrics[-1])
        from ..answers.contexts import prompt_contexts

        # answers that carry no `context` are checked against what this run put in the prompt
        contexts = prompt_contexts(str(run), chk, k=k, budget=budget)

    report = None
    if answers is not None:
        if gold is None:
            raise UsageError("--answers needs --golden")
        from ..answers._schema import load_answers
        from ..answers.report import check_answers

        report = check_answers(
            load_answers(answers, golden=gold), gold, corpus=corp, chunks=chk, contexts=contexts
        )
    prompt = pick_recall(evals, prompt_metric, "prompt") if evals else None
    headroom = pick_recall(evals, headroom_metric, "headroom") if evals else None
    pr = recall_from_evaluation(*prompt) if prompt else None
    hr = recall_from_evaluation(*headroom) if headroom else None
    from ..answers.report import golden_version_of

    version = (golden_version_of(gold) if gold is not None else None) or next(
        (e.golden_version for e in evals if e.golden_version), None
    )

    tab = None
    if counts is not None:
        try:
            nums = [int(x) for x in counts.split(",")]
            if not 4 <= len(nums) <= 6:
                raise ValueError
        except ValueError:
            raise UsageError(
                "--counts takes four to six integers: working,generation_failure,"
                "from_memory,retrieval_failure[,cites_outside_context"
                "[,support_unknown]]"
            ) from None
        optional = ("cites_outside_context", "support_unknown")[: len(nums) - 4]
        extra = dict(zip(optional, nums[4:], strict=True))
        tab = table_from_counts(*nums[:4], **extra)
    elif table is not None:
        tab = table_from_file(table)
    elif prompt is not None and report is not None:
        tab = table_from_report(
            evidence_from_evaluation(*prompt),
            report,
            evidence_label=f"evidence in the prompt context ({prompt[1]} = 1)",
        )
    d = diagnose(
        table=tab,
        prompt_recall=pr,
        headroom_recall=hr,
        report=report,
        golden_version=version,
        split=split,
        thresholds=thresholds,
    )
    if fmt == Format.json:
        out = d.to_dict()
        if report is not None:
            out["answers"] = report.summary()
            out["faithful_but_wrong"] = [f.to_dict() for f in report.faithful_but_wrong]
        print_json(out)
        return
    if report is not None:
        print_report(console, report)
    if tab is not None:
        print_answer_table(console, tab)
    print_diagnosis(console, d)


def _score_run(
    gold: Any, chk: Any, run: Path, k: int | None, budget: int | None, large_k: int
) -> Any:
    if (k is None) == (budget is None):
        raise UsageError("give the prompt's --k or its --budget (exactly one)")
    from ..labels import evaluate_spans
    from ..metrics import Metric

    allr = Metric("AllR")
    # span labels give R, Hit, RR and AllR (nDCG needs chunk qrels: ragmeter labels export)
    metrics = [allr.at(k=k) if k is not None else allr.at(budget=budget), allr.at(k=large_k)]
    return evaluate_spans(gold, chk, str(run), metrics, run_name=str(run))
