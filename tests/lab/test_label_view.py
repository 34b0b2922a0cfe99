"""The label views over HTTP (ASGI test client): the queue list, the label page, documents and
search as JSON, saves with revisions (409 on an edit conflict, never an overwrite), deletes,
the agreement page (the numbers ``ragmeter golden agree`` prints on the exported files), one
question's disagreement and its adjudication. Question and document text from the hostile
fixture prints escaped on every page."""

from __future__ import annotations

import getpass
import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# justified: the lab is the optional [web] extra; the test extra installs it
pytest.importorskip("fastapi")  # justified: the lab is the [web] extra
pytest.importorskip("httpx")  # justified: the [test] extra's HTTP client

from fastapi.testclient import TestClient

from ragmeter.data import Corpus, Document, load_corpus
from ragmeter.lab import create_app
from ragmeter.store import NewItem, Store

XSS = Path(__file__).parents[1] / "fixtures" / "xss"
HOSTILE = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "</script><script>")

#: documents whose spans must round-trip exactly: ASCII, accents, CJK, emoji (a ZWJ family and
#: a variation selector), a CR LF and a selection across a newline
DOCS = [
    Document(id="ascii", title="Change fees", text="Change fees.\nThe change fee is seventy "
             "five dollars for a Standard fare. Refunds take seven days."),
    Document(id="accented", title="Tarifs café", text="Tarifs de l'aéroport. Le café coûte "
             "deux euros à l'aéroport; les crêpes coûtent cinq euros."),
    Document(id="cjk", title="Baggage 行李", text="Baggage rules 行李规定。每位乘客可以免费托运"
             "一件行李，第二件行李收费四十美元。"),
    Document(id="emoji", title="Pets 🐶", text="Pets 🐶 fly in the cabin 🐱 for 100 dollars ✈️ "
             "each way. Family 👨\u200d👩\u200d👧 seats are free."),
    Document(id="lines", title="Seat rules", text="\nSeat rules.\r\nA seat on the exit row\n"
             "costs twelve dollars.\n\nOther seats are free."),
]  # fmt: skip
#: (question id, question, document, the evidence to select)
CASES = [
    ("q-ascii", "What is the change fee?", "ascii", "seventy five dollars"),
    ("q-accent", "Combien coûte le café à l'aéroport ?", "accented", "café coûte deux euros"),
    ("q-cjk", "Baggage: 第二件行李多少钱？", "cjk", "第二件行李收费四十美元"),
    ("q-emoji", "What does a pet cost in the cabin?", "emoji", "🐱 for 100 dollars ✈️"),
    ("q-lines", "What does an exit row seat cost?", "lines", "exit row\ncosts twelve dollars"),
]
#: questions two labellers label
DOUBLE = {"q-ascii", "q-accent", "q-cjk"}
XSS_QUESTION = "What is the change fee? <script>alert(1)</script>"


def corpus() -> Corpus:
    return Corpus([*DOCS, *load_corpus(XSS / "corpus.jsonl")])


def make_queue(store: Store, name: str = "fees", *, hostile: bool = True) -> list[int]:
    """The test queue: the five cases, then the hostile question; its item ids in order."""
    items = [NewItem(qid=q, question=text, double=q in DOUBLE) for q, text, _, _ in CASES]
    if hostile:
        logged = {  # what the application retrieved and answered: context, never a label
            "retrieved": [
                {"id": "doc-script", "content": HOSTILE[2] + " logged passage", "score": 1.5},
                {"id": "gone", "content": "a passage of a document not in this corpus"},
            ],
            "answer": HOSTILE[1] + " logged answer",
        }
        items.append(
            NewItem(qid="q-xss", question=XSS_QUESTION, double=True, context={"logged": logged})
        )
    store.create_queue(name, kind="evidence", corpus=corpus(), items=items, source="test")
    return [it.id for it in store.items(name)]


def span(doc_id: str, quote: str, grade: int = 2, required: bool = True) -> dict[str, Any]:
    text = next(d.text for d in corpus() if d.id == doc_id)
    start = text.index(quote)
    return {"doc": doc_id, "start": start, "end": start + len(quote), "grade": grade,
            "required": required, "text": quote}  # fmt: skip


