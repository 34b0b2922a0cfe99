"""The golden-set jobs, each written once: import a BEIR folder or a SQuAD file, validate, freeze
a version (or check it), relocate spans after corpus edits, describe the set, measure two
labellers' agreement, sample logged questions to label and compare the set with the traffic.

``ragmeter golden ...`` (cli/_golden.py, cli/_golden_agree.py, cli/_golden_traffic.py) checks
its options and output paths, calls one function here and renders the record it gets back; the
lab's labelling workbench calls the same functions. Every function takes paths (or loaded
objects) and returns the records of :mod:`ragmeter.data` (or a small record around them);
none prints, asks or exits: the questions an interface asks (``freeze`` replacing a lock) come
in as callbacks.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from .._errors import Problem
    from ..data import (
        Corpus,
        FreezeResult,
        FrozenCheck,
        GoldenSet,
        LabelAgreement,
        RelocateReport,
        TrafficComparison,
        TrafficSample,
    )
    from .evaluate import Status

__all__ = [
    "FORMATS",
    "Agreement",
    "Confirm",
    "Imported",
    "Relocated",
    "Validation",
    "agree",
    "check_dict",
    "check_golden",
    "compare_traffic",
    "describe",
    "freeze_dict",
    "freeze_golden",
    "frozen_note",
    "import_files",
    "import_golden",
    "problem_dict",
    "relocate_golden",
    "sample_traffic",
    "validate",
]

PathLike = str | os.PathLike[str]
#: the formats ``golden import`` reads
FORMATS = ("beir", "squad")
#: ``confirm(lock_path, locked_version)``: may ``freeze`` replace the lock recording
#: ``locked_version``? (a terminal asks the user)
Confirm = Callable[[Path, str], bool]


def _corpus(corpus: Corpus | PathLike) -> Corpus:
    from ..data import Corpus, load_corpus

    return corpus if isinstance(corpus, Corpus) else load_corpus(corpus)


def problem_dict(p: Problem) -> dict[str, Any]:
    """One problem as JSON: path, line, field and message."""
    return {"path": p.path, "line": p.line, "field": p.field, "message": p.message}


# -- import -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Imported:
    """What ``golden import`` wrote: both files, their sizes and the golden set's version."""

    corpus_file: Path
    golden_file: Path
    documents: int
    questions: int
    spans: int
    version: str | None


def import_files(out: PathLike) -> tuple[Path, Path]:
    """The corpus and golden files :func:`import_golden` writes into folder ``out``."""
    return Path(out) / "corpus.jsonl", Path(out) / "golden.jsonl"


def import_golden(
    kind: str,
    src: PathLike,
    out: PathLike,
    *,
    split: str = "test",
    status: Status | None = None,
) -> Imported:
    """Convert a BEIR folder (``kind="beir"``, qrels of ``split``) or a SQuAD JSON file
    (``"squad"``) into ``out/corpus.jsonl`` and ``out/golden.jsonl`` (:func:`import_files`).
    ``status(text)`` is shown while the source is read."""
    import contextlib

    from ..data import load_beir, load_squad, write_corpus, write_golden

    if kind not in FORMATS:
        raise UsageError(
            f"unknown golden-set format {kind!r}; expected one of {', '.join(FORMATS)}"
        )
    corpus_file, golden_file = import_files(out)
    shown = status(f"reading {src}") if status is not None else contextlib.nullcontext()
    with shown:
        corpus, golden = load_beir(src, split) if kind == "beir" else load_squad(src)
    write_corpus(corpus, corpus_file)
    write_golden(golden, golden_file)
    stats = golden.stats()
    return Imported(
        corpus_file, golden_file, len(corpus), len(golden), stats["spans"], stats["version"]
    )


# -- validate ---------------------------------------------------------------------------------
def frozen_note(check: FrozenCheck) -> dict[str, Any]:
    """A lock check as ``golden validate --format json`` names it (``frozen``)."""
    return {
        "lock": str(check.lock_path),
        "locked_version": check.locked_version,
        "current_version": check.current_version,
        "ok": check.ok,
        "changes": check.describe(),
    }


@dataclass(frozen=True)
class Validation:
    """Every problem of a golden set; when there is none, its stats (``GoldenSet.stats``) and,
    with a corpus and a lock beside the file, how it compares with the frozen version."""

    golden: Path
    problems: list[Problem]
    stats: dict[str, Any] | None
    frozen: FrozenCheck | None
    corpus_checked: bool

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """``ragmeter golden validate --format json``."""
        if self.stats is None:
            return {"ok": False, "problems": [problem_dict(p) for p in self.problems]}
        s = self.stats
        return {
            "ok": True,
            "problems": [],
            "questions": s["questions"],
            "answerable": s["answerable"],
            "unanswerable": s["unanswerable"],
            "spans": s["spans"],
            "documents_referenced": s["documents_referenced"],
            "version": s["version"],
            "frozen": None if self.frozen is None else frozen_note(self.frozen),
        }


def validate(golden: PathLike, corpus: Corpus | PathLike | None = None) -> Validation:
    """Check every label of ``golden`` (against ``corpus`` when given: without it, document
    checks are skipped); never raises for a problem of the set, lists them all."""
    from ..data import check_frozen, load_golden, lock_path_for, validate_golden

    golden = Path(golden)
    docs = _corpus(corpus) if corpus is not None else None
    problems = validate_golden(golden, docs)
    if problems:
        return Validation(golden, problems, None, None, docs is not None)
    stats = load_golden(golden, docs).stats()
    frozen = None
    if docs is not None and lock_path_for(golden).exists():
        frozen = check_frozen(golden, docs)
    return Validation(golden, [], stats, frozen, docs is not None)


