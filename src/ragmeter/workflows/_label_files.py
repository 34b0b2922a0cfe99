"""What a labelling queue writes and reads as files: frozen versions, a labeller's golden file,
answer reviews for judge validation, labels made elsewhere (:mod:`ragmeter.workflows.labelling`)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import InputError, NotFoundError, UsageError, ValidationError
from ._label_payloads import _answer_word, _complete, check_payload, payload_of, question_of
from ._label_queue import ANSWER_FILES, _labelled_twice, final_labels
from ._label_search import queue_corpus

if TYPE_CHECKING:  # pragma: no cover
    from ..data import Question
    from ..store import Store

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class ImportedLabels:
    """What :func:`import_labels` did: labels saved, and labels the labeller had already made
    (kept as they were)."""

    saved: int
    kept: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"saved": self.saved, "kept": list(self.kept)}


def import_labels(
    store: Store, queue: str | int, labeller: str, golden: PathLike, *, replace: bool = False
) -> ImportedLabels:
    """Save the labels of a golden file (written elsewhere: a spreadsheet resolved with
    ``golden resolve``, another tool) as ``labeller``'s labels of the queue's questions of the
    same ids. Every label is checked before any is saved; a question the queue lacks is an
    error naming it. A label the labeller already made is kept, or replaced with
    ``replace``."""
    from ..data import load_golden

    q = store.queue(queue)
    if q.kind != "evidence":
        raise UsageError(f"queue {q.name!r} reviews answers: labels of evidence cannot go in")
    store.labeller(labeller)
    corpus = queue_corpus(store, q)
    gold = load_golden(golden, corpus)
    items = {it.qid: it for it in store.items(q.id)}
    missing = [x.id for x in gold if x.id not in items]
    if missing:
        shown = ", ".join(missing[:10]) + (
            f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        )
        raise UsageError(
            f"{len(missing)} question(s) of {golden} are not in queue {q.name!r}: {shown}"
        )
    payloads = []
    for n, x in enumerate(gold):
        try:
            payloads.append((items[x.id], check_payload(q.kind, payload_of(x), corpus)))
        except InputError as exc:
            raise InputError(
                exc.message, path=golden, line=gold.line_of(n), field=f"evidence ({exc.field})"
            ) from None
    own = {
        lab.item_id: lab
        for lab in store.labels(queue_id=q.id, labeller=labeller)
        if lab.role == "label"
    }
    saved, kept = 0, []
    for it, data in payloads:
        before = own.get(it.id)
        if before is not None and not replace:
            kept.append(it.qid)
            continue
        accept = not it.accepted and not data.get("skipped")
        store.save_label(
            it.id, labeller, data, 0 if before is None else before.revision, accept=accept
        )
        saved += 1
    return ImportedLabels(saved, tuple(kept))


# -- files -------------------------------------------------------------------------------------
def _refuse_existing(paths: Sequence[Path], contents: Sequence[bytes], force: bool) -> None:
    if force:
        return
    differ = [p for p, c in zip(paths, contents, strict=True) if p.exists() and p.read_bytes() != c]
    if differ:
        raise UsageError(
            f"{', '.join(map(str, differ))} already exist(s) with other content; pass --force "
            "(force=True) to replace, or write to another folder"
        )


def _jsonl_bytes(lines: Sequence[str]) -> bytes:
    return "".join(x + "\n" for x in lines).encode("utf-8")


@dataclass(frozen=True)
class Exported:
    """What an export wrote: its files and how many labels each holds, and the items left out."""

    files: Mapping[str, int]
    left_out: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"files": dict(self.files), "left_out": dict(self.left_out)}


def export_labeller(
    store: Store, queue: str | int, labeller: str, out: PathLike, *, force: bool = False
) -> Exported:
    """Write one labeller's labels of an evidence queue as a golden set (what ``golden agree``
    reads); skipped, incomplete and drafted-unaccepted items are left out and counted."""
    from ..data import write_golden

    q = store.queue(queue)
    if q.kind != "evidence":
        raise UsageError(f"queue {q.name!r} reviews answers: export them with export_answer_labels")
    store.labeller(labeller)
    items = {it.id: it for it in store.items(q.id)}
    questions = []
    left: Counter[str] = Counter()
    for lab in store.labels(queue_id=q.id, labeller=labeller):
        if lab.role != "label":
            continue
        if lab.payload.get("skipped"):
            left["skipped"] += 1
        elif not _complete(q.kind, lab.payload):
            left["incomplete"] += 1
        else:
            questions.append(question_of(items[lab.item_id], lab.payload))
    if not questions:
        raise UsageError(f"{labeller} has no complete label in queue {q.name!r} to export")
    target = Path(out)
    _refuse_existing(
        [target], [_jsonl_bytes([x.model_dump_json(exclude_none=True) for x in questions])], force
    )
    write_golden(questions, target)
    return Exported({str(target): len(questions)}, dict(left))


@dataclass(frozen=True)
class FrozenQueue:
    """What freezing a queue wrote and stored: the version, its parent (None when there is none,
    or when the labels are the parent's version again: nothing changed), the files and what was
    left out of the version (by status)."""

    version: str
    parent: str | None
    golden: Path
    corpus: Path
    lock: Path
    questions: int
    left_out: Mapping[str, int]
    #: questions of the parent version carried over as they were (not labelled in the queue)
    kept_from_parent: int = 0
    #: questions of the parent version the queue relabelled (its label replaces the parent's)
    relabelled: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "parent": self.parent,
            "golden": str(self.golden),
            "corpus": str(self.corpus),
            "lock": str(self.lock),
            "questions": self.questions,
            "kept_from_parent": self.kept_from_parent,
            "relabelled": self.relabelled,
            "left_out": dict(self.left_out),
        }


def _parent_questions(store: Store, version: str | None, extend: bool) -> list[Question]:
    """The parent version's questions, which the frozen version extends (none without a parent
    or with ``extend=False``); a parent the store does not hold is an error saying what to do."""
    if version is None or not extend:
        return []
    try:
        return list(store.golden(version))
    except NotFoundError:
        raise UsageError(
            f"the queue extends {version}, which the store does not hold: make the queue with "
            "--parent-golden naming the golden file (it is stored then), or freeze with "
            "--no-extend to freeze the queue's questions alone"
        ) from None


def _extended(parent: list[Question], labelled: list[Question]) -> tuple[list[Question], int]:
    """The parent's questions in their order, each replaced by the queue's label when the queue
    labelled it, then the queue's new questions in queue order; and how many were replaced."""
    by_id = {q.id: q for q in labelled}
    parent_ids = {q.id for q in parent}
    merged = [by_id.get(q.id, q) for q in parent]
    new = [q for q in labelled if q.id not in parent_ids]
    return merged + new, sum(1 for q in parent if q.id in by_id)


