"""Draft questions from spans (docs/labelling.md, "Drafting questions"): an OpenAI-compatible
generator writes one question answerable from a passage alone; the question joins an evidence
queue as a *draft* whose evidence is that passage.

- **passages**: the spans given (``doc``, ``start``, ``end``: code-point offsets into
  ``doc.text``), or ``n`` passages picked from the queue's corpus, **stratified by document**:
  the documents in a seeded random order, one passage from each in turn (a document gives a
  second passage only after every document gave one), each passage a random one of the
  document's ``sentences:2`` chunks (:data:`DRAFT_PASSAGES`), whitespace trimmed from its
  edges. A passage a draft of this queue already holds is never picked again.
- **a draft**: an item of ``origin="drafted"``, ``accepted=False``, whose pre-fill is the
  passage as its evidence (grade 2, required) and the drafted question; its context records the
  model, the server, the prompt's id and sha256 and the span. Its question id is ``d-`` and 12
  hex digits of ``sha256("DOC:START:END")``: drafting one span twice is refused. A draft
  enters a frozen version only once a labeller saved a label of it (accepting it, or editing
  the question or the spans): ``labelling.final_labels`` leaves unaccepted drafts out.
- **the reply**: the first non-empty line, a leading ``Question:`` and enclosing quotes removed;
  at most :data:`MAX_QUESTION` characters, else it is malformed (retried like a transport
  fault). ``NONE`` means the passage supports no question: nothing is added for it.

Nothing is sent without a base URL and a model (``dry_run`` sends nothing at all): this is the
only job of the workbench that calls a model.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from os import PathLike
from typing import TYPE_CHECKING, Any

from .._errors import Problem, UsageError, ValidationError

if TYPE_CHECKING:  # pragma: no cover
    from ..chat import ChatUsage
    from ..data import Corpus
    from ..store import ItemRow, QueueRow, Store

__all__ = [
    "DRAFT_PASSAGES",
    "DRAFT_PROMPT",
    "DRAFT_PROMPT_ID",
    "MAX_QUESTION",
    "DraftSpan",
    "Drafted",
    "draft_questions",
    "parse_span",
    "pick_passages",
    "prompt_sha256",
    "read_reply",
]

#: the passages drafts are written from, when ragmeter picks them
DRAFT_PASSAGES = "sentences:2"
#: the longest question a reply may hold (characters)
MAX_QUESTION = 400
#: the prompt's id, recorded with every draft (a new wording gets a new id)
DRAFT_PROMPT_ID = "draft-question.v1"
#: the system message; the user message is the document's title and the passage
DRAFT_PROMPT = (
    "You write questions for a test set of a search system. You are given one passage of a "
    "document. Write ONE question that a user could ask and that the passage alone answers: "
    "the answer must be stated in the passage, not in general knowledge, and the question must "
    "make sense without seeing the passage (name the thing it asks about; never say 'the "
    "passage' or 'the text'). Write it in the passage's language. Reply with the question only, "
    "on one line. If the passage states nothing a question could ask about, reply NONE."
)
#: sent with every request: a short, repeatable reply
PARAMS: Mapping[str, Any] = {"temperature": 0, "max_tokens": 128}
_PREFIX = re.compile(r"^\s*(?:question|q)\s*[:.\-]\s*", re.IGNORECASE)
_QUOTES = "\"'“”‘’«»`"


def prompt_sha256() -> str:
    """sha256 of the prompt (its system message and the user message's template)."""
    return hashlib.sha256(
        (DRAFT_PROMPT + "\n\n" + _user("{title}", "{passage}")).encode()
    ).hexdigest()


def _user(title: str, passage: str) -> str:
    return f"Document: {title}\n\nPassage:\n{passage}\n\nThe question:"


@dataclass(frozen=True)
class DraftSpan:
    """A passage to draft from: code-point offsets into ``doc.text``."""

    doc: str
    start: int
    end: int

    @property
    def qid(self) -> str:
        key = f"{self.doc}:{self.start}:{self.end}"
        return "d-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]

    def to_dict(self) -> dict[str, Any]:
        return {"doc": self.doc, "start": self.start, "end": self.end}


def parse_span(text: str) -> DraftSpan:
    """``DOC:START:END`` (the document id may hold colons: the last two fields are offsets)."""
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[0] or not all(p.strip().isdigit() for p in parts[1:]):
        raise UsageError(
            f"a span is DOC:START:END with START and END code-point offsets into the "
            f"document's text (e.g. fees-2024:120:310); got {text!r}"
        )
    return DraftSpan(parts[0], int(parts[1]), int(parts[2]))


def read_reply(content: str) -> str | None:
    """The question a reply holds (None: the model said NONE); ValueError when it holds none."""
    lines = [x.strip() for x in content.strip().splitlines() if x.strip()]
    if not lines:
        raise ValueError("the reply is empty")
    line = _PREFIX.sub("", lines[0]).strip()
    while len(line) >= 2 and line[0] in _QUOTES and line[-1] in _QUOTES:
        line = line[1:-1].strip()
    if line.rstrip(".").upper() == "NONE":
        return None
    if not line:
        raise ValueError("the reply holds no question")
    if len(line) > MAX_QUESTION:
        raise ValueError(f"the question is {len(line)} characters (at most {MAX_QUESTION})")
    return line


@dataclass(frozen=True)
class DraftOutcome:
    """One passage's draft: its question (None when the model found none, or the request
    failed: ``error``) and the item added."""

    span: DraftSpan
    text: str
    question: str | None = None
    error: str | None = None
    item: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.span.to_dict(),
            "qid": self.span.qid,
            "passage": self.text,
            "question": self.question,
            "error": self.error,
            "item": self.item,
        }


