"""Which metric to read for what: the RAG evaluation lesson's comparison of the four ranking
metrics (the question each answers, whether it uses the order inside the top k, when it is the
right one, what to watch out for), extended to the other metrics of the registry in the same
words. ``ragmeter metrics`` prints it and docs/metrics.md shows it ("Choosing a metric"); a test
holds the two equal.

Precision's ceiling: with R relevant items and R < k, P@k is at most R/k however good the
ranking, so a low P@k on questions with one or two relevant passages is the metric, not the
retriever."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Guide:
    """One metric's reading advice."""

    question: str
    uses_order: str
    best_when: str
    watch_out: str

    def to_dict(self) -> dict[str, str]:
        return {
            "question": self.question,
            "uses_order": self.uses_order,
            "best_when": self.best_when,
            "watch_out": self.watch_out,
        }


#: metric name -> advice; the first four rows are the lesson's table, word for word
GUIDES: Mapping[str, Guide] = {
    "R": Guide(
        "Share of relevant passages found in the top k",
        "No",
        "You need the evidence to reach the prompt at all",
        "Rises just because k grew; fix k to the prompt",
    ),
    "P": Guide(
        "Share of the top k that is relevant",
        "No",
        "Context is expensive and noise hurts",
        "Ceiling is R/k when a query has few relevant passages",
    ),
    "RR": Guide(
        "How high is the first relevant passage",
        "Yes, first hit only",
        "One passage answers the question",
        "Ignores the second and later relevant passages",
    ),
    "nDCG": Guide(
        "Graded gain, discounted by rank, against the ideal order",
        "Yes, all positions",
        "Passages are partly relevant (graded labels)",
        "Gain and ideal must be defined; values differ between tools",
    ),
    "Hit": Guide(
        "Whether any relevant passage is in the top k",
        "No",
        "Any one passage is enough to answer",
        "Says nothing of the second passage a multi-part answer needs",
    ),
    "AP": Guide(
        "Precision at each relevant passage found, averaged",
        "Yes, all positions",
        "Every relevant passage matters and labels are binary",
        "Hard to read as a share; weighs deep ranks little",
    ),
    "Rprec": Guide(
        "Precision at rank R, R the number of relevant passages",
        "No",
        "Queries differ in how many passages are relevant",
        "R is not the prompt k: report it beside a metric at the prompt k",
    ),
    "AllR": Guide(
        "Whether every required evidence span reached the top k",
        "No",
        "The answer needs all its evidence (multi-hop, comparisons)",
        "Rises with k like recall; fix k (or the token budget) to the prompt",
    ),
}

#: precision's ceiling, in one sentence (printed under the table when P is shown)
PRECISION_CEILING = (
    "Precision's ceiling: a question with R relevant passages, R < k, scores at most R/k at P@k "
    "however good the ranking (one relevant passage at k = 4: at most 0.25)."
)

#: the columns, as the lesson heads them
HEADERS = ("Question it answers", "Uses order inside top k", "Best when", "Watch out for")
#: how the lesson names each metric
SHOWN = {
    "R": "Recall@k",
    "P": "Precision@k",
    "RR": "MRR",
    "nDCG": "nDCG@k",
    "Hit": "Hit@k",
    "AP": "AP",
    "Rprec": "R-precision",
    "AllR": "AllR@k",
}


def guide_markdown(names: tuple[str, ...] = ("R", "P", "RR", "nDCG")) -> str:
    """The comparison as a Markdown table, a column per metric (the lesson's layout)."""
    lines = [
        "| Criterion | " + " | ".join(SHOWN[n] for n in names) + " |",
        "|---" * (len(names) + 1) + "|",
    ]
    for head, key in zip(
        HEADERS, ("question", "uses_order", "best_when", "watch_out"), strict=True
    ):
        lines.append(f"| {head} | " + " | ".join(GUIDES[n].to_dict()[key] for n in names) + " |")
    return "\n".join(lines)
