"""Drafting questions from spans against a loopback OpenAI-compatible server: each draft joins
the queue as an unaccepted item whose evidence is its passage (``doc.text[start:end]``) and
whose context records the model and the prompt's sha256; passages picked stratified by
document (a property over generated corpora); NONE adds nothing, a failed request is listed;
a draft is frozen only after a labeller saves it."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from _loopback import running, send_json
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter._errors import InputError, UsageError
from ragmeter.data import Corpus, Document, load_golden
from ragmeter.store import NewItem, Store
from ragmeter.workflows import drafts, labelling

DOCS = [
    Document(id="fees", title="Fees", text="Fees.\nThe change fee is $75 per direction. "
             "A same-day change costs $30. Refunds take seven days."),
    Document(id="bags", title="Bags 行李", text="One checked bag is free. 第二件行李收费四十美元。 "
             "A third bag costs $100."),
    Document(id="pets", title="Pets 🐶", text="Pets 🐶 fly in the cabin for $100. Dogs over 8 kg "
             "travel in the hold. NOTHING here to ask."),
    Document(id="blank", text="   \n  "),
]  # fmt: skip


class Scripted:
    """An OpenAI-compatible server: the reply depends on the passage sent. ``NOTHING`` in it:
    NONE; ``BROKEN``: an empty reply (malformed); else ``Question: "What about <first word>?"``."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.bodies.append(body)
                user = body["messages"][-1]["content"]
                passage = user.split("Passage:\n", 1)[1].rsplit("\n\nThe question:", 1)[0]
                if "BROKEN" in passage:
                    content = "   "
                elif "NOTHING" in passage:
                    content = "NONE"
                else:
                    content = f'Question: "What about {passage.split()[0]}?"\nextra line'
                reply = {"choices": [{"message": {"role": "assistant", "content": content}}],
                         "usage": {"prompt_tokens": 20, "completion_tokens": 6}}  # fmt: skip
                send_json(self, 200, json.dumps(reply).encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)


@contextmanager
def serve() -> Iterator[tuple[str, Scripted]]:
    s = Scripted()
    with running(s.server) as url:
        yield url + "/v1", s


@pytest.fixture
def store(tmp_path: Path) -> Store:
    st_ = Store.open(f"sqlite:///{tmp_path / 'store.db'}")
    st_.create_queue("q", kind="evidence", corpus=Corpus(DOCS), items=[], source="test")
    return st_


def test_a_span_becomes_an_unaccepted_draft_with_its_evidence(store: Store) -> None:
    text = DOCS[1].text
    start = text.index("第二件")
    span = drafts.DraftSpan("bags", start, start + len("第二件行李收费四十美元。"))
    with serve() as (url, srv):
        done = drafts.draft_questions(store, "q", base_url=url, model="m-1", spans=[span])
    assert [o.question for o in done.added] == ["What about 第二件行李收费四十美元。?"]
    (body,) = srv.bodies
    assert body["model"] == "m-1" and body["temperature"] == 0
    assert body["messages"][0]["content"] == drafts.DRAFT_PROMPT
    assert "passage alone answers" in body["messages"][0]["content"]
    assert "第二件行李收费四十美元。" in body["messages"][1]["content"]
    (item,) = store.items("q")
    assert item.origin == "drafted" and item.accepted is False and item.qid == span.qid
    assert item.question == "What about 第二件行李收费四十美元。?"
    (ev,) = item.prefill["spans"]
    assert (ev["doc"], ev["grade"], ev["required"]) == ("bags", 2, True)
    assert ev["text"] == text[ev["start"] : ev["end"]] == "第二件行李收费四十美元。"
    assert item.prefill["question"] == item.question
    made = item.context["drafted"]
    assert made["model"] == "m-1" and made["base_url"] == url
    assert made["prompt"] == {"id": drafts.DRAFT_PROMPT_ID, "sha256": drafts.prompt_sha256()}
    assert len(made["prompt"]["sha256"]) == 64
    # the same span again is refused, naming it
    with serve() as (url, _), pytest.raises(UsageError, match="already holds a draft of bags:"):
        drafts.draft_questions(store, "q", base_url=url, model="m-1", spans=[span])


