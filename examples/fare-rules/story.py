"""Measure the fare-rules example's story and write its numbers into README.md.

Every number the README states about the runs and the answers comes from here: the experiment
is run (``experiment.toml``, through ragmeter's runner; cached runs are reused), the answers of
each variant are checked against the prompt context its run really built, and the
retrieval-by-answer tables, the diagnosis and the paired comparisons are computed with the same
code as ``ragmeter demo`` and ``ragmeter diagnose``. The result replaces the block between the
``<!-- story.py: begin -->`` and ``<!-- story.py: end -->`` markers of README.md.

Usage::

    python examples/fare-rules/story.py           # rewrite the block in README.md
    python examples/fare-rules/story.py --check   # exit 1 when README.md is out of date

``tests/examples/test_example_fare_rules.py`` recomputes the block and compares it with the README.
"""

from __future__ import annotations

import argparse
import io
import sys
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

from ragmeter.diagnosis._table import CELLS

HERE = Path(__file__).resolve().parent
BEGIN, END = "<!-- story.py: begin -->", "<!-- story.py: end -->"
#: experiment variant -> answers variant (the answers written for that variant's run)
ANSWERS = {"baseline": "baseline", "reranker": "rerank"}
#: kinds in the order the README lists them, with their meaning
KINDS = {
    "correct": "evidence in the prompt; right, and quotes or states what its cited passage says",
    "unverifiable": "evidence in the prompt; right, cites it, but nothing checkable: support "
    "unknown",
    "computed": "evidence in the prompt; a right total that no passage states (unsupported by "
    "the deterministic check)",
    "memory": "evidence not in the prompt; right anyway, citing nothing",
    "retrieval-miss": "evidence not in the prompt; wrong, or abstains",
    "generation-error": "evidence in the prompt; wrong (misreads a passage it was given)",
    "stale": "quotes the superseded 2024 schedule that was in its prompt; wrong for 2026",
    "misattributed": "evidence in the prompt; right, but its quote is in another passage",
    "abstain": "correct abstention on an unanswerable question",
    "hallucination": "answers an unanswerable question",
}
ROWS = (
    ("working", "working as designed"),
    ("generation_failure", "generation failure"),
    ("from_memory", "answered from memory"),
    ("retrieval_failure", "retrieval failure"),
    ("support_unknown", "correct, support unknown"),
    ("cites_outside_context", "cites a passage outside its context"),
)


def kinds(example: Path = HERE) -> dict[str, dict[str, str]]:
    """answers variant -> question id -> intended kind (from source/answers.toml)."""
    with (example / "source" / "answers.toml").open("rb") as fh:
        src = tomllib.load(fh)
    return {v: {e["id"]: (e.get(v) or e)["kind"] for e in src["answer"]} for v in ANSWERS.values()}


