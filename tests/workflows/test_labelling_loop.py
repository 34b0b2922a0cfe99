"""The after-launch loop, end to end (issue 24; docs/labelling.md, "The loop, end to end").

v1 (the fare-rules golden set) frozen → a 200-question log sampled (`golden sample -n 40 --by
slice`) → a queue extending v1 (`label create --parent-golden`) → two labellers label it
through the lab's HTTP routes on a real server (uvicorn on 127.0.0.1, the beyond-loopback
policy: each labeller signs each request with their own token): evidence found by locating a
known answer quote in the document text the lab serves, unanswerable questions marked, skips,
one disagreement on the double share resolved through the resolve route → v2 frozen (`label
freeze`) with v1 as its parent → `ragmeter run` on v2 → `golden diff v1 v2`: the questions added
are exactly the ones labelled and not skipped.

The log is examples/fare-rules/traffic/log.jsonl, made by make_log.py beside it; the first
tests check that fixture (the committed files are the script's output; it looks like traffic).
The labeller's knowledge is key.jsonl: which question of the fare-rules golden set each logged
wording asks for again.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.data import read_lock
from ragmeter.data.traffic import normalise_question
from ragmeter.store import Store
from ragmeter.workflows.labelling import is_double

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"
TRAFFIC = EXAMPLE / "traffic"
QUEUE = "loop"
JSON = {"Accept": "application/json"}


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def cli(*args: object) -> str:
    """Run a ragmeter command; its stdout (a failure shows the command and what it said)."""
    r = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    assert not (r.exc_info and not isinstance(r.exc_info[1], SystemExit)), r.exc_info
    assert r.exit_code == 0, (args, r.exit_code, r.stdout[-800:], r.stderr[-800:])
    return r.stdout


# --- the fixture ---------------------------------------------------------------------------------
def test_the_committed_log_is_the_generators_output(tmp_path: Path) -> None:
    """make_log.py rewrites every committed file byte for byte (run as a user would)."""
    out = tmp_path / "made"
    subprocess.run(
        [sys.executable, str(TRAFFIC / "make_log.py"), "--out", str(out)],
        check=True,
        capture_output=True,
    )
    made = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.jsonl"))
    assert made == ["key.jsonl", "labels/ana.jsonl", "labels/bo-agreed.jsonl",
                    "labels/bo.jsonl", "log.jsonl"]  # fmt: skip
    for name in made:
        assert (out / name).read_bytes() == (TRAFFIC / name).read_bytes(), name


def test_the_log_looks_like_traffic() -> None:
    """200 lines; repeats and varied wording; skewed slices; three channels; a logged context
    on every line; every wording in the key, most answerable from the corpus."""
    log = _jsonl(TRAFFIC / "log.jsonl")
    key = {normalise_question(k["question"]): k["golden"] for k in _jsonl(TRAFFIC / "key.jsonl")}
    assert len(log) == 200
    texts = Counter(normalise_question(x["question"]) for x in log)
    assert 50 <= len(texts) <= 120 and texts.most_common(1)[0][1] >= 10  # repeats
    slices = Counter(x["slice"] for x in log)
    assert len(slices) >= 5 and max(slices.values()) >= 5 * min(slices.values())  # skew
    assert set(Counter(x["channel"] for x in log)) == {"web", "app", "agent"}
    assert all(x["logged"]["retrieved"] and x["logged"]["answer"] for x in log)
    assert set(texts) <= set(key)
    by_intent = Counter(key[t] for t in texts)
    assert any(n >= 3 for gid, n in by_intent.items() if gid)  # one need, several wordings
    unanswerable = sum(n for t, n in texts.items() if key[t] is None)
    assert 0 < unanswerable < len(log) // 5  # some lines, most are answerable


def test_every_keyed_quote_is_in_its_document_once() -> None:
    """The labeller's evidence is findable: each quote of the key's golden questions occurs
    exactly once in its document."""
    docs = {d["id"]: d["text"] for d in _jsonl(EXAMPLE / "corpus.jsonl")}
    gold = {q["id"]: q for q in _jsonl(EXAMPLE / "golden.jsonl")}
    for k in _jsonl(TRAFFIC / "key.jsonl"):
        if k["golden"] is None:
            continue
        for e in gold[k["golden"]]["evidence"]:
            assert docs[e["doc"]].count(e["text"]) == 1, (k["question"], e["doc"], e["text"])


# --- the loop ------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[Any, ...]]:
    """Not started yet: a function that starts the lab over ``url`` with tokens for ann and
    bob, and returns (base URL, tokens)."""
    pytest.importorskip("fastapi")  # justified: the lab is the optional [web] extra
    pytest.importorskip("uvicorn")  # justified: the [web] extra's server
    import uvicorn

    from ragmeter.lab import create_app

    running: list[tuple[Any, threading.Thread, Store]] = []

    def start(url: str) -> tuple[str, dict[str, str]]:
        store = Store.open(url)
        tokens = {name: store.add_labeller(name)[1] for name in ("ann", "bob")}
        lab = create_app(store=store, host="0.0.0.0", root=tmp_path)  # tokens on every request
        port = free_port()
        srv = uvicorn.Server(uvicorn.Config(lab, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=srv.run, daemon=True)
        thread.start()
        running.append((srv, thread, store))
        for _ in range(400):  # the server says when it listens; no wall-clock assertion
            if srv.started:
                break
            time.sleep(0.05)
        assert srv.started, "the lab did not start"
        return f"http://127.0.0.1:{port}", tokens

    yield (start,)
    for srv, thread, store in running:
        srv.should_exit = True
        thread.join(timeout=10)
        store.close()


class Labeller:
    """A labeller at the lab, over HTTP only: their next question, the document text, search,
    saves (JSON, CSRF token, their bearer token) and the resolve form."""

    def __init__(self, base: str, token: str, key: dict[str, str | None]) -> None:
        import httpx

        self.http = httpx.Client(
            base_url=base, headers={"authorization": f"Bearer {token}"}, timeout=60
        )
        # as docs/labelling.md says a script does: a GET sets the CSRF cookie; POSTs send it back
        assert self.http.get("/label").status_code == 200
        self.http.headers["x-csrf-token"] = self.http.cookies["ragmeter_csrf"]
        self.key = key
        self.gold = {q["id"]: q for q in _jsonl(EXAMPLE / "golden.jsonl")}
        self.searched = self.found_by_search = 0

    def next_item(self) -> dict[str, Any] | None:
        """The label page's data of this labeller's next question (None: nothing left)."""
        r = self.http.get(f"/label/{QUEUE}", follow_redirects=False)
        if r.status_code != 303:
            assert r.status_code == 200 and "Nothing left to label" in r.text, r.text[:300]
            return None
        page = self.http.get(r.headers["location"])
        assert page.status_code == 200
        data = re.search(r'id="label-data">(.*?)</script>', page.text, re.S)
        assert data is not None
        return dict(json.loads(data[1]))

    def evidence(self, question: str, *, regrade: bool = False) -> dict[str, Any]:
        """The label a labeller who knows the fare rules saves: the golden question's evidence
        found again in the documents the lab serves (the quote located in the text), or
        unanswerable. ``regrade``: the last span's grade the other way (a disagreement)."""
        gid = self.key[normalise_question(question)]
        label: dict[str, Any] = {
            "spans": [], "answer": None, "answerable": gid is not None, "slices": [],
            "split": None, "skipped": False, "note": None,
        }  # fmt: skip
        if gid is None:
            return label
        g = self.gold[gid]
        hits = self.http.get(f"/label/{QUEUE}/search", params={"q": question}, headers=JSON)
        assert hits.status_code == 200
        best = {e["doc"] for e in g["evidence"] if e["grade"] == 2}
        self.searched += 1
        self.found_by_search += any(p["doc"] in best for p in hits.json()["results"])
        for e in g["evidence"]:
            doc = self.http.get(f"/label/{QUEUE}/doc/{e['doc']}", headers=JSON)
            assert doc.status_code == 200
            start = doc.json()["text"].index(e["text"])
            label["spans"].append({"doc": e["doc"], "start": start, "end": start + len(e["text"]),
                                   "grade": e["grade"], "required": bool(e.get("required")),
                                   "text": e["text"]})  # fmt: skip
        if regrade:
            label["spans"][-1]["grade"] = 3 - label["spans"][-1]["grade"]
        label["answer"] = g["answer"]
        return label

    def save(self, item_id: int, payload: dict[str, Any]) -> dict[str, Any]:
        r = self.http.post(
            f"/label/{QUEUE}/item/{item_id}", json={"payload": payload, "expected_revision": 0}
        )
        assert r.status_code == 200, r.text
        return dict(r.json())


