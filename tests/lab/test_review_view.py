"""The answer review views over HTTP (ASGI test client), on 30 of the fare-rules example's
generated answers: the page shows the question, the answer, the cited passages highlighted in
their documents and the reference; two labellers review all 30 through the HTTP routes; the
agreement panel's kappa is exactly what ``ragmeter judge validate`` prints on the files
``ragmeter label export`` writes (one labeller as ``--human``, the other as ``--judge``).
Hostile question and answer text prints escaped."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

# justified: the lab is the optional [web] extra; the test extra installs it
pytest.importorskip("fastapi")  # justified: the lab is the [web] extra
pytest.importorskip("httpx")  # justified: the [test] extra's HTTP client

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from ragmeter.cli import app as cli_app
from ragmeter.lab import create_app
from ragmeter.store import Store
from ragmeter.workflows import labelling
from ragmeter.workflows.answers import validate_judge_files

EXAMPLE = Path(__file__).parents[2] / "examples" / "fare-rules"
#: answers reviewed (the example holds 90: the first 30 of the baseline's)
N = 30
HOSTILE = '</script><script>alert(1)</script>"><img src=x onerror=alert(1)>'


def first_answers(tmp: Path, n: int = N) -> Path:
    lines = (EXAMPLE / "answers" / "baseline.jsonl").read_text(encoding="utf-8").splitlines()[:n]
    out = tmp / "answers.jsonl"
    out.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return out


def make_queue(store: Store, tmp: Path, *, share: float = 1.0) -> None:
    labelling.create_queue_from(
        store,
        "fares",
        corpus=EXAMPLE / "corpus.jsonl",
        golden=EXAMPLE / "golden.jsonl",
        answers=first_answers(tmp),
        kind="answers",
        double_share=share,
    )


def client_for(store: Store, tmp: Path, labeller: str) -> TestClient:
    client = TestClient(
        create_app(store=store, root=tmp, labeller=labeller), base_url="http://127.0.0.1"
    )
    client.get("/review")  # the CSRF cookie
    return client


def post(client: TestClient, url: str, body: dict[str, Any]) -> Any:
    token = client.cookies.get("ragmeter_csrf")
    assert token
    return client.post(url, json=body, headers={"X-CSRF-Token": token})


def page_data(text: str) -> Any:
    found = re.search(r'id="review-data">(.*?)</script>', text, re.S)
    assert found
    return json.loads(found[1])


def review(correct: str | None, supported: str | None = None, **more: Any) -> dict[str, Any]:
    out = {"correct": correct, "supported": supported, "abstention": None, "note": None,
           "skipped": False}  # fmt: skip
    out.update(more)
    return out


@pytest.fixture
def lab(tmp_path: Path) -> tuple[Store, Path]:
    store = Store.open(f"sqlite:///{tmp_path / 'store.db'}")
    make_queue(store, tmp_path)
    return store, tmp_path


def test_the_review_page_shows_answer_cited_passages_and_reference(
    lab: tuple[Store, Path],
) -> None:
    store, tmp = lab
    client = client_for(store, tmp, "ana")
    listing = client.get("/review")
    assert listing.status_code == 200 and 'href="/review/fares"' in listing.text
    assert 'href="/review"' in listing.text  # in the nav
    r = client.get("/review/fares", follow_redirects=False)
    assert r.status_code == 303
    first = store.items("fares")[0]
    assert r.headers["location"] == f"/review/fares/item/{first.id}"
    page = client.get(r.headers["location"])
    assert page.status_code == 200
    text = html.unescape(page.text)
    assert first.question in text and first.context["answer"] in text
    assert first.context["reference"] in text
    # the cited passage, highlighted inside its document: exactly doc.text[start:end]
    (cite,) = first.context["citations"]
    doc = labelling.queue_corpus(store, "fares")[cite["doc"]]
    marked = re.findall(r'<mark class="cited"[^>]*>(.*?)</mark>', page.text, re.S)
    assert html.unescape(marked[0]) == doc.text[cite["start"] : cite["end"]]
    for key in ("c", "i", "s", "u", "a", "w", "n", "k"):
        assert f"<kbd>{key}</kbd>" in page.text  # the shortcuts are on the page
    assert '<script src="/static/review.js" nonce="' in page.text
    data = page_data(page.text)
    assert data["label"] is None and data["labeller"] == "ana"
    assert data["keys"]["c"] == ["correct", "correct"] and data["keys"]["u"] == [
        "supported",
        "unsupported",
    ]


def test_saves_are_revisions_a_stale_one_conflicts_and_next_moves_on(
    lab: tuple[Store, Path],
) -> None:
    store, tmp = lab
    client = client_for(store, tmp, "ana")
    ids = [it.id for it in store.items("fares")]
    url = f"/review/fares/item/{ids[0]}"
    r = post(client, url, {"payload": review("correct", "supported"), "expected_revision": 0})
    assert r.status_code == 200, r.text
    assert r.json()["revision"] == 1 and r.json()["labeller"] == "ana"
    r = post(client, url, {"payload": review("incorrect"), "expected_revision": 1})
    assert r.json()["revision"] == 2
    stale = post(client, url, {"payload": review("correct"), "expected_revision": 1})
    assert stale.status_code == 409 and stale.json()["stored"]["payload"]["correct"] == "incorrect"
    bad = post(client, url, {"payload": {"correct": "maybe"}, "expected_revision": 2})
    assert bad.status_code == 400 and "correct" in bad.json()["error"]
    page = client.get(url)
    assert page_data(page.text)["label"]["revision"] == 2
    # next: the first answer ana has not reviewed
    r = client.get("/review/fares", follow_redirects=False)
    assert r.headers["location"] == f"/review/fares/item/{ids[1]}"
    # skip counts as done for ana
    skip = {"payload": review(None, skipped=True), "expected_revision": 0}
    assert post(client, f"/review/fares/item/{ids[1]}", skip).status_code == 200
    r = client.get("/review/fares", follow_redirects=False)
    assert r.headers["location"] == f"/review/fares/item/{ids[2]}"
    # delete under the same revision rule
    gone = post(client, f"{url}/delete", {"expected_revision": 1})
    assert gone.status_code == 409
    assert post(client, f"{url}/delete", {"expected_revision": 2}).status_code == 200


def test_an_evidence_queue_and_unknown_ones_are_refused(lab: tuple[Store, Path]) -> None:
    store, tmp = lab
    from ragmeter.data import Corpus, Document
    from ragmeter.store import NewItem

    store.create_queue(
        "spans",
        kind="evidence",
        corpus=Corpus([Document(id="d", text="some text")]),
        items=[NewItem(qid="q1", question="what?")],
        source="test",
    )
    client = client_for(store, tmp, "ana")
    r = client.get("/review/spans")
    assert r.status_code == 400 and "/label/spans" in r.text
    assert client.get("/review/nope").status_code == 404
    item = store.items("spans")[0]
    assert client.get(f"/review/spans/item/{item.id}").status_code == 400
    r = post(client, f"/review/spans/item/{item.id}",
             {"payload": review("correct"), "expected_revision": 0})  # fmt: skip
    assert r.status_code == 400
    other = store.items("fares")[0]
    assert client.get(f"/review/fares/item/{item.id}").status_code == 404  # another queue's
    assert other.id != item.id


def _verdicts(i: int, who: str) -> dict[str, Any]:
    """A deterministic pair of reviews that agree on most answers, not all."""
    correct = "incorrect" if i % 4 == 0 else "correct"
    supported = "unsupported" if i % 5 == 0 else "supported"
    if who == "bo" and i % 7 == 3:
        correct = "incorrect" if correct == "correct" else "correct"
    if who == "bo" and i % 6 == 1:
        supported = "unsupported"
    return review(correct, supported)


def test_two_labellers_kappa_is_what_judge_validate_prints(
    lab: tuple[Store, Path], tmp_path: Path
) -> None:
    store, tmp = lab
    ana, bo = client_for(store, tmp, "ana"), client_for(store, tmp, "bo")
    # before anything: the panel waits for reviews
    page = ana.get(f"/review/fares/item/{store.items('fares')[0].id}")
    assert "No answer has reviews from two labellers yet" in page.text
    reviewed = 0
    for who, client in (("ana", ana), ("bo", bo)):
        for i in range(N):
            r = client.get("/review/fares", follow_redirects=False)
            assert r.status_code == 303, (who, i)
            item_id = int(r.headers["location"].rsplit("/", 1)[1])
            done = post(client, r.headers["location"],
                        {"payload": _verdicts(i, who), "expected_revision": 0})  # fmt: skip
            assert done.status_code == 200, done.text
            assert done.json()["labeller"] == who and store.item(item_id).qid
            reviewed += 1
    assert reviewed == 2 * N
    done = bo.get("/review/fares")
    assert "Nothing left to review" in done.text
    shown = re.search(
        r'data-metric="correctness">.*?class="card-value review-kappa">([-0-9.]+)<', done.text, re.S
    )
    assert shown
    # the workflow's number, and judge validate's on the exported per-labeller files
    found = labelling.answer_agreement(store, "fares")["correctness"]
    assert found.n == N and 0 < found.kappa < 1
    assert shown[1] == f"{found.kappa:.3f}"
    # ana saved first on every answer: the first labeller (--human), bo the second (--judge)
    assert labelling.answer_labellers(store, "fares") == ("ana", "bo")
    assert "<strong>ana</strong> (first) as the human and <strong>bo</strong>" in done.text
    out = tmp_path / "exported"
    exported = CliRunner().invoke(
        cli_app, ["label", "export", "fares", "-o", str(out), "--db", store.url]
    )  # what a user runs: ragmeter label export fares -o DIR
    assert exported.exit_code == 0, exported.output
    assert (out / "human-correctness.ana.jsonl").is_file(), exported.output
    human, judge = out / "human-correctness.ana.jsonl", out / "human-correctness.bo.jsonl"
    assert len(human.read_text().splitlines()) == N
    validated = validate_judge_files(human, judge)
    assert validated.validation.kappa == pytest.approx(found.kappa, abs=1e-12)
    result = CliRunner().invoke(
        cli_app, ["judge", "validate", "--human", str(human), "--judge", str(judge), "--no-store"]
    )
    assert result.exit_code == 0, result.output
    assert f"Cohen's kappa {shown[1]}" in " ".join(result.output.split())
    as_json = CliRunner().invoke(
        cli_app,
        ["judge", "validate", "--human", str(human), "--judge", str(judge), "--no-store", "-f",
         "json"],
    )  # fmt: skip
    assert as_json.exit_code == 0, as_json.output
    assert f"{json.loads(as_json.stdout)['kappa']:.3f}" == shown[1]
    # the same panel on every review page, faithfulness too
    page = ana.get(f"/review/fares/item/{store.items('fares')[3].id}")
    assert f'class="card-value review-kappa">{shown[1]}<' in page.text
    faith = labelling.answer_agreement(store, "fares")["faithfulness"]
    assert f"{faith.kappa:.3f}" in page.text


XSS = Path(__file__).parents[1] / "fixtures" / "xss"
#: what must never reach a page as markup
INERT = ("<script>alert(1)", "<img src=x", '<a href="javascript:', "</script><script>")


def test_the_xss_fixture_stays_inert(tmp_path: Path) -> None:
    """Questions, documents, answers, citations and labeller names from tests/fixtures/xss."""
    golden = [json.loads(x) for x in (XSS / "golden.jsonl").read_text().splitlines()]
    answers = tmp_path / "xss-answers.jsonl"
    lines = []
    for q in golden:
        cited = [{k: e[k] for k in ("doc", "start", "end")} for e in q["evidence"][:1]]
        lines.append(json.dumps({"id": q["id"], "answer": HOSTILE + " " + q["question"],
                                 "citations": cited, "context_text": HOSTILE + " context",
                                 "variant": "x"}))  # fmt: skip
    answers.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    store = Store.open(f"sqlite:///{tmp_path / 'store.db'}")
    labelling.create_queue_from(store, "xss", corpus=XSS / "corpus.jsonl",
                                golden=XSS / "golden.jsonl", answers=answers, kind="answers",
                                double_share=1.0)  # fmt: skip
    names = json.loads((XSS / "labellers.json").read_text(encoding="utf-8"))
    items = store.items("xss")
    for who in names[:2]:
        labelling.ensure_labeller(store, who)
        for it in items:
            labelling.save(store, "xss", it.id, who, review("correct", note=HOSTILE), 0)
    for who in names:
        client = client_for(store, tmp_path, who)
        pages = [client.get("/review"), client.get("/review/xss")]
        pages += [client.get(f"/review/xss/item/{it.id}") for it in items]
        for page in pages:
            assert page.status_code == 200, (who, page.url)
            for bad in INERT:
                assert bad not in page.text, (who, page.url, bad)
    # the cited hostile text is there, escaped, inside its mark
    page = client_for(store, tmp_path, "x").get(f"/review/xss/item/{items[0].id}")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text


@pytest.mark.parametrize("bad", ["0", "-1", "abc", "9" * 30, "1e3", "%00", "１"])
def test_hostile_ids_are_a_page_never_a_500(lab: tuple[Store, Path], bad: str) -> None:
    store, tmp = lab
    client = client_for(store, tmp, "ana")
    assert client.get(f"/review/fares/item/{bad}").status_code in (400, 404)
    assert client.get("/review/fares", params={"after": bad}).status_code in (200, 303, 400, 404)
    r = post(client, f"/review/fares/item/{bad}", {"payload": review("correct"),
                                                    "expected_revision": 0})  # fmt: skip
    assert r.status_code in (400, 404)
    assert client.get(f"/review/{bad}").status_code < 500  # ("１" is queue id 1: the store's rule)
