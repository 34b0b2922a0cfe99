"""Rich rendering of an experiment's result: what each variant runs, its metrics at the prompt k
and at the token budget, and the paired comparison of each variant with the baseline.

The rows and numbers come from :mod:`ragmeter.experiments` (``table_rows``, ``comparison_rows``,
``column_groups``: the same rows ``--format json|csv`` prints); this module only lays them out.
Three narrow tables rather than one wide one, so an 80-column terminal shows them unwrapped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from .._interval import interval_text
from .._literal import CAPTION, TITLE, lit
from .._pvalue import format_p
from ._render_usage import judge_usage_table

if TYPE_CHECKING:  # pragma: no cover
    from ..experiments import ExperimentResult


def _questions_fact(result: ExperimentResult) -> tuple[str, str]:
    """How many questions the metrics are over, and, where the golden set holds more (its
    unanswerable questions have no evidence to retrieve), a line that says why: ("80
    answerable questions of 90", "the 10 unanswerable ...")."""
    n = result.baseline.evaluation.n_queries
    golden = result.golden
    total = len(list(golden)) if golden is not None else n
    if total <= n:
        return f"{n} questions", ""
    unanswerable = sum(1 for q in golden if getattr(q, "answerable", True) is False)
    if unanswerable == total - n:
        return (
            f"{n} answerable questions of {total}",
            f"the {unanswerable} unanswerable questions have no evidence to retrieve: the "
            "retrieval metrics leave them out; answer checks count them",
        )
    return (
        f"{n} questions of {total}",
        f"the other {total - n} have no labelled evidence: the retrieval metrics leave them out",
    )


def render_experiment(result: ExperimentResult) -> list[Any]:
    """rich renderables: the setup table, the metric table(s) and the comparison table."""
    from ..experiments import (
        HEADROOM_NOTE,
        column_groups,
        comparison_rows,
        headroom_header,
        table_rows,
    )
    from ..metrics import metric_label

    # exact values: the tables format each number once (rounding twice turns 0.66253 into
    # 0.6625 and then into "0.662")
    rows = table_rows(result, digits=None)
    exp = result.experiment
    budgets = {v.settings.budget for v in result.variants}
    head = headroom_header(result)
    questions, why = _questions_fact(result)
    facts = [f"golden set {result.golden_version}", questions]
    if exp.level == "document":
        facts.append("document level: each document at its best chunk's rank")
    if len(budgets) == 1 and None not in budgets:
        facts.append(f"budget {next(iter(budgets))} tokens")
    # lit: experiment, variant and chunker names (tokens:100:0, [x]) print as written
    setup = _titled(f"{exp.name}\n({', '.join(facts)})" + (f"\n{why}" if why else ""))
    setup_keys = ["variant", "chunking", "pipeline", "changes", "k", "ctx_tokens"]
    if len(budgets) > 1:
        setup_keys.insert(5, "budget")
    if "errors" in rows[0]:  # a variant runs the user's own pipeline: its errors are counted
        setup_keys.append("errors")
    for key in setup_keys:
        setup.add_column(
            key.replace("_", " "),
            justify="right" if key in ("k", "budget", "ctx_tokens", "errors") else "left",
            overflow="fold",  # a long pipeline wraps onto the next line, never "…"
        )
    for row in rows:
        # Text: chunker names such as tokens:100:0 must not become emoji or markup
        setup.add_row(*(Text(_fmt(row[k])) for k in setup_keys))

    # metrics at the prompt k (and fixed cutoffs, and the headroom) in one table, at the token
    # budget in another: two narrow tables fit an 80-column terminal where one wide one is cut
    at_k, at_budget = column_groups(result)
    name_width = min(max(len(r["variant"]) for r in rows), 16)
    out: list[Any] = [setup]
    ablations = [
        v.name for v in result.variants if v.changes and set(v.changes) <= {"context.source"}
    ]
    same = (
        f"{', '.join(ablations)} change only the context source: they retrieve as the "
        "baseline does (their answers are compared below)."
        if ablations
        else ""
    )
    for keys, title in ((at_k, "at the prompt k"), (at_budget, "at the token budget")):
        if not keys:
            continue
        headroom = (
            f"R@{exp.headroom_k} is {HEADROOM_NOTE}: evidence in the candidate "
            "pool that a reranker could lift, not what the generator sees."
            if head in keys
            else ""
        )
        t = Table(
            title=title,
            title_justify="left",
            caption=" ".join(x for x in (headroom, same) if x) or None,
            caption_justify="left",
        )
        same = ""  # said once
        t.add_column("variant", min_width=name_width)
        for key in keys:
            t.add_column(
                lit(f"R@{exp.headroom_k} headroom" if key == head else metric_label(key)),
                justify="right",
                style="dim" if key == head else None,
            )
        for row in rows:
            t.add_row(*(Text(_fmt(row[k])) for k in ["variant", *keys]))
        out.append(t)

    comp = comparison_rows(result, digits=None)
    if comp:
        shown = {r["metric"] for r in comp if r.get("metric")}
        one = next(iter(shown)) if len(shown) == 1 else None
        if one is not None and not all(r.get("headline") for r in comp if r.get("metric")):
            one = None  # a metric that is not the headline is labelled on its row
        said = f"{metric_label(one)} (the headline) " if one else ""  # every row's metric
        t2 = _titled(
            f"{said}against the baseline, question by "
            "question (paired bootstrap 95% CI, wins/losses/ties, sign test)"
        )
        t2.add_column("variant", min_width=name_width)
        if one is None:
            t2.add_column("metric")
        for col in ("delta", "95% CI", "W/L/T", "sign p"):
            t2.add_column(col, justify="right", no_wrap=col == "95% CI")
        for r in comp:
            named = metric_label(r["metric"]) if r.get("metric") else "-"
            if r.get("metric") and not r.get("headline"):
                named += " (not the headline)"
            lead = [Text(r["variant"])] + ([] if one else [lit(named)])
            if r.get("metric") is None:
                t2.add_row(*lead, "-", lit(r["note"]), "", "")
                continue
            t2.add_row(
                *lead,
                f"{r['delta']:+.3f}",
                interval_text(r["ci_low"], r["ci_high"]),
                f"{r['wins']}/{r['losses']}/{r['ties']}",
                format_p(r["sign_p"]),
            )
        out.append(t2)
    return out


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.3f}"
    return str(x)


