"""The metric-choice guidance (issue 27, item 9): the RAG evaluation lesson's comparison of
recall, precision, MRR and nDCG word for word, in `ragmeter metrics` and docs/metrics.md alike,
with precision's R/k ceiling."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.metrics import GUIDES, PRECISION_CEILING, REGISTRY, guide_markdown

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"

#: the lesson's table, as it prints it
LESSON = {
    "R": ("Share of relevant passages found in the top k", "No",
          "You need the evidence to reach the prompt at all",
          "Rises just because k grew; fix k to the prompt"),
    "P": ("Share of the top k that is relevant", "No", "Context is expensive and noise hurts",
          "Ceiling is R/k when a query has few relevant passages"),
    "RR": ("How high is the first relevant passage", "Yes, first hit only",
           "One passage answers the question", "Ignores the second and later relevant passages"),
    "nDCG": ("Graded gain, discounted by rank, against the ideal order", "Yes, all positions",
             "Passages are partly relevant (graded labels)",
             "Gain and ideal must be defined; values differ between tools"),
}  # fmt: skip


def test_the_lessons_rows_word_for_word() -> None:
    for name, row in LESSON.items():
        g = GUIDES[name]
        assert (g.question, g.uses_order, g.best_when, g.watch_out) == row, name
    assert set(GUIDES) <= set(REGISTRY)


def test_the_docs_show_the_same_tables() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert guide_markdown() in text
    assert guide_markdown(("Hit", "AP", "Rprec", "AllR")) in text
    assert "at most R/k" in text


def test_ragmeter_metrics_prints_the_guide_and_the_ceiling() -> None:
    r = CliRunner().invoke(app, ["metrics", "P", "nDCG"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    flat = " ".join(r.stdout.replace("│", " ").split())
    assert "Choosing a metric" in flat
    assert "Ceiling is R/k when a query has few relevant passages" in flat
    assert " ".join(PRECISION_CEILING.split()) in flat
    rows = json.loads(CliRunner().invoke(app, ["metrics", "-f", "json"]).stdout)
    assert {r["name"]: r["guide"]["watch_out"] for r in rows if r["guide"]}["RR"] == (
        "Ignores the second and later relevant passages"
    )
