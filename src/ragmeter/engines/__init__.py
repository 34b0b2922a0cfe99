"""Where the batch jobs run: this process (:func:`local`, the default) or a Ray cluster
(:class:`RayEngine`, the ``ray`` extra). See docs/scale.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._local import Engine, LocalEngine, local
from ._resolve import ENGINES, resolve_engine

if TYPE_CHECKING:
    from ._pool import WorkerLost
    from ._ray import RayEngine

__all__ = ["ENGINES", "Engine", "LocalEngine", "RayEngine", "WorkerLost", "local", "resolve_engine"]


def __getattr__(name: str) -> Any:
    # Ray's side is imported on use, so `import ragmeter.engines` costs nothing without it
    if name == "RayEngine":
        from ._ray import RayEngine

        return RayEngine
    if name == "WorkerLost":
        from ._pool import WorkerLost

        return WorkerLost
    raise AttributeError(name)
