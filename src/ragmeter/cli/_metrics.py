"""``ragmeter metrics``: every metric the grammar accepts, read from the metric registry."""

from __future__ import annotations

import csv
import sys

import typer
from rich.table import Table

from ._common import Format, console, handle_errors, lit, print_json


def register(app: typer.Typer) -> None:
    app.command("metrics")(metrics_cmd)


@handle_errors
def metrics_cmd(
    names: list[str] | None = typer.Argument(
        None, help="Metrics to show (names, aliases or metrics, e.g. nDCG MRR R@5); default: all."
    ),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json or csv."),
) -> None:
    """List every metric: how it is written, what it means, its options with their defaults,
    the labels it is computed on, and trec_eval's name for it."""
    from ..metrics import PRECISION_CEILING, REGISTRY, metric_rows, option_text

    rows = metric_rows(names)
    if fmt == Format.json:
        print_json(rows)
        return
    if fmt == Format.csv:
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(
            [
                "name",
                "title",
                "forms",
                "aliases",
                "definition",
                "formula",
                "options",
                "cutoff",
                "binary",
                "labels",
                "trec_eval",
            ]
        )
        for r in rows:
            opts = " ".join(
                o["name"] if o["default"] is None else f"{o['name']}={o['default']}"
                for o in r["options"]
            )
            w.writerow(
                [
                    r["name"],
                    r["title"],
                    " ".join(r["forms"]),
                    " ".join(r["aliases"]),
                    r["definition"],
                    r["formula"],
                    opts,
                    r["cutoff"],
                    r["binary"],
                    " ".join(r["labels"]),
                    " ".join(r["trec_eval"]),
                ]
            )
        return
    t = Table(
        title="Metrics (k: rank cutoff; budget=B: token budget, span labels only)", show_lines=True
    )
    t.add_column("metric", no_wrap=True)
    t.add_column("meaning", ratio=1)
    t.add_column("options", no_wrap=True)
    t.add_column("labels")
    t.add_column("trec_eval", no_wrap=True)
    for r in rows:
        info = REGISTRY[r["name"]]
        written = "\n".join(r["forms"]) + "".join(f"\nalias {a}" for a in r["aliases"])
        meaning = lit(r["definition"]).append("\n" + r["formula"], "dim")
        options = "\n".join(option_text(p) for p in info.params) or "-"
        t.add_row(
            lit(written),
            meaning,
            lit(options),
            lit("\n".join(r["labels"])),
            lit("\n".join(r["trec_eval"]) or "-"),
        )
    console.print(t)
    params = {p.name: p for r in rows for p in REGISTRY[r["name"]].params}
    for p in params.values():
        default = "" if p.default is None else f" (default {p.default})"
        console.print(lit(f"{p.name}{default}: {p.doc}"))
    guided = [r for r in rows if r["guide"]]
    if guided:
        g = Table(
            title="Choosing a metric (the RAG evaluation lesson's comparison)", show_lines=True
        )
        g.add_column("metric", no_wrap=True)
        for head in (
            "question it answers",
            "uses order inside top k",
            "best when",
            "watch out for",
        ):
            g.add_column(head, ratio=1)
        for r in guided:
            d = r["guide"]
            g.add_row(
                lit(r["name"]),
                lit(d["question"]),
                lit(d["uses_order"]),
                lit(d["best_when"]),
                lit(d["watch_out"]),
            )
        console.print(g)
        if any(r["name"] == "P" for r in guided):
            console.print(lit(PRECISION_CEILING))
    console.print(
        lit(
            "items: graded item labels (TREC qrels: ragmeter eval QRELS RUN). spans: "
            "the evidence spans of a golden set; a span is found when the chunks "
            "within the cutoff cover at least --cover of its characters (ragmeter "
            "eval --golden G --chunks C RUN)."
        )
    )
