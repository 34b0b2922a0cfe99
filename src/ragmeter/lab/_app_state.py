"""What the lab's request handlers share: the store, the lab's root folder, the experiments
loaded from their files, the background jobs. One ``LabState`` per app (``app.state.lab``)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ._paths import LabCache

if TYPE_CHECKING:  # pragma: no cover
    from starlette.requests import Request

    from ..store import Store
    from ._jobs import Job


@dataclass
class LabState:
    store: Store
    #: loaded experiment contexts (corpus, golden set, chunkings), keyed by file and mtime;
    #: it carries the lab's root folder, the only place paths read from the store are opened
    contexts: LabCache = field(default_factory=LabCache)
    #: background jobs by id (see ``_jobs.py``)
    jobs: dict[str, Job] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def root(self) -> Path:
        """The lab's folder (see :mod:`._paths`)."""
        return self.contexts.root


def state_of(request: Request) -> LabState:
    state: LabState = request.app.state.lab
    return state
