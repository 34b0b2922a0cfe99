"""``ragmeter.workflows.diagnose``: the one diagnose pipeline behind ``ragmeter diagnose`` and
the lab's diagnosis view.

A hand-built world with one chunk per document (k = 2, large k = 4):

- q1: evidence d1 at rank 1 (in the prompt); correct and quoted -> working.
- q2: evidence d2 at rank 2 (in the prompt); wrong -> generation failure.
- q3: evidence d3 at rank 3 (in the pool, not the prompt); wrong -> retrieval failure.
- q4: evidence d4 not retrieved at all; wrong -> retrieval failure.
- q5: unanswerable; abstains (outside the table).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragmeter import UsageError
from ragmeter.answers import answers_from_records
from ragmeter.chunking import Chunking
from ragmeter.cli import app
from ragmeter.data import Corpus, Document, Evidence, GoldenSet, Question
from ragmeter.data.golden import write_golden
from ragmeter.io import to_run
from ragmeter.workflows.diagnose import (
    PromptRun,
    categories,
    diagnose,
    largest_bad_line,
    run_for_answers,
)

TEXTS = {
    "d1": "The lounge opens at six in the morning.",
    "d2": "Seat maps show the exit rows in orange.",
    "d3": "Pets travel in a soft carrier under the seat.",
    "d4": "Group bookings need ten or more travellers.",
    "d5": "Upgrades are confirmed at the gate.",
}
REFS = {"q1": "six in the morning", "q2": "orange", "q3": "soft carrier", "q4": "ten or more"}
RUNS = {
    "q1": ["d1", "d5", "d2", "d3"],
    "q2": ["d5", "d2", "d1", "d3"],
    "q3": ["d1", "d5", "d3", "d2"],
    "q4": ["d1", "d2", "d3", "d5"],
    "q5": ["d1", "d2"],
}
ANSWERS = [
    {
        "id": "q1",
        "answer": 'At six: "The lounge opens at six in the morning."',
        "citations": [{"doc": "d1"}],
    },
    {"id": "q2", "answer": "They are shown in blue."},
    {"id": "q3", "answer": "In the hold."},
    {"id": "q4", "answer": "Five travellers."},
    {"id": "q5", "answer": "I don't know.", "abstained": True},
]


def _world() -> tuple[GoldenSet, Corpus, Chunking]:
    corpus = Corpus([Document(id=d, text=t) for d, t in TEXTS.items()])
    qs = [
        Question(
            id=q,
            question=f"question {q}?",
            answer=REFS[q],
            evidence=[Evidence(doc=f"d{q[1]}", start=0, end=len(TEXTS[f"d{q[1]}"]), grade=2)],
        )
        for q in ("q1", "q2", "q3", "q4")
    ]
    qs.append(Question(id="q5", question="Is there Wi-Fi?", answerable=False))
    ids = list(TEXTS)
    chunking = Chunking(
        name="whole-docs",
        tokenizer="test",
        ids=[f"{d}#0" for d in ids],
        doc=ids,
        start=[0] * len(ids),
        end=[len(TEXTS[d]) for d in ids],
        text=[TEXTS[d] for d in ids],
        n_tokens=[10] * len(ids),
    )
    return GoldenSet(qs, corpus=corpus), corpus, chunking


def _ranked() -> dict[str, dict[str, float]]:
    return {q: {f"{d}#0": float(10 - i) for i, d in enumerate(ds)} for q, ds in RUNS.items()}


@dataclass
class Files:
    golden: Path
    corpus: Path
    chunks: Path
    run: Path
    answers: Path

    def args(self) -> list[str]:
        return ["--golden", str(self.golden), "--corpus", str(self.corpus),
                "--chunks", str(self.chunks), "--run", str(self.run),
                "--answers", str(self.answers)]  # fmt: skip


@pytest.fixture
def files(tmp_path: Path) -> Files:
    golden, _corpus, chunking = _world()
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in TEXTS.items()))
    write_golden(golden, tmp_path / "golden.jsonl")
    chunking.save(tmp_path / "chunks.jsonl")
    run = tmp_path / "run.trec"
    run.write_text(
        "".join(
            f"{q} Q0 {d}#0 {i + 1} {10 - i} hand\n"
            for q, ds in RUNS.items()
            for i, d in enumerate(ds)
        )
    )
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in ANSWERS))
    return Files(tmp_path / "golden.jsonl", corpus, tmp_path / "chunks.jsonl", run, answers)


def _cli_json(*args: str) -> Any:
    r = CliRunner().invoke(app, ["diagnose", *args, "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _lab_reading(k: int | None = 2, budget: int | None = None, large_k: int = 4) -> Any:
    """The pipeline as the lab's view calls it: objects and a ranked Run, its cut from the
    run's settings (k, else budget)."""
    golden, corpus, chunking = _world()
    answers = answers_from_records(ANSWERS, variant="hand")
    return diagnose(
        golden=golden,
        corpus=corpus,
        chunking=chunking,
        answers=answers,
        run=PromptRun(to_run(_ranked()), "hand", k, budget, large_k),
    )


def test_the_pipeline_reads_the_table_recall_and_next_experiment() -> None:
    res = _lab_reading()
    t = res.table
    assert t is not None and res.report is not None
    assert {c.key: t.count(c.key) for c in categories()} == {
        "working": 1,
        "generation_failure": 1,
        "from_memory": 0,
        "retrieval_failure": 2,
        "cites_outside_context": 0,
        "support_unknown": 0,
    }
    assert t.evidence_label == "evidence in the prompt context (AllR@2 = 1)"
    steps = {s.key: s for s in res.diagnosis.steps}
    assert steps["prompt_k"].value == pytest.approx(0.5)  # q1, q2 of four
    assert steps["headroom"].value == pytest.approx(0.75)  # q4's evidence is never retrieved
    assert res.diagnosis.failing_link == "retrieval (candidates)"
    assert largest_bad_line(t) == "largest bad cell: retrieval failure (2 of 4)"
    assert res.golden_version == res.report.golden_version


