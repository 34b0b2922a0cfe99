"""Two labellers label one queue together in a real browser (Debian's Chromium, Playwright), and
the agreement page shows what ``ragmeter golden agree`` says on their exported files.

The lab is served with the beyond-loopback policy (``create_app(host="0.0.0.0")`` on
127.0.0.1, as tests/lab/test_lab_auth_browser.py does) over a queue of ten questions made with
``double_share=1.0`` (every question goes to both). Two browser contexts sign in with ann's
and bob's tokens and label every question through the page, turn by turn: the document opens
from the logged passage, the evidence is selected with a real mouse drag, graded and saved with
the keys. Their spans are sometimes identical, sometimes overlapping, sometimes disjoint, with
different grades on some; one question is unanswerable for both, one for ann only. Then the
agreement page's span F1, precision, recall and kappa must be, at the page's three decimals,
the numbers ``ragmeter golden agree A B --corpus C --format json`` prints on the files
``ragmeter label export`` writes for the two. No console error, no CSP violation, no dialog.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _browser import skip_without_browser

skip_without_browser()

from _browser import Watch, chromium, drag_select, serving  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from ragmeter.cli import app as cli  # noqa: E402
from ragmeter.data import Corpus, Document, write_corpus  # noqa: E402
from ragmeter.lab import create_app  # noqa: E402
from ragmeter.store import Store  # noqa: E402
from ragmeter.workflows import labelling  # noqa: E402

DOCS = [
    Document(id="fees", title="Change fees", text="Change fees.\nThe change fee is seventy five "
             "dollars for a Standard fare. A Flex fare changes for free. Refunds are paid within "
             "seven business days of the request."),
    Document(id="bags", title="Baggage", text="Baggage rules.\nThe first checked bag costs "
             "thirty dollars. A second bag costs forty five dollars. Bags over 23 kg pay an "
             "overweight fee."),
    Document(id="pets", title="Pets", text="Pets.\nA cat or a small dog flies in the cabin for "
             "one hundred dollars each way. Larger pets travel in the hold. Service animals fly "
             "free."),
    Document(id="seats", title="Seat rules", text="Seat rules.\nA seat on the exit row costs "
             "twelve dollars.\nOther seats are free.\nChildren under 15 may not sit on the exit "
             "row."),
    Document(id="cafe", title="Tarifs café", text="Tarifs de l'aéroport. Le café coûte deux "
             "euros à l'aéroport; les crêpes coûtent cinq euros."),
]  # fmt: skip
TEXTS = {d.id: d.text for d in DOCS}

#: a labeller's label of one question: its spans (quote, grade, required), in the question's
#: document; None: unanswerable
Spans = list[tuple[str, int, bool]] | None
#: (question id, question, document, ann's label, bob's label), in queue order
PLAN: list[tuple[str, str, str, Spans, Spans]] = [
    # identical
    ("q01", "What is the change fee?", "fees",
     [("seventy five dollars", 2, False)], [("seventy five dollars", 2, False)]),
    # identical span, different grades
    ("q02", "Does a Flex fare pay to change?", "fees",
     [("A Flex fare changes for free", 2, False)], [("A Flex fare changes for free", 1, False)]),
    # overlapping: bob's holds ann's
    ("q03", "How long does a refund take?", "fees",
     [("within seven business days", 1, False)],
     [("Refunds are paid within seven business days of the request", 1, False)]),
    # overlapping, different grades
    ("q04", "What does the first bag cost?", "bags",
     [("thirty dollars", 2, False)], [("The first checked bag costs thirty dollars", 1, False)]),
    # unanswerable for both
    ("q05", "Is there a lounge at the airport?", "bags", None, None),
    # unanswerable for ann only
    ("q06", "Can a cat fly in the cabin?", "pets",
     None, [("A cat or a small dog flies in the cabin", 2, True)]),
    # two spans against one that overlaps the first
    ("q07", "What does a pet cost in the cabin?", "pets",
     [("one hundred dollars each way", 2, True), ("Service animals fly free", 1, False)],
     [("flies in the cabin for one hundred dollars", 2, False)]),
    # disjoint, in one document
    ("q08", "What does an exit row seat cost?", "seats",
     [("twelve dollars", 2, False)], [("Other seats are free", 1, False)]),
    # overlapping, accented text, different grades
    ("q09", "Combien coûte le café ?", "cafe",
     [("café coûte deux euros", 1, False)], [("deux euros", 2, False)]),
    # identical spans and grades; only ann marks it required
    ("q10", "Who may not sit on the exit row?", "seats",
     [("Children under 15 may not sit on the exit row", 2, True)],
     [("Children under 15 may not sit on the exit row", 2, False)]),
]  # fmt: skip
NAMES = ("ann", "bob")
#: the agreement page's cards read, and where ``golden agree --format json`` has each number
CARDS = {
    "f1": ("f1",),
    "macro_f1": ("macro_f1",),
    "precision": ("precision",),
    "recall": ("recall",),
    "kappa": ("grades", "kappa"),
    "same_grade": ("grades", "agreement"),
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The queue made from a questions file (each line logged with its document's passage, so
    the document opens by itself), two labellers with tokens, the lab beyond loopback, and one
    Chromium."""
    folder = tmp_path_factory.mktemp("label-team-browser")
    corpus = write_corpus(Corpus(DOCS), folder / "corpus.jsonl")
    questions = folder / "questions.jsonl"
    lines = [
        {"id": qid, "question": q, "logged": {"retrieved": [{"id": doc, "content": TEXTS[doc]}]}}
        for qid, q, doc, _, _ in PLAN
    ]
    questions.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    url = f"sqlite:///{folder / 'store.db'}"
    store = Store.open(url)
    labelling.create_queue_from(store, "team", corpus=corpus, questions=questions, double_share=1.0)
    tokens = {name: store.add_labeller(name)[1] for name in NAMES}
    app = create_app(store=store, host="0.0.0.0", root=folder)
    with serving(app) as base, chromium() as browser:
        yield {
            "url": base,
            "db": url,
            "store": store,
            "tokens": tokens,
            "browser": browser,
            "corpus": corpus,
        }
    store.close()


