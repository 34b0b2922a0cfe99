"""Labelling queues: making them, handing out questions, saving labels, final labels,
agreement and status (:mod:`ragmeter.workflows.labelling`)."""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._errors import NotFoundError, Problem, UsageError, ValidationError
from ..store import ItemRow, LabellerRow, LabelRow, NewItem, QueueRow
from ._label_payloads import (
    _answer_key,
    _answer_word,
    _complete,
    _golden_prefill,
    _span_key,
    check_payload,
    question_of,
)
from ._label_search import queue_corpus

if TYPE_CHECKING:  # pragma: no cover
    from ..answers import JudgeValidation
    from ..data import Corpus, GoldenSet, LabelAgreement
    from ..store import Store

PathLike = str | os.PathLike[str]
#: the files export_answer_labels writes, per judge metric, with the label words of each
ANSWER_FILES = {
    "correctness": ("human-correctness.jsonl", "correct"),
    "faithfulness": ("human-faithfulness.jsonl", "supported"),
    "abstention": ("human-abstention.jsonl", "abstention"),
}
Final = Literal[
    "resolved", "single", "agreed", "unresolved", "skipped", "unlabelled", "draft", "incomplete"
]


# -- queues ------------------------------------------------------------------------------------
def is_double(qid: str, seed: int, share: float) -> bool:
    """Whether two labellers label question ``qid`` (module docstring)."""
    digest = hashlib.sha256(f"{seed}:{qid}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < share


def _question_id(record: Mapping[str, Any], text: str) -> str:
    given = record.get("id")
    if isinstance(given, str) and given.strip():
        return given
    from ..data.traffic import normalise_question

    return "q-" + hashlib.sha256(normalise_question(text).encode("utf-8")).hexdigest()[:12]


def _slices_of(record: Mapping[str, Any]) -> list[str]:
    value = record.get("slices", record.get("slice"))
    if isinstance(value, str) and value:
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, str) and v]
    return []


def _question_items(path: Path, seed: int, share: float, origin: str | None) -> list[NewItem]:
    """Items of a question log (JSONL or CSV as ``golden sample`` reads them); a repeated
    question (same text after case folding and whitespace collapsing) is one item."""
    from ..data import read_log
    from ..data.traffic import normalise_question

    log = read_log(path)
    texts: set[str] = set()
    items: list[NewItem] = []
    first: dict[str, int] = {}
    problems: list[Problem] = []
    for line in log.lines:
        rec = line.record
        text = line.question
        qid = _question_id(rec, text)
        key = normalise_question(text)
        if key in texts:  # a repeated question (a log's): its first line is the item
            continue
        texts.add(key)
        if qid in first:
            problems.append(
                Problem(
                    f"question id {qid!r} again (first on line {first[qid]}): two questions "
                    "with one id",
                    str(path),
                    line.line,
                    "id" if "id" in rec else "question",
                )
            )
            continue
        first[qid] = line.line
        context = {k: v for k, v in rec.items() if k not in ("id", "question")}
        made = origin or (
            "logged" if "logged" in rec or log.format == "openinference" else "written"
        )
        slices = _slices_of(rec)
        items.append(
            NewItem(
                qid=qid,
                question=text,
                origin=made,
                double=is_double(qid, seed, share),
                context=context,
                prefill={"slices": slices} if slices else None,
            )
        )
    if problems:
        raise ValidationError(problems, what=f"questions {path}")
    return items


def _answer_items(
    answers: Path, golden: GoldenSet, corpus: Corpus | None, seed: int, share: float
) -> list[NewItem]:
    from ..answers import load_answers

    found = load_answers(answers, golden=golden)
    items = []
    for a in found.answers:
        q = golden[a.id]
        cited = []
        for c in a.citations:
            doc = None if c.doc is None or corpus is None else corpus.get(c.doc)
            text = None
            if doc is not None:
                text = doc.text if c.start is None else doc.text[c.start : c.end]
            cited.append({**c.model_dump(exclude_none=True), "text": text})
        context = {
            "answer": a.answer,
            "abstained": a.abstained,
            "citations": cited,
            "context": a.context,
            "context_text": a.context_text,
            "reference": q.answer,
            "answerable": q.answerable,
            "variant": found.variant,
        }
        items.append(
            NewItem(
                qid=a.id,
                question=q.question,
                origin="golden",
                double=is_double(a.id, seed, share),
                context=context,
            )
        )
    return items


