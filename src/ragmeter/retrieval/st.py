"""Models from a local sentence-transformers folder: bi-encoders and cross-encoders (extra [torch]).

Nothing downloads: the folder must hold the whole model (``SentenceTransformer.save`` or
``CrossEncoder.save`` output), and ``HF_HUB_OFFLINE=1`` is set before loading so a missing file
fails at once instead of reaching for the hub. Install with ``pip install torch==2.13.0`` (a CPU
wheel) and ``pip install 'ragmeter[torch]'``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InputError, UsageError
from .._extras import require


def folder_digest(path: Path) -> str:
    """sha256 over every file of a model folder (relative name and bytes): names the weights."""
    if not path.is_dir():
        raise InputError("is not a model folder (expected a sentence-transformers save)", path=path)
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(str(f.relative_to(path)).encode("utf-8"))
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def _load_sentence_transformers(purpose: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    return require("sentence_transformers", purpose)


class SentenceTransformerEncoder:
    """Any sentence-transformers bi-encoder saved in a local folder; vectors are unit-normalised.

    ``query_prefix`` / ``passage_prefix`` are prepended to texts (e.g. ``"query: "`` for e5
    models); the encoder is symmetric when both are equal.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        batch_size: int = 32,
        query_prefix: str = "",
        passage_prefix: str = "",
    ) -> None:
        self.path = Path(path)
        if not self.path.is_dir():
            raise InputError("sentence-transformers model folder not found", path=self.path)
        self.batch_size = batch_size
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.symmetric = query_prefix == passage_prefix
        self.calls = 0
        self.texts_encoded = 0
        self._model: Any = None
        self._digest: str | None = None

    @property
    def model_id(self) -> str:
        if self._digest is None:
            self._digest = folder_digest(self.path)
        return (
            f"st/{self.path.name}/{self._digest[:16]}/"
            f"q={self.query_prefix!r}/p={self.passage_prefix!r}"
        )

    @property
    def config(self) -> dict[str, Any]:
        return {"model": "st", "path": str(self.path), "model_id": self.model_id}

    def encode(self, texts: Sequence[str], *, role: str = "passage") -> np.ndarray:
        if role not in ("query", "passage"):
            raise UsageError(f"role must be 'query' or 'passage', got '{role}'")
        if self._model is None:
            st = _load_sentence_transformers("a sentence-transformers model folder")
            self._model = st.SentenceTransformer(str(self.path), device="cpu")
        if not texts:
            dim = self._model.get_sentence_embedding_dimension() or 0
            return np.zeros((0, dim), dtype=np.float32)
        self.calls += 1
        self.texts_encoded += len(texts)
        prefix = self.query_prefix if role == "query" else self.passage_prefix
        vecs = self._model.encode(
            [prefix + t for t in texts],
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)


class CrossEncoderScorer:
    """A sentence-transformers ``CrossEncoder`` from a local folder: one score per (query, text)."""

    def __init__(self, path: str | os.PathLike[str], *, batch_size: int = 32) -> None:
        self.path = Path(path)
        if not self.path.is_dir():
            raise InputError("cross-encoder model folder not found", path=self.path)
        self.batch_size = batch_size
        self.calls = 0
        self._model: Any = None
        self._digest: str | None = None

    @property
    def model_id(self) -> str:
        if self._digest is None:
            self._digest = folder_digest(self.path)
        return f"cross-encoder/{self.path.name}/{self._digest[:16]}"

    @property
    def config(self) -> dict[str, Any]:
        return {"model": "cross-encoder", "path": str(self.path), "model_id": self.model_id}

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Relevance score of each (query, text) pair, higher = more relevant (float64)."""
        if self._model is None:
            st = _load_sentence_transformers("a cross-encoder model folder")
            self._model = st.CrossEncoder(str(self.path), device="cpu")
        if not pairs:
            return np.zeros(0, dtype=np.float64)
        self.calls += 1
        scores = self._model.predict(
            [list(p) for p in pairs],
            batch_size=self.batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return np.asarray(scores, dtype=np.float64).reshape(len(pairs), -1)[:, -1]