def sign_in(w: Watch, base: str, token: str) -> None:
    """The sign-in page (asked for directly: no 401 on the way), the token pasted, and on to
    the queue's first question."""
    w.page.goto(f"{base}/login?next=/label/team")
    w.page.fill('input[name="token"]', token)
    w.page.click('button[type="submit"]')
    w.page.wait_for_url(f"{base}/label/team/item/*")


def label(page: Any, item_id: int, question: str, doc: str, spans: Spans) -> None:
    """Label the question on screen (``item_id``) as ``spans`` says, save it with the keyboard,
    and press ``n`` for the next one."""
    assert page.url.endswith(f"/label/team/item/{item_id}")
    assert page.locator("h1.question").inner_text() == question
    # the logged passage's document opens by itself
    page.locator(".label-doc .doc-id", has_text=doc).wait_for()
    if spans is None:
        page.locator("input[name=unanswerable]").check()
        page.keyboard.press("Escape")  # out of the checkbox: the keys are the page's again
    for quote, grade, required in spans or []:
        drag_select(page, TEXTS[doc], quote)
        page.locator(".span-item.pending").wait_for()
        page.keyboard.press(str(grade))
        if required:
            page.keyboard.press("r")
    page.keyboard.press("s")  # (the page's own save, two seconds after a change, may come first)
    page.locator(".label-status.ok", has_text="saved (revision").wait_for()
    page.keyboard.press("n")
    page.wait_for_url(lambda url: f"/item/{item_id}" not in url)


def plan_chars(who: int) -> dict[str, set[tuple[str, int]]]:
    """The characters (document, index) a labeller's plan marks, per question (``who``: 0 for
    ann, 1 for bob)."""
    out = {}
    for qid, _, doc, *plans in PLAN:
        marked: set[tuple[str, int]] = set()
        for quote, _, _ in plans[who] or []:
            start = TEXTS[doc].index(quote)
            marked |= {(doc, i) for i in range(start, start + len(quote))}
        out[qid] = marked
    return out


