"""Demo sections 2-4: the fare-rules example through the whole chain.

2. one golden set of span labels scores two chunkings at the same token budget;
3. the experiment file: baseline, smaller chunks at equal budget, hybrid, reranker;
4. answers for two variants: correctness, quotes, the retrieval-by-answer table, the paired
   comparison and the diagnosis.

Section 5 (the named experiment judged by its own rule) is in ``_verdict_section``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from ..._literal import lit

if TYPE_CHECKING:  # pragma: no cover
    from ...experiments import ExperimentResult

#: experiment variant -> answers file of the example written for it
ANSWER_VARIANTS = {"baseline": "baseline", "reranker": "rerank"}


def budget_section(console: Console) -> None:
    from ...labels import budget_table

    console.rule(
        "[bold]2. Span labels: compare chunkings at the same context budget, not the same k"
    )
    console.print(
        "Evidence is labelled as character spans of the documents, so the same golden "
        "set scores every chunking with no relabelling. The RAG evaluation lesson's "
        "budget table:"
    )
    t = Table()
    for col in ("chunk size", "k", "context tokens", "vs baseline", "fair comparison?"):
        t.add_column(col, justify="right" if col != "fair comparison?" else "left")
    for r in budget_table(["300x4", "900x4", "300x12"]):
        t.add_row(
            f"{r.variant.chunk_tokens:g} tokens",
            str(r.variant.k),
            f"{r.context_tokens:,.0f}",
            f"{r.ratio_to_baseline:.2f}x",
            r.verdict,
        )
    console.print(t)
    console.print("fair = within 10% of each other's context tokens (ragmeter labels budget)\n")


def _headroom(result: ExperimentResult, chunking: Any, k: int | None) -> Any:
    """The baseline's run scored at span ``AllR@k`` (the experiment measures ``R@k`` as its
    headroom column; the diagnosis reads AllR at both cuts), None without a headroom k."""
    if not k or chunking is None or result.golden is None:
        return None
    from ...labels import evaluate_spans
    from ...metrics import Metric

    return evaluate_spans(
        result.golden, chunking, result.baseline.run, [Metric("AllR", k)], run_name="baseline"
    )


def experiment_section(console: Console, example: Path, cache_dir: Path | None) -> ExperimentResult:
    from ...experiments import run_experiment
    from .._render_experiment import render_experiment

    console.rule("[bold]3. Retrieval experiment: smaller chunks, hybrid search or a reranker?")
    console.print(
        lit(
            f"{example / 'experiment.toml'}: one change per variant against the "
            "baseline, the same golden-set version, metrics at the prompt k and token "
            "budget. The example's embeddings ship with it (demo-embeddings.npz), so "
            "nothing is encoded; an edited example encodes what changed (about a minute "
            "for all of it on 2 cores), later runs read the cache."
        )
    )
    result = run_experiment(
        example / "experiment.toml", console=console, cache_dir=cache_dir, write=False
    )
    for renderable in render_experiment(result):
        console.print(renderable)
    s, b = result.variant("smaller chunks"), result.baseline
    # the experiment's headline (its file's ``headline``): the metric every section reads
    metric = result.experiment.headline_metric
    if metric is not None and metric in b.evaluation.metrics and metric in s.evaluation.metrics:
        console.print(
            lit(  # lit: rich would read ":100:" in "tokens:100:0" as an emoji
                f"Two chunkings, one golden set: {b.chunking.get('name')} at k = {b.settings.k} "
                f"and {s.chunking.get('name')} at k = {s.settings.k} both fill about "
                f"{b.settings.budget} tokens; {metric} (the experiment's headline): "
                f"{b.value(metric):.3f} vs {s.value(metric):.3f}.\n"
            )
        )
    return result


def answers_section(
    console: Console, example: Path, result: ExperimentResult, details: bool = False
) -> dict[str, Any]:
    from ...answers.contexts import experiment_contexts
    from ...metrics import Metric
    from ._answers_section import run as answers_demo

    console.rule("[bold]4. Answers: faithfulness, the retrieval-by-answer table, diagnosis")
    evaluations, contexts, chunkings = experiment_contexts(result, ANSWER_VARIANTS)
    k = result.baseline.settings.k
    headroom = result.experiment.headroom_k
    out = answers_demo(
        console,
        example,
        evaluations=evaluations,
        prompt_metric=str(Metric("AllR", k)),
        # span AllR at the headroom k, as the prompt row reads AllR and as the lab's and
        # `ragmeter diagnose --run`'s diagnosis score it, so all three print the same line
        headroom_metric=str(Metric("AllR", headroom)) if headroom else None,
        headroom_evaluation=_headroom(result, chunkings.get("baseline"), headroom),
        contexts=contexts,
        # the next experiment names only what the example's experiment measured (its nDCG)
        metrics=[str(m) for m in result.experiment.prompt_metrics(result.baseline.settings)],
        chunkings=chunkings,
        details=details,
    )
    out["contexts"] = contexts  # what `demo --lab` records with each answer
    return out
