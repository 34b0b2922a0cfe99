"""The golden set itself: :class:`GoldenSet`, reading (``load_golden``), checking
(``validate_golden``), writing (``write_golden``), the split rule and the summary counts.

``ragmeter.data.golden`` is the public face of this module, of versions (``_freeze``) and of
relocation; the class lives here so that relocation and freezing can use it without importing
each other (see ``golden``'s docstring for the file format).
"""

from __future__ import annotations

import hashlib
import os
import statistics
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._errors import (
    InputError,
    NotFoundError,
    Problem,
    RagmeterError,
    UsageError,
    ValidationError,
)
from ._quotes import QuoteResolution, resolve_quotes, warn_normalised
from ._schema import Question
from ._validate import check_questions
from ._version import (
    documents_digest,
    labels_digest,
    lock_path_for,
    read_lock,
    short_version,
    version_digest,
)
from .corpus import Corpus, load_corpus, write_lines

if TYPE_CHECKING:  # pragma: no cover - pyarrow loads only when qrels are asked for
    from ..io import Qrels

__all__ = [
    "HELDOUT_SHARE",
    "ORIGINS",
    "SMALL_SLICE",
    "GoldenSet",
    "assign_split",
    "golden_stats",
    "golden_version_of",
    "load_golden",
    "validate_golden",
    "write_golden",
]

#: share of questions a loader puts in the held-out split by default.
HELDOUT_SHARE = 0.2
#: slices smaller than this give a direction, not proof (the seed's rule of thumb).
SMALL_SLICE = 10
#: how a question was made (``Question.origin``), in the order stats list them; "unknown":
#: a question whose file records none
ORIGINS = ("logged", "written", "drafted", "unknown")


def assign_split(question_id: str, heldout: float = HELDOUT_SHARE) -> Literal["tune", "heldout"]:
    """Deterministic split of a question id: ``"heldout"`` for about ``heldout`` of all ids.

    The first 8 bytes of sha256(question id as UTF-8), read as a big-endian integer and divided
    by 2**64, give a number u in [0, 1); the question is held out when u < ``heldout``. The
    result depends only on the id, so it is the same on every machine and run.
    """
    digest = hashlib.sha256(question_id.encode("utf-8")).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    return "heldout" if u < heldout else "tune"


