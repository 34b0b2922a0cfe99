"""The three shapes of a user's pipeline, each turned into the same list of hits per question.

* :class:`CallablePipeline`: a function ``question -> list`` of spans ``(doc, start, end)`` or
  ``(doc, start, end, score)``, or of chunk ids (``"fares.md#0-812"``, or ``(chunk_id,
  score)``); mappings with the keys ``doc``/``start``/``end`` or ``chunk`` (and ``score``) too;
* :class:`LangChainPipeline`: a LangChain retriever (``invoke(question) -> [Document]``) over
  chunks made by a splitter with ``add_start_index=True``: the document id in
  ``metadata[doc_key]`` (``"source"`` by default), the start in ``metadata["start_index"]``,
  the end ``start + len(page_content)``;
* :class:`LlamaIndexPipeline`: a LlamaIndex retriever (``retrieve(question) ->
  [NodeWithScore]``) whose nodes carry ``ref_doc_id`` (the id of the ``Document`` they were
  split from, i.e. the corpus document id) and ``start_char_idx``/``end_char_idx``.

Each adapter has two steps, kept apart so that an exception from the user's code (``call``) is
told from output that breaks the contract (``hits`` raises :class:`OutputProblem`). Neither
library is imported here: the adapters read the documented attributes of the objects.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np

from ..._errors import UsageError
from ._calls import DEFAULT_TIMEOUT, check_timeout


@dataclass(frozen=True)
class RetrievedItem:
    """One retrieved item: a span (``doc``, ``start``, ``end``) or a chunk id (``chunk``).

    ``text`` is the passage the pipeline itself holds for a span (LangChain's
    ``page_content``, a node's text); the run checks it against the corpus at those offsets.
    """

    doc: str | None = None
    start: int | None = None
    end: int | None = None
    chunk: str | None = None
    score: float | None = None
    text: str | None = None

    @property
    def key(self) -> Any:
        return self.chunk if self.chunk is not None else (self.doc, self.start, self.end)


class OutputProblem(Exception):
    """What the pipeline returned for one question breaks the adapter's contract."""


def _int(v: Any) -> TypeGuard[int]:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _score(v: Any, where: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise OutputProblem(f"{where}: score must be a number, got {v!r}")
    if not math.isfinite(float(v)):
        raise OutputProblem(f"{where}: score must be finite, got {v!r}")
    return float(v)


#: items read from one answer of a pipeline (a generator that never ends is cut here)
MAX_ITEMS = 100_000


def settle(output: Any) -> Any:
    """A pipeline's answer with any lazy iterable read into a list (at most one item past
    :data:`MAX_ITEMS`): done inside the timed call, so an endless generator times out there
    instead of hanging the run."""
    if isinstance(output, (str, bytes, Mapping, list, tuple)) or not isinstance(output, Iterable):
        return output
    return list(itertools.islice(output, MAX_ITEMS + 1))


def _items(output: Any, what: str) -> list[Any]:
    if isinstance(output, (str, bytes, Mapping)) or not isinstance(output, Iterable):
        raise OutputProblem(f"expected a list of {what}, got {type(output).__name__}")
    items = list(itertools.islice(output, MAX_ITEMS + 1))
    if len(items) > MAX_ITEMS:
        raise OutputProblem(f"more than {MAX_ITEMS} {what} for one question")
    return items


class Pipeline:
    """A user's retrieval pipeline: ``call`` runs it on one question, ``hits`` reads its output.

    ``kind`` is ``python``, ``langchain`` or ``llamaindex``; ``name`` labels it in messages
    (the experiment file's target, or the object's type); ``timeout`` bounds each call in
    seconds (None: no limit; see :mod:`._calls`)."""

    kind = "python"

    def __init__(self, name: str, timeout: float | None = DEFAULT_TIMEOUT) -> None:
        self.name = name
        self.timeout = check_timeout(timeout)

    @property
    def label(self) -> str:
        """``langchain(mypkg.rag:make_retriever)``: what messages and tables call it."""
        return f"{self.kind}({self.name})"

    def call(self, question: str) -> Any:  # pragma: no cover - every adapter overrides it
        raise NotImplementedError

    def hits(
        self, output: Any
    ) -> list[RetrievedItem]:  # pragma: no cover - every adapter overrides it
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class CallablePipeline(Pipeline):
    """``fn(question)`` returning spans or chunk ids (see the module docstring)."""

    kind = "python"

    def __init__(
        self,
        fn: Callable[[str], Any],
        *,
        name: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        if not callable(fn):
            raise UsageError(f"a python pipeline must be a callable, got {type(fn).__name__}")
        super().__init__(name or str(getattr(fn, "__qualname__", type(fn).__name__)), timeout)
        self.fn = fn

    def call(self, question: str) -> Any:
        return self.fn(question)

    def hits(self, output: Any) -> list[RetrievedItem]:
        return [self._hit(item, i) for i, item in enumerate(_items(output, "hits"), start=1)]

    @staticmethod
    def _hit(item: Any, i: int) -> RetrievedItem:
        where = f"item {i}"
        if isinstance(item, Mapping):
            if "chunk" in item:
                item = (item["chunk"], item.get("score"))
            elif {"doc", "start", "end"} <= set(item):
                item = (item["doc"], item["start"], item["end"], item.get("score"))
            else:
                raise OutputProblem(
                    f"{where}: a mapping needs the keys doc, start, end (a span) or chunk "
                    f"(a chunk id), got {sorted(map(str, item))}"
                )
        if isinstance(item, str):
            item = (item, None)
        if not isinstance(item, (tuple, list)) or len(item) not in (2, 3, 4):
            raise OutputProblem(
                f"{where}: expected (doc, start, end[, score]) or a chunk id, got {item!r}"
            )
        if len(item) == 2:
            chunk, score = item
            if not isinstance(chunk, str) or not chunk:
                raise OutputProblem(
                    f"{where}: a chunk id must be a non-empty string, got {chunk!r}"
                )
            return RetrievedItem(chunk=chunk, score=_score(score, where))
        doc, start, end = item[0], item[1], item[2]
        if not isinstance(doc, str) or not doc:
            raise OutputProblem(f"{where}: the document id must be a non-empty string, got {doc!r}")
        if not _int(start) or not _int(end):
            raise OutputProblem(
                f"{where}: start and end must be integers, got ({start!r}, {end!r})"
            )
        score = _score(item[3], where) if len(item) == 4 else None
        return RetrievedItem(doc=doc, start=int(start), end=int(end), score=score)


class LangChainPipeline(Pipeline):
    """A LangChain retriever: ``retriever.invoke(question)`` returns ``Document`` objects whose
    metadata holds the document id (``doc_key``) and ``start_index`` (see the module
    docstring). Documents carry no score: the list order is the ranking."""

    kind = "langchain"

    def __init__(
        self,
        retriever: Any,
        *,
        doc_key: str = "source",
        name: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        if not callable(getattr(retriever, "invoke", None)):
            raise UsageError(
                "a langchain pipeline must be a LangChain retriever (an object with "
                f"invoke(question) -> documents, e.g. vectorstore.as_retriever()), got "
                f"{type(retriever).__name__}"
            )
        super().__init__(name or type(retriever).__name__, timeout)
        self.retriever = retriever
        self.doc_key = doc_key

    def call(self, question: str) -> Any:
        return self.retriever.invoke(question)

    def hits(self, output: Any) -> list[RetrievedItem]:
        out = []
        for i, d in enumerate(_items(output, "LangChain Documents"), start=1):
            where = f"document {i}"
            content, meta = getattr(d, "page_content", None), getattr(d, "metadata", None)
            if not isinstance(content, str) or not isinstance(meta, Mapping):
                raise OutputProblem(
                    f"{where}: expected a LangChain Document (page_content and metadata), got "
                    f"{type(d).__name__}"
                )
            doc = meta.get(self.doc_key)
            if not isinstance(doc, str) or not doc:
                raise OutputProblem(
                    f"{where}: metadata[{self.doc_key!r}] is {doc!r}; it must hold the corpus "
                    f"document id (set doc_key = the metadata key that does; metadata keys: "
                    f"{', '.join(sorted(map(str, meta))) or 'none'})"
                )
            start = meta.get("start_index")
            if not _int(start) or start < 0:
                raise OutputProblem(
                    f"{where} (document {doc!r}): metadata['start_index'] is {start!r}; create "
                    "the splitter with add_start_index=True (LangChain records -1 for a chunk "
                    "it could not locate)"
                )
            start = int(start)
            out.append(RetrievedItem(doc=doc, start=start, end=start + len(content), text=content))
        return out


class LlamaIndexPipeline(Pipeline):
    """A LlamaIndex retriever: ``retriever.retrieve(question)`` returns ``NodeWithScore``
    objects whose node carries ``ref_doc_id`` and ``start_char_idx``/``end_char_idx`` (see the
    module docstring). A node's score, when every node has one, is kept in the run."""

    kind = "llamaindex"

    def __init__(
        self, retriever: Any, *, name: str | None = None, timeout: float | None = DEFAULT_TIMEOUT
    ) -> None:
        if not callable(getattr(retriever, "retrieve", None)):
            raise UsageError(
                "a llamaindex pipeline must be a LlamaIndex retriever (an object with "
                "retrieve(question) -> nodes, e.g. index.as_retriever()), got "
                f"{type(retriever).__name__}"
            )
        super().__init__(name or type(retriever).__name__, timeout)
        self.retriever = retriever

    def call(self, question: str) -> Any:
        return self.retriever.retrieve(question)

    def hits(self, output: Any) -> list[RetrievedItem]:
        out = []
        for i, scored in enumerate(_items(output, "LlamaIndex nodes"), start=1):
            where = f"node {i}"
            node = getattr(scored, "node", scored)
            doc = getattr(node, "ref_doc_id", None)
            if not isinstance(doc, str) or not doc:
                raise OutputProblem(
                    f"{where}: ref_doc_id is {doc!r}; build the index from Documents whose id_ "
                    "is the corpus document id, split into nodes (their ref_doc_id is that id)"
                )
            start = getattr(node, "start_char_idx", None)
            end = getattr(node, "end_char_idx", None)
            if not _int(start) or not _int(end):
                raise OutputProblem(
                    f"{where} (document {doc!r}): start_char_idx/end_char_idx are "
                    f"{start!r}/{end!r}; use a node parser that records them (SentenceSplitter, "
                    "TokenTextSplitter)"
                )
            text = getattr(node, "text", None)
            out.append(
                RetrievedItem(
                    doc=doc,
                    start=int(start),
                    end=int(end),
                    score=_score(getattr(scored, "score", None), where),
                    text=text if isinstance(text, str) else None,
                )
            )
        return out


def as_pipeline(obj: Any, *, name: str | None = None) -> Pipeline:
    """``obj`` as a :class:`Pipeline`: a pipeline as is; a LangChain retriever (it has
    ``invoke``), a LlamaIndex retriever (``retrieve``) or a plain callable wrapped."""
    if isinstance(obj, Pipeline):
        return obj
    # a user's subclass of a library's retriever counts: look at every base class's module
    modules = [c.__module__ or "" for c in type(obj).__mro__]
    if callable(getattr(obj, "invoke", None)) and any(m.startswith("langchain") for m in modules):
        return LangChainPipeline(obj, name=name)
    if callable(getattr(obj, "retrieve", None)) and any(
        m.startswith("llama_index") for m in modules
    ):
        return LlamaIndexPipeline(obj, name=name)
    if callable(obj):
        return CallablePipeline(obj, name=name)
    raise UsageError(
        f"cannot run {type(obj).__name__} as a pipeline: give a callable question -> hits, a "
        "LangChain retriever or a LlamaIndex retriever"
    )
