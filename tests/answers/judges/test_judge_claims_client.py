"""Claim-level metrics through the OpenAI-compatible judge against a real HTTP server on
127.0.0.1: a scripted model that applies the fake judge's rules to the prompts it is sent
(so the hand-labelled fixture must come out exactly), and answers marked ``<<name>>`` get
malformed JSON, wrong shapes, slow replies past the timeout or server errors instead. Failures
are counted and reported, never passed; successes are cached, failures are not."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from _answers_fixture import answers, corpus, golden
from _loopback import running, send_json
from test_claims import _items, fixture

from ragmeter.answers import answers_from_records
from ragmeter.answers.claims import NO_CLAIMS, judge_claims
from ragmeter.answers.judged import CLAIM_METRICS
from ragmeter.answers.judges import OpenAIJudge, PlanningJudge
from ragmeter.answers.judges.fake import claim_words, sentences
from ragmeter.answers.report import check_answers

_TEXT = re.compile(r"TEXT:\n(?P<text>.*?)\n\nList the claims", re.DOTALL)
_SUPPORT = re.compile(r"PASSAGE:\n(?P<passage>.*?)\n\nCLAIMS:\n(?P<claims>.*?)\n\nGive", re.DOTALL)
#: a check against the reference: the question, then the reference (claims.reference_passage)
_REFERENCE = re.compile(
    r"Question: (?P<question>.*?)\nReference answer: (?P<reference>.*)", re.DOTALL
)


def _good(task: str, user: str) -> dict[str, Any]:
    """The fake judge's rule, read off the rendered prompt."""
    if task == "claims":
        m = _TEXT.search(user)
        assert m is not None
        return {"claims": sentences(m["text"])}
    m = _SUPPORT.search(user)
    assert m is not None
    ref = _REFERENCE.fullmatch(m["passage"])
    if ref is not None:  # the fake judge reads the question and the reference, not the labels
        have = claim_words(ref["question"]) | claim_words(ref["reference"])
    else:
        have = claim_words(m["passage"])
    claims = [line.split(". ", 1)[1] for line in m["claims"].splitlines()]
    return {
        "verdicts": [
            {"claim": n, "supported": claim_words(c) <= have} for n, c in enumerate(claims, 1)
        ]
    }