class GoldenSet:
    """An ordered, read-only set of golden questions with unique ids.

    ``corpus`` (optional) is the corpus the spans point into; it is needed for :attr:`version`
    unless a lock file beside the golden file records it (see :attr:`version`).
    """

    def __init__(
        self,
        questions: Iterable[Question],
        *,
        corpus: Corpus | None = None,
        source: str | None = None,
        lines: Sequence[int] | None = None,
    ) -> None:
        self.questions: tuple[Question, ...] = tuple(questions)
        self.corpus = corpus
        self.source = source
        self.lines: tuple[int, ...] | None = None if lines is None else tuple(lines)
        if self.lines is not None and len(self.lines) != len(self.questions):
            raise UsageError("lines must give one line number per question")
        by_id: dict[str, Question] = {}
        for i, q in enumerate(self.questions):
            if q.id in by_id:
                raise InputError(
                    f"duplicate question id {q.id!r}",
                    path=source if self.lines is not None else None,
                    line=self.line_of(i),
                    field="id",
                )
            by_id[q.id] = q
        self.by_id: dict[str, Question] = by_id

    # --- collection protocol -----------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.questions)

    def __iter__(self) -> Iterator[Question]:
        return iter(self.questions)

    def __getitem__(self, question_id: str) -> Question:
        try:
            return self.by_id[question_id]
        except KeyError:
            raise NotFoundError(f"question {question_id!r} is not in the golden set") from None

    def __contains__(self, question_id: object) -> bool:
        return question_id in self.by_id

    def __repr__(self) -> str:
        where = f", source={self.source!r}" if self.source else ""
        return f"GoldenSet({len(self)} questions{where})"

    def line_of(self, index: int) -> int:
        """The file line of question ``index`` (``index + 1`` for a set built in memory)."""
        return self.lines[index] if self.lines is not None else index + 1

    # --- views -------------------------------------------------------------------------------
    @property
    def ids(self) -> list[str]:
        return list(self.by_id)

    @cached_property
    def slices(self) -> dict[str, tuple[str, ...]]:
        """question id → its slice names (the ``slices=`` argument of ``evaluate``)."""
        return {q.id: tuple(q.slices) for q in self.questions}

    @cached_property
    def splits(self) -> dict[str, str]:
        """question id → ``"tune"`` or ``"heldout"`` (the ``splits=`` argument of ``evaluate``)."""
        return {q.id: q.split for q in self.questions}

    def slice_sizes(self) -> dict[str, int]:
        """slice name → number of questions in it, largest first (ties by name)."""
        counts = Counter(name for q in self.questions for name in dict.fromkeys(q.slices))
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def select(self, *, split: str | None = None, slice: str | None = None) -> GoldenSet:
        """The questions of one split and/or one slice, as a new golden set."""
        if split not in (None, "tune", "heldout"):
            raise UsageError(f"split must be 'tune' or 'heldout', got {split!r}")
        keep = [
            i
            for i, q in enumerate(self.questions)
            if (split is None or q.split == split) and (slice is None or slice in q.slices)
        ]
        return GoldenSet(
            [self.questions[i] for i in keep],
            corpus=self.corpus,
            source=self.source,
            lines=[self.line_of(i) for i in keep],
        )

    @property
    def doc_ids(self) -> list[str]:
        """The ids of the documents the evidence points at, sorted."""
        return sorted({ev.doc for q in self.questions for ev in q.evidence})

    def with_corpus(self, corpus: Corpus | None) -> GoldenSet:
        return GoldenSet(self.questions, corpus=corpus, source=self.source, lines=self.lines)

    def with_questions(self, questions: Iterable[Question]) -> GoldenSet:
        """An edited copy: each question replaced one for one; source and lines are kept."""
        questions = tuple(questions)
        if len(questions) != len(self.questions):
            raise UsageError(
                "with_questions replaces questions one for one; got "
                f"{len(questions)} for {len(self.questions)}"
            )
        return GoldenSet(questions, corpus=self.corpus, source=self.source, lines=self.lines)

    # --- versions ----------------------------------------------------------------------------
    @cached_property
    def labels_digest(self) -> str:
        """sha256 of the questions and labels alone (``L`` in docs/formats.md)."""
        return labels_digest(self.questions)

    def version_digest(self, corpus: Corpus | None = None) -> str:
        """The full version digest ``V`` over labels and referenced document contents."""
        corpus = corpus if corpus is not None else self.corpus
        if corpus is None:
            raise UsageError(
                "the golden-set version covers the documents the spans point at: "
                "attach the corpus (load_golden(path, corpus=...))"
            )
        missing = [d for d in self.doc_ids if d not in corpus]
        if missing:
            raise InputError(
                f"{len(missing)} referenced document(s) are not in the corpus, "
                f"e.g. {missing[0]!r}; run `ragmeter golden validate`",
                path=self.source,
            )
        hashes = {d: corpus.content_hash(d) for d in self.doc_ids}
        return version_digest(self.labels_digest, documents_digest(hashes))

    @cached_property
    def version(self) -> str:
        """Printable version, e.g. ``g-1a2b3c4d5e6f`` (docs/formats.md defines it).

        Computed from the attached corpus. Without a corpus, the version recorded by
        ``ragmeter golden freeze`` in the lock file beside the golden file is used when the
        labels still match it; otherwise this raises UsageError.
        """
        if self.corpus is not None:
            return short_version(self.version_digest())
        if self.source is not None:
            lock_file = lock_path_for(self.source)
            if lock_file.exists():
                lock = read_lock(lock_file)
                if lock.get("labels_sha256") == self.labels_digest:
                    return str(lock["version"])
                raise UsageError(
                    f"{self.source} changed since it was frozen ({lock_file}); "
                    "pass the corpus to compute its version, or re-freeze it"
                )
        raise UsageError(
            "the golden-set version covers the documents the spans point at: "
            "load the golden set with its corpus (or freeze it first)"
        )

    # --- conversions -------------------------------------------------------------------------
    def doc_qrels(self) -> Qrels:
        """Document-level qrels: one row per (question, document) with the highest span grade."""
        import numpy as np
        import pyarrow as pa

        from ..io import Qrels

        best: dict[tuple[str, str], int] = {}
        for q in self.questions:
            for ev in q.evidence:
                key = (q.id, ev.doc)
                best[key] = max(best.get(key, 0), ev.grade)
        qids = [k[0] for k in best]
        docs = [k[1] for k in best]
        return Qrels(
            pa.array(qids, pa.string()),
            pa.array(docs, pa.string()),
            np.fromiter(best.values(), dtype=np.int64, count=len(best)),
            source=self.source or "<golden>",
        )

    def stats(self) -> dict[str, Any]:
        return golden_stats(self)