def test_the_after_launch_loop(tmp_path: Path, store_url: str, server: tuple[Any, ...]) -> None:
    """On SQLite, then on PostgreSQL (the team's store) when a server is configured."""
    pytest.importorskip("httpx")  # justified: the test extra's HTTP client
    for name in ("golden.jsonl", "corpus.jsonl"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    work = tmp_path / "traffic"
    work.mkdir()
    for name in ("log.jsonl", "experiment.toml"):
        shutil.copy(TRAFFIC / name, work / name)
    db = store_url
    key = {normalise_question(k["question"]): k["golden"] for k in _jsonl(TRAFFIC / "key.jsonl")}

    cli("db", "upgrade", "--db", db)  # a team's server store is migrated first (docs/team.md)
    # v1, the sample, the queue
    cli("golden", "freeze", tmp_path / "golden.jsonl", "-c", tmp_path / "corpus.jsonl")
    v1 = str(read_lock(tmp_path / "golden.lock.json")["version"])
    sample = tmp_path / "sample.jsonl"
    cli("golden", "sample", work / "log.jsonl", "-n", 40, "--by", "slice", "-o", sample)
    sampled = _jsonl(sample)
    assert len(sampled) == 40 and len({normalise_question(x["question"]) for x in sampled}) == 40
    cli("label", "create", QUEUE, "--questions", sample, "--corpus", tmp_path / "corpus.jsonl",
        "--parent-golden", tmp_path / "golden.jsonl", "--db", db)  # fmt: skip

    # the lab: ann first, then bob; a real server, each request signed with its labeller's token
    (start,) = server
    base, tokens = start(db)
    ann, bob = Labeller(base, tokens["ann"], key), Labeller(base, tokens["bob"], key)
    labelled: set[str] = set()  # qids with a label that is not a skip
    skipped_by_ann: list[str] = []
    doubles: list[int] = []
    while (data := ann.next_item()) is not None:
        item = data["item"]
        gid = key[normalise_question(item["question"])]
        double = is_double(item["qid"], 0, 0.2)  # the queue's seed and double share
        if len(skipped_by_ann) < 2 and not double and (gid is None or skipped_by_ann):
            payload = ann.evidence(item["question"]) | {"skipped": True}
            skipped_by_ann.append(item["qid"])
        else:
            payload = ann.evidence(item["question"])
            labelled.add(item["qid"])
        saved = ann.save(item["id"], payload)
        assert saved["revision"] == 1 and saved["labeller"] == "ann"
    assert len(skipped_by_ann) == 2
    disputed: int | None = None
    bob_skipped: list[str] = []
    while (data := bob.next_item()) is not None:
        item = data["item"]
        if item["qid"] == skipped_by_ann[0]:  # nobody labels this one
            payload = bob.evidence(item["question"]) | {"skipped": True}
            bob_skipped.append(item["qid"])
        elif item["qid"] in skipped_by_ann:  # bob labels the question ann skipped
            payload = bob.evidence(item["question"])
            labelled.add(item["qid"])
        else:  # a double item: ann labelled it too
            doubles.append(item["id"])
            regrade = disputed is None and len(ann.evidence(item["question"])["spans"]) > 1
            payload = bob.evidence(item["question"], regrade=regrade)
            if regrade:
                disputed = item["id"]
        bob.save(item["id"], payload)
    assert bob_skipped == skipped_by_ann[:1]
    assert doubles and disputed is not None, "the sample has a double item with two spans"
    # the lab's search (BM25, top 10) listed an answering document for most questions
    assert ann.found_by_search >= 0.7 * ann.searched, (ann.found_by_search, ann.searched)

    # agreement, the disagreement, and ann's resolution through the resolve route
    page = ann.http.get(f"/label/{QUEUE}/agreement")
    assert page.status_code == 200 and "ann" in page.text and "bob" in page.text
    assert f'href="/label/{QUEUE}/disagreement/{disputed}"' in page.text  # compare and resolve
    assert ann.http.get(f"/label/{QUEUE}/disagreement/{disputed}").status_code == 200
    status = json.loads(cli("label", "status", QUEUE, "--db", db, "-f", "json"))
    assert status["finals"].get("unresolved") == 1, status
    r = ann.http.post(
        f"/label/{QUEUE}/item/{disputed}/resolve",
        data={"take": "ann", "expected_revision": "0"},
        follow_redirects=False,
    )
    assert r.status_code == 303, r.text[:300]
    status = json.loads(cli("label", "status", QUEUE, "--db", db, "-f", "json"))
    assert "unresolved" not in status["finals"] and status["finals"]["resolved"] == 1

    # v2, frozen from the queue with v1 as its parent
    cli("label", "freeze", QUEUE, "-o", work / "v2", "--db", db)
    lock = read_lock(work / "v2" / "golden.lock.json")
    v2 = str(lock["version"])
    assert lock["parent"] == v1 and v2 != v1
    frozen = _jsonl(work / "v2" / "golden.jsonl")
    v1_rows = _jsonl(tmp_path / "golden.jsonl")
    # v2 extends v1: v1's questions as they were, then the newly labelled ones
    assert [q["id"] for q in frozen] == [q["id"] for q in v1_rows] + sorted(
        labelled, key=[q["id"] for q in frozen].index
    )

    def given(q: dict[str, Any]) -> dict[str, Any]:  # an unset field, written or left out
        return {k: v for k, v in q.items() if v is not None}

    assert [given(q) for q in frozen[: len(v1_rows)]] == [given(q) for q in v1_rows]
    assert any(not q["answerable"] for q in frozen)  # unanswerable questions are kept
    resolved = next(q for q in frozen if q["id"] == _qid_of(db, disputed))
    assert [e["grade"] for e in resolved["evidence"]] == [
        e["grade"] for e in ann.evidence(resolved["question"])["spans"]
    ]  # ann's reading was taken

    # ragmeter run on v2
    run = json.loads(cli("run", work / "experiment.toml", "--db", db, "-f", "json"))
    assert run["golden_version"] == v2

    # golden diff v1 v2: the questions added are the labelled, non-skipped ones
    v1_file, v2_file = tmp_path / "golden.jsonl", work / "v2" / "golden.jsonl"
    corpus = tmp_path / "corpus.jsonl"
    diff = json.loads(cli("golden", "diff", v1_file, v2_file, "-c", corpus, "-f", "json"))
    assert diff["lineage"] == "b-from-a" and diff["b"]["parent"] == v1
    assert diff["summary"]["questions_added"] == len(labelled)
    assert {q["id"] for q in diff["added"]} == labelled
    assert diff["removed"] == [] and diff["summary"]["questions_changed"] == 0


def _qid_of(db: str, item_id: int) -> str:
    with Store.open(db) as store:
        return store.item(item_id).qid


def test_question_ids_are_the_queues() -> None:
    """The label files of docs/labelling.md name the questions as the queue does: ``q-`` and
    12 hex digits of the sha256 of the normalised question."""
    for row in _jsonl(TRAFFIC / "labels" / "ana.jsonl"):
        digest = hashlib.sha256(normalise_question(row["question"]).encode("utf-8")).hexdigest()
        assert row["id"] == "q-" + digest[:12]