def test_a_draft_is_frozen_only_after_a_labeller_saves_it(store: Store, tmp_path: Path) -> None:
    with serve() as (url, _):
        done = drafts.draft_questions(store, "q", base_url=url, model="m", n=2, seed=1)
    first, second = store.items("q")
    assert [o.item for o in done.added] == [first.id, second.id]
    finals = {it.qid: s for it, s, _ in labelling.final_labels(store, "q")}
    assert set(finals.values()) == {"unlabelled"}
    labelling.ensure_labeller(store, "ana")
    # saving the pre-fill as it is accepts the draft (the labeller edits the question here)
    label = {**first.prefill, "question": "How much is it, edited?"}
    labelling.save(store, "q", first.id, "ana", label, 0)
    assert store.item(first.id).accepted
    # a skip does not accept the other one
    labelling.save(store, "q", second.id, "ana", {"skipped": True}, 0)
    assert not store.item(second.id).accepted
    frozen = labelling.freeze_queue(store, "q", tmp_path / "v1")
    assert frozen.questions == 1 and frozen.left_out == {"skipped": 1}
    (q,) = list(load_golden(frozen.golden))
    assert q.id == first.qid and q.question == "How much is it, edited?"
    (e,) = q.evidence
    doc = next(d for d in DOCS if d.id == e.doc)
    assert doc.text[e.start : e.end] == first.prefill["spans"][0]["text"] and e.grade == 2


def test_picked_passages_are_stratified_and_never_picked_twice(store: Store) -> None:
    with serve() as (url, srv):
        first = drafts.draft_questions(store, "q", base_url=url, model="m", n=3, seed=7)
        # three documents with text: one passage from each (the blank one has none)
        assert Counter(o.span.doc for o in first.outcomes) == {"fees": 1, "bags": 1, "pets": 1}
        again = drafts.draft_questions(store, "q", base_url=url, model="m", n=50, seed=7)
    spans = [o.span for o in (*first.outcomes, *again.outcomes)]
    assert len(spans) == len(set(spans))  # nothing drafted twice
    corpus = Corpus(DOCS)
    for s in spans:
        t = corpus[s.doc].text[s.start : s.end]
        assert t == t.strip() and t
    # the same seed picks the same passages
    fresh = Corpus(DOCS)
    assert drafts.pick_passages(fresh, 3, 7) == [o.span for o in first.outcomes]
    assert len(srv.bodies) == len(spans)


def test_none_adds_nothing_and_a_failure_is_listed(store: Store) -> None:
    pets = DOCS[2].text
    nothing = pets.index("NOTHING")
    spans = [drafts.DraftSpan("pets", nothing, len(pets)), drafts.DraftSpan("fees", 6, 40)]
    broken = Document(id="broken", text="BROKEN reply here.")
    store.create_queue("b", kind="evidence", corpus=Corpus([*DOCS, broken]), items=[])
    with serve() as (url, _):
        done = drafts.draft_questions(store, "q", base_url=url, model="m", spans=spans)
        assert [o.span.doc for o in done.declined] == ["pets"]
        assert [o.span.doc for o in done.added] == ["fees"]
        bad = drafts.draft_questions(
            store, "b", base_url=url, model="m", max_retries=0,
            spans=[drafts.DraftSpan("broken", 0, 6), drafts.DraftSpan("fees", 6, 40)],
        )  # fmt: skip
    assert [o.span.doc for o in bad.failed] == ["broken"]
    assert "malformed reply" in (bad.failed[0].error or "")
    assert [it.qid for it in store.items("b")] == [drafts.DraftSpan("fees", 6, 40).qid]
    assert bad.to_dict()["failed"] == 1 and bad.to_dict()["usage"]["failures"] == 1