def freeze_queue(
    store: Store,
    queue: str | int,
    out_dir: PathLike,
    *,
    name: str | None = None,
    force: bool = False,
    extend: bool = True,
) -> FrozenQueue:
    """Freeze the final labels of an evidence queue: ``out_dir/golden.jsonl``,
    ``out_dir/corpus.jsonl`` and the lock (``golden freeze``'s, recording the queue's parent
    version), and the version stored. Refused while an item is unresolved (listing them);
    files of other content are replaced only with ``force``.

    With a parent version (and ``extend``, the default) the new version *extends* it: the
    parent's questions in their order, each replaced by the queue's final label where the queue
    labelled it (a skipped or unlabelled item keeps the parent's label), then the queue's new
    questions. ``extend=False`` freezes the queue's questions alone."""
    from ..data import GoldenSet, freeze, validate_golden, write_corpus, write_golden

    q = store.queue(queue)
    if q.kind != "evidence":
        raise UsageError(
            f"queue {q.name!r} reviews answers: write its labels with export_answer_labels"
        )
    finals = final_labels(store, q.id)
    unresolved = [it.qid for it, s, _ in finals if s == "unresolved"]
    if unresolved:
        shown = ", ".join(unresolved[:20]) + (
            f" and {len(unresolved) - 20} more" if len(unresolved) > 20 else ""
        )
        raise UsageError(
            f"{len(unresolved)} item(s) of queue {q.name!r} have two labels that differ and no "
            f"adjudication: {shown}. Resolve them first (the lab's disagreement page, or "
            "workflows.labelling.adjudicate)"
        )
    kept = {"resolved", "single", "agreed"}
    labelled = [question_of(it, lab.payload) for it, s, lab in finals if s in kept and lab]
    left = Counter(s for _, s, _ in finals if s not in kept)
    parent_questions = _parent_questions(store, q.parent_version, extend)
    questions, relabelled = _extended(parent_questions, labelled)
    if not labelled and not parent_questions:
        raise UsageError(f"queue {q.name!r} has no finished label to freeze")
    corpus = queue_corpus(store, q)
    gold = GoldenSet(questions, corpus=corpus)
    problems = validate_golden(gold, corpus)
    if problems:  # the saves were checked: a problem here is a document changed under a label
        raise ValidationError(problems, what=f"queue {q.name!r}'s labels")
    folder = Path(out_dir)
    golden_path, corpus_path = folder / "golden.jsonl", folder / "corpus.jsonl"
    golden_bytes = _jsonl_bytes([x.model_dump_json(exclude_none=True) for x in questions])
    corpus_bytes = _jsonl_bytes(
        [d.model_dump_json(exclude_none=True, exclude_defaults=True) for d in corpus]
    )
    _refuse_existing([golden_path, corpus_path], [golden_bytes, corpus_bytes], force)
    folder.mkdir(parents=True, exist_ok=True)
    write_golden(questions, golden_path)
    write_corpus(corpus, corpus_path)
    # a review that changed nothing is its parent's version again: no version is its own parent
    parent = None if gold.version == q.parent_version else q.parent_version
    done = freeze(golden_path, corpus_path, force=force, parent=parent)
    version = str(done.lock["version"])
    store.put_golden(gold, name=name or q.name, parent=parent)
    return FrozenQueue(
        version=version,
        parent=parent,
        golden=golden_path,
        corpus=corpus_path,
        lock=done.lock_path,
        questions=len(questions),
        left_out=dict(sorted(left.items())),
        kept_from_parent=len(parent_questions) - relabelled,
        relabelled=relabelled,
    )