def render_answers(result: ExperimentResult) -> list[Any]:
    """The answer tables of a generating experiment (empty list when nothing generated): the
    answers per variant, the paired comparison on "correct and supported", the
    retrieval-by-answer cells per variant and, when the order varies, the evidence positions."""
    from ..workflows.diagnose import categories

    done = [v for v in result.variants if v.answers is not None]
    if not done:
        return []
    rows = result.answer_rows()
    width = min(max(len(r["variant"]) for r in rows), 16)
    t = _titled(
        "answers (each variant's generator, prompt, context order and source)",
        "correct: against the reference; ok: correct and supported (citations checked "
        "against the cited passage), over the answers whose support is known; errors: "
        "questions the generator failed on (counted as failed, never as abstentions); "
        "made: answers that reached the model in this run (the rest came from the cache)",
    )
    t.add_column("variant", min_width=width, overflow="fold")
    t.add_column("generation", overflow="fold", ratio=1)
    for col in ("correct", "ok", "abstain", "errors", "made"):
        t.add_column(col, justify="right", no_wrap=True)
    for r in rows:
        t.add_row(
            lit(r["variant"]),
            lit(r["generator"]),
            f"{r['correct']}/{r['answers']}",
            f"{r['ok']}/{r['ok_known']}",
            str(r["abstained"]),
            str(r["errors"]),
            str(r["model_calls"]),
        )
    out: list[Any] = [t]
    judged = _judge_table(done, width)
    if judged is not None:
        out.append(judged)
    judge = result.experiment.judge
    cost = judge_usage_table(
        [(v.name, v.answers.judge_usage) for v in done],
        "the [judge] prices",
        width,
        priced=judge is not None
        and (judge.options.price_prompt is not None or judge.options.price_completion is not None),
    )
    if cost is not None:
        out.append(cost)
    compared = [r for r in rows if r["delta_ok"] is not None]
    if compared:
        t2 = _titled(
            "answer correct and supported against the baseline, question by question "
            "(paired bootstrap 95% CI, fixed/broken, sign test)",
            "context ablations (context.source) on the questions with labelled spans; "
            "unanswerable ones are apart"
            if any(v.answers.source != "retrieved" for v in done)
            else None,
        )
        t2.add_column("variant", min_width=width, overflow="fold")
        for col in ("n", "delta", "95% CI", "fixed/broken", "sign p"):
            t2.add_column(col, justify="right", no_wrap=col == "95% CI")
        for r in compared:
            t2.add_row(
                lit(r["variant"]),
                str(r["vs_baseline_n"]),
                f"{r['delta_ok']:+.3f}",
                interval_text(r["ci_low"], r["ci_high"]),
                f"{r['fixed']}/{r['broken']}",
                format_p(r["sign_p"]),
            )
        out.append(t2)
    out += _repeats_tables(done, width)
    t3 = _titled(
        "retrieval-by-answer table (questions per cell)",
        "evidence in context: every required span is in the context the model was given; "
        "below the evidence line the split is on correctness. The largest bad cell names "
        "the next experiment (ragmeter diagnose)."
        + (
            " Context ablations (context.source) are left out: their contexts are not "
            "what retrieval gave."
            if any(v.answers.source != "retrieved" for v in done)
            else ""
        ),
    )
    t3.add_column("cell", overflow="fold")
    # an ablation's context is not what retrieval gave: its cells are read in the causal table
    observed = [v for v in done if v.answers.source == "retrieved"]
    for v in observed:
        t3.add_column(lit(v.name), justify="right", overflow="fold")
    tables = [v.answers.table for v in observed]
    for c in categories():
        t3.add_row(lit(c.title), *(str(tb.count(c.key)) for tb in tables))
    t3.add_row(
        "largest bad cell",
        *(lit(tb.largest_bad.title if tb.largest_bad else "-") for tb in tables),
    )
    out.append(t3)
    positioned = [v for v in done if v.answers.position is not None]
    if positioned:
        t4 = _titled(
            "answer correct and supported by the evidence's position in the context "
            "(generated answers, prompt order)",
            "ok/known per bin (first, middle, last passage of the context); bins under "
            f"{_min_bin()} questions give a direction, not proof",
        )
        t4.add_column("evidence at", overflow="fold")
        for v in positioned:
            t4.add_column(lit(v.name), justify="right", overflow="fold")
        for b in ("first", "middle", "last"):
            cells = []
            for v in positioned:
                g = v.answers.position.group(b)
                rate = "" if g.ok_rate is None else f" ({g.ok_rate:.2f})"
                cells.append(f"{g.ok}/{g.ok_known}{rate}")
            t4.add_row(b, *cells)
        out.append(t4)
    return out