def test_bad_requests_are_refused_before_anything_is_sent(store: Store) -> None:
    store.create_queue("ans", kind="answers", corpus=Corpus(DOCS), items=[])
    with serve() as (url, srv):
        with pytest.raises(InputError) as err:
            drafts.draft_questions(store, "q", base_url=url, model="m", spans=[
                drafts.DraftSpan("nope", 0, 3), drafts.DraftSpan("fees", 5, 500),
                drafts.DraftSpan("blank", 0, 3)])  # fmt: skip
        text = str(err.value)
        assert "3 problem(s) in --span" in text and "'nope'" in text
        assert "0 <= START < END <= 96" in text or "out of range" in text
        assert "only whitespace" in text
        with pytest.raises(UsageError, match="drafts go into an evidence queue"):
            drafts.draft_questions(store, "ans", base_url=url, model="m", n=1)
        with pytest.raises(UsageError, match=r"--span.*-n"):
            drafts.draft_questions(store, "q", base_url=url, model="m")
        with pytest.raises(UsageError, match="base URL"):
            drafts.draft_questions(store, "q", base_url="ftp://x", model="m", n=1)
        dry = drafts.draft_questions(store, "q", base_url=url, model="m", n=2, dry_run=True)
        assert len(dry.outcomes) == 2 and dry.to_dict()["dry_run"] is True
        assert srv.bodies == [] and store.items("q") == []


def test_a_url_with_credentials_is_refused(store: Store) -> None:
    with serve() as (url, srv), pytest.raises(UsageError, match="user:password"):
        drafts.draft_questions(
            store, "q", base_url=url.replace("//", "//u:s3cret@"), model="m", n=1
        )
    assert srv.bodies == [] and store.items("q") == []


def test_span_syntax() -> None:
    assert drafts.parse_span("a:b:1:5") == drafts.DraftSpan("a:b", 1, 5)
    for bad in ("doc", "doc:1", ":1:2", "doc:x:2", "doc:-1:2"):
        with pytest.raises(UsageError, match="DOC:START:END"):
            drafts.parse_span(bad)


@pytest.mark.parametrize(
    ("reply", "question"),
    [("What is it?", "What is it?"), ('Question: "Why?"\nmore', "Why?"), ("q. «Où ?»", "Où ?"),
     ("NONE", None), ("none.", None)],
)  # fmt: skip
def test_reply_reading(reply: str, question: str | None) -> None:
    assert drafts.read_reply(reply) == question


def test_reply_reading_refuses_empty_and_long() -> None:
    for bad in ("", "  \n ", '""', "x" * (drafts.MAX_QUESTION + 1)):
        with pytest.raises(ValueError):
            drafts.read_reply(bad)


_words = st.text(alphabet="abcdéf行🐶 ", min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(st.lists(_words, min_size=1, max_size=6), min_size=1, max_size=5),
    n=st.integers(1, 30),
    seed=st.integers(0, 2**16),
)
def test_picking_is_stratified_by_document(docs: list[list[str]], n: int, seed: int) -> None:
    corpus = Corpus([Document(id=f"d{i}", text=". ".join(s) + ".") for i, s in enumerate(docs)])
    picked = drafts.pick_passages(corpus, n, seed)
    assert picked == drafts.pick_passages(corpus, n, seed)  # seeded
    assert len(picked) == len(set(picked)) <= n
    pool = {d: len(drafts.pick_passages(Corpus([corpus[d]]), 10_000, 0)) for d in corpus.ids}
    assert len(picked) == min(n, sum(pool.values()))
    per = Counter(s.doc for s in picked)
    # a document gives another passage only when every document with passages left gave one
    for d in pool:
        for e in pool:
            if per[d] > per[e] + 1:
                assert per[e] == pool[e]
    for s in picked:
        t = corpus[s.doc].text[s.start : s.end]
        assert t and t == t.strip()


def test_items_of_other_origins_stay_as_they_are(store: Store) -> None:
    store.add_items("q", [NewItem(qid="w1", question="Written?", origin="written")])
    with serve() as (url, _):
        drafts.draft_questions(store, "q", base_url=url, model="m", n=1)
    written, drafted = store.items("q")
    assert (written.qid, written.origin, written.accepted) == ("w1", "written", True)
    assert (drafted.origin, drafted.accepted) == ("drafted", False)
