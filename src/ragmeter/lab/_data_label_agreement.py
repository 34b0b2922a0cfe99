"""The label views' agreement models: the two labellers' agreement over a queue
(``/label/Q/agreement``), one question's two labels over its documents
(``/label/Q/disagreement/ID``) and the adjudication that resolves it.

The numbers are :func:`ragmeter.workflows.labelling.agreement`'s: what ``ragmeter golden agree``
prints on the files ``ragmeter label export`` writes for the two labellers.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .._errors import RagmeterError, UsageError
from ._data_label import expected_revision, item_of, refusal, short
from ._views import TemplateVariables

if TYPE_CHECKING:  # pragma: no cover
    from ..data import LabelAgreement
    from ..store import ItemRow, LabelRow, QueueRow, Store


# -- /label/QUEUE/agreement -------------------------------------------------------------------
@dataclass(frozen=True)
class WorstRow:
    item_id: int | None
    qid: str
    question: str
    f1: float
    grade_mismatches: int
    found: str


@dataclass(frozen=True)
class AgreementPage(TemplateVariables):
    queue: QueueRow
    a: str | None
    b: str | None
    result: LabelAgreement | None
    kappas: dict[str, float | None]
    found: dict[str, int]
    confusion: list[tuple[int, list[int]]]
    grades: list[int]
    worst: list[WorstRow]
    double: int
    labelled_twice: int


FOUND = {"both": "both", "neither": "neither", "only_a": "only A", "only_b": "only B"}
#: the kappas the agreement page shows, as ``golden agree`` prints them
WEIGHTS: tuple[Literal["none", "linear", "quadratic"], ...] = ("none", "linear", "quadratic")


def agreement_page(store: Store, queue: str) -> AgreementPage:
    from ..workflows import labelling

    q = store.queue(queue)
    items = store.items(q.id)
    by_qid = {it.qid: it for it in items}
    counts: dict[int, set[str]] = {}
    for lb in store.labels(queue_id=q.id):
        if lb.role == "label" and not lb.payload.get("skipped"):
            counts.setdefault(lb.item_id, set()).add(lb.labeller)
    twice = sum(len(v) >= 2 for v in counts.values())
    double = sum(i.double for i in items)
    result = labelling.agreement(store, q.name)
    if not result.questions:
        return AgreementPage(q, None, None, None, {}, {}, [], [], [], double, twice)
    confusion = result.grade_confusion
    grades = sorted({g for pair in confusion for g in pair})
    worst = [
        WorstRow(
            item_id=by_qid[w.question].id if w.question in by_qid else None,
            qid=w.question,
            question=short(by_qid[w.question].question) if w.question in by_qid else "",
            f1=w.f1,
            grade_mismatches=w.grade_mismatches,
            found=FOUND[w.found],
        )
        for w in result.worst(None)
    ]
    return AgreementPage(
        queue=q,
        a=result.source_a,
        b=result.source_b,
        result=result,
        kappas={w: result.kappa(w) for w in WEIGHTS},
        found={FOUND[k]: result.count(k) for k in FOUND},  # type: ignore[arg-type]
        confusion=[(ga, [confusion.get((ga, gb), 0) for gb in grades]) for ga in grades],
        grades=grades,
        worst=worst,
        double=double,
        labelled_twice=twice,
    )


# -- /label/QUEUE/disagreement/ID -------------------------------------------------------------
@dataclass(frozen=True)
class Piece:
    """A stretch of a document: its text and who marked it (``a``, ``b``, ``ab`` or ``""``)."""

    text: str
    who: str
    grades: str


@dataclass(frozen=True)
class DocSide:
    doc: str
    title: str | None
    pieces: list[Piece]
    missing: bool


@dataclass(frozen=True)
class FieldRow:
    name: str
    a: str
    b: str
    same: bool


@dataclass(frozen=True)
class DisagreementPage(TemplateVariables):
    queue: QueueRow
    item: ItemRow
    a: LabelRow | None
    b: LabelRow | None
    resolved: LabelRow | None
    docs: list[DocSide]
    #: each side's spans, one line each: grade, required, document, offsets and text
    spans_a: list[str]
    spans_b: list[str]
    fields: list[FieldRow]
    others: list[str]
    error: str | None


def pieces(
    text: str, a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]
) -> list[Piece]:
    """``text`` cut at every span boundary; each piece says which labeller's spans cover it."""
    n = len(text)
    cuts = {0, n}
    for s in (*a, *b):
        cuts.update(x for x in (int(s["start"]), int(s["end"])) if 0 <= x <= n)
    bounds = sorted(cuts)
    out = []
    for lo, hi in itertools.pairwise(bounds):
        ina = [s for s in a if int(s["start"]) <= lo and hi <= int(s["end"])]
        inb = [s for s in b if int(s["start"]) <= lo and hi <= int(s["end"])]
        who = ("a" if ina else "") + ("b" if inb else "")
        grades = []
        if ina:
            grades.append("A: grade " + "/".join(str(s.get("grade", 1)) for s in ina))
        if inb:
            grades.append("B: grade " + "/".join(str(s.get("grade", 1)) for s in inb))
        out.append(Piece(text[lo:hi], who, "; ".join(grades)))
    return out