def create_queue_from(
    store: Store,
    name: str,
    *,
    corpus: Corpus | PathLike | None,
    questions: PathLike | None = None,
    golden: PathLike | None = None,
    answers: PathLike | None = None,
    kind: str = "evidence",
    double_share: float = 0.2,
    seed: int = 0,
    origin: str | None = None,
    parent: PathLike | None = None,
) -> QueueRow:
    """A new queue, stored with its corpus:

    - ``questions``: a log of ``{"question", ...}`` lines as ``golden sample`` writes them
      (JSONL or CSV with a ``question`` column; the other fields are shown beside the question,
      a ``slice``/``slices`` field pre-fills the slice tags). Question ids: the ``id`` field,
      else ``q-`` and 12 hex digits of the normalised question's sha256. Origin: ``origin``,
      else ``logged`` for lines carrying a ``logged`` object, else ``written``.
    - ``golden``: a golden set to review (``kind="evidence"``): its labels pre-fill each
      question; the queue's parent is its version.
    - ``kind="answers"`` with ``answers`` (an answers file) and ``golden`` (their questions and
      reference answers): the answers to review.

    ``parent`` (a version, or a frozen golden file or lock naming one) overrides the parent
    version recorded: the version this queue's freeze extends.
    """
    from ..data import Corpus, golden_version_of, load_corpus, load_golden
    from .golden import parent_version

    QueueRow.check_name(name)  # before any file is read: a mistake costs nothing
    if name in {q.name for q in store.queues()}:
        raise UsageError(f"a queue named {name!r} already exists")
    if kind not in ("evidence", "answers"):
        raise UsageError(f"a queue's kind is evidence or answers; got {kind!r}")
    if not 0.0 <= double_share <= 1.0:
        raise UsageError(f"the double share is between 0 and 1; got {double_share!r}")
    docs = corpus if isinstance(corpus, Corpus) or corpus is None else load_corpus(corpus)
    made_from = None if parent is None else parent_version(parent, docs)
    if parent is not None and made_from is not None:
        _store_parent(store, Path(parent), made_from, docs)
    items: list[NewItem]
    source: str
    if kind == "answers":
        if answers is None or golden is None:
            raise UsageError(
                "an answers queue needs the answers file and the golden set of their questions"
            )
        gold = load_golden(golden, docs)
        items = _answer_items(Path(answers), gold, docs, seed, double_share)
        source = str(answers)
        made_from = made_from or golden_version_of(gold)
    elif golden is not None:
        if questions is not None:
            raise UsageError("give the questions or a golden set to review, not both")
        if docs is None:
            raise UsageError("reviewing a golden set needs its corpus")
        gold = load_golden(golden, docs)
        items = [
            NewItem(
                qid=q.id,
                question=q.question,
                origin="golden",
                double=is_double(q.id, seed, double_share),
                prefill=_golden_prefill(q),
            )
            for q in gold
        ]
        source = str(golden)
        if made_from is None:
            made_from = golden_version_of(gold)
            store.put_golden(gold)  # the version the queue's freeze extends
    else:
        if questions is None:
            raise UsageError("give the questions to label (a JSONL or CSV file) or a golden set")
        if docs is None:
            raise UsageError("labelling evidence needs the corpus the spans point into")
        items = _question_items(Path(questions), seed, double_share, origin)
        source = str(questions)
    return store.create_queue(
        name,
        kind=kind,
        corpus=docs,
        items=items,
        double_share=double_share,
        seed=seed,
        parent_version=made_from,
        source=source,
    )


