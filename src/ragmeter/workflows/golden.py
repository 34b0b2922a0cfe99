"""The golden-set jobs, each written once: import a BEIR folder or a SQuAD file, validate, freeze
a version (or check it), relocate spans after corpus edits, describe the set, measure two
labellers' agreement, sample logged questions to label, compare the set with the traffic,
resolve spans written as quotes into offsets and list what changed between two versions.

``ragmeter golden ...`` (cli/_golden.py, cli/_golden_agree.py, cli/_golden_traffic.py) checks
its options and output paths, calls one function here and renders the record it gets back; the
lab's labelling workbench calls the same functions. Every function takes paths (or loaded
objects) and returns the records of :mod:`ragmeter.data` (or a small record around them);
none prints, asks or exits: the questions an interface asks (``freeze`` replacing a lock) come
in as callbacks.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import NotFoundError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from .._errors import Problem
    from ..data import (
        Corpus,
        FreezeResult,
        FrozenCheck,
        GoldenDiff,
        GoldenSet,
        LabelAgreement,
        RelocateReport,
        TrafficComparison,
        TrafficSample,
    )
    from ..data.golden import QuoteResolution
    from ..store import Store
    from .evaluate import Status

__all__ = [
    "FORMATS",
    "Agreement",
    "Confirm",
    "Imported",
    "QuotesResolved",
    "Relocated",
    "Validation",
    "agree",
    "check_dict",
    "check_golden",
    "compare_traffic",
    "describe",
    "diff_golden",
    "diff_needs_store",
    "diff_stored",
    "freeze_dict",
    "freeze_golden",
    "frozen_note",
    "import_files",
    "import_golden",
    "parent_version",
    "problem_dict",
    "relocate_golden",
    "resolve_golden",
    "sample_traffic",
    "stored_version",
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
    parent: PathLike | None = None,
) -> FreezeResult | None:
    """Record the golden set's version in its lock file (:func:`ragmeter.data.freeze`), with
    the version it was made from when ``parent`` names one (:func:`parent_version`). A lock
    recording another version (or parent) is replaced with ``force``, or when ``confirm`` says
    yes (None: it said no, the lock is kept); without either, the UsageError stands."""
    from ..data import freeze, lock_path_for, read_lock

    docs = _corpus(corpus)
    made_from = None if parent is None else parent_version(parent, docs)
    try:
        return freeze(golden, docs, force=force, parent=made_from)
    except UsageError:
        lock_file = lock_path_for(golden)
        if force or confirm is None or not lock_file.is_file():
            raise
        if not confirm(lock_file, str(read_lock(lock_file)["version"])):
            return None
        return freeze(golden, docs, force=True, parent=made_from)


def parent_version(parent: PathLike, corpus: Corpus | PathLike | None = None) -> str:
    """The version ``parent`` names: a printable version (``g-1a2b3c4d5e6f``, checked when the
    lock is written), a lock file, or a golden file (its lock's version when the labels still
    match it, else its version computed with ``corpus``)."""
    from ..data import load_golden, lock_path_for, read_lock

    path = Path(parent)
    if not path.exists():
        text = str(parent)
        if not re.fullmatch(r"g-[0-9a-f]{12}", text):
            raise UsageError(
                f"parent {text!r}: no such file, and not a golden-set version (g- and 12 hex "
                "digits, as `ragmeter golden freeze` prints it)"
            )
        return text
    if path.is_dir():
        raise UsageError(f"parent {path} is a folder; name a golden file, its lock or a version")
    if path.name.endswith(".json"):
        return str(read_lock(path)["version"])
    lock_file = lock_path_for(path)
    if lock_file.is_file():
        lock = read_lock(lock_file)
        if lock.get("labels_sha256") == load_golden(path).labels_digest:
            return str(lock["version"])
    if corpus is None:
        raise UsageError(f"parent {path} is not frozen: freeze it first, or pass its version")
    return load_golden(path, _corpus(corpus)).version


def freeze_dict(done: FreezeResult) -> dict[str, Any]:
    """``ragmeter golden freeze --format json``."""
    lock = done.lock
    return {
        "lock": str(done.lock_path),
        "written": done.written,
        "previous_version": done.previous_version,
        **{k: lock[k] for k in ("version", "counts", "corpus", "frozen_at")},
        "parent": lock.get("parent"),
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
    report = relocate(load_golden(golden, quotes_from=docs), docs)  # quotes found in `corpus`
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
    log_format: str | None = None,
) -> TrafficSample:
    """A seeded sample of ``n`` distinct logged questions to label, stratified by field ``by``
    (proportional); written to ``out`` as JSON Lines when given. ``log_format``: ``jsonl``,
    ``csv`` or ``openinference`` (None: by name and content)."""
    from ..data import read_log, sample_log
    from ..data.corpus import write_lines

    result = sample_log(read_log(logs, log_format), n, by=by, seed=seed)
    if out is not None:
        write_lines(out, result.to_jsonl())
    return result


def compare_traffic(
    golden: PathLike | GoldenSet,
    logs: PathLike,
    *,
    field: str = "slice",
    factor: float = 2.0,
    log_format: str | None = None,
) -> TrafficComparison:
    """Per slice: the golden set's share against the log's (slice names in the log's
    ``field``); a slice off by more than ``factor`` either way is flagged."""
    from ..data import GoldenSet, load_golden, read_log
    from ..data import compare_traffic as shares

    gold = golden if isinstance(golden, GoldenSet) else load_golden(golden)
    return shares(gold, read_log(logs, log_format), field=field, factor=factor)


# -- resolve ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class QuotesResolved:
    """Spans written as quotes resolved into offsets (``golden resolve``): every quote's
    resolution, every problem of the set, and whether ``output`` was written (only when there
    is no problem: a set half resolved is never written)."""

    golden: Path
    output: Path
    resolution: QuoteResolution

    @property
    def problems(self) -> list[Problem]:
        return self.resolution.problems

    @property
    def written(self) -> bool:
        return not self.problems

    @property
    def counts(self) -> dict[str, int]:
        """Quote spans in all, found exactly, found after normalising whitespace and case, not
        resolved (``errors``), and the problems of the whole set (quotes and other labels)."""
        quotes = self.resolution.quotes
        normalised = len(self.resolution.normalised)
        errors = self.resolution.unresolved
        return {
            "quotes": len(quotes) + errors,
            "exact": len(quotes) - normalised,
            "normalised": normalised,
            "errors": errors,
            "problems": len(self.problems),
        }

    def to_dict(self) -> dict[str, Any]:
        """``ragmeter golden resolve --format json``."""
        return {
            "golden": str(self.golden),
            "output": str(self.output) if self.written else None,
            "written": self.written,
            **self.counts,
            "spans": [
                {
                    "question": q.question,
                    "evidence": q.index,
                    "line": q.line,
                    "quote": q.quote,
                    "doc": q.doc,
                    "start": q.start,
                    "end": q.end,
                    "method": q.method,
                    "text": q.text,
                }
                for q in self.resolution.quotes
            ],
            "problems": [problem_dict(p) for p in self.problems],
        }


def resolve_golden(golden: PathLike, corpus: Corpus | PathLike, out: PathLike) -> QuotesResolved:
    """Find the offsets of every span of ``golden`` written as a quote (``{"quote": ...}``) in
    ``corpus`` and write the set with offsets to ``out`` (spans given as offsets are kept);
    nothing is written when a quote cannot be resolved or a label has a problem: the result
    lists every one."""
    from ..data.golden import resolve_quotes, write_golden

    resolution = resolve_quotes(golden, _corpus(corpus))
    done = QuotesResolved(Path(golden), Path(out), resolution)
    if done.written:
        write_golden(resolution.questions, out)
    return done


# -- diff -------------------------------------------------------------------------------------
#: how a stored golden-set version is named: its printable form or its first hex digits
_VERSION_PREFIX = re.compile(r"g-[0-9a-f]{0,12}|[0-9a-f]{1,12}")


def diff_needs_store(a: PathLike, b: PathLike) -> bool:
    """Whether :func:`diff_golden` looks ``a`` or ``b`` up in the store: it is no file here and
    reads as a version (``g-1a2b``, ``1a2b``)."""
    return any(
        not Path(x).exists() and _VERSION_PREFIX.fullmatch(str(x)) is not None for x in (a, b)
    )


def stored_version(store: Store, prefix: str) -> str:
    """The stored golden-set version ``prefix`` starts (``g-1a2b``, or ``1a2b``): NotFoundError
    when none does, UsageError when several do (naming them)."""
    want = prefix.strip()
    if not want:
        raise UsageError("name a golden-set version (g-1a2b3c4d5e6f, or its first digits)")
    if not want.startswith("g-"):
        want = f"g-{want}"
    versions = [v.version for v in store.golden_versions()]
    found = [v for v in versions if v.startswith(want)]
    if want in versions:
        return want
    if len(found) == 1:
        return found[0]
    if not found:
        stored = ", ".join(versions[-10:]) if versions else "none"
        raise NotFoundError(
            f"the store holds no golden-set version starting with {want!r} (stored: {stored})"
        )
    raise UsageError(
        f"{prefix!r} starts {len(found)} stored versions ({', '.join(found[:10])}); "
        "give more digits"
    )


def _stored_side(store: Store, prefix: str) -> tuple[GoldenSet, str, str | None]:
    version = stored_version(store, prefix)
    row = next((v for v in store.golden_versions() if v.version == version), None)
    parent = getattr(row, "parent", None)  # recorded when the store keeps lineage
    return store.golden(version), version, parent if isinstance(parent, str) else None


def _file_side(
    path: Path, corpus: Corpus | PathLike | None
) -> tuple[GoldenSet, str | None, str | None]:
    from ..data import golden_version_of, load_golden, lock_path_for, read_lock

    golden = load_golden(path, None if corpus is None else _corpus(corpus))
    parent = None
    lock_file = lock_path_for(path)
    if lock_file.is_file():
        lock = read_lock(lock_file)
        if lock.get("labels_sha256") == golden.labels_digest:  # the lock is this set's
            recorded = lock.get("parent")
            parent = recorded if isinstance(recorded, str) else None
    return golden, golden_version_of(golden), parent


def diff_golden(
    a: PathLike,
    b: PathLike,
    *,
    corpus: Corpus | PathLike | None = None,
    corpus_a: Corpus | PathLike | None = None,
    corpus_b: Corpus | PathLike | None = None,
    store: Store | None = None,
) -> GoldenDiff:
    """What changed from golden set ``a`` to ``b`` (:func:`ragmeter.data.golden_diff`). Each
    is a golden file (with ``corpus``, or its own ``corpus_a``/``corpus_b``: spans checked,
    their text shown, versions computed) or, when no such file exists, a version stored in
    ``store`` named by its first digits."""
    from ..data import DiffSide, golden_diff

    if corpus is not None and (corpus_a is not None or corpus_b is not None):
        raise UsageError("give one corpus for both sets, or one for each (not both)")
    sides = []
    for name, ref, own in (("A", a, corpus_a), ("B", b, corpus_b)):
        docs = own if own is not None else corpus
        if Path(ref).exists():
            golden, version, parent = _file_side(Path(ref), docs)
        elif store is None or _VERSION_PREFIX.fullmatch(str(ref)) is None:
            raise UsageError(
                f"{name}: {ref}: no such file (a stored version is named g-1a2b3c4d5e6f, or "
                "by its first digits)"
            )
        else:
            if own is not None:
                raise UsageError(
                    f"{name} is the stored version {ref!r}: its corpus is not a file to give"
                )
            try:
                golden, version, parent = _stored_side(store, str(ref))
            except NotFoundError as exc:
                raise NotFoundError(f"{name}: {ref}: no such file, and {exc}") from None
        shown = golden.source or version or str(ref)  # a file's path, a stored version
        sides.append((golden, DiffSide(shown, version, parent)))
    if corpus is not None and all(g.source is None for g, _ in sides):
        raise UsageError("--corpus applies to golden files; both sets are stored versions")
    (ga, sa), (gb, sb) = sides
    return golden_diff(ga, gb, side_a=sa, side_b=sb)


def diff_stored(store: Store, a: str, b: str) -> GoldenDiff:
    """What changed from stored version ``a`` to stored version ``b`` (each named by its first
    digits): the lab's diff page, which never reads files."""
    from ..data import DiffSide, golden_diff

    ga, va, pa = _stored_side(store, a)
    gb, vb, pb = _stored_side(store, b)
    return golden_diff(ga, gb, side_a=DiffSide(va, va, pa), side_b=DiffSide(vb, vb, pb))