@dataclass(frozen=True)
class Drafted:
    """What drafting did: each passage's outcome, the model and prompt, the usage."""

    queue: str
    model: str
    base_url: str
    prompt_id: str
    prompt_sha256: str
    outcomes: list[DraftOutcome]
    dry_run: bool = False
    usage: Mapping[str, Any] = field(default_factory=dict)

    @property
    def added(self) -> list[DraftOutcome]:
        return [o for o in self.outcomes if o.item is not None]

    @property
    def failed(self) -> list[DraftOutcome]:
        return [o for o in self.outcomes if o.error is not None]

    @property
    def declined(self) -> list[DraftOutcome]:
        """Passages the model found no question in."""
        return [
            o for o in self.outcomes if o.question is None and o.error is None and not self.dry_run
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "queue": self.queue,
            "model": self.model,
            "base_url": self.base_url,
            "prompt": {"id": self.prompt_id, "sha256": self.prompt_sha256},
            "dry_run": self.dry_run,
            "added": len(self.added),
            "declined": len(self.declined),
            "failed": len(self.failed),
            "drafts": [o.to_dict() for o in self.outcomes],
            "usage": dict(self.usage),
        }


def _drafted_spans(items: Sequence[ItemRow]) -> set[DraftSpan]:
    out = set()
    for it in items:
        span = (it.context.get("drafted") or {}).get("span") if it.context else None
        if isinstance(span, Mapping):
            out.add(DraftSpan(str(span["doc"]), int(span["start"]), int(span["end"])))
    return out


def _checked(spans: Sequence[DraftSpan], corpus: Corpus, queue: str) -> list[DraftSpan]:
    problems = []
    for i, s in enumerate(spans):
        where = f"span {i + 1} ({s.doc}:{s.start}:{s.end})"
        doc = corpus.get(s.doc)
        if doc is None:
            what = f"document {s.doc!r} is not in the corpus of queue {queue!r}"
            problems.append(Problem(what, field=where))
        elif not 0 <= s.start < s.end <= len(doc.text):
            size = len(doc.text)
            what = (
                f"offsets {s.start}-{s.end} are out of range: 0 <= START < END <= {size} "
                f"(document {s.doc!r} has {size} characters)"
            )
            problems.append(Problem(what, field=where))
        elif not doc.text[s.start : s.end].strip():
            problems.append(Problem("the span is only whitespace", field=where))
    if problems:
        raise ValidationError(problems, what="--span")
    return list(dict.fromkeys(spans))


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def pick_passages(
    corpus: Corpus,
    n: int,
    seed: int,
    *,
    exclude: Set[DraftSpan] = frozenset(),
    passages: str = DRAFT_PASSAGES,
) -> list[DraftSpan]:
    """``n`` passages stratified by document (module docstring); fewer when the corpus has
    fewer passages left."""
    from ..chunking import chunk_corpus

    chunks = chunk_corpus(corpus, passages)
    by_doc: dict[str, list[DraftSpan]] = {}
    for doc_id, start, end in zip(chunks.doc, chunks.start, chunks.end, strict=True):
        text = corpus[doc_id].text
        lo, hi = _trimmed(text, int(start), int(end))
        span = DraftSpan(doc_id, lo, hi)
        if hi > lo and span not in exclude:
            by_doc.setdefault(doc_id, []).append(span)
    rng = random.Random(seed)
    order = sorted(by_doc)
    rng.shuffle(order)
    pools = {d: rng.sample(by_doc[d], len(by_doc[d])) for d in order}
    out: list[DraftSpan] = []
    while len(out) < n and any(pools.values()):
        for d in order:
            if pools[d] and len(out) < n:
                out.append(pools[d].pop())
    return out


