"""Content-addressed cache for chunkings, BM25 indexes, embeddings and runs.

Every entry is named by the sha256 of what produced it, never by a name or a date:

==============  ==========================================================================
kind            key
==============  ==========================================================================
chunkings       corpus hash, chunker name, tokenizer name
bm25            hash of the (id, text) list indexed, BM25 parameters, bm25s version
embeddings      model id and role (folder), then one entry per text: sha256 of the text
runs            retriever config, hash of the items searched, hash of the queries, depth
==============  ==========================================================================

Embeddings are stored per text, so changing k, depth or the set of chunks re-embeds only texts
never seen before by that model. New vectors are stored as a shard every ``flush_every`` texts
or once ``flush_seconds`` (30 s) have passed since the last save, checked after each batch sent
to the encoder; batches are sized from the encoder's measured speed so that one takes about a
quarter of that interval (a slow model gets small batches), so a process killed at any moment
loses at most about 30 s of encoding. What is finished is also stored when encoding stops
early (an exception or Ctrl-C), so an interrupted run resumes where it stopped. Every file and
folder is written under a temporary name and moved into place with ``os.replace``
(``ragmeter.io._atomic``), so a crash leaves either the old entry or the new one, never half of
one.

An entry that cannot be read (truncated or zero-byte file, wrong columns or shape, a folder
that lost a file) is a miss: a :class:`~ragmeter._errors.RagmeterWarning` names the file, the
entry is computed again and rewritten (:meth:`Cache.load`, :func:`damaged`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from .._errors import RagmeterWarning
from ..io import atomic_write, read_json
from ._protocol import Encoder

#: Shards written per (model, role) before they are merged into one file on the next load.
MAX_SHARDS = 32
#: Texts in the first batch sent to the encoder, before its speed is known.
FIRST_BATCH = 16

T = TypeVar("T")


def damaged(path: Path, exc: BaseException) -> None:
    """Warn that the cache entry at ``path`` cannot be read and put it out of the way: a file is
    replaced when the entry is written again; a folder (a BM25 index) is moved aside and removed
    now, since a folder cannot be replaced over a non-empty one."""
    text = str(exc).strip()
    reason = text.splitlines()[0][:120] if text else type(exc).__name__
    warnings.warn(
        f"{path}: unreadable cache entry ({reason}); it is computed again and rewritten",
        RagmeterWarning,
        stacklevel=3,
    )
    if path.is_dir() and not path.is_symlink():
        aside = path.with_name(f".{path.name}.{uuid.uuid4().hex}.damaged")
        try:
            os.replace(path, aside)  # one rename: a reader sees the old entry or none
        except OSError:
            return
        shutil.rmtree(aside, ignore_errors=True)


def digest(*parts: Any) -> str:
    """sha256 (hex) of the canonical JSON of ``parts``: equal inputs, equal key, across runs."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def texts_digest(ids: Sequence[str], texts: Sequence[str]) -> str:
    """sha256 of an ordered (id, text) list; names the items an index or a run was built on."""
    h = hashlib.sha256()
    for i, t in zip(ids, texts, strict=True):
        h.update(hashlib.sha256(i.encode("utf-8")).digest())
        h.update(hashlib.sha256(t.encode("utf-8")).digest())
    return h.hexdigest()


class Cache:
    """A cache folder (or a disabled cache when ``root`` is None: nothing is read or written).

    ``hits`` and ``misses`` count lookups per kind, for reports and tests.
    """

    def __init__(self, root: str | os.PathLike[str] | None) -> None:
        self.root = None if root is None else Path(root)
        self.hits: dict[str, int] = {}
        self.misses: dict[str, int] = {}
        self._stores: dict[tuple[str, str], EmbeddingStore] = {}

    def entry(self, kind: str, key: str, suffix: str = "") -> Path | None:
        """Where the entry ``key`` of ``kind`` lives (None when the cache is disabled)."""
        if self.root is None:
            return None
        return self.root / kind / key[:2] / f"{key}{suffix}"

    def lookup(self, kind: str, key: str, suffix: str = "") -> Path | None:
        """The entry's path if it exists (counted as a hit), else None (counted as a miss)."""
        path = self.entry(kind, key, suffix)
        found = path is not None and path.exists()
        counter = self.hits if found else self.misses
        counter[kind] = counter.get(kind, 0) + 1
        return path if found else None

    def load(self, kind: str, key: str, suffix: str, reader: Callable[[Path], T]) -> T | None:
        """``reader(path)`` of the entry, or None when there is none or it cannot be read: any
        error of the reader makes a damaged entry a miss (counted as one, with a warning naming
        the file, see :func:`damaged`) that the caller computes and writes again."""
        path = self.lookup(kind, key, suffix)
        if path is None:
            return None
        try:
            return reader(path)
        except Exception as exc:  # whatever a truncated or foreign file makes a reader raise
            self.hits[kind] -= 1
            self.misses[kind] = self.misses.get(kind, 0) + 1
            damaged(path, exc)
            return None

    def read_json(self, kind: str, key: str) -> Any | None:
        return self.load(kind, key, ".json", read_json)

    def write_json(self, kind: str, key: str, value: Any) -> None:
        path = self.entry(kind, key, ".json")
        if path is None:
            return
        atomic_write(path, json.dumps(value, ensure_ascii=False))

    def embeddings(self, model_id: str, role: str) -> EmbeddingStore:
        """The per-text vector store of one model and role (shared within this cache)."""
        key = (model_id, role)
        if key not in self._stores:
            folder = (
                None if self.root is None else self.root / "embeddings" / digest(model_id, role)
            )
            self._stores[key] = EmbeddingStore(folder, label=f"{model_id} [{role}]")
        return self._stores[key]


