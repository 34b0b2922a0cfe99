"""Rich rendering of an experiment's result: what each variant runs, its metrics at the prompt k
and at the token budget, and the paired comparison of each variant with the baseline.

The rows and numbers come from :mod:`ragmeter.experiments` (``table_rows``, ``comparison_rows``,
``column_groups``: the same rows ``--format json|csv`` prints); this module only lays them out.
Three narrow tables rather than one wide one, so an 80-column terminal shows them unwrapped.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from .._literal import TITLE, lit
from ..experiments._runner import ExperimentResult
from ..experiments._table import (
    HEADROOM_NOTE,
    column_groups,
    comparison_rows,
    headroom_header,
    table_rows,
)


def render_experiment(result: ExperimentResult) -> list[Any]:
    """rich renderables: the setup table, the metric table(s) and the comparison table."""
    # exact values: the tables format each number once (rounding twice turns 0.66253 into
    # 0.6625 and then into "0.662")
    rows = table_rows(result, digits=None)
    exp = result.experiment
    budgets = {v.settings.budget for v in result.variants}
    head = headroom_header(result)
    facts = [
        f"golden set {result.golden_version}",
        f"{result.baseline.evaluation.n_queries} questions",
    ]
    if exp.level == "document":
        facts.append("document level: each document at its best chunk's rank")
    if len(budgets) == 1 and None not in budgets:
        facts.append(f"budget {next(iter(budgets))} tokens")
    # lit: experiment, variant and chunker names (tokens:100:0, [x]) print as written
    setup = Table(title=lit(f"{exp.name}\n({', '.join(facts)})", TITLE), title_justify="left")
    setup_keys = ["variant", "chunking", "pipeline", "changes", "k", "ctx_tokens"]
    if len(budgets) > 1:
        setup_keys.insert(5, "budget")
    for key in setup_keys:
        setup.add_column(
            key.replace("_", " "),
            justify="right" if key in ("k", "budget", "ctx_tokens") else "left",
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
    for keys, title in ((at_k, "at the prompt k"), (at_budget, "at the token budget")):
        if not keys:
            continue
        t = Table(
            title=title,
            title_justify="left",
            caption=(
                f"R@{exp.headroom_k} is {HEADROOM_NOTE}: evidence in the candidate "
                "pool that a reranker could lift, not what the generator sees."
            )
            if head in keys
            else None,
            caption_justify="left",
        )
        t.add_column("variant", min_width=name_width)
        for key in keys:
            t.add_column(
                lit(f"R@{exp.headroom_k} headroom" if key == head else key),
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
        t2 = Table(
            title=lit(
                f"{one + ' ' if one else ''}against the baseline, question by "
                "question (paired bootstrap 95% CI, wins/losses/ties, sign test)",
                TITLE,
            ),
            title_justify="left",
        )
        t2.add_column("variant", min_width=name_width)
        if one is None:
            t2.add_column("metric")
        for col in ("delta", "95% CI", "W/L/T", "sign p"):
            t2.add_column(col, justify="right", no_wrap=col == "95% CI")
        for r in comp:
            lead = [Text(r["variant"])] + ([] if one else [lit(r.get("metric") or "-")])
            if r.get("metric") is None:
                t2.add_row(*lead, "-", lit(r["note"]), "", "")
                continue
            t2.add_row(
                *lead,
                f"{r['delta']:+.3f}",
                f"[{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]",
                f"{r['wins']}/{r['losses']}/{r['ties']}",
                f"{r['sign_p']:.3f}",
            )
        out.append(t2)
    return out


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.3f}"
    return str(x)
