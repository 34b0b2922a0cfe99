"""``ragmeter answers check|compare`` and ``ragmeter judge validate``."""

from __future__ import annotations

from pathlib import Path

import typer

from ._common import Format, console, err_console, handle_errors, print_json, write_csv
from ._store_options import db_option, no_store_option, open_store

answers_app = typer.Typer(
    help="Check generated answers: correctness, abstention, quotes, judges.", no_args_is_help=True
)
judge_app = typer.Typer(help="Validate a model judge against human labels.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(answers_app, name="answers")
    app.add_typer(judge_app, name="judge")


@answers_app.command("check")
@handle_errors
def check_cmd(
    answers: list[Path] = typer.Argument(..., help="Answers JSONL file(s), one variant each."),
    golden: Path = typer.Option(..., help="Golden set (JSONL) with reference answers."),
    corpus: Path | None = typer.Option(None, help="Corpus: resolves doc citations, dates."),
    chunks: Path | None = typer.Option(None, help="Chunking: resolves chunk citations, context."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json or csv."),
    per_answer: bool = typer.Option(False, "--per-answer", help="Also list every answer."),
    run: Path | None = typer.Option(
        None,
        help="Retrieval run (TREC or JSONL) of chunk ids: the "
        "prompt context of answers that carry no 'context' (needs "
        "--chunks and --k or --budget).",
    ),
    k: int | None = typer.Option(None, "--k", help="Prompt k: the run's top k is the context."),
    budget: int | None = typer.Option(None, help="Prompt token budget instead of --k."),
    judge: str = typer.Option("none", help="none, fake (rule-based, for demos) or openai."),
    judge_metrics: str = typer.Option(
        "faithfulness",
        help="Judge metrics: faithfulness, context_relevance, answer_relevance, "
        "correctness, and the claim-level claim_faithfulness, hallucination, claim_precision, "
        "claim_recall, context_utilisation ('claims' names all five) (comma-separated).",
    ),
    judge_url: str | None = typer.Option(
        None, help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1"
    ),
    judge_model: str | None = typer.Option(None, help="Judge model name."),
    judge_key_env: str | None = typer.Option(None, help="Name of the env var holding the API key."),
    judge_cache: Path | None = typer.Option(
        Path(".ragmeter-cache/judge"), help="Disk cache of judge replies."
    ),
    judge_timeout: float = typer.Option(
        60.0, help="Seconds per request attempt, over 0 and at most 3600."
    ),
    judge_retries: int = typer.Option(
        3, help="Retries on 429/5xx/timeouts/malformed replies, 0 to 20."
    ),
    judge_concurrency: int = typer.Option(4, help="Requests in flight at once, 1 to 256."),
    price_prompt: float | None = typer.Option(None, help="Price per 1k prompt tokens."),
    price_completion: float | None = typer.Option(None, help="Price per 1k completion tokens."),
    judge_prompts: Path | None = typer.Option(
        None,
        help="Folder of judge prompts (<metric>.v1.txt) replacing the shipped ones; see "
        "docs/judges.md.",
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Send nothing: print the judge requests the check would make, how many the cache "
        "holds, estimated tokens and cost (with prices).",
    ),
    db: str | None = db_option(),
    no_store: bool = no_store_option(),
) -> None:
    """Score answers: correctness, abstention, quote/value faithfulness, faithful-but-wrong.

    Exit code 1 when a judge was used and any judgement failed (the failures are listed).
    With --dry-run nothing is sent, scored or recorded: only the judge's work is counted."""
    from ..workflows.answers import CheckRequest, JudgeSettings, check_answers, plan_check
    from ._outputs import check_folder
    from ._render_answers import print_report
    from ._render_usage import judge_usage_table
    from ._store_answers import record_answer_sets

    if judge_cache is not None:  # the judge writes its replies there: never the store, an input
        inputs = [*answers, golden, corpus, chunks, run, judge_prompts]
        check_folder(judge_cache, option="--judge-cache", inputs=inputs, db=db)
    store = open_store(db, no_store)
    settings = JudgeSettings(
        judge, judge_url, judge_model, judge_key_env, judge_cache, timeout=judge_timeout,
        retries=judge_retries, concurrency=judge_concurrency, price_prompt=price_prompt,
        price_completion=price_completion,
    )  # fmt: skip
    request = CheckRequest(
        answers, golden, corpus, chunks, run=run, k=k, budget=budget, judge=settings,
        judge_metrics=judge_metrics, judge_prompts=judge_prompts,
    )  # fmt: skip

    def warn(note: str) -> None:
        err_console.print(f"[yellow]{note}[/yellow]")

    if dry_run:
        plan = plan_check(request, warn=warn)
        if fmt == Format.json:
            print_json(plan.to_dict())
        else:
            for text in plan.lines():
                console.print(text, markup=False, highlight=False)
        return
    out = check_answers(request, warn=warn)
    if fmt == Format.json:
        objs = out.to_dicts()
        print_json(objs[0] if len(objs) == 1 else objs)
    elif fmt == Format.csv:
        tables = [c.report.csv_rows() for c in out.checked]
        write_csv(tables[0][0], [row for _, rows in tables for row in rows])
    else:
        for c in out.checked:
            print_report(console, c.report, per_answer=per_answer)
        table = judge_usage_table(
            [(c.report.variant, c.usage) for c in out.checked],
            "--price-prompt and --price-completion",
            priced=out.priced,
        )
        if table is not None:
            console.print(table)
    record_answer_sets(store, out.checked, out.contexts, out.golden)
    if out.failed:
        err_console.print(
            f"[red]{out.failed} judgement(s) failed[/red]; they are recorded as failed, not as "
            "passes"
        )
        raise typer.Exit(1)


@answers_app.command("compare")
@handle_errors
def compare_cmd(
    baseline: Path = typer.Argument(..., help="Baseline answers JSONL."),
    candidate: Path = typer.Argument(..., help="Candidate answers JSONL."),
    golden: Path = typer.Option(..., help="Golden set (JSONL)."),
    corpus: Path | None = typer.Option(None, help="Corpus (resolves doc citations)."),
    chunks: Path | None = typer.Option(None, help="Chunking (resolves chunk citations)."),
    split: str | None = typer.Option(None, help="Only questions of this split (tune/heldout)."),
    seed: int = typer.Option(0, help="Bootstrap seed."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table or json."),
    show_all: bool = typer.Option(
        False, "--all", help="List every fixed and broken question (default: the first 10)."
    ),
) -> None:
    """Paired comparison of two answer variants on 'answer correct and supported'."""
    from ..workflows.answers import compare_answer_files, load_inputs

    comp = compare_answer_files(
        baseline, candidate, load_inputs(golden, corpus, chunks), split=split, seed=seed
    )
    if fmt == Format.json:
        print_json(comp.to_dict())
    else:
        from ._render_answers import print_answer_comparison

        print_answer_comparison(console, comp, show_all=show_all)


@judge_app.command("validate")
@handle_errors
def validate_cmd(
    human: Path = typer.Option(
        ...,
        help='Human labels JSONL: {"id", "label"}, or claim-level {"id", "claim", '
        '"against": "context"|"reference"|"answer", "supported"} (docs/judges.md).',
    ),
    judged: Path = typer.Option(
        ...,
        "--judge",
        help='Judge labels JSONL: {"id", "label", "run"?, "order"?: "ab"|"ba", "score"?, "ok"?}, '
        "or the JSON of 'ragmeter answers check --judge ... --format json'.",
    ),
    metric: str | None = typer.Option(
        None,
        help="Judge metric to validate, when the answers-check JSON holds several "
        "(faithfulness, correctness, ..., or claims: the claim-level verdicts).",
    ),
    variant: str | None = typer.Option(
        None, help="Answer variant to validate, when the answers-check JSON holds several."
    ),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table or json."),
    db: str | None = db_option(),
    no_store: bool = no_store_option(),
) -> None:
    """Agreement per class, confusion matrix, Cohen's kappa, order flips, repeat variance and the
    disagreements themselves.

    The judge file is JSON Lines of labels or the JSON written by 'ragmeter answers check
    --judge ... --format json' (its judgements under answers[i].judged)."""
    from ..workflows.answers import validate_judge_files
    from ._render_answers import print_validation
    from ._store_answers import record_judge_validation

    store = open_store(db, no_store)
    validated = validate_judge_files(human, judged, metric=metric, variant=variant)
    if fmt == Format.json:
        print_json(validated.validation.to_dict())
    else:
        print_validation(console, validated.validation)
    record_judge_validation(store, validated, judged)
