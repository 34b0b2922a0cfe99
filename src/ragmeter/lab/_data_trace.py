"""The trace view's model: one question's answer as it was made, read from the stored answer
set (``ragmeter run`` stores a generating variant's answers with its run; ``answers check
--db`` stores a file's): the prompt as sent (the chat messages, for runs that recorded them),
the context the model read in its order with the passage headers, the answer, its citations
resolved to the passages and checked, the tokens, time and cost the backend reported, and the
judge's verdicts with their reasons. Two sides (``vs``) are shown side by side.

Answer sets stored before ragmeter recorded the prompt as sent (and those of ``answers check``,
whose answers file holds no prompt) have the context the model read, not the messages: the
page says so instead of showing a prompt nobody recorded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._errors import NotFoundError
from ._views import TemplateVariables

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Store, StoredAnswerSet

#: a passage header inside an assembled context: ``[2] doc-id (chars 120-480)``
HEADER = re.compile(r"^\[(\d+)\] (.+)$", re.MULTILINE)

NOT_RECORDED = (
    "The prompt as sent was not recorded for this answer set (it was stored before ragmeter "
    "kept the chat messages, or by `answers check`, whose answers file holds none); the context "
    "the model read is shown as it was recorded"
)


@dataclass(frozen=True)
class Passage:
    """One passage of the prompt's context, in prompt order."""

    number: int
    id: str
    header: str | None
    text: str
    cited: bool


@dataclass(frozen=True)
class TraceCitation:
    """One citation of the answer, resolved to the prompt's passage it names."""

    label: str
    number: int | None  # its passage's number in the prompt (None: not in the prompt)


@dataclass(frozen=True)
class Verdict:
    """A judge's verdict on the answer for one metric."""

    metric: str
    label: str | None
    score: float | None
    ok: bool
    error: str | None
    reason: str | None
    judge: str | None


@dataclass(frozen=True)
class TraceSide:
    """One answer's trace."""

    set_id: int
    run_id: int | None
    variant: str
    answer: str | None
    abstained: bool | None
    messages: list[dict[str, str]] | None
    #: why ``messages`` is None (else None)
    no_prompt: str | None
    passages: list[Passage]
    context_text: str | None
    citations: list[TraceCitation]
    check: Mapping[str, Any] | None
    quotes: list[Mapping[str, Any]]
    verdicts: list[Verdict]
    #: tokens, seconds, cost, cache: (label, value) pairs, only those recorded
    usage: list[tuple[str, str]]
    generator: str | None
    prompt: str | None
    error: str | None


@dataclass(frozen=True)
class TracePage(TemplateVariables):
    """Everything ``trace.html`` shows."""

    qid: str
    question: str | None
    reference: str | None
    sides: list[TraceSide]
    choices: list[tuple[int, str]] = field(default_factory=list)
    error: str | None = None


def answer_set_of(store: Store, run: int | None, answers: int | None) -> StoredAnswerSet:
    """The stored answer set ``answers``, else the newest one stored with run ``run``."""
    if answers is not None:
        return store.answer_set(answers)
    if run is None:
        raise NotFoundError("name a run (run=ID) or an answer set (answers=ID)")
    for a in store.answer_sets():  # newest first
        if a.run_id == run:
            return store.answer_set(a.id)
    raise NotFoundError(
        f"run {run} has no stored answers: a run of an experiment with a [generator] stores "
        "its answers, or record a file of answers with `ragmeter answers check ... --db`"
    )


def _passages(row: Mapping[str, Any], cited: set[str]) -> list[Passage]:
    """The context's passages in prompt order: the ids the answer records, each with its
    header and text cut from the recorded context text where the headers mark them."""
    ids = [str(x) for x in row.get("context") or []]
    text = row.get("context_text")
    parts: dict[int, tuple[str, str]] = {}
    if isinstance(text, str):
        heads = list(HEADER.finditer(text))
        for i, h in enumerate(heads):
            end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
            parts[int(h.group(1))] = (h.group(0), text[h.end() : end].strip("\n"))
    out = []
    for n, pid in enumerate(ids, 1):
        header, body = parts.get(n, (None, ""))
        out.append(Passage(n, pid, header, body, pid in cited))
    return out