class EmbeddingStore:
    """Vectors of one model and role, keyed by the sha256 of each text, stored in npz shards."""

    def __init__(self, folder: Path | None, label: str = "") -> None:
        self.folder = folder
        self.label = label
        self._rows: dict[bytes, int] | None = None
        self._blocks: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None

    def _load(self) -> dict[bytes, int]:
        if self._rows is not None:
            return self._rows
        self._rows = {}
        shards = (
            sorted(self.folder.glob("shard-*.npz")) if self.folder and self.folder.exists() else []
        )
        read: list[tuple[Path, np.ndarray, np.ndarray]] = []
        for shard in shards:
            try:
                keys, vecs = _read_shard(shard)
            except Exception as exc:  # truncated, zero bytes, not an npz, wrong shape
                _drop_shard(shard, exc)  # its texts are simply encoded again
                continue
            read.append((shard, keys, vecs))
        # every vector of one model has one width: the width most rows have wins
        widths: Counter[int] = Counter()
        for _, keys, vecs in read:
            widths[vecs.shape[1]] += len(keys)
        top = widths.most_common(2)
        # a tie leaves no width to trust: every shard is encoded again
        width = top[0][0] if top and (len(top) == 1 or top[0][1] > top[1][1]) else None
        kept = []
        for shard, keys, vecs in read:
            if vecs.shape[1] != width:
                _drop_shard(shard, ValueError(f"vectors of width {vecs.shape[1]}, not {width}"))
                continue
            self._append(keys, vecs)
            kept.append(shard)
        if len(kept) > MAX_SHARDS and self._blocks:
            self._compact(kept)
        return self._rows

    def _append(self, keys: np.ndarray, vecs: np.ndarray) -> None:
        assert self._rows is not None
        base = sum(len(b) for b in self._blocks)
        self._blocks.append(np.asarray(vecs, dtype=np.float32))
        self._matrix = None
        for j, row in enumerate(keys):
            self._rows.setdefault(bytes(row), base + j)

    def _compact(self, old: list[Path]) -> None:
        """Merge many small shards into one; old shards are removed only after the merge landed."""
        assert self._rows is not None and self.folder is not None
        matrix = self.matrix()
        keys = np.zeros((len(self._rows), 32), dtype=np.uint8)
        rows = np.empty(len(self._rows), dtype=np.int64)
        for j, (k, r) in enumerate(self._rows.items()):
            keys[j] = np.frombuffer(k, dtype=np.uint8)
            rows[j] = r
        self._write_shard(keys, matrix[rows])
        for shard in old:
            shard.unlink(missing_ok=True)

    def matrix(self) -> np.ndarray:
        if self._matrix is None:
            self._matrix = (
                np.concatenate(self._blocks) if self._blocks else np.zeros((0, 0), np.float32)
            )
            self._blocks = [self._matrix]
        return self._matrix

    def _write_shard(self, keys: np.ndarray, vecs: np.ndarray) -> None:
        if self.folder is None:
            return
        path = self.folder / f"shard-{uuid.uuid4().hex}.npz"
        atomic_write(path, lambda fh: np.savez(fh, keys=keys, vecs=vecs))

    def get(self, keys: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """(found mask, row numbers in :meth:`matrix` for the found keys)."""
        rows = self._load()
        idx = np.array([rows.get(k, -1) for k in keys], dtype=np.int64)
        found = idx >= 0
        return found, idx[found]

    def add(self, keys: list[bytes], vecs: np.ndarray) -> None:
        """Store new vectors (memory and one new shard on disk)."""
        self._load()
        arr = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 32)
        self._append(arr, vecs)
        self._write_shard(arr, np.asarray(vecs, dtype=np.float32))

    def __len__(self) -> int:
        return len(self._load())


