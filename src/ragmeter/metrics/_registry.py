"""What each metric is: its name, formula, options and inputs. Docs, the CLI and errors read this."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricInfo:
    name: str
    title: str
    formula: str
    options: frozenset[str]
    cutoff: str  # "required", "optional" or "none"
    binary: bool  # per-query value is 0 or 1 (fixed/broken counts make sense)
    levels: frozenset[str]  # "rank" (item qrels), "span" (span labels)
    trec_eval: str  # trec_eval's name for it, "" when trec_eval has none
    higher_is_better: bool = True


_RANK = frozenset({"rank", "span"})

REGISTRY: dict[str, MetricInfo] = {
    m.name: m
    for m in (
        MetricInfo(
            "R", "Recall", "|rel ∩ top_k| / |rel|", frozenset({"rel"}), "optional", False, _RANK,
            "recall_k",
        ),
        MetricInfo(
            "Hit", "Hit rate (success)", "1 if |rel ∩ top_k| > 0 else 0", frozenset({"rel"}),
            "optional", True, _RANK, "success_k",
        ),
        MetricInfo(
            "P", "Precision", "|rel ∩ top_k| / k", frozenset({"rel"}), "required", False,
            frozenset({"rank"}), "P_k",
        ),
        MetricInfo(
            "RR", "Reciprocal rank", "1 / rank of the first relevant item within k (0 if none)",
            frozenset({"rel"}), "optional", False, _RANK, "recip_rank",
        ),
        MetricInfo(
            "nDCG", "Normalised discounted cumulative gain",
            "Σ_{i≤k} gain(g_i)/log2(i+1) ÷ the same sum over the ideal order of ALL judged items",
            frozenset({"gain", "gains"}), "optional", False, frozenset({"rank"}), "ndcg_cut_k",
        ),
        MetricInfo(
            "AP", "Average precision",
            "Σ_{relevant i ≤ k} P@i / |rel|", frozenset({"rel"}), "optional", False,
            frozenset({"rank"}), "map_cut_k",
        ),
        MetricInfo(
            "Rprec", "R-precision", "|rel ∩ top_R| / R with R = |rel|", frozenset({"rel"}), "none",
            False, frozenset({"rank"}), "Rprec",
        ),
        MetricInfo(
            "AllR", "All required evidence found",
            "1 if every required span is found within the cutoff else 0", frozenset(),
            "optional", True, frozenset({"span"}), "",
        ),
    )
}

#: Accepted spellings that are printed back as their canonical name.
ALIASES: dict[str, str] = {"MRR": "RR", "Recall": "R", "Success": "Hit", "NDCG": "nDCG", "MAP": "AP"}

GAINS = ("linear", "exp")
