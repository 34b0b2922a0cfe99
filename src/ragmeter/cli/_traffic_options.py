"""The options ``compare`` and ``gate`` share to weigh the difference to traffic:
``--traffic LOG``, ``--traffic-shares "a=0.5,b=0.5"``, ``--traffic-field`` and ``--traffic-floor``
(:mod:`ragmeter.paired._weighted` has the rules)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from .._errors import UsageError

if TYPE_CHECKING:  # keeps `ragmeter --help` fast
    from ..paired import Traffic


def traffic_option() -> Any:
    return typer.Option(
        None,
        "--traffic",
        metavar="LOG",
        help="Question log (as 'golden compare-traffic' reads it): also report the difference "
        "weighted to its slice shares, beside the unweighted one.",
        show_default=False,
    )


def shares_option() -> Any:
    return typer.Option(
        None,
        "--traffic-shares",
        metavar="SHARES",
        help="Traffic shares by golden slice instead of a log, e.g. 'fees=0.5,refunds=0.3,"
        "changes=0.2' (summing to 1).",
        show_default=False,
    )


def field_option() -> Any:
    return typer.Option("slice", "--traffic-field", help="The log field naming a line's slice.")


def floor_option() -> Any:
    return typer.Option(
        0.01,
        "--traffic-floor",
        help="A traffic slice with no golden question is an error, unless its share is below "
        "this (then it is left out).",
    )


def traffic_request(
    log: Path | None, shares: str | None, field: str, floor: float
) -> Traffic | None:
    """The traffic to weigh to, or None when neither option is given."""
    from ..paired import Traffic

    if log is not None and shares is not None:
        raise UsageError("give --traffic or --traffic-shares, not both")
    if log is None and shares is None:
        return None
    return Traffic(log=log, shares=shares, field=field, floor=floor)
