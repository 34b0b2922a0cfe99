"""``ragmeter explain``: the lesson's explanatory figures as tables computed by the real engine."""

from __future__ import annotations

import csv
import sys

import typer
from rich.table import Table

from .._errors import UsageError
from ._common import Format, console, handle_errors, print_json

explain_app = typer.Typer(
    help="Show how the metrics behave on constructed examples, computed "
    "with ragmeter's own metric engine.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(explain_app, name="explain")


def _ints(text: str | None, option: str) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageError(
            f"{option} takes comma-separated integers, e.g. 2,1; got '{text}'"
        ) from None


@explain_app.command("rank-curve")
@handle_errors
def rank_curve_cmd(
    k: int = typer.Option(5, "--k", help="Cutoff k of every metric."),
    grades: str = typer.Option(
        "2", help="Grades of the labelled passages, the moving one first, e.g. 2,1."
    ),
    depth: int = typer.Option(
        10, help="Length of the ranked list; the passage moves from rank 1 to this rank."
    ),
    others_at: str | None = typer.Option(
        None,
        "--others-at",
        help="Ranks of the other labelled "
        "passages in the list without the moving one (default: "
        "not retrieved).",
    ),
    gain: str = typer.Option("exp", help="nDCG gain: exp (2^g - 1) or linear (g)."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json or csv."),
) -> None:
    """Slide one labelled passage down the list: R@k, RR@k and nDCG@k at each rank.

    A constructed query scored by ragmeter's own metric engine (the lesson's slider figure)."""
    from ..explain import rank_curve

    curve = rank_curve(
        k,
        _ints(grades, "--grades") or (),
        depth=depth,
        others_at=_ints(others_at, "--others-at"),
        gain=gain,
    )
    if fmt == Format.json:
        print_json(curve.to_dict())
        return
    if fmt == Format.csv:
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(["rank", *curve.metrics, "discount"])
        for r in curve.rows:
            w.writerow([r.rank, *(f"{v:.6f}" for v in r.values), f"{r.discount:.6f}"])
        return
    from ..metrics import metric_label

    t = Table(title=f"Slide the passage down the list: metrics at k = {curve.k}")
    t.add_column("rank", justify="right")
    for m in curve.metrics:
        t.add_column(metric_label(m), justify="right")  # nDCG@5 (linear): the gain said
    t.add_column("1/log2(rank+1)", justify="right")
    for r in curve.rows:
        style = "dim" if r.rank > curve.k else None
        t.add_row(str(r.rank), *(f"{v:.3f}" for v in r.values), f"{r.discount:.3f}", style=style)
    console.print(t)
    console.print(f"Setup: {curve.setup}.")
    if len(curve.grades) == 1:
        console.print(
            "With one labelled passage nDCG@k equals the rank discount "
            "1/log2(rank+1) inside the cutoff, whatever the gain."
        )
        console.print(
            "Recall only asks whether the passage is inside the cutoff; nDCG decays "
            "slowly with rank, reciprocal rank fast (1/rank). Past the cutoff all "
            "three are 0."
        )
    else:
        console.print(
            "Every labelled passage counts in recall's denominator and in nDCG's "
            "ideal ordering, retrieved or not; past the cutoff only the other "
            "labelled passages inside it still score."
        )
