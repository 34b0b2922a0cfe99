"""Import the object an experiment file names: ``target = "mypkg.rag:retrieve"``.

A target is ``MODULE:NAME``: ``MODULE`` a dotted module name, imported with the experiment
file's folder first on the Python path (so a ``rag.py`` beside the file is found), or the path
of a ``.py`` file relative to that folder; ``NAME`` an attribute of it, dotted for a nested one
(``rag:Pipeline.retrieve``). Importing runs the user's code, so every failure (a syntax error,
an exception or ``sys.exit()`` at import, a missing name, a folder where a file was expected) is
reported as one :class:`~ragmeter.UsageError` line naming the target and, when the user's code
failed, the file and line where it did: never a bare traceback, never a silent exit.

This is the one loader of user code: pipelines (``[retriever] kind = "python"``, LangChain,
LlamaIndex) and generator functions (``[generator] kind = "python"``) both use it, and
:func:`check_signature` refuses a function that cannot be called the way ragmeter calls it
before any question is asked.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from ..._errors import UsageError
from ._calls import describe, one_line
from ._stdout import user_code


def load_target(target: str, base_dir: str | os.PathLike[str] | None = None) -> Any:
    """The object ``target`` names (see the module docstring). What the module prints while it
    imports goes to stderr during a run (:mod:`._stdout`)."""
    with user_code():
        return _load_target(target, base_dir)


def _load_target(target: str, base_dir: str | os.PathLike[str] | None) -> Any:
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
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a property or module __getattr__ of the user's that fails
            raise user_failure(target, exc, base, "looking up its name") from exc
    return obj


def check_signature(obj: Any, target: str, args: tuple[str, ...], shape: str) -> None:
    """Refuse ``obj`` unless it can be called with ``args`` (their names, for the message):
    not callable, an ``async def`` (ragmeter runs no event loop), or parameters that do not take
    them. ``shape`` says what ragmeter expects, e.g. ``"question -> hits"``."""
    if not callable(obj):
        raise UsageError(f"target {target!r} is a {type(obj).__name__}, not a function {shape}")
    if inspect.iscoroutinefunction(obj) or inspect.isasyncgenfunction(obj):
        raise UsageError(
            f"target {target!r} is an async function; ragmeter calls it without an event loop: "
            f"give a plain function {shape} (one that calls asyncio.run, for example)"
        )
    try:
        sig = inspect.signature(obj)
    except Exception:  # a builtin or an object without a signature: called as it is
        return
    try:
        sig.bind(*args)
    except TypeError:
        call = f"({', '.join(args)})"
        raise UsageError(
            f"target {target!r} takes {one_line(str(sig), 200)} but ragmeter calls it as "
            f"{call}: give a function {shape}"
        ) from None


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
                    f"target {target!r}: cannot import module {name!r}: no module named "
                    f"{exc.name!r} (looked in {base} and on the Python path); give a module "
                    "name or the path of a .py file"
                ) from None
            raise user_failure(target, exc, base) from exc
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # the user's module failed while importing (or exited)
            raise user_failure(target, exc, base) from exc


def _import_file(name: str, base: Path, target: str) -> ModuleType:
    path = (base / name).resolve()
    if path.is_dir():
        raise UsageError(f"target {target!r}: {path} is a folder, not a .py file")
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
        except BaseException as exc:
            del sys.modules[module_name]
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise user_failure(target, exc, base) from exc
    return module


def user_failure(
    target: str, exc: BaseException, base: Path, doing: str = "importing it"
) -> UsageError:
    """One line: what the user's code raised while ``doing``, and the file and line."""
    where = _user_line(exc, base)
    at = f" (at {where})" if where else ""
    if isinstance(exc, SyntaxError):
        what = f"{type(exc).__name__}: {one_line(str(exc.msg), 300)}"
    elif isinstance(exc, SystemExit):
        what = f"SystemExit (sys.exit({'' if exc.code is None else repr(exc.code)}))"
    else:
        what = describe(exc)
    return UsageError(f"target {target!r}: {doing} raised {what}{at}")


def _user_line(exc: BaseException, base: Path) -> str:
    """``"rag.py, line 3"``: where the user's code failed. For a syntax error, the line that
    does not parse; else the deepest frame in the experiment's folder (the user's own code,
    not the library it called), or the deepest frame that is a file at all."""
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return f"{_shown(exc.filename, base)}, line {exc.lineno}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).is_file()]
    if not frames:
        return ""
    folder = base.resolve()
    mine = [f for f in frames if Path(f.filename).resolve().is_relative_to(folder)]
    f = (mine or frames)[-1]
    return f"{_shown(f.filename, base)}, line {f.lineno}"


def _shown(filename: str, base: Path) -> str:
    """A file as the user knows it: relative to the experiment's folder when inside it."""
    path = Path(filename).resolve()
    try:
        return path.relative_to(base.resolve()).as_posix()
    except ValueError:
        return str(path)
