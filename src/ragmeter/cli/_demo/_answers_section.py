"""The answers part of ``ragmeter demo``: correctness and the deterministic faithfulness check on
the example's answer variants, the retrieval-by-answer table, the paired comparison with its
interval, and the diagnosis. No network, no judge call.

Call::

    from ragmeter.cli._demo._answers_section import run
    run(console, Path("examples/fare-rules"),
        evaluations={"baseline": eval_baseline, "rerank": eval_rerank},  # span-level, per query
        prompt_metric="AllR@3", headroom_metric="AllR@50")

``example_dir`` holds ``corpus.jsonl``, ``golden.jsonl`` and ``answers/<variant>.jsonl``.
``evaluations`` (optional) maps a variant name to the
:class:`~ragmeter.metrics.Evaluation` of its retrieval run (from
``ragmeter.labels.evaluate_spans``), carrying ``prompt_metric`` (binary AllR at the prompt k or
budget: evidence in the prompt context) and optionally
``headroom_metric``; without them the table is skipped and the diagnosis uses the answers only.
``contexts`` (optional) maps a variant to ``{qid: chunk ids}`` of its prompt (from
:func:`ragmeter.answers.contexts.prompt_contexts` of its run) and ``chunkings`` to the Chunking
those ids refer to: the example's answers carry no ``context``, so their citations are checked
against what the run put in the prompt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.rule import Rule

from ..._errors import InputError
from ..._literal import lit
from .._render_answers import print_answer_comparison, print_report
from .._render_diagnosis import print_answer_table, print_diagnosis

if TYPE_CHECKING:  # pragma: no cover
    from ...chunking import Chunking
    from ...metrics import Evaluation


def _prompt_metric(ev: Evaluation | None) -> str | None:
    """The recall at the prompt k that the evaluation carries (the smallest rank cutoff)."""
    from ...diagnosis import pick_recall

    picked = pick_recall([ev], None, "prompt") if ev is not None else None
    return str(picked[1]) if picked else None


def run(
    console: Console,
    example_dir: str | Path,
    *,
    evaluations: Mapping[str, Evaluation] | None = None,
    prompt_metric: str | None = None,
    headroom_metric: str | None = None,
    headroom_evaluation: Evaluation | None = None,
    variants: Sequence[str] = ("baseline", "rerank"),
    chunks: Chunking | None = None,
    contexts: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    chunkings: Mapping[str, Chunking] | None = None,
    metrics: Sequence[str] | None = None,
    details: bool = True,
) -> dict[str, Any]:
    """Print the answers section of the demo; returns the reports, tables, comparison and
    diagnosis (for tests and for the caller's own summary)."""
    from ...answers import check_answers, compare_answers, load_answers
    from ...data import load_corpus, load_golden
    from ...diagnosis import (
        diagnose,
        evidence_from_evaluation,
        recall_from_evaluation,
        table_from_report,
    )

    folder = Path(example_dir)
    for name in ("corpus.jsonl", "golden.jsonl"):
        if not (folder / name).is_file():
            raise InputError("the example is missing this file", path=folder / name)
    corpus = load_corpus(folder / "corpus.jsonl")
    golden = load_golden(folder / "golden.jsonl", corpus)
    console.print(Rule("answers: correctness, quotes, faithful but wrong"))
    console.print(
        "The answers below are synthetic, written by hand for this example; no model "
        "and no judge was called."
    )
    reports = {}
    for v in variants:
        path = folder / "answers" / f"{v}.jsonl"
        aset = load_answers(path, golden=golden, variant=v)
        reports[v] = check_answers(
            aset,
            golden,
            corpus=corpus,
            chunks=(chunkings or {}).get(v, chunks),
            contexts=(contexts or {}).get(v),
        )
        print_report(console, reports[v], details=details)

    tables = {}
    evaluations = dict(evaluations or {})
    for v in variants:
        ev = evaluations.get(v)
        metric = prompt_metric or _prompt_metric(ev)
        if ev is None or metric is None:
            continue
        tables[v] = table_from_report(
            evidence_from_evaluation(ev, metric),
            reports[v],
            evidence_label=f"evidence in the prompt context ({metric} = 1)",
        )
        print_answer_table(console, tables[v], title=f"retrieval-by-answer: {v}")
    if not tables:
        console.print(
            "(no retrieval evaluations given: the retrieval-by-answer table needs "
            "per-question AllR at the prompt k)"
        )

    comparison = None
    if len(variants) >= 2:
        console.print(Rule("paired comparison of the answers"))
        comparison = compare_answers(reports[variants[0]], reports[variants[1]])
        print_answer_comparison(console, comparison)

    base = variants[0]
    ev = evaluations.get(base)
    metric = prompt_metric or _prompt_metric(ev)
    pr = recall_from_evaluation(ev, metric) if ev is not None and metric else None
    hr = None
    held = headroom_evaluation or ev  # (the recall at the large k may be scored apart)
    if held is not None and headroom_metric is not None:
        hr = recall_from_evaluation(held, headroom_metric)
    console.print(Rule(lit(f"diagnosis of '{base}'", "rule.text")))  # the name as written
    diagnosis = diagnose(
        table=tables.get(base),
        prompt_recall=pr,
        headroom_recall=hr,
        report=reports[base],
        metrics=metrics,
    )
    print_diagnosis(console, diagnosis)
    return {"reports": reports, "tables": tables, "comparison": comparison, "diagnosis": diagnosis}