def _read_shard(shard: Path) -> tuple[np.ndarray, np.ndarray]:
    """(keys, vectors) of a shard, checked: 32-byte keys, one finite float row per key."""
    with np.load(shard, allow_pickle=False) as z:
        keys, vecs = np.asarray(z["keys"]), np.asarray(z["vecs"])
    if keys.dtype != np.uint8 or keys.ndim != 2 or keys.shape[1] != 32:
        raise ValueError(f"keys of shape {keys.shape} and type {keys.dtype}, not (n, 32) uint8")
    if vecs.ndim != 2 or len(vecs) != len(keys) or vecs.dtype.kind != "f" or not vecs.shape[1]:
        raise ValueError(f"vectors of shape {vecs.shape} for {len(keys)} keys")
    if not np.isfinite(vecs).all():
        raise ValueError("vectors that are not finite")
    return keys, vecs


def _drop_shard(shard: Path, exc: BaseException) -> None:
    """A shard is never rewritten under its name (new ones get new names): remove it."""
    damaged(shard, exc)
    shard.unlink(missing_ok=True)


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def encode_cached(
    encoder: Encoder,
    texts: Sequence[str],
    *,
    role: str,
    cache: Cache | None,
    flush_every: int = 1024,
    flush_seconds: float = 30.0,
    slice_size: int = 256,
    on_progress: Callable[[int], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> np.ndarray:
    """Vectors for ``texts`` (one row each), encoding only texts the cache has not seen.

    Equal texts are encoded once. Missing texts go to the encoder in batches of at most
    ``slice_size`` (progress is reported after each), sized by :func:`next_batch` so that one
    batch takes about a quarter of ``flush_seconds``; finished vectors are stored as a shard
    when ``flush_every`` texts are pending or ``flush_seconds`` have passed since the last save
    (checked after each batch), and whatever is finished is stored when encoding stops early (an
    exception or Ctrl-C), so an interrupted or killed run resumes where it stopped. An encoder
    with ``encode_batches(texts, role=)`` (an engine's, :mod:`ragmeter.engines`) gets every
    missing text at once and yields ``(rows, vectors)`` per finished batch, in any order; each is
    stored under the same rules. ``on_progress(n)`` is called with the number of texts done
    (cached ones at once); ``clock`` (seconds, monotonic) is injectable for tests.
    """
    cache = cache or Cache(None)
    store = cache.embeddings(encoder.model_id, "text" if encoder.symmetric else role)
    keys = [text_key(t) for t in texts]
    first: dict[bytes, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    copies = Counter(keys)
    ukeys = list(first)
    found, _ = store.get(ukeys)
    todo = [k for k, f in zip(ukeys, found, strict=True) if not f]
    if on_progress:
        on_progress(len(texts) - sum(copies[k] for k in todo))
    cap = max(1, min(slice_size, flush_every))
    step = min(cap, FIRST_BATCH)
    pending_keys: list[bytes] = []
    pending_vecs: list[np.ndarray] = []
    last_flush = clock()

    def flush() -> None:
        nonlocal last_flush
        if pending_keys:
            store.add(list(pending_keys), np.concatenate(pending_vecs))
            pending_keys.clear()
            pending_vecs.clear()
        last_flush = clock()

    batches = getattr(encoder, "encode_batches", None)
    try:
        if batches is not None:  # an engine's encoder (ragmeter.engines): every missing text at
            # once, batches landing in any order, each stored like a local one
            for rows, vecs in batches([texts[first[k]] for k in todo], role=role):
                part = [todo[j] for j in rows]
                pending_keys.extend(part)
                pending_vecs.append(np.asarray(vecs, dtype=np.float32))
                if len(pending_keys) >= flush_every or clock() - last_flush >= flush_seconds:
                    flush()
                if on_progress:
                    on_progress(sum(copies[k] for k in part))
            todo = []
        start = 0
        while start < len(todo):
            # a batch never crosses a shard boundary: shards hold ``flush_every`` texts
            part = todo[start : start + min(step, flush_every - len(pending_keys))]
            start += len(part)
            began = clock()
            pending_vecs.append(encoder.encode([texts[first[k]] for k in part], role=role))
            spent = clock() - began
            pending_keys.extend(part)
            if len(pending_keys) >= flush_every or clock() - last_flush >= flush_seconds:
                flush()
            if on_progress:
                on_progress(sum(copies[k] for k in part))
            step = next_batch(step, len(part), spent, flush_seconds / 4, cap)
    finally:
        flush()  # keep what was finished, also when encoding was interrupted
    found, rows = store.get(keys)
    if not found.all():  # pragma: no cover - flush() above stores every missing key
        raise RuntimeError("embedding store lost vectors it just stored")
    return store.matrix()[rows]


def next_batch(step: int, done: int, seconds: float, target: float, cap: int) -> int:
    """The next batch size after ``done`` texts took ``seconds``: as many texts as fit in
    ``target`` seconds at that speed, at most twice the last batch (one fast measurement does
    not jump to ``cap``) and within ``[1, cap]``."""
    if seconds <= 0 or done <= 0:
        return min(cap, 2 * step)
    fits = int(target * done / seconds)
    return max(1, min(cap, 2 * step, fits))
