"""Bring your own run: score a production retriever's output on the same span labels.

Two JSONL shapes, one record a line, every line of a file in the same shape:

* chunk ids: ``{"qid": "q1", "chunk": "fares.md#0-812", "score": 12.5}``; the chunk ids must
  be chunks of the chunking the run was made on (a chunker name or a chunk file);
* spans: ``{"qid": "q1", "doc": "fares.md", "start": 0, "end": 812, "score": 12.5}``; character
  offsets into the corpus document (end exclusive), for systems that return passages, not
  ids.

Each record gives ``score`` (higher = better) or ``rank`` (1 = best; read as score = -rank);
a file uses one or the other. A spans run is scored by treating every distinct returned span
as a chunk of its own (:func:`ragmeter.chunking.from_ranges`): a span finds a labelled
evidence span exactly as a chunk with the same offsets would, so a spans run scores
identically to the same run expressed as ids of chunks with those offsets. Chunk-level metrics
whose ideal ranking needs every chunk of the corpus (nDCG) are not defined for a spans run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeGuard

import numpy as np
import pyarrow as pa

from .._errors import InputError, Problem, ValidationError
from ..io import Run

Shape = Literal["chunks", "spans"]


@dataclass(frozen=True)
class ImportedRun:
    """A run read from JSONL; for a spans run, ``chunking`` holds one chunk per returned span."""

    run: Run
    shape: Shape
    chunking: Any = None  # ragmeter.chunking.Chunking for spans runs
    source: str = ""


def _is_int(v: Any) -> TypeGuard[int]:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)


class _Rows:
    """Checks records one at a time against each other (one shape and one of score/rank per
    file, no repeated item or rank in a query) and keeps the good ones."""

    def __init__(self) -> None:
        self.shape: Shape | None = None
        self.scoring: str | None = None
        self.qids: list[str] = []
        self.items: list[Any] = []
        self.scores: list[float] = []
        self.lines: list[int] = []
        self.seen: dict[tuple[str, Any], int] = {}
        self.ranks: dict[tuple[str, float], int] = {}

    def add(self, number: int, obj: dict[str, Any]) -> None:
        """Keep the record; :class:`_Bad` names its first problem."""
        this: Shape = "chunks" if "chunk" in obj else "spans"
        what = "chunk" if this == "chunks" else "doc"
        if self.shape is None:
            self.shape = this
        elif this != self.shape:
            raise _Bad(
                f"this line is a {this} record but the file started with {self.shape} "
                "records; use one shape per file",
                what,
            )
        qid, item, kind, value = _record(obj, this)
        if self.scoring is None:
            self.scoring = kind
        elif kind != self.scoring:
            raise _Bad(
                f"this line gives {kind} but earlier lines give {self.scoring}; use one per file",
                kind,
            )
        score = float(value) if kind == "score" else -float(value)
        if (qid, item) in self.seen:
            raise _Bad(
                f"query {qid!r} lists this {'chunk' if this == 'chunks' else 'span'} twice "
                f"(first on line {self.seen[(qid, item)]})",
                what,
            )
        if kind == "rank" and (qid, score) in self.ranks:
            raise _Bad(
                f"query {qid!r} has rank {value} twice (first on line {self.ranks[(qid, score)]})",
                "rank",
            )
        self.seen[(qid, item)] = number
        if kind == "rank":
            self.ranks[(qid, score)] = number
        self.qids.append(qid)
        self.items.append(item)
        self.scores.append(score)
        self.lines.append(number)


class _Bad(Exception):
    """One record's problem: message and field."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.message, self.field = message, field


def _record(obj: dict[str, Any], shape: Shape) -> tuple[str, Any, str, Any]:
    """``(qid, item, "score" | "rank", value)`` of one record; :class:`_Bad` names its problem."""
    expected = (
        {"qid", "chunk", "score", "rank"}
        if shape == "chunks"
        else {"qid", "doc", "start", "end", "score", "rank"}
    )
    extra = sorted(set(obj) - expected)
    if extra:
        raise _Bad(
            f"unknown field(s) {', '.join(extra)}; a {shape} record has "
            f"{', '.join(sorted(expected))}",
            extra[0],
        )
    qid = obj.get("qid")
    if not isinstance(qid, (str, int)) or isinstance(qid, bool) or str(qid) == "":
        raise _Bad("qid must be a non-empty string", "qid")
    item: Any
    if shape == "chunks":
        item = obj.get("chunk")
        if not isinstance(item, str) or not item:
            raise _Bad("chunk must be a non-empty chunk id string", "chunk")
    else:
        doc, start, end = obj.get("doc"), obj.get("start"), obj.get("end")
        if not isinstance(doc, str) or not doc:
            raise _Bad("doc must be a non-empty document id", "doc")
        if not _is_int(start) or not _is_int(end) or int(start) < 0 or int(end) <= int(start):
            bad_start = not _is_int(start) or int(start) < 0
            raise _Bad(
                f"start and end must be integers with 0 <= start < end, got {start!r}, {end!r}",
                "start" if bad_start else "end",
            )
        item = (doc, int(start), int(end))
    if ("score" in obj) == ("rank" in obj):
        raise _Bad("give exactly one of score (higher = better) or rank (1 = best)", "score")
    kind = "score" if "score" in obj else "rank"
    value = obj[kind]
    if kind == "score" and not _is_num(value):
        raise _Bad(f"score must be a finite number, got {value!r}", "score")
    if kind == "rank" and (not _is_int(value) or value < 1):
        raise _Bad(f"rank must be an integer >= 1, got {value!r}", "rank")
    return str(qid), item, kind, value


