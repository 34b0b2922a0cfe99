"""Deterministic stand-ins for embedding models, used by the retrieval tests."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np


class HashingEncoder:
    """Bag of words hashed into ``dim`` buckets, L2-normalised: texts sharing words are close.

    Counts calls like the real encoders; ``fail_after`` raises after that many texts were
    encoded (simulates a crash in the middle of a run).
    """

    symmetric = True

    def __init__(
        self, dim: int = 64, fail_after: int | None = None, model_id: str = "hashing-64"
    ) -> None:
        self.dim = dim
        self.model_id = model_id
        self.calls = 0
        self.texts_encoded = 0
        self.fail_after = fail_after

    def encode(self, texts: Sequence[str], *, role: str = "passage") -> np.ndarray:
        if self.fail_after is not None and self.texts_encoded + len(texts) > self.fail_after:
            raise KeyboardInterrupt("simulated crash")
        self.calls += 1
        self.texts_encoded += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.clip(norms, 1e-12, None)