def payload(*spans: dict[str, Any], **fields: Any) -> dict[str, Any]:
    out = {"spans": list(spans), "answer": None, "answerable": True, "slices": [],
           "split": None, "skipped": False, "note": None}  # fmt: skip
    out.update(fields)
    return out


@pytest.fixture
def lab(store_url: str, tmp_path: Path) -> Iterator[tuple[TestClient, Store, list[int]]]:
    """The test queue in a fresh store (SQLite, then PostgreSQL when a server is configured),
    and a client of the lab whose loopback labeller is ann."""
    store = Store.open(store_url, migrate=True)
    ids = make_queue(store)
    client = TestClient(
        create_app(store=store, root=tmp_path, labeller="ann"), base_url="http://127.0.0.1"
    )
    client.get("/label")  # the CSRF cookie
    yield client, store, ids
    store.close()


def token(client: TestClient) -> str:
    value = client.cookies.get("ragmeter_csrf")
    assert value
    return value


JSON = {"Accept": "application/json"}  # as label.js asks: JSON, not the page


def post(client: TestClient, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, json=body, headers={"X-CSRF-Token": token(client)})


def test_the_queue_list_and_the_next_question(lab: tuple[TestClient, Store, list[int]]) -> None:
    client, _, ids = lab
    page = client.get("/label")
    assert page.status_code == 200
    assert 'href="/label"' in page.text and ">Label</a>" in page.text  # in the nav
    assert 'href="/label/fees"' in page.text and "ann" in page.text
    r = client.get("/label/fees", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/label/fees/item/{ids[0]}"
    # "next" from the first question (not labelled) moves on, never back to it
    r = client.get(f"/label/fees?after={ids[0]}", follow_redirects=False)
    assert r.headers["location"] == f"/label/fees/item/{ids[1]}"
    assert client.get("/label/nope").status_code == 404


def test_the_label_page_loads_the_saved_label(lab: tuple[TestClient, Store, list[int]]) -> None:
    client, _, ids = lab
    page = client.get(f"/label/fees/item/{ids[0]}")
    assert page.status_code == 200
    assert "What is the change fee?" in page.text
    assert '<script src="/static/label.js"' in page.text
    for key in ("<kbd>1</kbd>", "<kbd>r</kbd>", "<kbd>s</kbd>", "<kbd>n</kbd>", "<kbd>k</kbd>"):
        assert key in page.text  # the shortcuts are on the page
    data = json.loads(re.search(r'id="label-data">(.*?)</script>', page.text, re.S)[1])  # type: ignore[index]
    assert data["label"] is None and data["labeller"] == "ann"
    body = {"payload": payload(span("ascii", "seventy five dollars")), "expected_revision": 0}
    assert post(client, f"/label/fees/item/{ids[0]}", body).status_code == 200
    page = client.get(f"/label/fees/item/{ids[0]}")
    data = json.loads(re.search(r'id="label-data">(.*?)</script>', page.text, re.S)[1])  # type: ignore[index]
    assert data["label"]["revision"] == 1
    assert data["label"]["payload"]["spans"][0]["text"] == "seventy five dollars"
    assert "q-ascii" in page.text.split("Your labels in this queue")[1]  # listed, to edit
    # an item of the queue only
    assert client.get("/label/fees/item/999999").status_code == 404


def test_documents_come_back_exactly(lab: tuple[TestClient, Store, list[int]]) -> None:
    client, _, _ = lab
    for doc in DOCS:
        r = client.get(f"/label/fees/doc/{doc.id}", headers=JSON)
        assert r.status_code == 200
        assert r.json() == {"id": doc.id, "title": doc.title, "text": doc.text}
    assert client.get("/label/fees/doc/nope", headers=JSON).status_code == 404
    # without script: the document as a page, the passage marked
    text = DOCS[0].text
    start = text.index("seventy")
    page = client.get(f"/label/fees/doc/ascii?start={start}&end={start + 7}")
    assert page.headers["content-type"].startswith("text/html")
    assert '<mark class="passage" id="passage">seventy</mark>' in page.text
    assert client.get("/label/fees/doc/nope").status_code == 404


def test_search_lists_passages_with_their_documents(
    lab: tuple[TestClient, Store, list[int]],
) -> None:
    client, _, _ = lab
    r = client.get("/label/fees/search", params={"q": "exit row seat twelve dollars"}, headers=JSON)
    assert r.status_code == 200
    results = r.json()["results"]
    assert results and results[0]["doc"] == "lines"
    text = next(d.text for d in DOCS if d.id == "lines")
    for p in results:
        assert set(p) >= {"doc", "title", "start", "end", "text", "score"}
    top = results[0]
    assert text[top["start"] : top["end"]].strip() in text
    bad = client.get("/label/fees/search", params={"q": "x", "retriever": "nope"}, headers=JSON)
    assert bad.status_code == 400 and "nope" in bad.json()["error"]
    # without script, the search box's form answers with a page of the same passages
    page = client.get("/label/fees/search", params={"q": "exit row seat twelve dollars"}).text
    assert "<code>lines</code>" in page and 'href="/label/fees/doc/lines?start=' in page


def test_saves_are_revisions_and_a_stale_one_conflicts(
    lab: tuple[TestClient, Store, list[int]],
) -> None:
    client, store, ids = lab
    url = f"/label/fees/item/{ids[4]}"
    first = payload(span("lines", "exit row\ncosts twelve dollars"))
    r = post(client, url, {"payload": first, "expected_revision": 0})
    assert r.status_code == 200, r.text
    assert r.json()["revision"] == 1 and r.json()["labeller"] == "ann"
    second = payload(span("lines", "twelve dollars", grade=1, required=False), answer="$12")
    assert post(client, url, {"payload": second, "expected_revision": 1}).json()["revision"] == 2
    # another tab still on revision 1: refused, the stored label comes back, nothing is lost
    stale = post(client, url, {"payload": first, "expected_revision": 1})
    assert stale.status_code == 409
    assert stale.json()["stored"]["revision"] == 2
    assert stale.json()["stored"]["payload"]["answer"] == "$12"
    (row,) = [lb for lb in store.labels(item_id=ids[4]) if lb.role == "label"]
    assert row.revision == 2 and row.labeller == "ann"
    # a second create of the same label is a conflict too
    assert post(client, url, {"payload": first, "expected_revision": 0}).status_code == 409


def test_a_span_whose_text_is_not_the_document_is_refused(
    lab: tuple[TestClient, Store, list[int]],
) -> None:
    client, store, ids = lab
    bad = span("emoji", "🐱 for 100 dollars")
    bad["end"] -= 1  # one code point short: the text sent no longer matches
    r = post(
        client, f"/label/fees/item/{ids[3]}", {"payload": payload(bad), "expected_revision": 0}
    )
    assert r.status_code == 400
    assert "emoji" in r.json()["error"]
    outside = dict(span("emoji", "🐱"), start=10_000, end=10_001)
    r = post(
        client, f"/label/fees/item/{ids[3]}", {"payload": payload(outside), "expected_revision": 0}
    )
    assert r.status_code == 400
    assert store.labels(item_id=ids[3]) == []
    r = post(client, f"/label/fees/item/{ids[3]}", {"payload": "nope", "expected_revision": 0})
    assert r.status_code == 400 and "payload" in r.json()["error"]
    r = post(client, f"/label/fees/item/{ids[3]}", {"payload": payload(), "expected_revision": -1})
    assert r.status_code == 400 and "expected_revision" in r.json()["error"]


def test_a_save_without_the_csrf_token_is_refused(
    lab: tuple[TestClient, Store, list[int]],
) -> None:
    client, store, ids = lab
    r = client.post(
        f"/label/fees/item/{ids[0]}",
        json={"payload": payload(span("ascii", "seventy five dollars")), "expected_revision": 0},
    )
    assert r.status_code == 403
    assert store.labels(item_id=ids[0]) == []


def test_delete_from_the_page_and_from_the_list(lab: tuple[TestClient, Store, list[int]]) -> None:
    client, store, ids = lab
    url = f"/label/fees/item/{ids[0]}"
    post(client, url, {"payload": payload(span("ascii", "seventy")), "expected_revision": 0})
    stale = post(client, url + "/delete", {"expected_revision": 3})
    assert stale.status_code == 409 and stale.json()["stored"]["revision"] == 1
    assert post(client, url + "/delete", {"expected_revision": 1}).json() == {"deleted": True}
    assert store.labels(item_id=ids[0]) == []
    # the list's delete button: a form post with the CSRF field, then back to the question
    post(client, url, {"payload": payload(span("ascii", "seventy")), "expected_revision": 0})
    r = client.post(
        url + "/delete",
        data={"expected_revision": "1", "csrf_token": token(client)},
        follow_redirects=False,
    )
    assert r.status_code == 303 and r.headers["location"] == url
    assert store.labels(item_id=ids[0]) == []


def two_labellers(store: Store, ids: list[int], queue: str = "fees") -> None:
    """ann and bob label the double questions, disagreeing on some spans and grades."""
    from ragmeter.workflows import labelling

    for name in ("ann", "bob"):
        labelling.ensure_labeller(store, name)
    ann = [
        payload(span("ascii", "seventy five dollars")),
        payload(span("accented", "café coûte deux euros", grade=1)),
        payload(span("cjk", "第二件行李收费四十美元")),
    ]
    bob = [
        payload(span("ascii", "seventy five dollars for a Standard fare")),
        payload(span("accented", "café coûte deux euros", grade=2)),
        payload(span("cjk", "行李收费四十美元", grade=1)),
    ]
    for i, (a, b) in enumerate(zip(ann, bob, strict=True)):
        labelling.save(store, queue, ids[i], "ann", a, 0)
        labelling.save(store, queue, ids[i], "bob", b, 0)


def test_the_agreement_page_shows_what_golden_agree_prints(
    lab: tuple[TestClient, Store, list[int]], tmp_path: Path
) -> None:
    from ragmeter.data import label_agreement, load_golden
    from ragmeter.workflows import labelling

    client, store, ids = lab
    empty = client.get("/label/fees/agreement")
    assert empty.status_code == 200 and "No question of this queue" in empty.text
    two_labellers(store, ids)
    page = client.get("/label/fees/agreement").text
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    labelling.export_labeller(store, "fees", "ann", a)
    labelling.export_labeller(store, "fees", "bob", b)
    want = label_agreement(load_golden(a), load_golden(b))
    assert len(want.questions) == 3

    def card(key: str) -> str:
        m = re.search(rf'data-metric="{key}">.*?card-value">([^<]*)<', page, re.S)
        assert m, key
        return m[1]

    assert card("f1") == f"{want.f1:.3f}"
    assert card("macro_f1") == f"{want.macro_f1:.3f}"
    assert card("kappa") == ("-" if want.kappa() is None else f"{want.kappa():.3f}")
    assert card("precision") == f"{want.precision:.3f}"
    assert card("recall") == f"{want.recall:.3f}"
    # the disagreements link to their pages
    assert f'href="/label/fees/disagreement/{ids[0]}"' in page


def test_the_disagreement_page_and_the_resolution(
    lab: tuple[TestClient, Store, list[int]],
) -> None:
    client, store, ids = lab
    two_labellers(store, ids)
    page = client.get(f"/label/fees/disagreement/{ids[0]}").text
    assert '<mark class="who ab"' in page and '<mark class="who b"' in page
    assert "A: ann" in page and "B: bob" in page
    r = client.post(
        f"/label/fees/item/{ids[0]}/resolve",
        data={"take": "bob", "expected_revision": "0", "csrf_token": token(client)},
        follow_redirects=False,
    )
    assert r.status_code == 303
    (resolved,) = [lb for lb in store.labels(item_id=ids[0]) if lb.role == "resolved"]
    assert resolved.labeller == "ann"  # who resolved it
    assert resolved.payload["spans"][0]["text"] == "seventy five dollars for a Standard fare"
    page = client.get(f"/label/fees/disagreement/{ids[0]}").text
    assert "Resolved by <strong>ann</strong>" in page
    # resolving again on a stale revision is refused, the page says why
    r = client.post(
        f"/label/fees/item/{ids[0]}/resolve",
        data={"take": "ann", "expected_revision": "0", "csrf_token": token(client)},
    )
    assert r.status_code == 409 and "revision" in r.text
    r = client.post(
        f"/label/fees/item/{ids[0]}/resolve",
        data={"take": "carol", "expected_revision": "1", "csrf_token": token(client)},
    )
    assert r.status_code == 400 and "carol" in html.unescape(r.text)


def test_hostile_text_is_inert_in_every_label_view(
    lab: tuple[TestClient, Store, list[int]],
) -> None:
    from ragmeter.workflows import labelling

    client, store, ids = lab
    xss = ids[-1]
    for name in ("ann", "bob"):
        labelling.ensure_labeller(store, name)
    hostile = payload(span("doc-script", "<script>alert(1)</script>"))
    labelling.save(store, "fees", xss, "ann", hostile, 0)
    other = payload(span("doc-script", "seventy five dollars"), answer=HOSTILE[1])
    labelling.save(store, "fees", xss, "bob", other, 0)
    pages = [
        client.get("/label").text,
        client.get(f"/label/fees/item/{xss}").text,
        client.get("/label/fees/agreement").text,
        client.get(f"/label/fees/disagreement/{xss}").text,
    ]
    for page in pages:
        for bad in HOSTILE:
            assert bad not in page
        assert "onerror=alert" not in page.replace("onerror=alert(1)&gt;", "")
    item, dis = pages[1], pages[3]
    # the logged passages and answer beside the question, escaped; a logged document the
    # corpus has opens in the page
    assert "&lt;/script&gt;&lt;script&gt; logged passage" in item
    assert "onerror=alert(1)&gt; logged answer" in item
    assert 'data-open-doc="doc-script"' in item and "(not in this corpus)" in item
    assert html.escape(XSS_QUESTION, quote=False) in item
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dis  # the document's text, shown
    # documents are JSON: the browser puts them in as text
    r = client.get("/label/fees/doc/doc-close", headers=JSON)
    assert r.headers["content-type"].startswith("application/json")
    for url in ("/label/fees/doc/doc-close", "/label/fees/search?q=seat+selection"):
        page = client.get(url).text
        assert "</script><script>" not in page and "&lt;/script&gt;&lt;script&gt;" in page


def test_the_labeller_option(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ragmeter._errors import UsageError
    from ragmeter.cli import app as cli

    out = CliRunner().invoke(cli, ["lab", "--help"], env={"COLUMNS": "200"})
    assert "--labeller" in out.output
    store = Store.open(f"sqlite:///{tmp_path / 'store.db'}")
    with pytest.raises(UsageError, match="labeller"):
        create_app(store=store, root=tmp_path, labeller=" padded ")
    make_queue(store)
    client = TestClient(create_app(store=store, root=tmp_path), base_url="http://127.0.0.1")
    page = client.get("/label").text
    assert f"<strong>{html.escape(getpass.getuser())}</strong>" in page  # the OS user


def make_answers_queue(store: Store, name: str = "answers") -> list[int]:
    """An answers queue of two generated answers: one citing a passage its prompt held, one
    abstaining; hostile text in the answer, the question and the context."""
    cited = "The change fee is seventy five dollars"
    items = [
        NewItem(
            qid="a-fee",
            question="What is the change fee? " + HOSTILE[0],
            origin="golden",
            double=True,
            context={
                "answer": "Seventy five dollars. " + HOSTILE[1],
                "abstained": False,
                "citations": [{"doc": "ascii", "start": 13, "end": 51, "text": cited}],
                "context": ["ascii#0"],
                "context_text": f"[1] Change fees. {cited} for a Standard fare. {HOSTILE[2]}",
                "reference": "seventy five dollars",
                "answerable": True,
            },
        ),
        NewItem(
            qid="a-none",
            question="Is there a pet fee on the moon?",
            origin="golden",
            context={
                "answer": "I don't know.",
                "abstained": True,
                "citations": [],
                "context": ["emoji#0"],
                "context_text": None,
                "reference": None,
                "answerable": False,
            },
        ),
    ]
    store.create_queue(name, kind="answers", items=items, source="answers.jsonl")
    return [it.id for it in store.items(name)]


def test_an_answers_queue_is_reviewed_on_its_review_page(
    lab: tuple[TestClient, Store, list[int]],
) -> None:
    client, store, _ = lab
    ids = make_answers_queue(store)
    for url, there in (
        ("/label/answers", "/review/answers"),
        (f"/label/answers/item/{ids[0]}", f"/review/answers/item/{ids[0]}"),
        ("/label/answers/agreement", "/review/answers"),
    ):
        r = client.get(url, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == there, url
    listing = client.get("/label").text
    assert 'href="/review/answers"' in listing and 'href="/label/answers/agreement"' not in listing


def test_a_drafted_question_is_edited_and_accepted(
    lab: tuple[TestClient, Store, list[int]],
) -> None:
    client, store, _ = lab
    drafted = NewItem(
        qid="d-1",
        question="How much is the change fee for Standard fares?",
        origin="drafted",
        accepted=False,
        prefill={"spans": [span("ascii", "seventy five dollars")], "question": "How much?"},
    )
    (item,) = store.add_items("fees", [drafted])
    page = client.get(f"/label/fees/item/{item.id}").text
    assert 'name="question"' in page and "draft" in page
    data = json.loads(re.search(r'id="label-data">(.*?)</script>', page, re.S)[1])  # type: ignore[index]
    assert data["prefill"]["question"] == "How much?"
    body = payload(span("ascii", "seventy five dollars"), question="What is the Standard fee?")
    r = post(client, f"/label/fees/item/{item.id}", {"payload": body, "expected_revision": 0})
    assert r.status_code == 200 and r.json()["payload"]["question"] == "What is the Standard fee?"
    assert store.item(item.id).accepted  # saving accepted the draft
    # an ordinary question has no question field to edit
    assert 'name="question"' not in client.get(f"/label/fees/item/{store.items('fees')[0].id}").text


def test_hostile_labeller_names_are_inert(store_url: str, tmp_path: Path) -> None:
    """The fixture's labeller names label the hostile question (the lab's own labeller is one
    of them): every label page prints them as text."""
    from ragmeter.workflows import labelling

    names = json.loads((XSS / "labellers.json").read_text(encoding="utf-8"))
    store = Store.open(store_url, migrate=True)
    ids = make_queue(store)
    xss = ids[-1]
    for name in names[:2]:
        labelling.ensure_labeller(store, name)
    labelling.save(store, "fees", xss, names[0], payload(span("doc-script", "seventy five")), 0)
    labelling.save(store, "fees", xss, names[1], payload(span("doc-script", "Refunds")), 0)
    client = TestClient(
        create_app(store=store, root=tmp_path, labeller=names[0]), base_url="http://127.0.0.1"
    )
    client.get("/label")
    post(client, f"/label/fees/item/{ids[0]}", {"payload": payload(), "expected_revision": 0})
    pages = [
        client.get("/label").text,
        client.get(f"/label/fees/item/{xss}").text,
        client.get("/label/fees/agreement").text,
        client.get(f"/label/fees/disagreement/{xss}").text,
    ]
    for page in pages:
        for bad in (*HOSTILE, names[3]):
            assert bad not in page
    from markupsafe import escape

    assert str(escape(names[0])) in pages[0]  # "labelling as ..."
    assert f'value="{escape(names[1])}"' in pages[3]  # the resolve form's choice
    store.close()


def test_opening_a_question_builds_the_search_index_in_the_lab_cache(
    lab: tuple[TestClient, Store, list[int]], tmp_path: Path
) -> None:
    """The first labeller's first search finds the index ready: opening a question builds it
    in a background thread, with its files in the lab's cache folder (ROOT/.ragmeter-cache),
    where a restarted lab reads them."""
    import threading

    pytest.importorskip("bm25s")  # justified: BM25 is the [bm25] extra
    client, _, ids = lab
    assert client.get(f"/label/fees/item/{ids[0]}").status_code == 200
    for t in threading.enumerate():
        if t.name == "ragmeter-index-fees":
            t.join(timeout=120)
    cache = tmp_path / ".ragmeter-cache"
    assert cache.is_dir() and any(p.is_file() for p in cache.rglob("*"))
    found = client.get("/label/fees/search", params={"q": "change fee"}, headers=JSON).json()
    assert found["results"]