def read_byo_run(
    path: str | os.PathLike[str],
    *,
    corpus: Any = None,
    chunking: Any = None,
    name: str | None = None,
    tokenizer: Any = None,
) -> ImportedRun:
    """Read a chunk-id or spans JSONL run, checking every line; all problems are reported at once.

    ``chunking`` (for chunk-id runs) checks that every chunk id exists; ``corpus`` (needed for
    spans runs) checks every span lies inside its document and supplies the chunk texts.
    """
    from ..io import iter_jsonl

    path = Path(path)
    where = str(path)
    problems: list[Problem] = []
    rows = _Rows()
    for number, obj in iter_jsonl(path, problems):
        try:
            rows.add(number, obj)
        except _Bad as bad:
            problems.append(Problem(bad.message, where, number, bad.field))
    shape, qids, items, scores, lines = rows.shape, rows.qids, rows.items, rows.scores, rows.lines
    if shape is None and not problems:
        raise InputError("the run file has no records", path=path)

    built_chunking = None
    if shape == "spans":
        if corpus is None:
            if not problems:
                raise InputError("a spans run needs the corpus its offsets point into", path=path)
        else:
            for n, (doc, start, end) in zip(lines, items, strict=True):
                if doc not in corpus:
                    problems.append(
                        Problem(f"document {doc!r} is not in the corpus", where, n, "doc")
                    )
                elif end > len(_doc_text(corpus, doc)):
                    problems.append(
                        Problem(
                            f"span {start}:{end} runs past the end of document "
                            f"{doc!r} (length {len(_doc_text(corpus, doc))})",
                            where,
                            n,
                            "end",
                        )
                    )
            problems.sort(key=lambda p: p.line or 0)
            if not problems:
                from ..chunking import from_ranges

                built_chunking = from_ranges(
                    corpus,
                    list(dict.fromkeys(items)),
                    name=f"spans:{path.name}",
                    tokenizer=tokenizer,
                )
    if not problems and shape == "chunks" and chunking is not None:
        pos = chunking.index_of(items)
        for n, item, p in zip(lines, items, pos.tolist(), strict=True):
            if p < 0:
                problems.append(
                    Problem(
                        f"chunk {item!r} is not a chunk of '{chunking.name}'", where, n, "chunk"
                    )
                )
                if len(problems) >= 20:
                    problems.append(Problem("(further unknown chunk ids not listed)", where))
                    break
    if problems:
        raise ValidationError(problems, what=f"run {where}")
    from ..chunking import chunk_id

    docs = items if shape == "chunks" else [chunk_id(*it) for it in items]
    run = Run(
        qid=pa.array(qids, type=pa.string()),
        doc=pa.array(docs, type=pa.string()),
        score=np.asarray(scores, dtype=np.float64),
        name=name or path.stem,
    )
    return ImportedRun(run=run, shape=shape or "chunks", chunking=built_chunking, source=where)


def _doc_text(corpus: Any, doc: str) -> str:
    d = corpus[doc]
    return d if isinstance(d, str) else d.text


def write_byo_run(run: Run, path: str | os.PathLike[str], *, chunking: Any = None) -> Path:
    """Write a run as JSONL: chunk-id records, or span records when ``chunking`` is given."""
    import json

    from ..io import write_text_lines

    def lines() -> Iterator[str]:
        rows = zip(run.qid.to_pylist(), run.doc.to_pylist(), run.score.tolist(), strict=True)
        for qid, item, score in rows:
            if chunking is None:
                rec: dict[str, Any] = {"qid": qid, "chunk": item, "score": score}
            else:
                c = chunking.get(item)
                if c is None:
                    raise InputError(f"chunk {item!r} is not a chunk of '{chunking.name}'")
                rec = {"qid": qid, "doc": c.doc, "start": c.start, "end": c.end, "score": score}
            yield json.dumps(rec, ensure_ascii=False)

    return write_text_lines(path, lines())