def _store_parent(store: Store, parent: Path, version: str, docs: Corpus | None) -> None:
    """Keep the parent version in the store, where the queue's freeze reads the questions it
    extends: read from the golden file ``parent`` names (or the one beside the lock it names);
    a bare version must be stored already."""
    from ..data import load_golden

    stored = {v.version for v in store.golden_versions()}
    if version in stored:
        return
    golden = parent
    if parent.name.endswith(".lock.json"):
        golden = parent.with_name(parent.name[: -len(".lock.json")] + ".jsonl")
    if not golden.is_file():
        raise UsageError(
            f"the parent {version} is not in the store and no golden file of it is at hand: name "
            "the parent's golden file with --parent-golden (it is stored with the queue)"
        )
    gold = load_golden(golden, docs)
    if gold.version != version:
        raise UsageError(
            f"{golden} is version {gold.version} with this corpus, not {version} as its lock "
            "says: freeze it again (`ragmeter golden freeze`) or name the matching corpus"
        )
    store.put_golden(gold)


def ensure_labeller(store: Store, name: str) -> LabellerRow:
    """The labeller of this name, made (without a token: the loopback labeller) when absent."""
    try:
        return store.labeller(name)
    except NotFoundError:
        try:
            return store.add_labeller(name, token=False)[0]
        except UsageError:  # made meanwhile by another request
            return store.labeller(name)


# -- assignment, saving --------------------------------------------------------------------
def _by_item(labels: Sequence[LabelRow]) -> dict[int, list[LabelRow]]:
    out: dict[int, list[LabelRow]] = {}
    for lab in labels:
        out.setdefault(lab.item_id, []).append(lab)
    for group in out.values():
        group.sort(key=lambda x: (x.created_at, x.id))
    return out


def _skipped(lab: LabelRow) -> bool:
    return bool(lab.payload.get("skipped"))


def next_item(store: Store, queue: str | int, labeller: str) -> ItemRow | None:
    """The labeller's next item (module docstring); None when none is left for them."""
    q = store.queue(queue)
    store.labeller(labeller)  # an unknown name is an error listing the labellers
    by_item = _by_item(store.labels(queue_id=q.id))
    for it in store.items(q.id):
        labs = by_item.get(it.id, [])
        if any(x.role == "resolved" for x in labs):
            continue
        own = [x for x in labs if x.role == "label"]
        if any(x.labeller == labeller for x in own):
            continue
        if sum(not _skipped(x) for x in own) < (2 if it.double else 1):
            return it
    return None


def _item_of(store: Store, queue: str | int, item_id: int | str) -> tuple[QueueRow, ItemRow]:
    q = store.queue(queue)
    it = store.item(item_id)
    if it.queue_id != q.id:
        raise NotFoundError(f"queue {q.name!r} has no item {item_id!r}")
    return q, it


def save(
    store: Store,
    queue: str | int,
    item_id: int | str,
    labeller: str,
    payload: Mapping[str, Any],
    expected_revision: int,
) -> LabelRow:
    """Save ``labeller``'s label of an item (checked with :func:`check_payload`);
    ``expected_revision``: the revision edited, 0 for a new label (else EditConflict with the
    stored one). Saving a draft that is not skipped accepts it."""
    q, it = _item_of(store, queue, item_id)
    data = check_payload(q.kind, payload, queue_corpus(store, q) if q.kind == "evidence" else None)
    accept = not it.accepted and not data.get("skipped")
    return store.save_label(it.id, labeller, data, expected_revision, accept=accept)


def delete(
    store: Store, queue: str | int, item_id: int | str, labeller: str, expected_revision: int
) -> None:
    """Delete ``labeller``'s label of an item, if ``expected_revision`` is the stored one."""
    _, it = _item_of(store, queue, item_id)
    store.delete_label(it.id, labeller, expected_revision)


def adjudicate(
    store: Store,
    queue: str | int,
    item_id: int | str,
    labeller: str,
    payload: Mapping[str, Any],
    expected_revision: int,
) -> LabelRow:
    """Record the item's resolved label, made by ``labeller`` (its revision rule as
    :func:`save`); it is the item's final label whatever the others say."""
    q, it = _item_of(store, queue, item_id)
    data = check_payload(q.kind, payload, queue_corpus(store, q) if q.kind == "evidence" else None)
    return store.save_label(it.id, labeller, data, expected_revision, role="resolved", accept=True)