def export_answer_labels(
    store: Store, queue: str | int, out_dir: PathLike, *, force: bool = False
) -> Exported:
    """Write an answers queue's final labels as ``judge validate --human`` reads them, one
    file per metric (:data:`ANSWER_FILES`: ``{"id", "label"}`` lines, labels correct/incorrect,
    supported/unsupported, and pass/fail for a correct abstention); and, for the items two
    labellers reviewed, each labeller's own files (``human-correctness.NAME.jsonl``). Items
    whose labels differ and are not adjudicated are left out of the final files and counted."""
    import json

    q = store.queue(queue)
    if q.kind != "answers":
        raise UsageError(f"queue {q.name!r} labels evidence: freeze it with freeze_queue")
    finals = final_labels(store, q.id)
    files: dict[Path, list[str]] = {}
    folder = Path(out_dir)
    for _metric, (fname, key) in ANSWER_FILES.items():
        lines = []
        for it, s, lab in finals:
            if s in ("resolved", "single", "agreed") and lab is not None:
                word = _answer_word(lab.payload, key)
                if word is not None:
                    lines.append(json.dumps({"id": it.qid, "label": word}, ensure_ascii=False))
        if lines:
            files[folder / fname] = lines
    pairs, _order = _labelled_twice(store, q)
    if pairs:
        for _metric, (fname, key) in ANSWER_FILES.items():
            for side in (0, 1):
                per: dict[str, list[str]] = {}
                for it, a, b in pairs:
                    lab = (a, b)[side]
                    word = _answer_word(lab.payload, key)
                    other = _answer_word((b, a)[side].payload, key)
                    if word is not None and other is not None:
                        per.setdefault(lab.labeller, []).append(
                            json.dumps({"id": it.qid, "label": word}, ensure_ascii=False)
                        )
                for who, lines in per.items():
                    stem = fname.removesuffix(".jsonl")
                    files.setdefault(folder / f"{stem}.{_file_safe(who)}.jsonl", []).extend(lines)
    if not files:
        raise UsageError(f"queue {q.name!r} has no finished review to export")
    paths = list(files)
    _refuse_existing(paths, [_jsonl_bytes(files[p]) for p in paths], force)
    from ..data.corpus import write_lines

    folder.mkdir(parents=True, exist_ok=True)
    for p in paths:
        write_lines(p, files[p])
    left = Counter(s for _, s, _ in finals if s not in ("resolved", "single", "agreed"))
    return Exported({str(p): len(files[p]) for p in paths}, dict(sorted(left.items())))


def _file_safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