def test_cli_and_lab_get_the_same_numbers_from_the_same_inputs(files: Files) -> None:
    cli = _cli_json(*files.args(), "--k", "2", "--large-k", "4")
    lab = _lab_reading().to_dict()
    # the answers' variant is named by the file on the command line, by the record in the lab
    for out in (cli, lab):
        out["answers"].pop("variant", None)
    assert cli == lab


def test_the_cli_is_a_thin_adapter_of_the_workflow(files: Files) -> None:
    from ragmeter.workflows.answers import load_inputs

    loaded = load_inputs(files.golden, files.corpus, files.chunks)
    res = diagnose(
        golden=loaded.golden,
        corpus=loaded.corpus,
        chunking=loaded.chunking,
        answers=files.answers,
        run=PromptRun(str(files.run), str(files.run), None, 20, 4),
    )
    assert _cli_json(*files.args(), "--budget", "20", "--large-k", "4") == res.to_dict()


def test_at_a_budget_the_lab_and_the_cli_read_the_same_recall(files: Files) -> None:
    """A budget-only run: recall at a budget has no rank cutoff, so picking by cutoff (what
    the lab once did) read AllR@large_k as the prompt's recall. Both interfaces now read the
    prompt's recall at the budget and the headroom at the large k."""
    cli = _cli_json(*files.args(), "--budget", "20", "--large-k", "4")  # 20 tokens: two chunks
    res = _lab_reading(k=None, budget=20)
    lab = res.to_dict()
    for out in (cli, lab):
        out["answers"].pop("variant", None)
    assert cli == lab
    steps = {s.key: s.detail for s in res.diagnosis.steps}
    assert steps["prompt_k"].startswith("AllR@budget=20 = 0.500")
    assert steps["headroom"].startswith("AllR@4 = 0.750")
    assert res.table is not None
    assert res.table.evidence_label == "evidence in the prompt context (AllR@budget=20 = 1)"


def test_a_table_given_as_counts_or_a_file_wins(tmp_path: Path) -> None:
    d = diagnose(counts=[41, 9, 6, 14, 2])
    assert d.table is not None and d.table.count("cites_outside_context") == 2
    assert d.report is None and d.golden_version is None
    rows = [
        {"id": "a", "evidence_in_context": True, "answer_ok": True},
        {"id": "b", "evidence_in_context": False, "answer_ok": False},
    ]
    path = tmp_path / "table.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    from_file = diagnose(table_file=path, golden_version="v1")
    assert from_file.table is not None and from_file.table.count("retrieval_failure") == 1
    assert from_file.golden_version == "v1"
    assert "golden v1 tune split" in from_file.diagnosis.experiment.comparison


def test_inputs_the_pipeline_refuses() -> None:
    golden, _corpus, chunking = _world()
    run = PromptRun(to_run(_ranked()), "hand", 2, None, 4)
    with pytest.raises(UsageError, match="--run needs --golden and --chunks"):
        diagnose(golden=golden, run=run)
    both = PromptRun(to_run(_ranked()), "hand", 2, 20, 4)
    with pytest.raises(UsageError, match="exactly one"):
        diagnose(golden=golden, chunking=chunking, run=both)
    with pytest.raises(UsageError, match="--answers needs --golden"):
        diagnose(answers=answers_from_records(ANSWERS, variant="hand"), counts=[1, 1, 1, 1])
    with pytest.raises(UsageError, match="needs at least one of"):
        diagnose()


def test_cli_counts_are_parsed_before_any_file_is_read(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["diagnose", "--counts", "1,2,3", "--format", "json"])
    assert r.exit_code == 2 and "four to six integers" in r.output


@dataclass
class _Run:
    id: int
    name: str
    is_baseline: bool = False
    has_ranked: bool = True


class _Store:
    """The two Store calls run_for_answers makes."""

    def __init__(self, runs: list[_Run]) -> None:
        self._runs = runs
        self.asked: list[dict[str, Any]] = []

    def run(self, run_id: int) -> _Run:
        return next(r for r in self._runs if r.id == run_id)

    def runs(self, **kw: Any) -> list[_Run]:
        self.asked.append(kw)
        return list(self._runs)


def test_the_run_an_answer_set_came_from() -> None:
    store = _Store(
        [_Run(5, "reranker"), _Run(4, "bm25", is_baseline=True), _Run(3, "dense", has_ranked=False)]
    )
    pick = run_for_answers
    assert pick(store, {"name": "x"}, 3).id == 3  # type: ignore[arg-type,union-attr]
    assert pick(store, {"run_id": 4}, None).id == 4  # type: ignore[arg-type,union-attr]
    assert pick(store, {"name": "BM25"}, None).id == 4  # type: ignore[arg-type,union-attr]
    assert pick(store, {"name": "rerank"}, None).id == 5  # type: ignore[arg-type,union-attr]
    assert pick(store, {"name": "dense"}, None).id == 4  # type: ignore[arg-type,union-attr]
    assert store.asked[-1] == {"golden_version": None, "status": "finished"}
    assert pick(_Store([_Run(1, "a")]), {"name": "b"}, None) is None  # type: ignore[arg-type]
