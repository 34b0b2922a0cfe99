"""The metric table of an experiment and the paired comparison of each variant with the baseline.

Columns are the experiment's metrics at each variant's own prompt k (header ``R@4`` when every
variant uses k = 4, ``R@k`` when k differs, with a ``k`` column) and at the token budget, then
recall at ``headroom_k``, labelled "headroom (not quality)": it says whether the evidence is in
the candidate pool for a reranker, not whether the generator saw it.

Rows and numbers only (what ``--format json|csv`` prints); the rich tables are drawn from them by
``ragmeter.cli._render_experiment``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from .._errors import RagmeterWarning, UsageError
from ..metrics import Metric

if TYPE_CHECKING:  # pragma: no cover
    from ._runner import ExperimentResult, VariantResult

HEADROOM_NOTE = "headroom (not quality)"
#: a variant with no metric at a cutoff the baseline shares (:func:`shared_metric`)
NO_SHARED_CUTOFF = "no shared k or budget with the baseline"


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
    scoring level ("span" or "document"), the errors of a user's pipeline (only when a variant
    runs one), metric means."""
    head = headroom_header(result)
    rows = []
    for v in result.variants:
        row: dict[str, Any] = {
            "variant": v.name,
            "pipeline": v.label,
            "chunking": v.chunking.get("chunking"),
            "changes": "baseline" if v.is_baseline else (", ".join(v.changes) or "nothing"),
            "k": v.settings.k,
            "budget": v.settings.budget,
            "ctx_tokens": round(v.context_tokens),
            "n": v.evaluation.n_queries,
            "level": result.experiment.level,
        }
        if any(x.pipeline_errors is not None for x in result.variants):
            # the user's own pipeline: questions it raised an error on (None: not a pipeline)
            errors = v.pipeline_errors
            row["errors"] = None if errors is None else len(errors)
        for header, m, kind in _columns(result):
            val = _cell(v, m, kind)
            row[header] = None if val is None else _r(val, digits)
        row[head] = _r(v.value(result.experiment.headroom_metric()), digits)
        rows.append(row)
    return rows


def primary_metric(result: ExperimentResult, v: VariantResult) -> Metric | None:
    """The metric a variant is compared on: the experiment's headline when the baseline and
    the variant both computed it, else :func:`shared_metric` of the experiment's metrics with
    the baseline's and the variant's cutoffs (a metric that is not the headline)."""
    exp = result.experiment
    head = exp.headline_metric
    if (
        head is not None
        and head in exp.prompt_metrics(result.baseline.settings)
        and head in exp.prompt_metrics(v.settings)
    ):
        return head
    return shared_metric(
        result.experiment.metrics,
        result.baseline.settings,
        v.settings,
        documents=result.experiment.level == "document",
    )


class Cutoffs(Protocol):
    """A generator's cutoffs: a variant's settings, or a stored run's (the lab and the report
    apply the same rule to stored runs)."""

    @property
    def k(self) -> int | None: ...

    @property
    def budget(self) -> int | None: ...


def shared_metric(
    metrics: Iterable[Metric], base: Cutoffs, s: Cutoffs, *, documents: bool
) -> Metric | None:
    """The first span metric of ``metrics`` (those without a cutoff of their own) at the shared
    budget, else at the shared k; with ``documents`` (level = "document"), the first metric at
    the shared k. None when ``base`` and ``s`` share neither: :data:`NO_SHARED_CUTOFF`."""
    for m in metrics:
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


def comparison_rows(
    result: ExperimentResult, *, n_resamples: int = 5000, seed: int = 0, digits: int | None = 4
) -> list[dict[str, Any]]:
    """Paired comparison of each variant against the baseline on its primary metric (a variant
    that changes only the context source retrieves as the baseline: it has no row)."""
    from ..paired import compare

    rows: list[dict[str, Any]] = []
    base = result.baseline
    for v in result.variants[1:]:
        if v.changes and set(v.changes) <= {"context.source"}:
            continue  # a context ablation retrieves as the baseline: its answers are compared
        m = primary_metric(result, v)
        if m is None:
            rows.append(
                {
                    "variant": v.name,
                    "metric": None,
                    "note": NO_SHARED_CUTOFF,
                }
            )
            continue
        with warnings.catch_warnings():
            # the experiment file already warned about variants that change several things
            warnings.simplefilter("ignore", RagmeterWarning)
            c = compare(
                base.evaluation,
                v.evaluation,
                m,
                n_resamples=n_resamples,
                seed=seed,
                names=(base.name, v.name),
            )
        stats = c.overall
        rows.append(
            {
                "variant": v.name,
                "metric": str(m),
                "headline": result.experiment.is_headline(m),
                "baseline": _r(c.overall.baseline_mean, digits),
                "variant_mean": _r(c.overall.candidate_mean, digits),
                "delta": _r(c.mean_delta, digits),
                "ci_low": _r(c.ci[0], digits),
                "ci_high": _r(c.ci[1], digits),
                "wins": c.wins,
                "losses": c.losses,
                "ties": c.ties,
                # questions that went from 0 to 1 and from 1 to 0 (None: not a 0/1 metric)
                "fixed": stats.fixed,
                "broken": stats.broken,
                "sign_p": _r(c.sign_test_p, digits),
                "n": c.n,
            }
        )
    return rows


def headroom_header(result: ExperimentResult) -> str:
    """The key of the headroom column in :func:`table_rows`."""
    return f"R@{result.experiment.headroom_k} {HEADROOM_NOTE}"


def column_groups(result: ExperimentResult) -> tuple[list[str], list[str]]:
    """The metric keys of :func:`table_rows` in two groups, so a renderer can show two narrow
    tables rather than one wide one: at the prompt k (fixed cutoffs included, the headroom
    column last) and at the token budget (empty when no variant has a budget)."""
    cols = _columns(result)
    at_k = [h for h, _, kind in cols if kind != "budget"] + [headroom_header(result)]
    return at_k, [h for h, _, kind in cols if kind == "budget"]