def measure(
    example: Path = HERE, *, result: Any = None, cache_dir: Path | None = None
) -> dict[str, Any]:
    """Run (or take) the experiment and compute everything the README states."""
    from ragmeter.answers import check_answers, load_answers
    from ragmeter.answers.contexts import experiment_contexts
    from ragmeter.answers.paired import compare_answers
    from ragmeter.data import load_corpus, load_golden
    from ragmeter.diagnosis._diagnose import (
        diagnose,
        evidence_from_evaluation,
        recall_from_evaluation,
    )
    from ragmeter.diagnosis._refutation import apply_rule
    from ragmeter.diagnosis._table import table_from_report
    from ragmeter.experiments import run_experiment
    from ragmeter.paired import compare
    from ragmeter.workflows.confirm import confirm_in_result

    if result is None:
        result = run_experiment(example / "experiment.toml", write=False, cache_dir=cache_dir)
    corpus = load_corpus(example / "corpus.jsonl")
    golden = load_golden(example / "golden.jsonl", corpus)
    base = result.baseline
    prompt = f"AllR@{base.settings.k}"
    headroom = f"R@{result.experiment.headroom_k}"
    evals, contexts, chunkings = experiment_contexts(result, ANSWERS)
    reports, tables = {}, {}
    for name in ANSWERS.values():
        answers = load_answers(example / "answers" / f"{name}.jsonl", golden=golden, variant=name)
        reports[name] = check_answers(
            answers, golden, corpus=corpus, chunks=chunkings[name], contexts=contexts[name]
        )
        tables[name] = table_from_report(
            evidence_from_evaluation(evals[name], prompt), reports[name]
        )
    diagnosis = diagnose(
        table=tables["baseline"],
        report=reports["baseline"],
        prompt_recall=recall_from_evaluation(base.evaluation, prompt),
        headroom_recall=recall_from_evaluation(base.evaluation, headroom),
    )
    retrieval = []
    for v in result.variants:
        metric = f"AllR@{v.settings.k}"
        row: dict[str, Any] = {
            "variant": v.name,
            "k": v.settings.k,
            "metric": metric,
            "value": v.value(metric),
            "in_prompt": None,
            "comparison": None,
        }
        col = v.evaluation.column(metric)
        row["in_prompt"] = sum(x >= 1.0 - 1e-9 for x in col.values())
        row["n"] = len(col)
        if not v.is_baseline:
            row["comparison"] = compare(
                base.evaluation.column(prompt), col, "AllR at the prompt", seed=0, n_resamples=5000
            )
        retrieval.append(row)
    answers_cmp = compare_answers(reports["baseline"], reports["rerank"])
    ev_base = evidence_from_evaluation(evals["baseline"], prompt)
    ev_rr = evidence_from_evaluation(evals["rerank"], prompt)
    fixed = answers_cmp.comparison.fixed_ids
    stale_ranks = {}
    for qid in ("change-fee-standard", "change-fee-basic"):
        ctx = contexts["baseline"][qid]
        docs = [chunkings["baseline"].get(c).doc for c in ctx]
        stale_ranks[qid] = (
            docs.index("fees-2024") + 1 if "fees-2024" in docs else None,
            "fees-2026" in docs,
        )
    # the experiment's headline (``headline`` in experiment.toml): the metric the rule, the
    # confirmation, `ragmeter run`'s paired table, the lab and the report all read
    verdicts = apply_rule(result, result.experiment.headline_metric)
    chosen = verdicts.survivors[0].variant if len(verdicts.survivors) == 1 else None
    return {
        "stale_ranks": stale_ranks,
        "result": result,
        "prompt": prompt,
        "headroom": headroom,
        "reports": reports,
        "tables": tables,
        "diagnosis": diagnosis,
        "retrieval": retrieval,
        "answers_comparison": answers_cmp,
        "fixed_by_evidence": sum(not ev_base.get(q) and bool(ev_rr.get(q)) for q in fixed),
        "kinds": kinds(example),
        "headroom_value": base.value(headroom),
        # the diagnosis's rule applied as written, as section 5 of `ragmeter demo` applies it
        "verdicts": verdicts,
        # the survivor once on the held-out split, as `ragmeter confirm` (recorded nowhere here)
        # and section 6 of `ragmeter demo` compare it
        "confirmation": None if chosen is None else confirm_in_result(result, chosen),
    }


def _largest(table: Any) -> str:
    """The largest bad cell, and the cells it is tied with (ties go down the chain)."""
    lb = table.largest_bad
    if lb is None:
        return "none"
    ties = [
        c.title
        for c in CELLS
        if c.bad and c.key != lb.key and table.count(c.key) == table.count(lb.key)
    ]
    tied = f", tied with {' and '.join(ties)}: ties go down the chain" if ties else ""
    return f"{lb.title} ({table.count(lb.key)}{tied})"


def _ci(c: Any) -> str:
    from ragmeter._interval import interval_text  # each end on its side of zero, as the CLI

    lo, hi = c.ci
    return interval_text(lo, hi)


