"""The trace view (``/trace``, issue 27 item 13): one question's generated answer as it was
made, read from the answers ``ragmeter run --db`` stored with the run: the prompt as sent (the
chat messages, equal to the answer prompt rendered again on the question and the recorded
context), the passages in prompt order with their headers, each citation resolved to its
passage, the latency, the judge's verdicts with their reasons; two runs side by side
(``vs``); an answer set stored without the messages says so; bad requests are the lab's own
pages, linked from the question and diagnosis pages."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

pytest.importorskip("fastapi")  # justified: the lab is the [web] extra
pytest.importorskip("httpx")  # justified: the [test] extra's HTTP client

from _trace_store import record_generated
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter import Store
from ragmeter.generation import load_prompt
from ragmeter.lab import create_app

PRE = re.compile(r'<pre class="trace-text trace-sent">(.*?)</pre>', re.S)
SIDE = re.compile(r'<section class="trace-side" data-set="(\d+)">(.*?)</section>', re.S)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    t = record_generated(tmp_path_factory.mktemp("trace"))
    store = Store.open(t.url)
    sets = {a.name: store.answer_set(a.id) for a in store.answer_sets()}
    client = TestClient(create_app(store=store, root=t.root), base_url="http://127.0.0.1")
    yield {"t": t, "store": store, "sets": sets, "client": client}
    store.close()


def sides(page: str) -> list[tuple[int, str]]:
    return [(int(i), body) for i, body in SIDE.findall(page)]


def test_the_trace_shows_the_prompt_as_sent_and_everything_recorded(lab: dict[str, Any]) -> None:
    t, sets, store = lab["t"], lab["sets"], lab["store"]
    rank = sets["rank"]
    golden = store.golden(str(rank.golden_version))
    prompt = load_prompt("answer-v1")
    judged_seen = 0
    for qid in t.qids:
        r = lab["client"].get(f"/trace?run={t.ids['rank']}&q={qid}")
        assert r.status_code == 200, (qid, r.text[:300])
        ((set_id, body),) = sides(r.text)
        assert set_id == rank.id
        row = next(x for x in rank.answers if x["id"] == qid)
        # the prompt as sent: the chat messages, as the answer prompt renders them again
        sent = prompt.render(question=golden.by_id[qid].question, context=row["context_text"])
        pres = [html.unescape(x) for x in PRE.findall(body)]
        assert pres[:2] == [m["content"] for m in sent]
        # the passages in prompt order, each header as the context holds it
        order = re.findall(rf'<li id="p-{set_id}-(\d+)"', body)
        assert [int(n) for n in order] == list(range(1, len(row["context"]) + 1))
        heads = re.findall(r"^\[\d+\] .+$", row["context_text"], re.M)
        for h in heads:
            assert h in html.unescape(body)
        # each citation resolved to its passage's number
        for c in row["citations"]:
            n = row["context"].index(c["chunk"]) + 1
            assert f'href="#p-{set_id}-{n}">[{n}]</a>' in body
        # the answer, the latency, and the judge's verdicts with their reasons
        assert (row["answer"] or "(empty)") in html.unescape(body)
        assert "latency" in body
        check = next(x for x in rank.report["answers"] if x["id"] == qid)
        for metric, j in (check.get("judged") or {}).items():
            assert f'<td class="mono">{metric}</td>' in body
            assert j["detail"]["reason"] in html.unescape(body)
            judged_seen += 1
    assert judged_seen >= len(t.qids)  # every answered question was judged


def test_two_runs_side_by_side(lab: dict[str, Any]) -> None:
    t, sets = lab["t"], lab["sets"]
    moved = 0
    for qid in t.qids:
        r = lab["client"].get(f"/trace?run={t.ids['rank']}&q={qid}&vs={t.ids['sandwich']}")
        assert r.status_code == 200
        (a, body_a), (b, body_b) = sides(r.text)
        assert (a, b) == (sets["rank"].id, sets["sandwich"].id)
        ctx = {}
        for name, body in (("rank", body_a), ("sandwich", body_b)):
            row = next(x for x in sets[name].answers if x["id"] == qid)
            ctx[name] = row["context"]
            first = html.unescape(PRE.findall(body)[1])  # the user message
            assert row["context_text"] in first
        moved += ctx["rank"] != ctx["sandwich"]
        assert sorted(ctx["rank"]) == sorted(ctx["sandwich"])  # the same passages, reordered
    assert moved > 0  # the sandwich order moves passages


def test_an_answer_set_stored_without_the_messages_says_so(lab: dict[str, Any]) -> None:
    store, rank = lab["store"], lab["sets"]["rank"]
    # as ragmeter stored answers before it kept the prompt as sent
    old = [{k: v for k, v in x.items() if k != "generation"} for x in rank.answers]
    sid = store.record_answers(
        name="rank (old)", answers=old, report=dict(rank.report),
        golden_version=rank.golden_version,
    )  # fmt: skip
    qid = lab["t"].qids[0]
    r = lab["client"].get(f"/trace?answers={sid}&q={qid}")
    assert r.status_code == 200
    assert "The prompt as sent was not recorded for this answer set" in r.text
    assert "No tokens, latency or cost recorded" in r.text
    row = next(x for x in old if x["id"] == qid)
    assert row["context"][0] in r.text  # the context is still shown, in order


@pytest.mark.parametrize(
    ("url", "code", "says"),
    [
        ("/trace", 400, "name a run and a question"),
        ("/trace?run=1", 400, "name a run and a question"),
        ("/trace?run=abc&q=x", 400, "run must be a whole number"),
        ("/trace?run=1&q=no-such-question", 404, "has no answer to question"),
        ("/trace?run=999&q=x", 404, "run 999 has no stored answers"),
    ],
)
def test_bad_requests_are_the_labs_pages(lab: dict[str, Any], url: str, code: int, says: str):
    r = lab["client"].get(url)
    assert r.status_code == code, r.text[:300]
    assert says in html.unescape(r.text) and r.headers["content-type"].startswith("text/html")


def test_the_question_and_diagnosis_pages_link_to_the_trace(lab: dict[str, Any]) -> None:
    t, sets, client = lab["t"], lab["sets"], lab["client"]
    qid = t.qids[0]
    page = client.get(f"/question?golden={sets['rank'].golden_version}&qid={qid}").text
    links = re.findall(r'class="trace-link[^"]*" href="([^"]+)"', page)
    assert f"/trace?answers={sets['rank'].id}&amp;q={qid}" in links
    diag = client.get(f"/diagnosis?answers={sets['rank'].id}").text
    links = [html.unescape(x) for x in re.findall(r'class="trace-link[^"]*" href="([^"]+)"', diag)]
    # every question of the grid's cells: the 10 answerable ones (unanswerable are apart)
    assert sorted(x.split("q=")[1] for x in links) == sorted(t.qids[:10])
    for link in links:
        assert client.get(link).status_code == 200


@settings(max_examples=25, deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_any_question_id_is_a_clear_404_never_an_error(lab: dict[str, Any], qid: str) -> None:
    r = lab["client"].get("/trace", params={"run": lab["t"].ids["rank"], "q": qid})
    if qid in lab["t"].qids:
        assert r.status_code == 200
    else:
        assert r.status_code == 404 and "has no answer to question" in html.unescape(r.text)