def _completion(content: str) -> bytes:
    return json.dumps(
        {
            "object": "chat.completion",
            "model": "test-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    ).encode()


#: marker -> task -> what the server does with that marker's requests of that task
SCRIPT: dict[str, dict[str, str]] = {
    "prose": {"claims": "prose"},
    "fence-ok": {"claims": "fenced", "claim_support": "fenced"},
    "empty": {"claims": "empty"},
    "shape": {"claim_support": "string_bool"},
    "missing": {"claim_support": "drop_last"},
    "slow": {"claims": "slow"},
    "down": {"claim_support": "500"},
    "broken": {"claims": "not_json"},
}


@dataclass
class Server:
    counts: dict[tuple[str, str], int]
    lock: threading.Lock


@contextmanager
def claim_server() -> Iterator[tuple[str, Server]]:
    state = Server({}, threading.Lock())

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
            task = "claims" if "split a text" in system else "claim_support"
            # a split is scripted by the text it splits (the answer carries the marker), a check
            # by its whole prompt (each check of a marked answer shows the answer or its claims)
            where = _TEXT.search(user)["text"] if task == "claims" else user  # type: ignore[index]
            marker = next((m for m in SCRIPT if f"<<{m}>>" in where), "")
            with state.lock:
                state.counts[(marker, task)] = state.counts.get((marker, task), 0) + 1
            action = SCRIPT.get(marker, {}).get(task, "good")
            good = _good(task, user)
            try:
                self._act(action, good)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout): expected

        def _act(self, action: str, good: dict[str, Any]) -> None:
            if action == "slow":
                time.sleep(1.0)
            content = json.dumps(good)
            if action == "prose":
                content = f"Here are the claims: {content}"
            elif action == "fenced":
                content = f"```json\n{content}\n```"
            elif action == "empty":
                content = json.dumps({"claims": []})
            elif action == "string_bool":
                content = json.dumps(
                    {
                        "verdicts": [
                            {**v, "supported": str(v["supported"])} for v in good["verdicts"]
                        ]
                    }
                )
            elif action == "drop_last" and len(good["verdicts"]) > 1:
                content = json.dumps({"verdicts": good["verdicts"][:-1]})
            if action == "500":
                send_json(self, 500, b'{"error": {"message": "scripted"}}')
            elif action == "not_json":
                send_json(self, 200, b"<html>proxy error</html>")
            else:
                send_json(self, 200, _completion(content))

    with running(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as url:
        yield f"{url}/v1", state


def _judge(url: str, cache: Any) -> OpenAIJudge:
    return OpenAIJudge(
        base_url=url,
        model="test-model",
        timeout=0.3,
        max_retries=1,
        backoff=0.01,
        max_backoff=0.05,
        concurrency=8,
        cache_dir=cache,
    )


def _marked(marker: str) -> dict[str, Any]:
    """An answer whose every request carries ``<<marker>>`` (in the question and the answer)."""
    return {
        "id": marker,
        "question": f"<<{marker}>> What does the first checked bag cost?",
        "answer": f"<<{marker}>> The first checked bag costs $35. The second bag costs $45.",
        "abstained": False,
        "reference": "The first checked bag costs $35.",
        "context": "The first checked bag costs $35. The second bag costs $50.",
        "evidence": "The first checked bag costs $35.",
    }


def _scores(scores: list[Any]) -> dict[tuple[str, str], Any]:
    return {(s.id, s.metric): s for s in scores}


def test_scripted_malformed_and_slow_replies_are_failures_never_passes(tmp_path: Any) -> None:
    cases = fixture()
    items = _items(cases) + [_marked(m) for m in SCRIPT]
    with claim_server() as (url, srv):
        judge = _judge(url, tmp_path / "cache")
        got = _scores(judge_claims(judge, CLAIM_METRICS, items))
        # the scripted model is the fake judge's rule: the hand numbers, exactly, over HTTP
        for c in cases:
            for m in CLAIM_METRICS:
                s = got[(c["id"], m)]
                assert s.ok, (c["id"], m, s.error)
                want = c["expected"][m]
                assert s.score == (None if want is None else float(Fraction(want)))
                assert (s.label == NO_CLAIMS) == (want is None)
        # a fenced reply is allowed (rule 1 of the reply rules)
        assert all(got[("fence-ok", m)].ok for m in CLAIM_METRICS)
        answer_side = ("claim_faithfulness", "hallucination", "claim_precision")
        failures = {
            # prose around the JSON, an empty claim list, a body that is not JSON, a reply past
            # the timeout: the split of the answer fails, and the three metrics counting its
            # claims with it; the reference and evidence claims are checked against the answer
            "prose": (answer_side, "text before the JSON object"),
            "empty": (answer_side, "lists no claim"),
            "broken": (answer_side, "splitting the answer failed"),
            "slow": (answer_side, "splitting the answer failed"),
            # verdicts of the wrong shape, one claim without a verdict, a server error
            "shape": (CLAIM_METRICS, "supported"),
            "missing": (("claim_faithfulness", "hallucination", "claim_precision"), "claim(s) 2"),
            "down": (CLAIM_METRICS, "500"),
        }
        for marker, (metrics, why) in failures.items():
            for m in CLAIM_METRICS:
                s = got[(marker, m)]
                if m in metrics:
                    assert not s.ok and s.score is None and s.label is None, (marker, m)
                    assert why in (s.error or ""), (marker, m, s.error)
                else:
                    assert s.ok, (marker, m, s.error)
        assert "timed out" in (got[("slow", "claim_precision")].error or "").lower()
        assert got[("slow", "claim_recall")].score == 1.0
        # "missing": the reference and evidence checks (one claim each) were whole
        assert got[("missing", "claim_recall")].ok
        # a reply that does not fit is retried like any malformed reply (max_retries=1: two
        # attempts), then recorded as failed
        assert srv.counts[("empty", "claims")] == srv.counts[("slow", "claims")] == 2
        assert judge.usage.failures > 0

        # again on the same cache: successes come from it, failures are asked again
        before = dict(srv.counts)
        again = _judge(url, tmp_path / "cache")
        got2 = _scores(judge_claims(again, CLAIM_METRICS, _items(cases)))
        assert all(s.ok for s in got2.values())
        assert all(s.cached for s in got2.values() if s.label != NO_CLAIMS)
        assert again.usage.http_requests == 0 and srv.counts == before

        # a dry run on that cache: every split of the fixture is cached, so every check is
        # rendered and found in the cache; a split that failed (never cached) is to send, and
        # so are the checks that would follow it
        planner = PlanningJudge(_judge(url, tmp_path / "cache"))
        judge_claims(planner, CLAIM_METRICS, [*_items(cases), _marked("slow")])
        plan = planner.plan
        assert plan.per_metric["claims"] == 51 + 3 and plan.per_metric["claim_support"] == 68 + 4
        # to send: the slow answer's split and the two checks of its claims that would follow
        # (its reference and evidence splits, and their checks, are in the cache)
        assert plan.to_send == 1 + 2
        assert plan.cached + plan.to_send + plan.duplicates == plan.requests == 54 + 72
        assert srv.counts == before  # a dry run sends nothing


@dataclass(frozen=True)
class _Chunk:
    id: str
    doc: str
    text: str


def test_the_answers_report_counts_and_lists_failures(tmp_path: Any) -> None:
    docs = {d.id: d for d in corpus()}
    chunks = [_Chunk(d, d, docs[d].text) for d in docs]
    recs = [dict(a, context=["fees-2026", "baggage"]) for a in answers()]
    recs[1]["answer"] = "<<down>> " + recs[1]["answer"]  # refund-window: its checks get 500s
    with claim_server() as (url, _srv):
        rep = check_answers(
            answers_from_records(recs),
            golden(),
            corpus=corpus(),
            chunks=chunks,
            judge=_judge(url, tmp_path / "cache"),
            judge_metrics=["claims"],
        )
    summary: Mapping[str, Any] = rep.summary()["judged"]
    assert list(summary) == list(CLAIM_METRICS)
    for m in CLAIM_METRICS:
        j = summary[m]
        assert j["failed"] == 1 and j["failed_ids"] == ["refund-window"]
        # pet-fee abstains (and is unanswerable: only the context metrics apply to it)
        assert j["no_claims"] == (1 if m == "claim_faithfulness" else 0)
        assert j["n"] == j["scored"] + j["no_claims"] + j["failed"]
        assert j["n"] == (5 if m == "claim_faithfulness" else 4)
    s = rep.by_id["refund-window"].judged["claim_recall"]
    assert not s.ok and "500" in (s.error or "")
    assert rep.by_id["pet-fee"].judged["claim_faithfulness"].label == NO_CLAIMS
    assert "claim_recall" not in rep.by_id["pet-fee"].judged
    assert "pet-fee" not in summary["claim_recall"]["failed_ids"]
    # the claim lists with their verdicts are in the per-answer output
    detail = rep.to_dict()["answers"][0]["judged"]["claim_recall"]["detail"]
    assert detail["checks"][0]["of"] == "reference" and detail["checks"][0]["against"] == "answer"
    assert detail["checks"][0]["claims"] == [{"claim": "$75", "supported": False}]