def _first_two(labs: Sequence[LabelRow]) -> list[LabelRow]:
    return [x for x in labs if x.role == "label" and not _skipped(x)][:2]


def final_labels(store: Store, queue: str | int) -> list[tuple[ItemRow, Final, LabelRow | None]]:
    """Each item with the status of its final label and that label (module docstring)."""
    q = store.queue(queue)
    key = _span_key if q.kind == "evidence" else _answer_key
    by_item = _by_item(store.labels(queue_id=q.id))
    out: list[tuple[ItemRow, Final, LabelRow | None]] = []
    for it in store.items(q.id):
        labs = by_item.get(it.id, [])
        resolved = [x for x in labs if x.role == "resolved"]
        two = _first_two(labs)
        status: Final
        chosen: LabelRow | None = None
        if resolved:
            chosen, status = resolved[0], "resolved"
        elif not two:
            status = "skipped" if labs else "unlabelled"
        elif len(two) == 1:
            chosen, status = two[0], "single"
        elif key(two[0].payload) == key(two[1].payload):
            chosen, status = two[0], "agreed"
        else:
            status = "unresolved"
        if chosen is not None:
            if chosen.payload.get("skipped"):
                chosen, status = None, "skipped"
            elif not _complete(q.kind, chosen.payload):
                status = "incomplete"
            elif not it.accepted:
                status = "draft"
        out.append((it, status, chosen))
    return out


# -- agreement ---------------------------------------------------------------------------------
def _labelled_twice(
    store: Store, q: QueueRow
) -> tuple[list[tuple[ItemRow, LabelRow, LabelRow]], list[str]]:
    """Items with two complete labels (each item's first two labellers) in A/B order, and the
    labeller order (A first)."""
    by_item = _by_item(store.labels(queue_id=q.id))
    pairs: list[tuple[ItemRow, LabelRow, LabelRow]] = []
    for it in store.items(q.id):
        two = _first_two(by_item.get(it.id, []))
        if len(two) == 2 and all(_complete(q.kind, x.payload) for x in two):
            pairs.append((it, two[0], two[1]))
    firsts = Counter(a.labeller for _, a, _ in pairs)
    names = sorted({x.labeller for _, a, b in pairs for x in (a, b)})
    order = sorted(names, key=lambda n: (-firsts[n], n))
    rank = {n: i for i, n in enumerate(order)}
    ordered = [
        (it, a, b) if rank[a.labeller] < rank[b.labeller] else (it, b, a) for it, a, b in pairs
    ]
    return ordered, order


def agreement(store: Store, queue: str | int) -> LabelAgreement:
    """Span overlap and grade kappa of the items two labellers labelled (module docstring);
    ``source_a`` and ``source_b`` name the labellers (``"ana"``, or ``"ana, cy"`` when more
    than two labellers share a side)."""
    from ..data import GoldenSet, label_agreement

    q = store.queue(queue)
    if q.kind != "evidence":
        raise UsageError(
            f"queue {q.name!r} reviews answers: its agreement is answer_agreement's kappa"
        )
    pairs, _ = _labelled_twice(store, q)
    side_a = [question_of(it, a.payload) for it, a, _ in pairs]
    side_b = [question_of(it, b.payload) for it, _, b in pairs]
    names_a = ", ".join(dict.fromkeys(a.labeller for _, a, _ in pairs))
    names_b = ", ".join(dict.fromkeys(b.labeller for _, _, b in pairs))
    return label_agreement(
        GoldenSet(side_a, source=names_a or "A"), GoldenSet(side_b, source=names_b or "B")
    )


@dataclass(frozen=True)
class Disagreement:
    """An item whose first two labellers' labels differ: both labels, their overlap and the
    adjudication when one was made."""

    item: ItemRow
    a: LabelRow
    b: LabelRow
    resolved: LabelRow | None

    def to_dict(self) -> dict[str, Any]:
        def lab(x: LabelRow | None) -> dict[str, Any] | None:
            if x is None:
                return None
            return {"labeller": x.labeller, "revision": x.revision, "payload": dict(x.payload)}

        return {
            "item": self.item.id,
            "qid": self.item.qid,
            "question": self.item.question,
            "a": lab(self.a),
            "b": lab(self.b),
            "resolved": lab(self.resolved),
        }