def render(m: dict[str, Any]) -> str:
    """The README block (Markdown) from :func:`measure`'s numbers."""
    from ragmeter.cli._demo._verdict_section import same_cut_note

    d, tb, tr = m["diagnosis"], m["tables"]["baseline"], m["tables"]["rerank"]
    ret = {r["variant"]: r for r in m["retrieval"]}
    b = ret["baseline"]
    out = [
        BEGIN,
        "",
        (
            "*Generated by `python examples/fare-rules/story.py` from the runs of "
            "`experiment.toml` and the answers; do not edit by hand.*"
        ),
        "",
    ]
    out += [
        "### Retrieval: does the evidence reach the prompt?",
        "",
        (
            f"In the baseline (BM25, 300-token chunks, k = {b['k']}) the evidence of "
            f"{b['in_prompt']} of the {b['n']} answerable questions reaches the prompt "
            f"({b['metric']} = {b['value']:.3f}), while {m['headroom']} = "
            f"{m['headroom_value']:.3f}: the evidence is in the candidate pool, not in the "
            "prompt."
        ),
        "",
    ]
    for qid, (rank, current) in m["stale_ranks"].items():
        out.append(
            f"- `{qid}`: the superseded 2024 schedule is at rank {rank} of the prompt; "
            f"the 2026 schedule is {'also' if current else 'not'} in it."
        )
    out += [
        "",
        (
            "| variant | k | evidence in the prompt | AllR at the prompt k (not the headline) | "
            "fixed / broken vs baseline, all questions | 95% paired interval |"
        ),
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in m["retrieval"]:
        c = r["comparison"]
        out.append(
            f"| {r['variant']} | {r['k']} | {r['in_prompt']} of {r['n']} | "
            f"{r['value']:.3f} | " + (f"{c.fixed} / {c.broken} | {_ci(c)} |" if c else "- | - |")
        )
    out += [
        "",
        "### The answers of the two variants",
        "",
        (
            "Each answer was written for the prompt its variant's run built (the top "
            f"{b['k']} chunks); `kind` in `source/answers.toml` says what it shows."
        ),
        "",
        "| kind | meaning | baseline | rerank |",
        "|---|---|---:|---:|",
    ]
    counts = {v: Counter(k.values()) for v, k in m["kinds"].items()}
    for kind, meaning in KINDS.items():
        out.append(
            f"| `{kind}` | {meaning} | {counts['baseline'][kind]} | {counts['rerank'][kind]} |"
        )
    out += [
        "",
        "### The retrieval-by-answer table",
        "",
        (
            f"Evidence in the prompt = {m['prompt']} = 1; below the evidence line the split is "
            "on correctness."
        ),
        "",
        "| cell | baseline | rerank |",
        "|---|---:|---:|",
    ]
    for key, title in ROWS:
        out.append(f"| {title} | {tb.count(key)} | {tr.count(key)} |")
    out.append(f"| **largest bad cell** | {_largest(tb)} | {_largest(tr)} |")
    steps = {s.key: s for s in d.steps}
    e = d.experiment
    out += [
        "",
        "### Diagnosis of the baseline (`ragmeter diagnose`, `ragmeter demo`)",
        "",
        f"- Recall at a large k: {steps['headroom'].detail} ({steps['headroom'].status}).",
        f"- Recall at the prompt k: {steps['prompt_k'].detail} ({steps['prompt_k'].status}).",
        (f"- Faithful and correct: {steps['generation'].detail} ({steps['generation'].status})."),
        f"- Path and table: {d.notes[0]}.",
        (
            f"- Failing link: **{d.failing_link}**. Next experiment: {e.change} (or instead: "
            f"{e.alternative}); compared as {e.comparison}; refuted if "
            f"{e.refutation.removeprefix('abandon if ')}."
        ),
    ]
    v = m["verdicts"]
    out += [
        "",
        "### The named experiment, measured (`ragmeter demo`, section 5)",
        "",
        (
            f"The rule applied as written to the variants measured at {v.metric}, the "
            f"experiment's headline metric (`headline` in `experiment.toml`): {v.metric} "
            f"paired per question against the baseline on {v.where()}."
            + same_cut_note(m["result"], d.experiment.metric, v.metric)
        ),
        "",
        "| variant | change | fixed | broken | 95% paired interval | sign test p | rule |",
        "|---|---|---:|---:|---|---:|---|",
    ]
    for c in v.checks:
        out.append(
            f"| {c.variant} | {', '.join(c.changes)} | {c.stats.fixed} | "
            f"{c.stats.broken} | {c.interval} | {c.stats.sign_test_p:.3f} | "
            f"{'refuted' if c.refuted else 'survives'} |"
        )
    for sentence in v.sentences():  # one paragraph each
        out += ["", sentence]
    ac = m["answers_comparison"].comparison
    out += [
        "",
        "### Answers with the reranker",
        "",
        (
            f"With the reranker's prompts the largest bad cell is {_largest(tr)}: once more "
            "evidence reaches the prompt, what is left to fix is increasingly the generator's."
        ),
        "",
        (
            f"On answer correct and supported ({ac.n} questions scored in both), rerank fixes "
            f"{ac.fixed} and breaks {ac.broken} ({_ci(ac)}); {m['fixed_by_evidence']} of the "
            "fixed questions are ones whose evidence reached the prompt only with the reranker. "
            f"Broken: {', '.join(f'`{q}`' for q in ac.broken_ids) or 'none'}."
        ),
    ]
    out += _confirmation(m["confirmation"])
    out += ["", END]
    return "\n".join(out)


def confirm_output(c: Any) -> str:
    """What ``ragmeter confirm`` prints on stdout for ``c`` (100 columns, no colour)."""
    from rich.console import Console

    from ragmeter.cli._confirm import print_confirmation

    console = Console(record=True, width=100, color_system=None, file=io.StringIO())
    print_confirmation(console, c)
    return "\n".join(x.rstrip() for x in console.export_text().strip("\n").splitlines())


def _confirmation(c: Any) -> list[str]:
    """The story's last step: the survivor once on the held-out split (``ragmeter confirm``)."""
    if c is None:
        return []
    from ragmeter.cli._confirm import recorded_line

    r = c.result
    return [
        "",
        f"### The last step: confirm {c.variant} once on the {c.split} split (`ragmeter confirm`)",
        "",
        (
            f"The rule chose {c.variant} on the tune split; the {c.n_split} questions of the "
            f"{c.split} split played no part in that choice ({r.n} of them have evidence and are "
            f"scored at {c.metric}). One command runs {c.variant} and the baseline from the cache, "
            f"compares them on those questions only, once, and records the confirmation in the "
            "selection ledger (the experiment store's; `--ledger FILE` or `--no-store` for a "
            "JSONL file):"
        ),
        "",
        "```console",
        f"$ ragmeter confirm examples/fare-rules/experiment.toml --variant {c.variant}",
        confirm_output(c),
        recorded_line(c, "sqlite:///.ragmeter/ragmeter.db"),  # stderr, with the default store
        "```",
        "",
        (
            f"{c.variant.capitalize()} holds up where it was not chosen: {r.counts()}, "
            f"interval {r.interval}, sign test p = {r.sign_test_p:.3f}. Exit code 0. Running it "
            "again records nothing and shows the recorded result; confirming a different variant "
            f"on the same golden-set version's {c.split} split prints a red warning, \"the "
            f'{c.split} split is no longer held out: 2 variants confirmed on it", and exits 1 '
            "(docs/compare.md). What is left: regenerate the answers with "
            f"{c.variant}'s prompt contexts and check and diagnose them again."
        ),
    ]


def replace_block(readme: str, block: str) -> str:
    if BEGIN not in readme or END not in readme:
        raise SystemExit(f"README.md has no {BEGIN} ... {END} block")
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + block + tail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when README.md is stale")
    args = parser.parse_args(argv)
    readme = HERE / "README.md"
    text = readme.read_text(encoding="utf-8")
    new = replace_block(text, render(measure()))
    if args.check:
        if new != text:
            print(
                "README.md is out of date: run python examples/fare-rules/story.py", file=sys.stderr
            )
            return 1
        return 0
    readme.write_text(new, encoding="utf-8")
    print(f"wrote the generated block of {readme}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
