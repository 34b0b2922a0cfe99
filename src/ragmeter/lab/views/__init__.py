"""The lab's views, one module each; ``ROUTERS`` lists the modules the app mounts."""

from __future__ import annotations

import importlib
from typing import Any

#: view modules (under ragmeter.lab.views) the app includes, in nav order
ROUTERS = (
    "experiments",
    "lab",
    "comparison",
    "sweeps",
    "diagnosis",
    "question",
    "judges",
    "slider",
    "jobs",
)


def routers() -> list[Any]:
    """The routers of every view module, in nav order."""
    return [importlib.import_module(f"{__name__}.{name}").router for name in ROUTERS]