def golden_version_of(golden: object) -> str | None:
    """``golden``'s version (:attr:`GoldenSet.version`), or None when it has none or it cannot
    be computed (no corpus and not frozen, changed since frozen, documents missing): the
    version the evaluations, answer reports and experiment results record."""
    try:
        v = getattr(golden, "version", None)
    except RagmeterError:
        return None
    return None if v is None else str(v)


def load_golden(
    path: str | os.PathLike[str],
    corpus: Corpus | str | os.PathLike[str] | None = None,
    *,
    quotes_from: Corpus | None = None,
) -> GoldenSet:
    """Read a golden set; with a corpus, also check every span against it.

    Raises :class:`ValidationError` listing every problem (schema errors, duplicate ids, empty
    or overlapping spans, and with a corpus: unknown documents, spans out of bounds, span text
    that no longer matches) with file, line and field.

    Spans written as quotes (``{"quote": ...}``, docs/formats.md) are resolved against the
    corpus, or against ``quotes_from`` for a set read without one (its offsets not checked).
    """
    path = Path(path)
    if corpus is not None and not isinstance(corpus, Corpus):
        corpus = load_corpus(corpus)
    read = resolve_quotes(path, corpus, quotes_from=quotes_from)
    questions, lines, problems = read.questions, read.lines, read.problems
    if problems:
        raise ValidationError(problems, what=f"golden set {path}")
    if not questions:
        raise InputError("the golden set has no questions", path=path)
    warn_normalised(read.quotes, path)  # spans written as quotes, found only loosely
    return GoldenSet(questions, corpus=corpus, source=str(path), lines=lines)


def _read(path: Path, corpus: Corpus | None) -> QuoteResolution:
    """The questions, their lines and every problem; spans written as quotes are resolved
    against ``corpus`` (``_quotes``)."""
    return resolve_quotes(path, corpus)


def validate_golden(
    golden: GoldenSet | str | os.PathLike[str],
    corpus: Corpus | str | os.PathLike[str] | None = None,
) -> list[Problem]:
    """Every problem of a golden set (a path or a loaded set), without raising.

    Given a path, schema errors of bad lines are included and the good lines are still checked.
    ``corpus`` defaults to the one attached to the golden set.
    """
    if corpus is not None and not isinstance(corpus, Corpus):
        corpus = load_corpus(corpus)
    if isinstance(golden, GoldenSet):
        corpus = corpus if corpus is not None else golden.corpus
        return check_questions(golden.questions, golden.lines, corpus, golden.source)
    return _read(Path(golden), corpus).problems


def write_golden(golden: GoldenSet | Iterable[Question], path: str | os.PathLike[str]) -> Path:
    """Write questions as JSONL, one a line; ``None`` fields (text, required, answer) omitted."""
    lines = (q.model_dump_json(exclude_none=True) for q in golden)
    return write_lines(Path(path), lines)


def golden_stats(golden: GoldenSet) -> dict[str, Any]:
    """Counts a reviewer checks before trusting scores: sizes, spans, grades, slices, splits."""
    spans = [len(q.evidence) for q in golden.questions if q.answerable]
    grades = Counter(ev.grade for q in golden.questions for ev in q.evidence)
    sizes = golden.slice_sizes()
    splits = Counter(q.split for q in golden.questions)
    origins: Counter[str] = Counter(q.origin or "unknown" for q in golden.questions)
    out: dict[str, Any] = {
        "source": golden.source,
        "questions": len(golden),
        "answerable": sum(q.answerable for q in golden.questions),
        "unanswerable": sum(not q.answerable for q in golden.questions),
        "spans": sum(spans),
        "spans_per_question": {
            "min": min(spans, default=0),
            "median": statistics.median(spans) if spans else 0,
            "mean": round(statistics.fmean(spans), 3) if spans else 0,
            "max": max(spans, default=0),
        },
        "required_spans": sum(len(q.required_spans()) for q in golden.questions),
        "grades": {str(g): n for g, n in sorted(grades.items())},
        "slices": sizes,
        "small_slices": [name for name, n in sizes.items() if n < SMALL_SLICE],
        "splits": {"tune": splits.get("tune", 0), "heldout": splits.get("heldout", 0)},
        "origins": {k: origins[k] for k in ORIGINS if origins[k]},
        "documents_referenced": len(golden.doc_ids),
        "labels_sha256": golden.labels_digest,
    }
    out["version"] = golden_version_of(golden)
    return out
