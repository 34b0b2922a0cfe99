"""Import the object an experiment file names: ``target = "mypkg.rag:retrieve"``.

A target is ``MODULE:NAME``: ``MODULE`` a dotted module name, imported with the experiment
file's folder first on the Python path (so a ``rag.py`` beside the file is found), or the path
of a ``.py`` file relative to that folder; ``NAME`` an attribute of it, dotted for a nested one
(``rag:Pipeline.retrieve``). Importing runs the user's code, so every failure is reported as a
:class:`~ragmeter.UsageError` naming the target, never as a bare traceback.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from ..._errors import UsageError


def load_target(target: str, base_dir: str | os.PathLike[str] | None = None) -> Any:
    """The object ``target`` names (see the module docstring)."""
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise UsageError(
            f"target {target!r} must be 'module:name' (e.g. 'mypkg.rag:retrieve') or 'file.py:name'"
        )
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    module = _import_file(module_name, base, target) if module_name.endswith(".py") else None
    if module is None:
        module = _import_module(module_name, base, target)
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(
                f"target {target!r}: {module_name} has no {attr!r} "
                f"(it defines: {', '.join(_public(module)) or 'nothing public'})"
            ) from None
    return obj


def _public(module: ModuleType) -> list[str]:
    return sorted(n for n in vars(module) if not n.startswith("_"))[:12]


@contextmanager
def _on_path(folder: Path) -> Iterator[None]:
    """``folder`` first on ``sys.path`` while the user's module imports (removed afterwards, so
    one experiment's folder does not shadow another's modules)."""
    entry = str(folder.resolve())
    added = entry not in sys.path
    if added:
        sys.path.insert(0, entry)
    try:
        yield
    finally:
        if added and entry in sys.path:
            sys.path.remove(entry)


def _import_module(name: str, base: Path, target: str) -> ModuleType:
    with _on_path(base):
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and name.startswith(exc.name):
                raise UsageError(
                    f"target {target!r}: no module named {exc.name!r} (looked in {base} and on "
                    "the Python path); give a module name or the path of a .py file"
                ) from None
            raise _raised_on_import(target, exc) from exc
        except Exception as exc:  # the user's module failed while importing
            raise _raised_on_import(target, exc) from exc


def _import_file(name: str, base: Path, target: str) -> ModuleType:
    path = (base / name).resolve()
    if not path.is_file():
        raise UsageError(f"target {target!r}: no file {path}")
    # a private module name per file path: two experiments' rag.py never collide
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    module_name = f"_ragmeter_target_{path.stem}_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has a loader
        raise UsageError(f"target {target!r}: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    with _on_path(path.parent):  # the file's own sibling imports
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[module_name]
            raise _raised_on_import(target, exc) from exc
    return module


def _raised_on_import(target: str, exc: BaseException) -> UsageError:
    return UsageError(f"target {target!r}: importing it raised {type(exc).__name__}: {exc}")
