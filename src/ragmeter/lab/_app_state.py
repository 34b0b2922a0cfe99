"""What the lab's request handlers share: the store, the experiments loaded from their files,
the background jobs. One ``LabState`` per app (``app.state.lab``)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from starlette.requests import Request

    from ..store import Store


@dataclass
class LabState:
    store: Store
    #: loaded experiment contexts (corpus, golden set, chunkings), keyed by file and mtime
    contexts: dict[Any, Any] = field(default_factory=dict)
    #: background jobs by id (see ``_jobs.py``)
    jobs: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def state_of(request: Request) -> LabState:
    return request.app.state.lab
