"""ragmeter: evaluate a RAG chain link by link, with numbers a reviewer can re-run.

Nothing heavy happens at import: public names are loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> module that defines it (relative to this package).
_PUBLIC: dict[str, str] = {
    # errors
    "RagmeterError": "._errors",
    "InputError": "._errors",
    "ValidationError": "._errors",
    "UsageError": "._errors",
    "MissingExtraError": "._errors",
    "VersionMismatchError": "._errors",
    # metrics and evaluation
    "Metric": ".metrics",
    "parse_metric": ".metrics._spec",
    "Evaluation": ".evaluation",
    "evaluate": ".metrics._engine",
    # I/O
    "read_qrels": ".io.trec",
    "read_run": ".io.trec",
    # data model
    "Document": ".data._schema",
    "Evidence": ".data._schema",
    "Question": ".data._schema",
}

__all__ = sorted([*_PUBLIC, "__version__"])

_ALIASED = {"parse_metric": "parse"}


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'ragmeter' has no attribute '{name}'")
    value = getattr(importlib.import_module(module, __name__), _ALIASED.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover
    from ._errors import (InputError, MissingExtraError, RagmeterError, UsageError,
                          ValidationError, VersionMismatchError)
    from .data._schema import Document, Evidence, Question
    from .evaluation import Evaluation
    from .io.trec import read_qrels, read_run
    from .metrics import Metric
    from .metrics._engine import evaluate
    from .metrics._spec import parse as parse_metric