# -- freeze -----------------------------------------------------------------------------------
def check_golden(golden: PathLike, corpus: Corpus | PathLike) -> FrozenCheck:
    """What changed in ``golden`` and the documents it points at since it was frozen."""
    from ..data import check_frozen

    return check_frozen(golden, _corpus(corpus))


def check_dict(check: FrozenCheck) -> dict[str, Any]:
    """``ragmeter golden freeze --check --format json``: :func:`frozen_note`'s fields, the
    verdict second."""
    note = frozen_note(check)
    order = ("lock", "ok", "locked_version", "current_version", "changes")
    return {k: note[k] for k in order}


def freeze_golden(
    golden: PathLike,
    corpus: Corpus | PathLike,
    *,
    force: bool = False,
    confirm: Confirm | None = None,
) -> FreezeResult | None:
    """Record the golden set's version in its lock file (:func:`ragmeter.data.freeze`). A lock
    recording another version is replaced with ``force``, or when ``confirm`` says yes (None:
    it said no, the lock is kept); without either, the UsageError stands."""
    from ..data import freeze, lock_path_for, read_lock

    docs = _corpus(corpus)
    try:
        return freeze(golden, docs, force=force)
    except UsageError:
        if force or confirm is None:
            raise
        lock_file = lock_path_for(golden)
        if not confirm(lock_file, str(read_lock(lock_file)["version"])):
            return None
        return freeze(golden, docs, force=True)


def freeze_dict(done: FreezeResult) -> dict[str, Any]:
    """``ragmeter golden freeze --format json``."""
    lock = done.lock
    return {
        "lock": str(done.lock_path),
        "written": done.written,
        "previous_version": done.previous_version,
        **{k: lock[k] for k in ("version", "counts", "corpus", "frozen_at")},
    }


# -- relocate ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Relocated:
    """The relocation report and the file the re-anchored golden set was written to."""

    report: RelocateReport
    output: Path

    def to_dict(self) -> dict[str, Any]:
        """``ragmeter golden relocate --format json``."""
        report = self.report
        return {
            "output": str(self.output),
            "ok": report.ok,
            "unchanged": report.unchanged,
            "unchecked": report.unchecked,
            "moved": [
                {
                    "question": m.question,
                    "evidence": m.index,
                    "doc": m.doc,
                    "old": list(m.old),
                    "new": list(m.new),
                    "method": m.method,
                }
                for m in report.moved
            ],
            "unresolved": [
                {
                    "question": u.question,
                    "evidence": u.index,
                    "doc": u.doc,
                    "span": list(u.span),
                    "reason": u.reason,
                }
                for u in report.unresolved
            ],
            "problems": [problem_dict(p) for p in report.problems],
        }


def relocate_golden(golden: PathLike, corpus: Corpus | PathLike, out: PathLike) -> Relocated:
    """Re-anchor the spans of ``golden`` whose text moved in the edited ``corpus`` and write
    the result to ``out`` (the whole set: spans that could not be re-anchored are kept as they
    were, for the labeller to see)."""
    from ..data import load_golden, relocate, write_golden

    docs = _corpus(corpus)
    report = relocate(load_golden(golden), docs)
    write_golden(report.golden, out)
    return Relocated(report, Path(out))


# -- describe ---------------------------------------------------------------------------------
def describe(golden: PathLike, corpus: Corpus | PathLike | None = None) -> dict[str, Any]:
    """Questions, spans, grades, slices, splits, documents and version (``GoldenSet.stats``);
    the version needs ``corpus`` (or a lock)."""
    from ..data import load_golden

    return load_golden(golden, corpus).stats()


# -- agree ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Agreement:
    """Two labellers' agreement, with the corpus their spans' text is read from (None: the
    text recorded in the labels)."""

    result: LabelAgreement
    corpus: Corpus | None

    def to_dict(self, worst: int | None = 10) -> dict[str, Any]:
        """``ragmeter golden agree --format json``, listing the ``worst`` disagreements."""
        return self.result.to_dict(self.corpus, worst)


def agree(a: PathLike, b: PathLike, corpus: Corpus | PathLike | None = None) -> Agreement:
    """Span overlap (``a`` is the reference), kappa on grades and the worst disagreements of
    two labellers' golden files; with ``corpus``, every span is checked against it."""
    from ..data import label_agreement, load_golden

    docs = _corpus(corpus) if corpus is not None else None
    return Agreement(label_agreement(load_golden(a, docs), load_golden(b, docs)), docs)


# -- traffic ----------------------------------------------------------------------------------
def sample_traffic(
    logs: PathLike,
    n: int,
    *,
    by: str | None = None,
    seed: int = 0,
    out: PathLike | None = None,
) -> TrafficSample:
    """A seeded sample of ``n`` distinct logged questions to label, stratified by field ``by``
    (proportional); written to ``out`` as JSON Lines when given."""
    from ..data import read_log, sample_log
    from ..data.corpus import write_lines

    result = sample_log(read_log(logs), n, by=by, seed=seed)
    if out is not None:
        write_lines(out, result.to_jsonl())
    return result


def compare_traffic(
    golden: PathLike | GoldenSet, logs: PathLike, *, field: str = "slice", factor: float = 2.0
) -> TrafficComparison:
    """Per slice: the golden set's share against the log's (slice names in the log's
    ``field``); a slice off by more than ``factor`` either way is flagged."""
    from ..data import GoldenSet, load_golden, read_log
    from ..data import compare_traffic as shares

    gold = golden if isinstance(golden, GoldenSet) else load_golden(golden)
    return shares(gold, read_log(logs), field=field, factor=factor)
