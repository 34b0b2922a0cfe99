"""`ragmeter label`: create a queue, list it, its status (agreement as `golden agree` prints it),
export a labeller's labels and freeze the queue; bad input exits 2 with one line naming file,
line and field, or what exists. The labels themselves are saved through the workflow the lab's
routes call."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.data import load_golden, read_lock
from ragmeter.store import Store
from ragmeter.workflows import labelling as lab

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"
CORPUS, GOLDEN = EXAMPLE / "corpus.jsonl", EXAMPLE / "golden.jsonl"
runner = CliRunner()


def cli(*args: object) -> tuple[int, str, str]:
    r = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    assert not (r.exc_info and not isinstance(r.exc_info[1], SystemExit)), r.exc_info
    return r.exit_code, r.stdout, r.stderr


def _questions(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": q.id, "question": q.question}) + "\n"
            for q in list(load_golden(GOLDEN))[:n]
        )
    )
    return path


def _payload(qid: str, shift: int = 0) -> dict[str, object]:
    q = load_golden(GOLDEN)[qid]
    if not q.answerable:
        return {"answerable": False}
    e = q.evidence[0]
    return {"spans": [{"doc": e.doc, "start": e.start + shift, "end": e.end + shift}]}


def test_create_label_status_export_and_freeze(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/store.db"
    code, out, err = cli(
        "label", "create", "first", "--questions", _questions(tmp_path, 6), "-c", CORPUS,
        "--double-share", "1", "--db", db,
    )  # fmt: skip
    assert code == 0, err
    assert "queue first: 6 evidence item(s), 6 for two labellers, 31 documents" in out
    with Store.open(db) as store:
        for name in ("ana", "bo"):
            lab.ensure_labeller(store, name)
        for n, it in enumerate(store.items("first")):
            lab.save(store, "first", it.id, "ana", _payload(it.qid), 0)
            lab.save(store, "first", it.id, "bo", _payload(it.qid, shift=n % 2), 0)
    code, out, _ = cli("label", "list", "--db", db, "-f", "json")
    (listed,) = json.loads(out)
    assert (listed["queue"], listed["items"], listed["labellers"]) == (
        "first",
        6,
        {"ana": 6, "bo": 6},
    )
    code, out, _ = cli("label", "status", "first", "--db", db, "-f", "json")
    status = json.loads(out)
    assert status["finals"] == {"agreed": 3, "unresolved": 3}

    for name in ("ana", "bo"):
        code, _, err = cli(
            "label", "export", "first", "-l", name, "-o", tmp_path / f"{name}.jsonl", "--db", db
        )
        assert code == 0, err
    code, out, _ = cli(
        "golden", "agree", tmp_path / "ana.jsonl", tmp_path / "bo.jsonl", "-c", CORPUS, "-f", "json"
    )
    agreed = json.loads(out)
    assert status["agreement"]["f1"] == agreed["f1"]
    assert status["agreement"]["kappa"] == agreed["grades"]["kappa"]
    code, out, _ = cli("label", "status", "first", "--db", db)
    assert f"span F1 {agreed['f1']:.3f}" in out

    code, _, err = cli("label", "freeze", "first", "-o", tmp_path / "v1", "--db", db)
    assert code == 2 and err.startswith("error: 3 item(s) of queue 'first' have two labels")
    with Store.open(db) as store:
        for d in lab.disagreements(store, "first"):
            lab.adjudicate(store, "first", d.item.id, "ana", d.a.payload, 0)
    code, out, err = cli("label", "freeze", "first", "-o", tmp_path / "v1", "--db", db)
    assert code == 0, err
    lock = read_lock(tmp_path / "v1" / "golden.lock.json")
    assert f"froze queue first at {lock['version']}" in out
    assert len(load_golden(tmp_path / "v1" / "golden.jsonl", tmp_path / "v1" / "corpus.jsonl")) == 6

    # a queue extending v1 records it as the parent of what it freezes
    code, out, err = cli(
        "label", "create", "second", "-q", _questions(tmp_path, 2), "-c", CORPUS,
        "--parent-golden", tmp_path / "v1" / "golden.jsonl", "--db", db,
    )  # fmt: skip
    assert code == 0 and f"parent {lock['version']}" in out, err


def test_bad_input_is_one_line_naming_where(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/store.db"
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"question": "ok?"}\n{"question": ""}\n')
    code, _, err = cli("label", "create", "x", "-q", bad, "-c", CORPUS, "--db", db)
    assert code == 2 and f"{bad}:2: field 'question'" in err
    code, _, err = cli("label", "create", "x y", "-q", bad, "-c", CORPUS, "--db", db)
    assert code == 2 and "queue name" in err
    cli("label", "create", "real", "-q", _questions(tmp_path, 1), "-c", CORPUS, "--db", db)
    code, _, err = cli("label", "status", "nope", "--db", db)
    assert code == 2 and "the queues are: 'real'" in err
    code, _, err = cli(
        "label", "export", "real", "-l", "zed", "-o", tmp_path / "z.jsonl", "--db", db
    )
    assert code == 2 and "no labeller named 'zed'" in err
    code, _, err = cli("label", "export", "real", "-o", tmp_path / "z.jsonl", "--db", db)
    assert code == 2 and "--labeller" in err


def test_an_answers_queue_exports_what_judge_validate_reads(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/store.db"
    answers = EXAMPLE / "answers" / "baseline.jsonl"
    code, out, err = cli(
        "label", "create", "ans", "--kind", "answers", "--answers", answers, "--golden", GOLDEN,
        "-c", CORPUS, "--double-share", "1", "--db", db,
    )  # fmt: skip
    assert code == 0 and "answers item(s)" in out, err
    with Store.open(db) as store:
        for name in ("ana", "bo"):
            lab.ensure_labeller(store, name)
        for n, it in enumerate(store.items("ans")[:12]):
            lab.save(
                store, "ans", it.id, "ana", {"correct": "correct" if n % 2 else "incorrect"}, 0
            )
            lab.save(store, "ans", it.id, "bo", {"correct": "correct" if n % 3 else "incorrect"}, 0)
    code, out, _ = cli("label", "status", "ans", "--db", db, "-f", "json")
    shown = json.loads(out)["answer_agreement"]["correctness"]
    code, _, err = cli("label", "export", "ans", "-o", tmp_path / "human", "--db", db)
    assert code == 0, err
    code, out, err = cli(
        "judge", "validate", "--human", tmp_path / "human" / "human-correctness.ana.jsonl",
        "--judge", tmp_path / "human" / "human-correctness.bo.jsonl", "-f", "json", "--no-store",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["kappa"] == shown["kappa"] and shown["n"] == 12
