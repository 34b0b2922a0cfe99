"""Ask a user's pipeline every golden question and turn its answers into a scorable run.

The result is exactly what an imported run (``run = "retrieved.jsonl"``,
:mod:`ragmeter.retrieval.byo`) gives: spans become one chunk each
(:func:`ragmeter.chunking.from_ranges`, chunk id ``doc#start-end``) and the run ranks those
chunks, so the span labels score a production pipeline exactly as they score ragmeter's own
retrievers, question by question; chunk ids are scored against the experiment's chunking.

Rules, in the order they apply:

* **errors**: an exception raised by the pipeline on a question is recorded for that question
  (:class:`QuestionError`: type, message, the line of the pipeline's code that raised) and the
  question counts as retrieving nothing; ``on_error="raise"`` stops at the first one instead. A
  call that does not return within the pipeline's ``timeout``, or that calls ``sys.exit()``,
  is such an error too (:mod:`._calls`); Ctrl-C stops the run. A pipeline that fails on every
  question stops the run (nothing would be measured).
* **output**: what the pipeline returns must follow its adapter's contract and point into the
  corpus: a known document, ``0 <= start < end <=`` its length, and the passage text the
  pipeline holds (LangChain's ``page_content``, a node's text) equal to the document's text at
  those offsets. Every violation, each naming the question and the document, is reported at
  once as a :class:`~ragmeter.ValidationError`: a pipeline that reads another version of the
  corpus than the labels cannot be scored on them.
* **ranking**: the order the pipeline returns is the ranking (what its generator would read).
  The run keeps the pipeline's scores when every item has one and they strictly decrease down
  every list; otherwise its scores are ``-rank``, as in an imported run given by rank.
* **duplicates** (the same span twice for one question) keep their first rank; items past
  ``depth`` are dropped. Both are counted in the notes.
"""

from __future__ import annotations

import json
import time
import traceback
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from ..._errors import Problem, UsageError, ValidationError
from ...io import Run
from ...metrics import Evaluation
from .._progress import SILENT, ProgressSink
from ._adapters import OutputProblem, Pipeline, RetrievedItem, as_pipeline, settle
from ._calls import DEFAULT_TIMEOUT, Caller, UserCodeError, describe

#: problems listed before the rest are summarised
MAX_PROBLEMS = 20


@dataclass(frozen=True)
class QuestionError:
    """An exception the pipeline raised on one question (recorded, never hidden)."""

    qid: str
    question: str
    error: str  # "TimeoutError: the vector store did not answer"
    where: str  # "rag.py:42 in retrieve": the last frame of the traceback

    def to_dict(self) -> dict[str, str]:
        return {
            "qid": self.qid,
            "question": self.question,
            "error": self.error,
            "where": self.where,
        }


@dataclass(frozen=True)
class PipelineRun:
    """A pipeline's answers to the golden questions as a run, with what went wrong.

    ``chunking`` holds one chunk per returned span for a spans run, or is the chunking the
    chunk ids belong to; ``errors`` lists each question the pipeline raised on; ``notes`` say
    in words what was counted, dropped or re-ranked."""

    run: Run
    shape: Literal["spans", "chunks"]
    chunking: Any
    label: str
    questions: int
    errors: tuple[QuestionError, ...] = ()
    notes: tuple[str, ...] = ()
    seconds: float = 0.0
    #: seconds per question, in question order (errors included)
    latencies: tuple[float, ...] = field(default=(), repr=False)

    def evaluate(
        self, golden: Any, metrics: Any = None, *, cover: float | None = None
    ) -> Evaluation:
        """The span metrics of this run on ``golden``'s labels (:func:`ragmeter.labels.
        evaluate_spans`, as ``ragmeter run`` scores it), without the evaluator's warning about
        documents with no chunk: a spans run holds only the spans the pipeline returned."""
        from ...labels import DEFAULT_COVER, DEFAULT_METRICS, evaluate_spans

        with warnings.catch_warnings():
            if self.shape == "spans":
                warnings.filterwarnings("ignore", message=".*with no chunk in chunking")
            return evaluate_spans(
                golden,
                self.chunking,
                self.run,
                DEFAULT_METRICS if metrics is None else metrics,
                cover=DEFAULT_COVER if cover is None else cover,
                run_name=self.run.name,
            )

    def write(self, folder: str | Path) -> list[Path]:
        """``retrieved.jsonl`` (an imported-run file: ``run = ".../retrieved.jsonl"`` scores it
        again without asking the pipeline) and ``errors.jsonl`` (one line per question the
        pipeline raised on; empty when none) in ``folder``."""
        from ...io import write_text_lines
        from ..byo import write_byo_run

        folder = Path(folder)
        retrieved = write_byo_run(
            self.run,
            folder / "retrieved.jsonl",
            chunking=self.chunking if self.shape == "spans" else None,
        )
        errors = write_text_lines(
            folder / "errors.jsonl",
            (json.dumps(e.to_dict(), ensure_ascii=False) for e in self.errors),
        )
        return [retrieved, errors]


