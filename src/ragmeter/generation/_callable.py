"""The user's own generator: a Python function ``fn(question, passages) -> answer``.

``passages`` are the assembled context's :class:`~._assemble.Passage` s in prompt order (each
with ``id``, ``doc``, ``start``, ``end``, ``text``, ``rank``). The function returns the answer
text, or ``(text, citations)`` where citations are passage ids, passage numbers (1-based, as in
the prompt) or markers such as ``"[2]"``; when it returns text alone, citations are parsed from
the text (:mod:`._citations`).

Whatever the function does on one question is that question's recorded ``error`` (counted in
:attr:`CallableGenerator.errors`), and the other questions still run:

* an exception it raises (``"RuntimeError: index offline"``);
* a return value of the wrong shape (None, a number, bytes, a dict, a citation that is not an
  id or a number), text that is not valid text (a lone surrogate: :mod:`._checked`) or longer
  than :data:`MAX_ANSWER_CHARS`;
* ``sys.exit()`` or another ``BaseException`` of its own (never the end of ragmeter's run);
* not returning within ``timeout`` seconds (``"timed out after 60 s ..."``; the call goes on in
  a background thread, which Python cannot stop).

Ctrl-C still stops the run. ``on_error="raise"`` stops at the first failure instead, with the
question id in the message. How the calls are made (a worker thread per calling thread when a
timeout is set, none with ``timeout=0``) is :mod:`ragmeter.retrieval.pipelines._calls`.

Cache identity: the function's module, qualified name and the sha256 of its source (or its
bytecode when the source cannot be read), plus ``version``: an edit to the function makes new
answers; an edit to code it calls does not, so bump ``version`` then. The timeout is not part
of it: it does not change an answer, only whether one is waited for.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import itertools
import numbers
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

from .._errors import RagmeterError, UsageError
from ._assemble import AssembledContext, Passage
from ._checked import text_problem
from ._citations import Citations, find_citations, resolve_marker
from ._protocol import Generation, GenerationRequest, Progress

ON_ERROR = ("record", "raise")
#: seconds one call may take unless told otherwise: the pipelines' default
#: (ragmeter.retrieval.pipelines._calls.DEFAULT_TIMEOUT, imported only when a call is made)
DEFAULT_TIMEOUT = 300.0
#: the longest answer text kept (characters): a longer one is a recorded error, not 100 MB
#: written to every answer file, cache entry and store blob
MAX_ANSWER_CHARS = 4 * 1024 * 1024
#: the most citations read from one answer (an endless iterator is cut here)
MAX_CITATIONS = 10_000
#: the longest citation item (a passage id, a number or a marker), in characters
MAX_CITATION_CHARS = 1000


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
    return hashlib.sha256(src.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _qualname(fn: Callable[..., Any]) -> str:
    target: Any = fn.func if isinstance(fn, functools.partial) else fn
    module = getattr(target, "__module__", None) or type(target).__module__
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    return f"{module}:{name}"


class CallableGenerator:
    """A :class:`~._protocol.Generator` over ``fn(question, passages)`` (module docstring).

    ``timeout``: seconds one call may take (default :data:`DEFAULT_TIMEOUT`; 0 or None: no
    limit);
    ``target``: the name the experiment file gave the function (``"gen.py:answer"``), which
    stands for it in names and the cache key (default: its module and qualified name)."""

    #: what this generator counts (see ragmeter.engines._counters)
    COUNTERS: ClassVar[tuple[str, ...]] = ("calls", "errors")

    def __init__(
        self,
        fn: Callable[[str, list[Passage]], Any],
        *,
        name: str | None = None,
        version: str = "",
        on_error: str = "record",
        timeout: float | None = DEFAULT_TIMEOUT,
        target: str | None = None,
    ) -> None:
        from ..retrieval.pipelines._calls import Caller

        if not callable(fn):
            raise UsageError(f"a callable generator needs a function, got {type(fn).__name__}")
        if on_error not in ON_ERROR:
            raise UsageError(f"on_error must be one of {', '.join(ON_ERROR)}, got {on_error!r}")
        self.fn = fn
        self.target = target or _qualname(fn)
        self.name = name or f"python:{self.target}"
        self.version = str(version)
        self.on_error = on_error
        self.calls = 0
        self.errors = 0
        self._code = _code_identity(fn)
        self._caller = Caller(f"the generator function {self.target}", timeout)

    @property
    def timeout(self) -> float | None:
        """Seconds one call may take (None: no limit)."""
        return self._caller.timeout

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
        from ..retrieval.pipelines._calls import describe, one_line

        passages = [cp.passage for cp in req.context.passages]
        self.calls += 1
        began = time.perf_counter()
        try:
            result = self._caller(_answered, self.fn, req.question, passages)
            text, cites = _shape(result, req.context)
        except Exception as exc:  # the user's code: recorded per question, never hidden
            self.errors += 1
            error = one_line(str(exc)) if isinstance(exc, _BadReturn) else describe(exc)
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


def _answered(fn: Callable[..., Any], question: str, passages: list[Passage]) -> Any:
    """``fn``'s answer with lazy citations read (at most one past :data:`MAX_CITATIONS`):
    inside the timed call, so an endless iterator times out instead of hanging the run."""
    result = fn(question, passages)
    if isinstance(result, tuple) and len(result) == 2:
        given = result[1]
        lazy = isinstance(given, Iterable) and not isinstance(given, (str, bytes, list, tuple))
        if lazy:
            return result[0], list(itertools.islice(given, MAX_CITATIONS + 1))
    return result


def _shape(result: Any, context: AssembledContext) -> tuple[str, Citations]:
    """(text, citations) of what the function returned."""
    if isinstance(result, str):
        text = _text(result)
        return text, find_citations(text, context)
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], str):
        text, given = _text(result[0]), result[1]
        if given is None:
            return text, find_citations(text, context)
        if isinstance(given, (str, bytes)) or not hasattr(given, "__iter__"):
            raise _BadReturn(
                f"citations must be a list of passage ids or numbers, got {type(given).__name__}"
            )
        given = list(itertools.islice(given, MAX_CITATIONS + 1))
        if len(given) > MAX_CITATIONS:
            raise _BadReturn(f"more than {MAX_CITATIONS} citations in one answer")
        return text, _explicit(given, context)
    hint = ""
    if isinstance(result, bytes):
        hint = " (decode bytes to str first)"
    elif isinstance(result, tuple) and len(result) == 2:
        hint = f" (the text is a {type(result[0]).__name__})"
    raise _BadReturn(
        "the function must return the answer text or (text, citations), got "
        f"{type(result).__name__}{hint}"
    )


def _text(value: str) -> str:
    """The answer text as a plain ``str``, refused when it cannot be written."""
    text = str.__str__(value)  # a str subclass's own __str__ is not the answer
    if len(text) > MAX_ANSWER_CHARS:
        raise _BadReturn(
            f"the answer is {len(text)} characters long; ragmeter keeps answers of at most "
            f"{MAX_ANSWER_CHARS}"
        )
    why = text_problem(text)
    if why is not None:
        raise _BadReturn(why)
    return text


def _explicit(given: list[Any], context: AssembledContext) -> Citations:
    ids = set(context.ids)
    cited: list[str] = []
    unknown: list[str] = []
    for item in given:
        raw = _citation(item)
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


def _citation(item: Any) -> str:
    """One citation as the marker text it stands for; :class:`_BadReturn` names a bad one."""
    if isinstance(item, bool) or not isinstance(item, (numbers.Integral, str)):
        raise _BadReturn(f"a citation is a passage id or number, got {type(item).__name__}")
    if isinstance(item, numbers.Integral):
        if not -(10**12) < int(item) < 10**12:
            raise _BadReturn("a citation number must be a passage number, got a huge number")
        return str(int(item))
    raw = str.__str__(item).strip()
    if len(raw) > MAX_CITATION_CHARS:
        raise _BadReturn(
            f"a citation is {len(raw)} characters long; a passage id or number is expected"
        )
    why = text_problem(raw, "a citation")
    if why is not None:
        raise _BadReturn(why)
    return raw