def render_causal(result: ExperimentResult) -> list[Any]:
    """The causal table of an experiment with context ablations (empty list without any): the
    questions per proven cause and apart, and the oracle ceiling, with the command that shows
    it in full (against the retrieval-by-answer cells, with the next experiment)."""
    from ..workflows.diagnose import (
        causal_of,
        cause_rows,
        ceiling_line,
        ran_line,
        result_ablations,
    )

    ablations = result_ablations(result)
    if ablations is None:
        return []
    causal = causal_of(ablations)
    ceiling = ceiling_line(causal)
    t = _titled(
        f"causal table (context sources: {ran_line(causal, ablations)})",
        f"oracle ceiling: {ceiling}" if ceiling else None,
    )
    t.add_column("cause", overflow="fold")
    t.add_column("basis")
    t.add_column("questions", justify="right")
    for r in cause_rows(causal, ablations):
        t.add_row(lit(r.title), r.basis, str(r.count))
    # one line, never folded: the command is copied as printed
    command = Text(
        f"in full: ragmeter diagnose --experiment {result.experiment.path}",
        no_wrap=True,
        overflow="ignore",
    )
    return [t, command]


def _repeats_tables(done: list[Any], width: int) -> list[Any]:
    """With ``repeat`` over 1: each variant's verdicts over the repeats (ok per repeat, flaky
    questions) and, against the baseline, how much of the headline that noise can explain;
    then each variant's flaky questions by id. Nothing when answered once."""
    repeated = [v for v in done if v.answers.repeats is not None]
    if not repeated:
        return []
    n = repeated[0].answers.repeats.n
    t = _titled(
        f"repeats: answer correct and supported over {n} repeats (repeat 1 is the headline)",
        "flaky: questions whose verdict changes across repeats; flaky movers: the headline's "
        "fixed and broken questions that are flaky (the part of the difference the "
        "repeat-to-repeat noise can explain); stable fix/brk: fixed/broken in every repeat "
        "(what ragmeter gate --stable counts)",
    )
    t.add_column("variant", min_width=width, overflow="fold")
    for col in ("ok rate per repeat", "flaky", "delta range", "stable fix/brk", "flaky movers"):
        t.add_column(col, justify="right", overflow="fold")
    lines: list[Any] = []
    for v in repeated:
        r = v.answers.repeats
        noise = r.vs_baseline
        rates = " ".join("-" if x is None else f"{x:.2f}" for x in r.ok_rates())
        flaky = r.flaky()
        lo_hi = None if noise is None else noise.delta_range
        t.add_row(
            lit(v.name),
            rates,
            str(len(flaky)),
            "-" if lo_hi is None else interval_text(*lo_hi),
            "-" if noise is None else f"{len(noise.stable.fixed)}/{len(noise.stable.broken)}",
            "-" if noise is None else f"{len(noise.flaky_movers)}/{len(noise.movers)}",
        )
        if flaky:
            shown = ", ".join(flaky[:10]) + (
                f" and {len(flaky) - 10} more" if len(flaky) > 10 else ""
            )
            lines.append(Text(f"flaky in {v.name}: {shown}"))
        if noise is not None:
            lines.append(Text(f"{v.name} against the baseline: {noise.note()}."))
    return [t, *lines]