def card(page: Any, metric: str) -> str:
    return str(
        page.locator(f'.agreement-cards .card[data-metric="{metric}"] .card-value').inner_text()
    )


def cli_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_two_labellers_label_and_the_agreement_page_matches_golden_agree(
    lab: dict[str, Any], tmp_path: Path
) -> None:
    store: Store = lab["store"]
    base = lab["url"]
    items = store.items("team")
    assert [it.qid for it in items] == [p[0] for p in PLAN]
    assert all(it.double for it in items)  # double_share=1.0: every question goes to both
    ids = {it.qid: it.id for it in items}
    watches = {name: Watch(lab["browser"], width=1280) for name in NAMES}  # two contexts
    for name, w in watches.items():
        sign_in(w, base, lab["tokens"][name])
        assert w.page.locator(".label-who strong").inner_text() == name
    # turn by turn: ann labels a question, then bob does; each then goes on to the next
    for qid, question, doc, ann, bob in PLAN:
        label(watches["ann"].page, ids[qid], question, doc, ann)
        label(watches["bob"].page, ids[qid], question, doc, bob)
    for w in watches.values():
        w.page.locator("text=Nothing left to label in team").wait_for()
    # what the pages saved: the selected characters, under the token owner's name
    for qid, _, doc, *plans in PLAN:
        for name, plan in zip(NAMES, plans, strict=True):
            (saved,) = [lb for lb in store.labels(item_id=ids[qid]) if lb.labeller == name]
            got = [
                (s["doc"], TEXTS[s["doc"]][s["start"] : s["end"]], s["grade"], s["required"])
                for s in saved.payload["spans"]
            ]
            assert got == [(doc, *span) for span in plan or []], (qid, name)
            assert saved.payload["answerable"] is (plan is not None), (qid, name)

    # the agreement page, in ann's browser
    page = watches["ann"].page
    page.goto(f"{base}/label/team/agreement")
    page.locator(".agreement-cards").wait_for()
    a, b = page.locator("strong.who-a").inner_text(), page.locator("strong.who-b").inner_text()
    assert {a, b} == set(NAMES)
    shown = {metric: card(page, metric) for metric in CARDS}

    # the two exported files, compared by the command line
    files = {}
    for name in NAMES:
        files[name] = tmp_path / f"{name}.jsonl"
        result = CliRunner().invoke(
            cli,
            ["label", "export", "team", "--labeller", name, "-o", str(files[name]),
             "--db", lab["db"]],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    agreed = cli_json(
        "golden", "agree", str(files[a]), str(files[b]), "--corpus", str(lab["corpus"]),
        "--format", "json",
    )  # fmt: skip
    assert agreed["questions"] == len(PLAN)
    expected = {"both": 8, "neither": 1, "only_a": 0, "only_b": 0}
    expected["only_a" if a == "bob" else "only_b"] = 1  # q06: ann saw no evidence
    assert agreed["found"] == expected
    for metric, path in CARDS.items():
        value: Any = agreed
        for key in path:
            value = value[key]
        assert shown[metric] == f"{value:.3f}", metric
    # neither perfect nor none: the spans and grades differ on some questions
    for metric in ("f1", "precision", "recall", "kappa"):
        assert 0.0 < float(shown[metric]) < 1.0, (metric, shown[metric])
    # and both are the plan's characters, counted here
    chars = {name: plan_chars(i) for i, name in enumerate(NAMES)}
    both = sum(len(chars["ann"][qid] & chars["bob"][qid]) for qid in chars["ann"])
    sizes = {name: sum(map(len, chars[name].values())) for name in NAMES}
    assert agreed["chars"] == {"a": sizes[a], "b": sizes[b], "both": both}
    assert shown["f1"] == f"{2 * both / (sizes['ann'] + sizes['bob']):.3f}"
    per_question = {q["question"]: q for q in agreed["per_question"]}
    assert per_question["q01"]["f1"] == 1.0 and per_question["q08"]["f1"] == 0.0
    for w in watches.values():
        assert w.errors() == [] and w.csp_violations() == [] and w.dialogs == []
        w.close()