def _questions(golden: Any) -> list[tuple[str, str]]:
    if isinstance(golden, Mapping):
        return [(str(q), str(text)) for q, text in golden.items()]
    return [(str(q.id), q.question) for q in golden]


def _asked(p: Pipeline, question: str) -> Any:
    """The pipeline's answer to one question, lazy iterables read (in the timed call)."""
    return settle(p.call(question))


def _where(exc: BaseException) -> str:
    if isinstance(exc, UserCodeError):  # sys.exit(): where it was called; a timeout: nowhere
        if exc.__cause__ is None:
            return ""
        exc = exc.__cause__
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    f = frames[-1]
    return f"{Path(f.filename).name}:{f.lineno} in {f.name}"


def _snippet(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


class _Collector:
    """Checks each question's hits against the corpus (or chunking) and keeps the good ones."""

    def __init__(self, corpus: Any, chunking: Any, depth: int | None, label: str) -> None:
        from ...chunking import documents_of

        self.texts = dict(documents_of(corpus)) if corpus is not None else None
        self.chunking = chunking
        self.depth = depth
        self.label = label
        self.shape: str | None = None
        self.problems: list[Problem] = []
        self.kept: dict[str, list[RetrievedItem]] = {}
        self.duplicates = 0
        self.truncated = 0

    def problem(self, qid: str, message: str) -> None:
        self.problems.append(Problem(f"question {qid!r}: {message}", self.label))

    def add(self, qid: str, hits: list[RetrievedItem]) -> None:
        good: dict[Any, RetrievedItem] = {}
        for i, h in enumerate(hits, start=1):
            shape = "chunks" if h.chunk is not None else "spans"
            if self.shape is None:
                self.shape = shape
            elif shape != self.shape:
                self.problem(
                    qid,
                    f"item {i} is a {'chunk id' if shape == 'chunks' else 'span'} but earlier "
                    f"answers were {self.shape}; return one kind for every question",
                )
                continue
            if (h.chunk is None and self._bad_span(qid, i, h)) or (
                h.chunk is not None and self._bad_chunk(qid, h)
            ):
                continue
            if h.key in good:
                self.duplicates += 1
                continue
            good[h.key] = h
        kept = list(good.values())
        if self.depth is not None and len(kept) > self.depth:
            self.truncated += 1
            kept = kept[: self.depth]
        self.kept[qid] = kept

    def _bad_span(self, qid: str, i: int, h: RetrievedItem) -> bool:
        assert h.doc is not None and h.start is not None and h.end is not None
        if self.texts is None:
            raise UsageError("a pipeline that returns spans needs the corpus they point into")
        text = self.texts.get(h.doc)
        if text is None:
            self.problem(qid, f"item {i}: document {h.doc!r} is not in the corpus")
            return True
        if h.start < 0 or h.end <= h.start or h.end > len(text):
            self.problem(
                qid,
                f"item {i}: span {h.start}-{h.end} is not inside document {h.doc!r} "
                f"(length {len(text)}) or is empty",
            )
            return True
        if h.text is not None and text[h.start : h.end] != h.text:
            self.problem(
                qid,
                f"item {i}: the passage the pipeline returned for document {h.doc!r} at "
                f"{h.start}-{h.end} ({_snippet(h.text)}) is not the document's text there "
                f"({_snippet(text[h.start : h.end])}): the pipeline indexed other text than "
                "the corpus (another version of it, or text added to the chunks)",
            )
            return True
        return False

    def _bad_chunk(self, qid: str, h: RetrievedItem) -> bool:
        if self.chunking is None:
            if not any("need the chunking" in p.message for p in self.problems):
                self.problem(
                    qid,
                    "the pipeline returned chunk ids, which need the chunking they are ids of: "
                    "set chunker or chunks for this variant (or return (doc, start, end) spans)",
                )
            return True
        if self.chunking.get(h.chunk) is None:
            self.problem(qid, f"chunk {h.chunk!r} is not a chunk of '{self.chunking.name}'")
            return True
        return False


def run_pipeline(
    pipeline: Any,
    golden: Any,
    corpus: Any = None,
    *,
    chunking: Any = None,
    depth: int | None = None,
    on_error: Literal["record", "raise"] = "record",
    name: str | None = None,
    tokenizer: Any = None,
    progress: ProgressSink = SILENT,
) -> PipelineRun:
    """Ask ``pipeline`` every question of ``golden`` and build the run (module docstring).

    ``pipeline`` is a :class:`Pipeline` or anything :func:`as_pipeline` wraps (a callable, a
    LangChain or LlamaIndex retriever); ``golden`` a GoldenSet (or Questions, or ``{qid:
    question}``); ``corpus`` the corpus spans point into; ``chunking`` the chunking chunk ids
    belong to; ``depth`` the most items kept per question; ``name`` the run's name;
    ``tokenizer`` counts the tokens of returned spans (the experiment's, for budgets).
    """
    if on_error not in ("record", "raise"):
        raise UsageError(f"on_error must be 'record' or 'raise', got {on_error!r}")
    p: Pipeline = as_pipeline(pipeline)
    questions = _questions(golden)
    if not questions:
        raise UsageError("no questions to ask the pipeline")
    collector = _Collector(corpus, chunking, depth, p.label)
    errors: list[QuestionError] = []
    latencies: list[float] = []
    # the user's code runs under the pipeline's timeout; sys.exit() in it is an error (._calls)
    caller = Caller(p.label, getattr(p, "timeout", DEFAULT_TIMEOUT))
    started = time.perf_counter()
    with progress.step(f"ask {p.label} {len(questions)} questions", len(questions)) as advance:
        for qid, text in questions:
            t = time.perf_counter()
            try:
                output = caller(_asked, p, text)
            except Exception as exc:  # the user's code: recorded per question, never hidden
                latencies.append(time.perf_counter() - t)
                error = describe(exc)
                if on_error == "raise":
                    where = _where(exc)
                    raise UsageError(
                        f"{p.label} raised on question {qid!r}: {error}"
                        f"{f' ({where})' if where else ''}; "
                        'set on_error = "record" to record such errors and go on'
                    ) from exc
                errors.append(QuestionError(qid, text, error, _where(exc)))
                advance(1)
                continue
            latencies.append(time.perf_counter() - t)
            try:
                collector.add(qid, p.hits(output))
            except OutputProblem as bad:
                collector.problem(qid, str(bad))
            except Exception as exc:  # reading the user's objects ran their code, which failed
                collector.problem(qid, f"reading what the pipeline returned raised {describe(exc)}")
            advance(1)
    seconds = time.perf_counter() - started
    if collector.problems:
        shown = collector.problems[:MAX_PROBLEMS]
        if len(collector.problems) > MAX_PROBLEMS:
            more = len(collector.problems) - MAX_PROBLEMS
            shown.append(Problem(f"({more} more problems not listed)", p.label))
        raise ValidationError(shown, what=f"the output of {p.label}")
    if len(errors) == len(questions):
        first = errors[0]
        raise UsageError(
            f"{p.label} raised an error on every one of the {len(questions)} questions, so "
            f"there is nothing to score (first: {first.qid}: {first.error}"
            f"{f' at {first.where}' if first.where else ''})"
        )
    shape: Literal["spans", "chunks"] = "chunks" if collector.shape == "chunks" else "spans"
    run, notes = _build_run(collector.kept, shape, name or p.name)
    run_chunking = chunking
    if shape == "spans":
        from ...chunking import from_ranges

        spans = [_span(h) for hits in collector.kept.values() for h in hits]
        run_chunking = from_ranges(
            corpus, list(dict.fromkeys(spans)), name=f"spans:{p.kind}", tokenizer=tokenizer
        )
    notes = [*_counts(errors, len(questions), collector, depth), *notes]
    return PipelineRun(
        run=run,
        shape=shape,
        chunking=run_chunking,
        label=p.label,
        questions=len(questions),
        errors=tuple(errors),
        notes=tuple(notes),
        seconds=seconds,
        latencies=tuple(latencies),
    )


def _counts(
    errors: list[QuestionError], n: int, collector: _Collector, depth: int | None
) -> list[str]:
    notes = []
    if errors:
        first = errors[0]
        notes.append(
            f"the pipeline raised an error on {len(errors)} of {n} questions; they count as "
            f"retrieving nothing (first: {first.qid}: {first.error})"
        )
    if collector.duplicates:
        notes.append(
            f"{collector.duplicates} repeated item(s) in the pipeline's lists were dropped "
            "(each kept at its first rank)"
        )
    if collector.truncated:
        notes.append(
            f"{collector.truncated} question(s) got more than depth = {depth} items; ranks "
            "past the depth were dropped"
        )
    return notes


def _build_run(
    kept: dict[str, list[RetrievedItem]], shape: str, name: str
) -> tuple[Run, list[str]]:
    """The run: the pipeline's order is the ranking; its scores are kept when they agree."""
    from ...chunking import chunk_id

    qids: list[str] = []
    items: list[str] = []
    ranks: list[int] = []
    scores: list[float | None] = []
    for qid, hits in kept.items():
        for rank, h in enumerate(hits, start=1):
            qids.append(qid)
            items.append(h.chunk if h.chunk is not None else chunk_id(*_span(h)))
            ranks.append(rank)
            scores.append(h.score)
    notes: list[str] = []
    given = [s for s in scores if s is not None]
    use_scores = bool(scores) and len(given) == len(scores) and _descending(kept)
    if given and not use_scores:
        notes.append(
            "the pipeline's scores are missing for some items or do not strictly decrease "
            "down its lists (ties, or distances where lower is better): the run ranks by the "
            "pipeline's order, with score = -rank"
        )
    values = np.asarray(scores if use_scores else [-r for r in ranks], dtype=np.float64)
    run = Run(
        qid=pa.array(qids, type=pa.string()),
        doc=pa.array(items, type=pa.string()),
        score=values,
        name=name,
    )
    return run, notes


def _span(h: RetrievedItem) -> tuple[str, int, int]:
    assert h.doc is not None and h.start is not None and h.end is not None
    return h.doc, h.start, h.end


def _descending(kept: dict[str, list[RetrievedItem]]) -> bool:
    """Every list's scores strictly decrease (so ranking by score keeps the pipeline's order;
    compared as 32-bit floats, as the metric engine compares them)."""
    for hits in kept.values():
        s = np.asarray([h.score for h in hits], dtype=np.float32)
        if s.size > 1 and not bool(np.all(s[1:] < s[:-1])):
            return False
    return True
