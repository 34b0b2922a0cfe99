"""The lab's views, one module each; :func:`routers` imports them (when the app is built, not
when this package is imported) and returns their routers in nav order."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import APIRouter


def routers() -> list[APIRouter]:
    """The routers of every view module, in nav order: a new view is one line here."""
    from . import (
        comparison,
        diagnosis,
        experiments,
        golden_diff,
        jobs,
        judges,
        lab,
        label,
        question,
        repeats,
        review,
        slider,
        sweeps,
        trace,
    )

    return [
        experiments.router,
        lab.router,
        comparison.router,
        sweeps.router,
        diagnosis.router,
        question.router,
        judges.router,
        slider.router,
        jobs.router,
        label.router,
        review.router,
        golden_diff.router,
        trace.router,
        repeats.router,
    ]