def _usage(gen: Mapping[str, Any]) -> list[tuple[str, str]]:
    found = gen.get("usage")
    usage: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    shown: list[tuple[str, str]] = []
    for key, label in (
        ("prompt_tokens", "prompt tokens"),
        ("completion_tokens", "completion tokens"),
        ("total_tokens", "total tokens"),
    ):
        if isinstance(usage.get(key), int | float):
            shown.append((label, f"{usage[key]:,}"))
    if isinstance(gen.get("seconds"), int | float):
        shown.append(("latency", f"{gen['seconds']:.3f} s"))
    if isinstance(usage.get("cost_usd"), int | float):
        shown.append(("cost", f"${usage['cost_usd']:.6f}"))
    if gen.get("cached") is True:
        shown.append(("cache", "answered from the cache (no model call in this run)"))
    return shown


def _verdicts(row: Mapping[str, Any], check: Mapping[str, Any] | None) -> list[Verdict]:
    """The judge's verdicts: from the check's report (with their reasons), else the answer."""
    judged = (check or {}).get("judged") or row.get("judged") or {}
    out = []
    for metric, j in judged.items():
        if not isinstance(j, Mapping):
            continue
        found = j.get("detail")
        detail: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        judge = j.get("judge")
        out.append(
            Verdict(
                metric=str(metric),
                label=j.get("label"),
                score=j.get("score"),
                ok=bool(j.get("ok")),
                error=j.get("error"),
                reason=None if detail.get("reason") is None else str(detail["reason"]),
                judge=judge.get("name") if isinstance(judge, Mapping) else judge,
            )
        )
    return out


def trace_side(a: StoredAnswerSet, qid: str) -> TraceSide:
    """The trace of question ``qid`` in answer set ``a`` (NotFoundError when it has none)."""
    row = next((x for x in a.answers if x.get("id") == qid), None)
    if row is None:
        raise NotFoundError(f"answer set {a.id} ({a.name}) has no answer to question {qid!r}")
    check = next((x for x in a.report.get("answers", []) if x.get("id") == qid), None)
    ids = [str(x) for x in row.get("context") or []]
    cites = []
    cited: set[str] = set()
    for c in row.get("citations") or []:
        if not isinstance(c, Mapping):
            continue
        if c.get("chunk") is not None:
            label = str(c["chunk"])
            number = ids.index(label) + 1 if label in ids else None
        else:
            label = f"{c.get('doc')}:{c.get('start')}-{c.get('end')}"
            number = next(
                (i for i, pid in enumerate(ids, 1) if pid.split("#")[0] == c.get("doc")), None
            )
        if number is not None:
            cited.add(ids[number - 1])
        cites.append(TraceCitation(label, number))
    gen = row.get("generation") if isinstance(row.get("generation"), Mapping) else None
    messages = None if gen is None else gen.get("messages")
    faith = (check or {}).get("faithfulness") or {}
    return TraceSide(
        set_id=a.id,
        run_id=a.run_id,
        variant=a.name,
        answer=row.get("answer"),
        abstained=row.get("abstained"),
        messages=[dict(m) for m in messages] if isinstance(messages, list) else None,
        no_prompt=None if isinstance(messages, list) else NOT_RECORDED,
        passages=_passages(row, cited),
        context_text=row.get("context_text"),
        citations=cites,
        check=check,
        quotes=list(faith.get("quotes") or []) if isinstance(faith, Mapping) else [],
        verdicts=_verdicts(row, check),
        usage=[] if gen is None else _usage(gen),
        generator=None if gen is None else gen.get("generator"),
        prompt=None if gen is None else gen.get("prompt"),
        error=None if gen is None else gen.get("error"),
    )


def trace_context(
    store: Store,
    qid: str,
    *,
    run: int | None = None,
    answers: int | None = None,
    vs: int | None = None,
    vs_answers: int | None = None,
) -> TracePage:
    """Question ``qid``'s trace in one answer set (``run``'s newest, or ``answers``), beside
    another's (``vs`` a run, ``vs_answers`` a set) when named."""
    first = answer_set_of(store, run, answers)
    sides = [trace_side(first, qid)]
    if vs is not None or vs_answers is not None:
        sides.append(trace_side(answer_set_of(store, vs, vs_answers), qid))
    question = reference = None
    version = first.golden_version
    if version is not None:
        try:
            q = store.golden(version).by_id.get(qid)
        except NotFoundError:
            q = None
        if q is not None:
            question, reference = q.question, q.answer
    choices = [
        (s.run_id, f"run {s.run_id}: {s.name}")
        for s in store.answer_sets(golden_version=version)
        if s.run_id is not None
    ]
    return TracePage(qid, question, reference, sides, list(dict.fromkeys(choices)))