def _judge_table(done: list[Any], width: int) -> Any:
    """Each variant's judged metrics (mean score over the judgements that succeeded), failed
    judgements and answers not judged; None when the experiment has no judge."""
    judged = [v for v in done if v.answers.judge is not None]
    if not judged:
        return None
    label = judged[0].answers.judge
    metrics = list(dict.fromkeys(m for v in judged for m in v.answers.judged()))
    t = _titled(
        f"judge: {label}",
        "mean score per judge metric over the judgements that succeeded; failed: "
        "judgements that failed (counted as failed, never as passes); not judged: answers "
        "with nothing to judge (a failed generation, or no context to judge faithfulness "
        "against). ok above uses the judge's faithfulness with the deterministic checks.",
    )
    t.add_column("variant", min_width=width, overflow="fold")
    for m in metrics:
        t.add_column(lit(m.replace("_", " ")), justify="right", overflow="fold")
    for col in ("failed", "not judged"):
        t.add_column(col, justify="right", no_wrap=True)
    for v in judged:
        j = v.answers.judged()
        t.add_row(
            lit(v.name),
            *(_fmt(j[m]["mean"]) if m in j else "-" for m in metrics),
            str(sum(x["failed"] for x in j.values())),
            str(max((x["not_judged"] for x in j.values()), default=0)),
        )
    return t


def _min_bin() -> int:
    from ..diagnosis import MIN_BIN

    return MIN_BIN


def _titled(title: str, caption: str | None = None) -> Table:
    """A table with its title (and caption) left-aligned above (below) it, printed as written."""
    return Table(
        title=lit(title, TITLE),
        title_justify="left",
        caption=None if caption is None else lit(caption, CAPTION),
        caption_justify="left",
    )