def draft_questions(
    store: Store,
    queue: str | int,
    *,
    base_url: str,
    model: str,
    spans: Sequence[DraftSpan] | None = None,
    n: int | None = None,
    seed: int = 0,
    api_key_env: str | None = None,
    timeout: float = 60.0,
    max_retries: int = 3,
    concurrency: int = 4,
    cache_dir: str | PathLike[str] | None = None,
    dry_run: bool = False,
) -> Drafted:
    """Draft one question per passage and add each as a draft item of the evidence queue
    ``queue`` (module docstring). Give ``spans``, or ``n`` (and ``seed``) to let ragmeter pick
    passages. ``dry_run``: pick and return the passages, send nothing, add nothing."""
    from ..chat import ChatClient
    from ..store import NewItem
    from .labelling import is_double, queue_corpus

    q: QueueRow = store.queue(queue)
    if q.kind != "evidence":
        raise UsageError(f"queue {q.name!r} reviews answers: drafts go into an evidence queue")
    if (spans is None) == (n is None):
        raise UsageError("give the spans to draft from (--span) or how many passages to pick (-n)")
    if n is not None and not 1 <= n <= 10_000:
        raise UsageError(f"-n is how many passages to draft from, 1 to 10000; got {n}")
    # the client checks the URL, model and key before anything is read or picked
    client = ChatClient(
        base_url=base_url,
        model=model,
        api_key_env=None if dry_run else api_key_env,
        params=PARAMS,
        timeout=timeout,
        max_retries=max_retries,
        concurrency=concurrency,
        cache_dir=cache_dir,
        role="question drafter",
        cli_prefix="--",
    )
    server = client.base_url  # (the client refuses a user:password in it: no key is stored)
    corpus = queue_corpus(store, q)
    items = store.items(q.id)
    done = _drafted_spans(items)
    if spans is not None:
        chosen = _checked(spans, corpus, q.name)
        again = [s for s in chosen if s in done or s.qid in {it.qid for it in items}]
        if again:
            shown = ", ".join(f"{s.doc}:{s.start}:{s.end}" for s in again[:10])
            raise UsageError(f"queue {q.name!r} already holds a draft of {shown}")
    else:
        assert n is not None
        chosen = pick_passages(corpus, n, seed, exclude=done)
        if not chosen:
            raise UsageError(f"queue {q.name!r}'s corpus has no passage left to draft from")
    texts = [corpus[s.doc].text[s.start : s.end] for s in chosen]
    sha = prompt_sha256()
    if dry_run:
        outcomes = [DraftOutcome(s, t) for s, t in zip(chosen, texts, strict=True)]
        return Drafted(q.name, model, server, DRAFT_PROMPT_ID, sha, outcomes, True)
    batch = [
        [
            {"role": "system", "content": DRAFT_PROMPT},
            {"role": "user", "content": _user(corpus[s.doc].title or s.doc, t)},
        ]
        for s, t in zip(chosen, texts, strict=True)
    ]
    replies = client.complete_many(batch, check=read_reply)
    new: list[NewItem] = []
    outcomes = []
    for s, t, r in zip(chosen, texts, replies, strict=True):
        if not r.ok:
            outcomes.append(DraftOutcome(s, t, error=r.error or "failed"))
            continue
        question: str | None = r.value
        outcomes.append(DraftOutcome(s, t, question=question))
        if question is None:
            continue
        new.append(
            NewItem(
                qid=s.qid,
                question=question,
                origin="drafted",
                accepted=False,
                double=is_double(s.qid, q.seed, q.double_share),
                context={
                    "drafted": {
                        "model": model,
                        "base_url": server,
                        "prompt": {"id": DRAFT_PROMPT_ID, "sha256": sha},
                        "span": {**s.to_dict(), "text": t},
                    }
                },
                prefill={
                    "spans": [{**s.to_dict(), "grade": 2, "required": True, "text": t}],
                    "answerable": True,
                    "question": question,
                },
            )
        )
    added = {it.qid: it.id for it in store.add_items(q.id, new)} if new else {}
    outcomes = [
        DraftOutcome(o.span, o.text, o.question, o.error, added.get(o.span.qid))
        if o.question is not None
        else o
        for o in outcomes
    ]
    return Drafted(
        q.name, model, server, DRAFT_PROMPT_ID, sha, outcomes, False, _usage(client.usage)
    )


def _usage(usage: ChatUsage) -> dict[str, Any]:
    return dict(usage.to_dict())
