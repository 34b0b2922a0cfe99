"""The metric table of an experiment and the paired comparison of each variant with the baseline.

Columns are the experiment's metrics at each variant's own prompt k (header ``R@4`` when every
variant uses k = 4, ``R@k`` when k differs, with a ``k`` column) and at the token budget, then
recall at ``headroom_k``, labelled "headroom (not quality)": it says whether the evidence is in
the candidate pool for a reranker, not whether the generator saw it.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from .._errors import RagmeterWarning, UsageError
from ..metrics import Metric

if TYPE_CHECKING:  # pragma: no cover
    from ._runner import ExperimentResult, VariantResult

HEADROOM_NOTE = "headroom (not quality)"


def _columns(result: ExperimentResult) -> list[tuple[str, Metric, str]]:
    """(header, metric without cutoff or with its explicit one, cutoff kind) per metric column."""
    exp = result.experiment
    ks = {v.settings.k for v in result.variants}
    budgets = {v.settings.budget for v in result.variants}
    cols: list[tuple[str, Metric, str]] = []
    for m in exp.metrics:
        if m.k is not None or m.budget is not None:
            cols.append((str(m), m, "fixed"))
            continue
        if ks != {None}:
            k_label = str(m.at(next(iter(ks)))) if len(ks) == 1 else f"{m}@k"
            cols.append((k_label, m, "k"))
        if budgets != {None} and "span" in m.info.levels and exp.level != "document":
            b_label = str(m.at(budget=next(iter(budgets)))) if len(budgets) == 1 else f"{m}@budget"
            cols.append((b_label, m, "budget"))
    return cols


def _cell(v: VariantResult, m: Metric, kind: str) -> float | None:
    if kind == "fixed":
        target = m
    elif kind == "k":
        if v.settings.k is None:
            return None
        target = m.at(v.settings.k)
    else:
        if v.settings.budget is None:
            return None
        target = m.at(budget=v.settings.budget)
    try:
        return v.value(target)
    except UsageError:  # e.g. nDCG of an imported spans run: not defined, shown blank
        return None


def _r(x: float, digits: int | None) -> float:
    """Round for the JSON/CSV rows; the rich table gets exact values and formats them once
    (rounding twice turns 0.66253 into 0.6625 and then into "0.662")."""
    return x if digits is None else round(x, digits)


def table_rows(result: ExperimentResult, *, digits: int | None = 4) -> list[dict[str, Any]]:
    """One dict per variant: name, pipeline, changes, k, budget, context tokens, questions scored,
    scoring level ("span" or "document"), metric means."""
    head = f"R@{result.experiment.headroom_k} {HEADROOM_NOTE}"
    rows = []
    for v in result.variants:
        row: dict[str, Any] = {
            "variant": v.name, "pipeline": v.label, "chunking": v.chunking.get("chunking"),
            "changes": "baseline" if v.is_baseline else (", ".join(v.changes) or "nothing"),
            "k": v.settings.k, "budget": v.settings.budget,
            "ctx_tokens": round(v.context_tokens), "n": v.evaluation.n_queries,
            "level": result.experiment.level,
        }
        for header, m, kind in _columns(result):
            val = _cell(v, m, kind)
            row[header] = None if val is None else _r(val, digits)
        row[head] = _r(v.value(result.experiment.headroom_metric()), digits)
        rows.append(row)
    return rows


def primary_metric(result: ExperimentResult, v: VariantResult) -> Metric | None:
    """The metric a variant is compared on: the first span metric at the shared budget, else at
    the shared k; at level = "document", the first metric at the shared k. None when baseline
    and variant share neither."""
    base = result.baseline.settings
    s = v.settings
    documents = result.experiment.level == "document"
    for m in result.experiment.metrics:
        if m.k is not None or m.budget is not None:
            continue
        if documents:
            if base.k is not None and base.k == s.k:
                return m.at(s.k)
            continue
        if "span" not in m.info.levels:
            continue
        if base.budget is not None and base.budget == s.budget:
            return m.at(budget=s.budget)
        if base.k is not None and base.k == s.k:
            return m.at(s.k)
    return None


def comparison_rows(result: ExperimentResult, *, n_resamples: int = 2000,
                    seed: int = 0, digits: int | None = 4) -> list[dict[str, Any]]:
    """Paired comparison of each variant against the baseline on its primary metric."""
    from ..paired import compare

    rows: list[dict[str, Any]] = []
    base = result.baseline
    for v in result.variants[1:]:
        m = primary_metric(result, v)
        if m is None:
            rows.append({"variant": v.name, "metric": None,
                         "note": "no shared k or budget with the baseline"})
            continue
        with warnings.catch_warnings():
            # the experiment file already warned about variants that change several things
            warnings.simplefilter("ignore", RagmeterWarning)
            c = compare(base.evaluation, v.evaluation, m, n_resamples=n_resamples, seed=seed,
                        names=(base.name, v.name))
        rows.append({
            "variant": v.name, "metric": str(m), "baseline": _r(c.overall.baseline_mean, digits),
            "variant_mean": _r(c.overall.candidate_mean, digits), "delta": _r(c.mean_delta, digits),
            "ci_low": _r(c.ci[0], digits), "ci_high": _r(c.ci[1], digits), "wins": c.wins,
            "losses": c.losses, "ties": c.ties, "sign_p": _r(c.sign_test_p, digits), "n": c.n,
        })
    return rows


def render(result: ExperimentResult) -> list[Any]:
    """rich renderables: what each variant runs, its metrics, and the paired comparisons.

    Three narrow tables rather than one wide one, so an 80-column terminal shows them unwrapped.
    """
    from rich.table import Table
    from rich.text import Text

    from .._literal import TITLE, lit

    rows = table_rows(result, digits=None)
    exp = result.experiment
    budgets = {v.settings.budget for v in result.variants}
    head = f"R@{exp.headroom_k} {HEADROOM_NOTE}"
    facts = [f"golden set {result.golden_version}", f"{result.baseline.evaluation.n_queries} questions"]
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
        setup.add_column(key.replace("_", " "), justify="right" if key in ("k", "budget", "ctx_tokens")
                         else "left")
    for row in rows:
        # Text: chunker names such as tokens:100:0 must not become emoji or markup
        setup.add_row(*(Text(_fmt(row[k])) for k in setup_keys))

    # metrics at the prompt k (and fixed cutoffs, and the headroom) in one table, at the token
    # budget in another: two narrow tables fit an 80-column terminal where one wide one is cut
    cols = _columns(result)
    at_k = [h for h, _, kind in cols if kind != "budget"] + [head]
    at_budget = [h for h, _, kind in cols if kind == "budget"]
    name_width = min(max(len(r["variant"]) for r in rows), 16)
    out: list[Any] = [setup]
    for keys, title in ((at_k, "at the prompt k"), (at_budget, "at the token budget")):
        if not keys:
            continue
        t = Table(title=title, title_justify="left",
                  caption=(f"R@{exp.headroom_k} is {HEADROOM_NOTE}: evidence in the candidate "
                           "pool that a reranker could lift, not what the generator sees.")
                  if head in keys else None, caption_justify="left")
        t.add_column("variant", min_width=name_width)
        for key in keys:
            t.add_column(lit(f"R@{exp.headroom_k} headroom" if key == head else key),
                         justify="right", style="dim" if key == head else None)
        for row in rows:
            t.add_row(*(Text(_fmt(row[k])) for k in ["variant", *keys]))
        out.append(t)

    comp = comparison_rows(result, digits=None)
    if comp:
        shown = {r["metric"] for r in comp if r.get("metric")}
        one = next(iter(shown)) if len(shown) == 1 else None
        t2 = Table(title=lit(f"{one + ' ' if one else ''}against the baseline, question by "
                             "question (paired bootstrap 95% CI, wins/losses/ties, sign test)",
                             TITLE), title_justify="left")
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
            t2.add_row(*lead, f"{r['delta']:+.3f}", f"[{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]",
                       f"{r['wins']}/{r['losses']}/{r['ties']}", f"{r['sign_p']:.3f}")
        out.append(t2)
    return out


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.3f}"
    return str(x)
