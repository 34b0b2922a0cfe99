"""A disk cache of chat replies (judge verdicts, generated answers) keyed by (model, messages,
params).

Key: sha256 of the canonical JSON ``{"model", "messages", "params"}`` (sorted keys). One JSON file
per key under ``<folder>/<key[:2]>/<key>.json``, written atomically (temp file + rename) so
concurrent workers and interrupted runs never leave a half-written entry. Only successful replies
are stored: a failure is retried on the next run, not replayed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from .._errors import InputError
from ..io import atomic_write, read_json


def cache_key(model: str, messages: Sequence[Mapping[str, str]], params: Mapping[str, Any]) -> str:
    blob = json.dumps(
        {"model": model, "messages": [dict(m) for m in messages], "params": dict(params)},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class DiskCache:
    """``get(key) -> dict | None`` and ``put(key, value)`` over a folder."""

    def __init__(self, folder: str | PathLike[str]) -> None:
        self.folder = Path(folder)

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        if not path.is_file():
            return None
        try:
            value = read_json(path)
        except InputError:  # a damaged entry is a miss: the model is asked again
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: Mapping[str, Any]) -> None:
        atomic_write(self._path(key), json.dumps(dict(value), ensure_ascii=False))
