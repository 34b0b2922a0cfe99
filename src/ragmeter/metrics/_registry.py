"""What each metric is: one registry entry per metric owns its name and spellings, its
definition, its parameters with their defaults, its cutoff rule, the kernel that computes it on
item labels and on span labels, and trec_eval's name for it.

The metric grammar (``_spec``), the engines (``_engine``, ``labels.evaluate_spans``), the
``ragmeter metrics`` command and the README's metric table all read these entries, so a metric is
declared once (as ir_measures declares the parameters of each measure).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from . import _kernels as K

#: Defaults of the options (the Metric value and the parameter table read these).
DEFAULT_REL = 1
DEFAULT_GAIN = "linear"
GAINS = ("linear", "exp")

RankKernel = Callable[[K.RankInputs, Any], np.ndarray]
SpanKernel = Callable[[K.SpanInputs, Any], np.ndarray]
Cutoff = Literal["required", "optional", "none"]


@dataclass(frozen=True)
class Param:
    """One option a metric accepts, e.g. ``rel`` in ``R(rel=2)@10``; ``default`` is dropped from
    the canonical spelling."""

    name: str
    default: object
    doc: str


REL = Param("rel", DEFAULT_REL, "relevant means grade >= rel")
GAIN = Param(
    "gain",
    DEFAULT_GAIN,
    "the gain of grade g: g (linear) or 2^g - 1 (exp); tables say it in nDCG's header: "
    "nDCG@10 (linear), nDCG(gain=exp)@10",
)
GAIN_MAP = Param(
    "gains",
    None,
    "a gain per grade, e.g. gains=1:3,2:9 (grades >= 1; a grade "
    "not in the map keeps its own value)",
)


@dataclass(frozen=True)
class MetricInfo:
    """One metric: what it means, what it accepts, and how it is computed."""

    name: str
    title: str
    definition: str
    formula: str
    params: tuple[Param, ...]
    cutoff: Cutoff
    #: per-query value is 0 or 1 (fixed / broken counts make sense)
    binary: bool
    #: trec_eval's names for it (with a cutoff, then without); empty when trec_eval has none
    trec_eval: tuple[str, ...]
    aliases: tuple[str, ...] = ()
    rank_kernel: RankKernel | None = None
    span_kernel: SpanKernel | None = None
    #: its short display name on cards, columns and legends ("MRR", "All evidence")
    label: str = field(kw_only=True)
    #: one of the headline metrics a summary shows (the lab's cards and columns), in this order
    headline: bool = field(default=False, kw_only=True)

    @property
    def levels(self) -> frozenset[str]:
        """The labels it is computed on: ``"rank"`` (graded item labels), ``"span"``
        (evidence spans), from the kernels it has."""
        return frozenset(
            level
            for level, kernel in (("rank", self.rank_kernel), ("span", self.span_kernel))
            if kernel
        )

    @property
    def budget(self) -> bool:
        """Computed at a token budget too (``R@budget=1200``): a cutoff metric with a span
        kernel."""
        return self.cutoff != "none" and self.span_kernel is not None

    @property
    def options(self) -> frozenset[str]:
        """Names of the options it accepts."""
        return frozenset(p.name for p in self.params)

    @property
    def forms(self) -> tuple[str, ...]:
        """How it is written: with a cutoff, without, at a token budget (span labels)."""
        out = []
        if self.cutoff != "none":
            out.append(f"{self.name}@k")
        if self.cutoff != "required":
            out.append(self.name)
        if self.budget:
            out.append(f"{self.name}@budget=B")
        return tuple(out)


REGISTRY: dict[str, MetricInfo] = {
    m.name: m
    for m in (
        MetricInfo(
            "R",
            "Recall",
            "share of the relevant items found within the cutoff",
            "|rel ∩ top_k| / |rel|",
            (REL,),
            "optional",
            False,
            ("recall_k",),
            aliases=("Recall",),
            rank_kernel=K.rank_recall,
            span_kernel=K.span_recall,
            label="Recall",
            headline=True,
        ),
        MetricInfo(
            "Hit",
            "Hit rate (success)",
            "1 if any relevant item is found within the cutoff",
            "1 if |rel ∩ top_k| > 0 else 0",
            (REL,),
            "optional",
            True,
            ("success_k",),
            aliases=("Success",),
            rank_kernel=K.rank_hit,
            span_kernel=K.span_hit,
            label="Hit rate",
        ),
        MetricInfo(
            "P",
            "Precision",
            "relevant items in the top k, divided by k (not by the number retrieved)",
            "|rel ∩ top_k| / k",
            (REL,),
            "required",
            False,
            ("P_k",),
            rank_kernel=K.rank_precision,
            label="Precision",
        ),
        MetricInfo(
            "RR",
            "Reciprocal rank",
            "1 / rank of the first relevant item within the cutoff, 0 if none",
            "1 / min{i ≤ k : item i relevant}",
            (REL,),
            "optional",
            False,
            ("recip_rank",),
            aliases=("MRR",),
            rank_kernel=K.rank_rr,
            span_kernel=K.span_rr,
            label="MRR",
            headline=True,
        ),
        MetricInfo(
            "nDCG",
            "Normalised discounted cumulative gain",
            "discounted gain of the top k over that of the ideal order of ALL judged items "
            "(retrieved or not); every grade keeps its gain, as in trec_eval",
            "Σ_{i≤k} gain(g_i)/log2(i+1) ÷ the same sum over the ideal order",
            (GAIN, GAIN_MAP),
            "optional",
            False,
            ("ndcg_cut_k", "ndcg"),
            aliases=("NDCG",),
            rank_kernel=K.rank_ndcg,
            label="nDCG",
            headline=True,
        ),
        MetricInfo(
            "AP",
            "Average precision",
            "mean over the relevant items of the precision at the "
            "rank of each one found within the cutoff",
            "Σ_{relevant i ≤ k} P@i / |rel|",
            (REL,),
            "optional",
            False,
            ("map_cut_k", "map"),
            aliases=("MAP",),
            rank_kernel=K.rank_ap,
            label="MAP",
        ),
        MetricInfo(
            "Rprec",
            "R-precision",
            "precision at rank R, R = the number of relevant items",
            "|rel ∩ top_R| / R",
            (REL,),
            "none",
            False,
            ("Rprec",),
            rank_kernel=K.rank_rprec,
            label="R-precision",
        ),
        MetricInfo(
            "AllR",
            "All required evidence found",
            "1 if every required evidence span is found "
            "within the cutoff (any one span when none is marked required), else 0",
            "1 if required ⊆ found_k else 0",
            (),
            "optional",
            True,
            (),
            span_kernel=K.span_all_required,
            label="All evidence",
            headline=True,
        ),
    )
}

#: Accepted spellings that are printed back as their canonical name.
ALIASES: dict[str, str] = {a: m.name for m in REGISTRY.values() for a in m.aliases}