def _shown(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "-"
    return str(value)


def span_line(s: Mapping[str, Any]) -> str:
    required = ", required" if s.get("required") else ""
    where = f"{s['doc']} {s['start']}-{s['end']}"
    return (
        f"grade {s.get('grade', 2)}{required} · {where} · “{short(str(s.get('text') or ''), 120)}”"
    )


def two_labels(store: Store, item_id: int) -> tuple[list[LabelRow], LabelRow | None]:
    """The item's labellers' labels (first saved first) and its resolved label."""
    rows = store.labels(item_id=item_id)
    own = sorted((lb for lb in rows if lb.role == "label"), key=lambda lb: (lb.created_at, lb.id))
    resolved = next((lb for lb in rows if lb.role == "resolved"), None)
    return own, resolved


def disagreement_page(
    store: Store, queue: str, item_id: str | int, error: str | None = None
) -> DisagreementPage:
    from ..workflows import labelling

    q = store.queue(queue)
    it = item_of(store, q, item_id)
    own, resolved = two_labels(store, it.id)
    a = own[0] if own else None
    b = own[1] if len(own) > 1 else None
    if a is not None and b is not None and q.kind == "evidence":
        # A and B as the agreement page names them (the workflow's rule, queue-wide)
        side_a = labelling.agreement(store, q.name).source_a or ""
        if b.labeller in side_a.split(", ") and a.labeller not in side_a.split(", "):
            a, b = b, a
    spans_a = list(a.payload.get("spans") or []) if a else []
    spans_b = list(b.payload.get("spans") or []) if b else []
    corpus = labelling.queue_corpus(store, q)
    docs = []
    for doc_id in dict.fromkeys(str(s["doc"]) for s in (*spans_a, *spans_b)):
        doc = corpus.get(doc_id)
        if doc is None:
            docs.append(DocSide(doc_id, None, [], True))
            continue
        docs.append(
            DocSide(
                doc_id,
                doc.title,
                pieces(
                    doc.text,
                    [s for s in spans_a if s["doc"] == doc_id],
                    [s for s in spans_b if s["doc"] == doc_id],
                ),
                False,
            )
        )
    fields = []
    for name in ("answer", "answerable", "slices", "split", "skipped", "note"):
        va = _shown(a.payload.get(name)) if a else "-"
        vb = _shown(b.payload.get(name)) if b else "-"
        fields.append(FieldRow(name, va, vb, va == vb))
    return DisagreementPage(
        queue=q,
        item=it,
        a=a,
        b=b,
        resolved=resolved,
        docs=docs,
        spans_a=[span_line(x) for x in spans_a],
        spans_b=[span_line(x) for x in spans_b],
        fields=fields,
        others=[lb.labeller for lb in own[2:]],
        error=error,
    )


def resolve(
    store: Store, queue: str, item_id: str | int, resolver: str, take: str, revision: str
) -> tuple[int, str | None]:
    """Adjudicate: the item's resolved label becomes labeller ``take``'s label. (HTTP status,
    error)."""
    from ..workflows import labelling

    try:
        q = store.queue(queue)
        it = item_of(store, q, item_id)
        own, _ = two_labels(store, it.id)
        chosen = next((lb for lb in own if lb.labeller == take), None)
        if chosen is None:
            names = ", ".join(repr(lb.labeller) for lb in own) or "nobody yet"
            raise UsageError(f"{take!r} has no label of this question; labelled by {names}")
        rev = expected_revision({"expected_revision": revision})
        labelling.ensure_labeller(store, resolver)
        labelling.adjudicate(store, q.name, it.id, resolver, dict(chosen.payload), rev)
    except RagmeterError as exc:
        status, answer = refusal(exc)
        return status, str(answer["error"])
    return 200, None
