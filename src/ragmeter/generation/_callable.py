"""The user's own generator: a Python function ``fn(question, passages) -> answer``.

``passages`` are the assembled context's :class:`~._assemble.Passage` s in prompt order (each
with ``id``, ``doc``, ``start``, ``end``, ``text``, ``rank``). The function returns the answer
text, or ``(text, citations)`` where citations are passage ids, passage numbers (1-based, as in
the prompt) or markers such as ``"[2]"``; when it returns text alone, citations are parsed from
the text (:mod:`._citations`).

An exception raised by the function, or a return value of the wrong shape, is that question's
recorded ``error`` (counted in :attr:`CallableGenerator.errors`); the other questions still run.
``on_error="raise"`` stops at the first failure instead, with the question id in the message.

Cache identity: the function's module, qualified name and the sha256 of its source (or its
bytecode when the source cannot be read), plus ``version``: an edit to the function makes new
answers; an edit to code it calls does not, so bump ``version`` then.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from .._errors import RagmeterError, UsageError
from ._assemble import AssembledContext, Passage
from ._citations import Citations, find_citations, resolve_marker
from ._protocol import Generation, GenerationRequest, Progress

ON_ERROR = ("record", "raise")


def _code_identity(fn: Callable[..., Any]) -> str:
    target: Any = fn
    while isinstance(target, functools.partial):
        target = target.func
    if not (inspect.isfunction(target) or inspect.ismethod(target) or inspect.isclass(target)):
        target = type(target)  # a callable object: its class holds the code
    try:
        src = inspect.getsource(target)
    except (OSError, TypeError):
        code = getattr(target, "__code__", None)
        src = code.co_code.hex() if code is not None else ""
    return hashlib.sha256(src.encode("utf-8")).hexdigest()[:16]


def _qualname(fn: Callable[..., Any]) -> str:
    target: Any = fn.func if isinstance(fn, functools.partial) else fn
    module = getattr(target, "__module__", None) or type(target).__module__
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    return f"{module}:{name}"


class CallableGenerator:
    """A :class:`~._protocol.Generator` over ``fn(question, passages)`` (module docstring)."""

    #: what this generator counts (see ragmeter.engines._counters)
    COUNTERS: ClassVar[tuple[str, ...]] = ("calls", "errors")

    def __init__(
        self,
        fn: Callable[[str, list[Passage]], Any],
        *,
        name: str | None = None,
        version: str = "",
        on_error: str = "record",
    ) -> None:
        if not callable(fn):
            raise UsageError(f"a callable generator needs a function, got {type(fn).__name__}")
        if on_error not in ON_ERROR:
            raise UsageError(f"on_error must be one of {', '.join(ON_ERROR)}, got {on_error!r}")
        self.fn = fn
        self.target = _qualname(fn)
        self.name = name or f"python:{self.target}"
        self.version = str(version)
        self.on_error = on_error
        self.calls = 0
        self.errors = 0
        self._code = _code_identity(fn)

    def fingerprint(self) -> str:
        return f"python/{self.target}/code={self._code}/version={self.version}"

    def generate(
        self, requests: Sequence[GenerationRequest], progress: Progress | None = None
    ) -> list[Generation]:
        out: list[Generation] = []
        for i, req in enumerate(requests, 1):
            out.append(self._one(req))
            if progress is not None:
                progress(i, len(requests))
        return out

    def _one(self, req: GenerationRequest) -> Generation:
        passages = [cp.passage for cp in req.context.passages]
        self.calls += 1
        began = time.perf_counter()
        try:
            result = self.fn(req.question, passages)
            text, cites = _shape(result, req.context)
        except Exception as exc:  # the user's code: recorded per question, never hidden
            self.errors += 1
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            if self.on_error == "raise":
                raise UsageError(
                    f"the generator function {self.target} failed on question "
                    f"{req.question_id}: {error}"
                ) from exc
            return Generation(req.question_id, "", seconds=time.perf_counter() - began, error=error)
        return Generation(
            req.question_id,
            text,
            cites.ids,
            {},
            time.perf_counter() - began,
            False,
            None,
            cites.unknown,
        )


class _BadReturn(RagmeterError):
    """The function returned something that is not an answer."""


def _shape(result: Any, context: AssembledContext) -> tuple[str, Citations]:
    """(text, citations) of what the function returned."""
    if isinstance(result, str):
        return result, find_citations(result, context)
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], str):
        text, given = result
        if given is None:
            return text, find_citations(text, context)
        if isinstance(given, (str, bytes)) or not hasattr(given, "__iter__"):
            raise _BadReturn(
                f"citations must be a list of passage ids or numbers, got {type(given).__name__}"
            )
        return text, _explicit(list(given), context)
    raise _BadReturn(
        "the function must return the answer text or (text, citations), got "
        f"{type(result).__name__}"
    )


def _explicit(given: list[Any], context: AssembledContext) -> Citations:
    ids = set(context.ids)
    cited: list[str] = []
    unknown: list[str] = []
    for item in given:
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise _BadReturn(f"a citation is a passage id or number, got {type(item).__name__}")
        raw = str(item).strip()
        if raw.startswith("[") and raw.endswith("]"):
            found = list(find_citations(raw, context).ids) or None
        else:
            found = resolve_marker(raw, context, ids)
        if not found:
            if raw not in unknown:
                unknown.append(raw)
            continue
        for pid in found:
            if pid not in cited:
                cited.append(pid)
    return Citations(tuple(cited), tuple(unknown))
