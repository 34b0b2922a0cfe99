"""`ragmeter label draft`: questions drafted from picked passages or given spans, against a
loopback OpenAI-compatible server; a dry run sends nothing; a bad span exits 2 naming it; a
failed request exits 1 and lists it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from _loopback import running, send_json
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.store import Store
from ragmeter.workflows.drafts import DraftSpan

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"
CORPUS = EXAMPLE / "corpus.jsonl"
runner = CliRunner()


def cli(*args: object) -> tuple[int, str, str]:
    r = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    assert not (r.exc_info and not isinstance(r.exc_info[1], SystemExit)), r.exc_info
    return r.exit_code, r.stdout, r.stderr


@contextmanager
def serve(fail: bool = False) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """An OpenAI-compatible server drafting "What does <first word> say?" (or, with ``fail``,
    answering 503 to everything); yields its base URL and the request bodies it got."""
    bodies: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            bodies.append(body)
            if fail:
                send_json(self, 503, b'{"error": "overloaded"}')
                return
            passage = body["messages"][-1]["content"].split("Passage:\n", 1)[1]
            content = f"What does {passage.split()[0]} say?"
            reply = {"choices": [{"message": {"role": "assistant", "content": content}}]}
            send_json(self, 200, json.dumps(reply).encode())

    with running(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as url:
        yield url + "/v1", bodies


def _queue(tmp_path: Path) -> str:
    db = f"sqlite:///{tmp_path}/store.db"
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps({"id": "w1", "question": "What is the change fee?"}) + "\n")
    code, _, err = cli("label", "create", "fares", "-q", questions, "-c", CORPUS, "--db", db)
    assert code == 0, err
    return db


def test_draft_from_picked_passages_then_given_spans(tmp_path: Path) -> None:
    db = _queue(tmp_path)
    with serve() as (url, bodies):
        code, out, err = cli("label", "draft", "fares", "--base-url", url, "--model", "m",
                             "-n", 3, "--seed", 0, "--db", db, "-f", "json")  # fmt: skip
        assert code == 0, err
        done = json.loads(out)
        assert done["added"] == 3 and done["model"] == "m" and len(bodies) == 3
        assert len({d["doc"] for d in done["drafts"]}) == 3  # one passage per document
        code, out, err = cli("label", "draft", "fares", "--base-url", url, "--model", "m",
                             "--span", "fees-2024:484:556", "--db", db)  # fmt: skip
        assert code == 0, err
        assert "1 draft(s) added to fares" in " ".join(out.split())
    with Store.open(db) as store:
        items = store.items("fares")
        assert [it.origin for it in items] == [
            "written",
            "drafted",
            "drafted",
            "drafted",
            "drafted",
        ]
        assert items[-1].qid == DraftSpan("fees-2024", 484, 556).qid
        assert not any(it.accepted for it in items[1:])


def test_dry_run_bad_spans_and_failures(tmp_path: Path) -> None:
    db = _queue(tmp_path)
    with serve(fail=True) as (url, bodies):
        code, out, _ = cli("label", "draft", "fares", "--base-url", url, "--model", "m",
                           "-n", 2, "--dry-run", "--db", db)  # fmt: skip
        assert code == 0 and "nothing sent, nothing added" in " ".join(out.split())
        assert bodies == []
        spans = ["--span", "fees-2024:10:99999", "--span", "nope:1:2"]
        code, _, err = cli("label", "draft", "fares", "--base-url", url, "--model", "m",
                           *spans, "--db", db)  # fmt: skip
        assert code == 2 and "--span" in err and "'nope'" in err and "99999" in err
        code, _, err = cli("label", "draft", "fares", "--base-url", url, "--model", "m",
                           "--span", "fees-2024", "--db", db)  # fmt: skip
        assert code == 2 and "DOC:START:END" in err
        code, out, _ = cli("label", "draft", "fares", "--base-url", url, "--model", "m",
                           "-n", 1, "--retries", 0, "--db", db)  # fmt: skip
        assert code == 1 and "failed" in out
    with Store.open(db) as store:
        assert [it.qid for it in store.items("fares")] == ["w1"]