def disagreements(store: Store, queue: str | int) -> list[Disagreement]:
    """The items whose two labels differ (by the final-label rule), adjudicated or not."""
    q = store.queue(queue)
    key = _span_key if q.kind == "evidence" else _answer_key
    pairs, _ = _labelled_twice(store, q)
    resolved = {x.item_id: x for x in store.labels(queue_id=q.id) if x.role == "resolved"}
    return [
        Disagreement(it, a, b, resolved.get(it.id))
        for it, a, b in pairs
        if key(a.payload) != key(b.payload)
    ]


def answer_labellers(store: Store, queue: str | int) -> tuple[str, str] | None:
    """The two labellers :func:`answer_agreement` (and :func:`agreement`) compare, A first;
    None until two labellers labelled a question. With more than two labellers, the first two in
    the order A is chosen by."""
    q = store.queue(queue)
    _, order = _labelled_twice(store, q)
    return (order[0], order[1]) if len(order) >= 2 else None


def answer_agreement(store: Store, queue: str | int) -> dict[str, JudgeValidation]:
    """For an answers queue, per metric (correctness, faithfulness, abstention): the first
    labeller's labels taken as the human labels and the second's as the judge's, compared by
    ``judge validate``'s own code, so its kappa is what ``ragmeter judge validate --human
    A-file --judge B-file`` prints on the per-labeller files :func:`export_answer_labels`
    writes (A: the labeller ranked first, as in :func:`agreement`)."""
    from ..answers import validate_judge
    from ..answers.judge_validation import JudgeLabel, normalize_label

    q = store.queue(queue)
    if q.kind != "answers":
        raise UsageError(f"queue {q.name!r} labels evidence: its agreement is agreement()'s")
    pairs, _ = _labelled_twice(store, q)
    out: dict[str, JudgeValidation] = {}
    for metric, (_, key) in ANSWER_FILES.items():
        humans: dict[str, str] = {}
        judged: list[JudgeLabel] = []
        for it, a, b in pairs:
            va, vb = _answer_word(a.payload, key), _answer_word(b.payload, key)
            if va is not None and vb is not None:
                humans[it.qid] = normalize_label(va)
                judged.append(JudgeLabel(it.qid, normalize_label(vb)))
        if judged:
            out[metric] = validate_judge(humans, judged)
    return out


# -- status ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class QueueStatus:
    """Where a queue stands: its items by final-label status, each labeller's count and (for an
    evidence queue with items labelled twice) the agreement."""

    queue: QueueRow
    items: int
    double: int
    finals: Mapping[str, int]
    labellers: Mapping[str, int]
    agreement: LabelAgreement | None

    @property
    def done(self) -> int:
        """Items whose final label is known (frozen or left out on purpose)."""
        return sum(self.finals.get(k, 0) for k in ("resolved", "single", "agreed", "skipped"))

    def to_dict(self) -> dict[str, Any]:
        a = self.agreement
        return {
            "queue": self.queue.name,
            "kind": self.queue.kind,
            "items": self.items,
            "double": self.double,
            "done": self.done,
            "finals": dict(self.finals),
            "labellers": dict(self.labellers),
            "parent": self.queue.parent_version,
            "agreement": None
            if a is None or not a.questions
            else {
                "labeller_a": a.source_a,
                "labeller_b": a.source_b,
                "questions": len(a.questions),
                "f1": a.f1,
                "macro_f1": a.macro_f1,
                "kappa": a.kappa(),
            },
        }


def status(store: Store, queue: str | int) -> QueueStatus:
    q = store.queue(queue)
    finals = final_labels(store, q.id)
    counts = Counter(s for _, s, _ in finals)
    per = Counter(x.labeller for x in store.labels(queue_id=q.id) if x.role == "label")
    return QueueStatus(
        queue=q,
        items=len(finals),
        double=sum(it.double for it, _, _ in finals),
        finals=dict(sorted(counts.items())),
        labellers=dict(sorted(per.items())),
        agreement=agreement(store, q.id) if q.kind == "evidence" else None,
    )
